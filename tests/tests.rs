//! End-to-end runs of real grids on tiny data, built as one test binary (as
//! ripgrep does) and split into files by topic.

mod util;

mod articles;
#[cfg(feature = "libtorch")]
mod backends;
mod bert;
mod bert_equivalence;
mod browser;
mod cache_reuse;
#[cfg(unix)]
mod cdp;
mod cli;
mod crash;
mod crowd;
mod docs;
mod glove;
mod hub_data;
mod images;
mod methods;
mod metrics_reports;
mod multiclass;
mod natural;
mod pipeline;
mod rationale;
mod remote;
mod shapes;
mod slurm;
mod toxicity;
