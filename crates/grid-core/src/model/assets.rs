//! A model's inputs from outside the cache, resolved at plan time.

use std::path::PathBuf;

use super::hub::CheckpointSource;

/// A model's inputs from outside the cache, resolved against the data root.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelAssets {
    None,
    /// GloVe vectors for a BiLSTM's embeddings.
    Glove(PathBuf),
    /// A pretrained BERT-family checkpoint; `hf://` ones download into the cache
    /// under `cache_root/hub/`.
    Checkpoint {
        source: CheckpointSource,
        cache_root: PathBuf,
    },
}
