//! (in progress)

use burn::tensor::backend::AutodiffBackend;

use super::{Attribution, AttributionError, Examples, Hiding, Settings, Vocabulary};
use crate::model::Classifier;

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    _model: &M,
    hiding: Hiding,
    samples: u32,
    _examples: &Examples<'_>,
    _vocab: &Vocabulary,
    _settings: &Settings,
    _device: &B::Device,
) -> Result<Attribution, AttributionError> {
    Err(AttributionError::Unsupported {
        method: super::Method::KernelShap { hiding, samples }.to_string(),
        reason: "in progress".into(),
    })
}
