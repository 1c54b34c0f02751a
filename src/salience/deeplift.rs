//! `deeplift`: DeepLift with the Rescale rule (in progress).

use burn::tensor::backend::AutodiffBackend;

use super::{Attribution, AttributionError, Baseline, Examples, Settings, Vocabulary};
use crate::model::Classifier;

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    _model: &M,
    baseline: Baseline,
    _examples: &Examples<'_>,
    _vocab: &Vocabulary,
    _settings: &Settings,
    _device: &B::Device,
) -> Result<Attribution, AttributionError> {
    Err(AttributionError::Unsupported {
        method: super::Method::DeepLift { baseline }.to_string(),
        reason: "in progress".into(),
    })
}
