//! ResNet weights in torchvision's layout (`conv1.weight`, `bn1.weight`,
//! `layer1.0.conv1.weight`, `layer2.0.downsample.0.weight` and `.1.` for its
//! batch norm, `fc.weight` as `[out, in]`), as `torch.save`'s state dict
//! converted to safetensors has them: read into a [`ResNet`], and written
//! from one. burn-store's PyTorch adapter renames the batch norms' `weight`
//! and `bias` (γ, β) and transposes the linear layer; the projection's two
//! modules are renamed here.

use std::path::Path;

use burn::tensor::backend::Backend;
use burn_store::{BurnToPyTorchAdapter, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};

use super::{ResNet, ResNetConfig};

/// Reads torchvision-layout weights at `path` into a ResNet of `config`
/// (its depth, width, stem and classes must be the checkpoint's). Every
/// parameter and running statistic must be there; of the file's tensors
/// only `num_batches_tracked` may go unused.
pub fn load_torchvision<B: Backend>(
    path: &Path,
    config: &ResNetConfig,
    device: &B::Device,
) -> anyhow::Result<ResNet<B>> {
    anyhow::ensure!(path.is_file(), "{}: no such file", path.display());
    // Every weight is then read from the file: the seed draws nothing kept.
    let mut model = config.init::<B>(0, device);
    let mut store = SafetensorsStore::from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(r"\.downsample\.0\.", ".downsample.conv.")
        .with_key_remapping(r"\.downsample\.1\.", ".downsample.bn.")
        // Named here too: the adapter finds γ and β under torch's names, but
        // would report those names unused.
        .with_key_remapping(r"(bn\d?)\.weight$", "${1}.gamma")
        .with_key_remapping(r"(bn\d?)\.bias$", "${1}.beta")
        .allow_partial(true);
    let result = model.load_from(&mut store).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if !result.errors.is_empty() {
        anyhow::bail!("{}: {:?} (is it a ResNet of this shape: {config:?}?)", path.display(), result.errors);
    }
    if !result.missing.is_empty() {
        let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).take(5).collect();
        anyhow::bail!(
            "{}: {} tensors missing, among them {} (a ResNet-18 or -34 of torchvision's layout is expected)",
            path.display(),
            result.missing.len(),
            missing.join(", ")
        );
    }
    let unused: Vec<&String> = result.unused.iter().filter(|p| !p.ends_with("num_batches_tracked")).collect();
    if !unused.is_empty() {
        let some: Vec<&str> = unused.iter().map(|p| p.as_str()).take(5).collect();
        anyhow::bail!(
            "{}: {} tensors this ResNet has no place for, among them {} (a deeper ResNet's bottleneck blocks?)",
            path.display(),
            unused.len(),
            some.join(", ")
        );
    }
    Ok(model)
}

/// Writes `model` at `path` in torchvision's layout.
pub fn save_torchvision<B: Backend>(model: &ResNet<B>, path: &Path) -> anyhow::Result<()> {
    let mut store = SafetensorsStore::from_file(path)
        .with_to_adapter(BurnToPyTorchAdapter)
        .with_key_remapping(r"\.downsample\.conv\.", ".downsample.0.")
        .with_key_remapping(r"\.downsample\.bn\.", ".downsample.1.");
    model.save_into(&mut store).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    // Equal tensors, equal bytes (burn writes its metadata in hash order).
    crate::model::canonical_header::canonicalize(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::module::{Param, RunningState};
    use burn::tensor::{Distribution, Tensor};

    use super::*;
    use crate::model::resnet::{Depth, Stem};

    type B = Flex;

    fn config() -> ResNetConfig {
        ResNetConfig { depth: Depth::R18, width: 4, stem: Stem::Small, classes: 2 }
    }

    /// Written in torchvision's names and read back into a fresh model: the
    /// same logits, batch-norm statistics included.
    #[test]
    fn torchvision_names_round_trip() {
        let device = Default::default();
        let mut model = config().init::<B>(0, &device);
        // Statistics away from the identity, so that losing them shows.
        let random = |n| Tensor::<B, 1>::random([n], Distribution::Uniform(0.5, 1.5), &device);
        model.bn1.running_var = RunningState::new(random(4));
        model.bn1.running_mean = RunningState::new(random(4));
        model.bn1.gamma = Param::from_tensor(random(4));
        let projection = model.layer2[0].downsample.as_mut().unwrap();
        projection.bn.running_mean = RunningState::new(random(8));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resnet.safetensors");
        save_torchvision(&model, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let names: Vec<String> =
            safetensors::SafeTensors::deserialize(&bytes).unwrap().names().into_iter().map(String::from).collect();
        for expected in [
            "conv1.weight",
            "bn1.weight",
            "bn1.running_var",
            "layer2.0.downsample.0.weight",
            "layer2.0.downsample.1.bias",
            "fc.weight",
        ] {
            assert!(names.iter().any(|n| n == expected), "{expected} not in {names:?}");
        }
        let fc = safetensors::SafeTensors::deserialize(&bytes).unwrap().tensor("fc.weight").unwrap().shape().to_vec();
        assert_eq!(fc, [2, 32], "torch's [out, in]");

        let loaded = load_torchvision::<B>(&path, &config(), &device).unwrap();
        let images = Tensor::<B, 4>::random([2, 3, 16, 16], Distribution::Normal(0.0, 1.0), &device);
        loaded
            .forward(images.clone())
            .into_data()
            .assert_approx_eq::<f32>(&model.forward(images).into_data(), burn::tensor::Tolerance::absolute(1e-6));
    }

    /// A model's file is a function of its tensors: saved again (burn's
    /// metadata map in another hash order each time), the same bytes, so
    /// the cache's checksums of two equal trainings agree.
    #[test]
    fn equal_models_write_equal_bytes() {
        let device = Default::default();
        let model = config().init::<B>(3, &device);
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first.safetensors");
        save_torchvision(&model, &first).unwrap();
        let bytes = std::fs::read(&first).unwrap();
        for n in 0..8 {
            let again = dir.path().join(format!("again-{n}.safetensors"));
            save_torchvision(&model, &again).unwrap();
            assert_eq!(std::fs::read(&again).unwrap(), bytes, "save {n}");
        }
    }

    #[test]
    fn another_shape_is_refused_naming_the_file() {
        let device = Default::default();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r34.safetensors");
        let deeper = ResNetConfig { depth: Depth::R34, ..config() };
        save_torchvision(&deeper.init::<B>(0, &device), &path).unwrap();
        let error = format!("{:#}", load_torchvision::<B>(&path, &config(), &device).unwrap_err());
        assert!(error.contains("r34.safetensors") && error.contains("no place for"), "{error}");
        let error = format!("{:#}", load_torchvision::<B>(&dir.path().join("none"), &config(), &device).unwrap_err());
        assert!(error.contains("no such file"), "{error}");
    }
}
