//! Lu et al.'s crowd study: people guess a label from each method's top-k
//! words. [`tasks`] renders what a person sees; [`study`] deals the tasks into
//! batches with attention checks; [`export`] writes a study from a grid's
//! cached attributions ([`html`]: the questionnaire); [`answers`] reads a
//! platform's answers; [`import`] and [`score`] turn them into the paper's
//! numbers (A_ijk, p_jk, s_j, Flips, Aids), [`tables`] into its layouts;
//! [`compare`] sets them beside the paper's; [`simulate`] answers a study with the explained model in place of people;
//! [`run`] is what `grid crowd export` / `import` do.

pub mod answers;
pub mod compare;
pub mod csv;
pub mod export;
pub mod html;
pub mod import;
pub mod run;
pub mod score;
pub mod simulate;
pub mod study;
pub mod tables;
pub mod tasks;
