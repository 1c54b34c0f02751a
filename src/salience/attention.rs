//! Attention as attribution: `attn`, `attn-last`, `attn-all`, `attn-scaled` (in progress).

use burn::tensor::backend::AutodiffBackend;

use super::{AttentionView, Attribution, AttributionError, Examples, Vocabulary};
use crate::model::Classifier;

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    _model: &M,
    view: AttentionView,
    _examples: &Examples<'_>,
    _vocab: &Vocabulary,
    _device: &B::Device,
) -> Result<Attribution, AttributionError> {
    Err(AttributionError::Unsupported {
        method: super::Method::Attention(view).to_string(),
        reason: "in progress".into(),
    })
}

pub fn explain_scaled<B: AutodiffBackend, M: Classifier<B>>(
    _model: &M,
    _examples: &Examples<'_>,
    _vocab: &Vocabulary,
    _device: &B::Device,
) -> Result<Attribution, AttributionError> {
    Err(AttributionError::Unsupported { method: "attn-scaled".into(), reason: "in progress".into() })
}
