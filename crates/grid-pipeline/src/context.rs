//! What a step may use besides its work and output folder: its inputs'
//! payloads, the device, its progress bar and log, its resume folder. Below
//! the steps and the architectures' `fit`, which both take it.

use std::path::PathBuf;

use indicatif::ProgressBar;

use grid_core::backend::Compute;

/// What a step may use besides its work and output folder.
pub struct StepContext<'a> {
    /// Payload folders of the step's inputs, in the step's input order.
    pub inputs: Vec<PathBuf>,
    pub compute: Compute,
    pub progress: &'a ProgressBar,
    /// Progress lines for logs when no bar is drawn.
    pub log: &'a (dyn Fn(String) + Sync),
    /// Where a long step keeps what it needs to go on after an interruption
    /// (the step's resume folder in the cache), and how often it writes there:
    /// a training run's snapshots, an attribution's explained chunks.
    pub snapshots: Option<grid_core::train::Snapshots>,
}

impl StepContext<'_> {
    /// What a `train` step's training loop needs beside the model and data:
    /// `encoder`'s padding and unknown ids, this step's progress, log,
    /// batch shapes and snapshots, and Ctrl-C.
    pub fn train_setup(
        &self,
        encoder: &dyn grid_core::text::TextEncoder,
        word_dropout: f64,
    ) -> grid_core::train::TrainSetup<'_> {
        grid_core::train::TrainSetup {
            pad_id: encoder.pad_id(),
            unk_id: encoder.unk_id(),
            word_dropout,
            progress: self.progress,
            log: self.log,
            buckets: self.compute.buckets,
            snapshots: self.snapshots.as_ref(),
            stop: &grid_core::interrupt::requested,
        }
    }
}
