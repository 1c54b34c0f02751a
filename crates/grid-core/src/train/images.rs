//! Images as the training loop takes them ([`super::fit`]): a ResNet
//! trained on ImageNet-normalised images in shuffled batches, batch norm on
//! each batch's statistics (burn keeps the running ones for evaluation),
//! the softmax cross-entropy of its logits; validated on the evaluated
//! model. No augmentation: a flip or a crop would move the planted
//! artifact, whose place the metric reads.

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::fit::{Batches, Control, Objective, fit_with_spec};
use super::recipe::TrainingSpec;
use super::{Evaluation, Stopped, TrainSummary};
use crate::image::{IMAGENET_MEAN, IMAGENET_STD, Image};
use crate::model::objective::loss;
use crate::model::resnet::{ResNet, batch};
use crate::model::shapes::ShapeLog;

/// An image, its label, and whether it carries the planted artifact (what
/// validation reports apart, as for text).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledImage {
    pub image: Image,
    pub label: u32,
    pub marked: bool,
}

/// Images of one size, normalised once.
struct ImageBatches {
    height: usize,
    width: usize,
    /// Each image's `3·h·w` normalised values, one after another.
    inputs: Vec<f32>,
    labels: Vec<u32>,
}

impl ImageBatches {
    fn new(images: &[LabelledImage]) -> ImageBatches {
        let (height, width) = images.first().map_or((1, 1), |e| (e.image.height(), e.image.width()));
        let inputs = images.iter().flat_map(|e| e.image.normalised(IMAGENET_MEAN, IMAGENET_STD)).collect();
        ImageBatches { height, width, inputs, labels: images.iter().map(|e| e.label).collect() }
    }

    fn tensor<B: Backend>(&self, indices: &[usize], device: &B::Device) -> Tensor<B, 4> {
        let size = 3 * self.height * self.width;
        let values: Vec<f32> = indices.iter().flat_map(|&i| &self.inputs[i * size..(i + 1) * size]).copied().collect();
        Tensor::from_data(TensorData::new(values, [indices.len(), 3, self.height, self.width]), device)
    }
}

impl<B: AutodiffBackend> Batches<B, ResNet<B>> for ImageBatches {
    fn examples(&self) -> usize {
        self.labels.len()
    }

    fn epoch(&self, batch_size: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..self.labels.len()).collect();
        order.shuffle(rng);
        order.chunks(batch_size).map(<[usize]>::to_vec).collect()
    }

    fn objective(&self, model: &ResNet<B>, indices: &[usize], _: &mut ChaCha8Rng, device: &B::Device) -> Objective<B> {
        let labels: Vec<u32> = indices.iter().map(|&i| self.labels[i]).collect();
        let logits = model.forward(self.tensor::<B>(indices, device));
        Objective { loss: loss(logits, &labels), shape: [indices.len(), self.height] }
    }
}

/// Images per validation pass.
const EVALUATION_ROWS: usize = 64;

/// The evaluated model's predicted class for each image, in batches of
/// [`EVALUATION_ROWS`].
pub fn predict_images<B: Backend>(model: &ResNet<B>, images: &[&Image], device: &B::Device) -> Vec<u32> {
    let mut predictions = Vec::with_capacity(images.len());
    for chunk in images.chunks(EVALUATION_ROWS) {
        let classes: Vec<i64> =
            model.evaluate(batch::<B>(chunk, device)).argmax(1).into_data().convert::<i64>().to_vec().expect("int");
        predictions.extend(classes.into_iter().map(|c| c as u32));
    }
    predictions
}

/// Called with the step and the evaluated model at every evaluation: where
/// a run keeps the checkpoints Zhou et al.'s Figure 4 explains.
pub type CheckpointHook<'a, B> = &'a dyn Fn(usize, &ResNet<B>);

/// Trains `model` on `train` (images of one size) and returns the kept one
/// (see [`super::recipe::Keep`]) with a summary, as [`super::train`] does
/// for token models: the same recipe, snapshots, resume and stopping.
/// `checkpoint` sees the model at every evaluation.
pub fn train_resnet<B: AutodiffBackend>(
    model: ResNet<B>,
    spec: &TrainingSpec,
    control: &Control,
    train: &[LabelledImage],
    validation: &[LabelledImage],
    checkpoint: CheckpointHook<B::InnerBackend>,
    device: &B::Device,
) -> Result<(ResNet<B::InnerBackend>, TrainSummary), Stopped> {
    let shapes = ShapeLog::default();
    let images: Vec<&Image> = validation.iter().map(|e| &e.image).collect();
    let examples: Vec<(u32, bool)> = validation.iter().map(|e| (e.label, e.marked)).collect();
    let evaluate = |step: usize, m: &ResNet<B::InnerBackend>| {
        checkpoint(step, m);
        if let Some(first) = images.first() {
            shapes.record(images.len().min(EVALUATION_ROWS), first.height());
        }
        Evaluation::of(&predict_images(m, &images, device), &examples, None)
    };
    let data = ImageBatches::new(train);
    fit_with_spec::<B, ResNet<B>, ImageBatches>(model, spec, control, &data, &evaluate, &shapes, device)
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::model::predict::accuracy;
    use crate::model::resnet::{Depth, ResNetConfig, Stem};
    use crate::train::Snapshots;
    use crate::train::recipe::{BestBy, Keep, Optimizer, Schedule};
    use crate::values::{Positive, Share};

    type A = Autodiff<Flex>;

    /// Noise images of label 1 carry a bright square in the top-left
    /// corner: a shortcut a narrow ResNet learns in a few dozen steps.
    fn squares(n: usize, seed: u64) -> Vec<LabelledImage> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let label = rng.random_bool(0.5) as u32;
                let pixels: Vec<f32> = (0..3 * 16 * 16).map(|_| rng.random_range(0.0..0.6)).collect();
                let mut image = Image::new(16, 16, pixels).unwrap();
                if label == 1 {
                    for y in 0..5 {
                        for x in 0..5 {
                            image.set_rgb(y, x, [1.0, 1.0, 1.0]);
                        }
                    }
                }
                LabelledImage { image, label, marked: label == 1 }
            })
            .collect()
    }

    fn spec(max_steps: usize) -> TrainingSpec {
        TrainingSpec {
            batch_size: Positive::new(16),
            optimizer: Optimizer::Sgd { momentum: Share::new(0.9) },
            learning_rate: 0.05,
            weight_decay: 0.0,
            schedule: Schedule::Constant,
            max_steps: Positive::new(max_steps),
            eval_every: Positive::new(10),
            keep: Keep::Best { patience: Positive::new(1000), by: BestBy::Accuracy },
            max_grad_norm: None,
            stop_at_accuracy: None,
            seed: 3,
        }
    }

    fn run(
        max_steps: usize,
        snapshots: Option<&Snapshots>,
        stop_after: Option<usize>,
    ) -> Result<(ResNet<Flex>, TrainSummary), Stopped> {
        let device = Default::default();
        let config = ResNetConfig { depth: Depth::R18, width: 4, stem: Stem::Small, classes: 2 };
        let model = config.init::<A>(7, &device);
        let progress = indicatif::ProgressBar::hidden();
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let stop = || stop_after.is_some_and(|n| taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= n);
        let control = Control { progress: &progress, log: &|_| {}, snapshots, stop: &stop };
        train_resnet(model, &spec(max_steps), &control, &squares(96, 1), &squares(48, 2), &|_, _| {}, &device)
    }

    #[test]
    fn the_checkpoint_hook_sees_every_evaluation_with_its_model() {
        let device = Default::default();
        let config = ResNetConfig { depth: Depth::R18, width: 4, stem: Stem::Small, classes: 2 };
        let progress = indicatif::ProgressBar::hidden();
        let control = Control { progress: &progress, log: &|_| {}, snapshots: None, stop: &|| false };
        let validation = squares(48, 2);
        let images: Vec<&Image> = validation.iter().map(|e| &e.image).collect();
        let labels: Vec<u32> = validation.iter().map(|e| e.label).collect();
        let seen = std::sync::Mutex::new(Vec::new());
        let hook = |step: usize, model: &ResNet<Flex>| {
            let accuracy = accuracy(&predict_images(model, &images, &Default::default()), &labels);
            seen.lock().unwrap().push((step, accuracy));
        };
        let (_, summary) = train_resnet(
            config.init::<A>(7, &device),
            &spec(50),
            &control,
            &squares(96, 1),
            &validation,
            &hook,
            &device,
        )
        .unwrap();
        let seen = seen.into_inner().unwrap();
        let logged: Vec<(usize, f64)> = summary.log.iter().map(|l| (l.step, l.validation_accuracy)).collect();
        assert_eq!(seen, logged);
    }

    #[test]
    fn a_resnet_learns_a_planted_square_and_is_deterministic() {
        let (model, summary) = run(60, None, None).unwrap();
        assert!(summary.best_validation_accuracy >= 0.9, "{summary:?}");
        let log = &summary.log[summary.log.len() - 1];
        assert!(log.marked_accuracy.is_some() && log.unmarked_accuracy.is_some(), "{log:?}");
        let (_, again) = run(60, None, None).unwrap();
        assert_eq!(summary.log, again.log, "the same seed, the same run");
        // The kept model predicts what its summary says.
        let validation = squares(48, 2);
        let images: Vec<&Image> = validation.iter().map(|e| &e.image).collect();
        let labels: Vec<u32> = validation.iter().map(|e| e.label).collect();
        let predicted = predict_images(&model, &images, &Default::default());
        assert_eq!(accuracy(&predicted, &labels), summary.best_validation_accuracy);
    }

    #[test]
    fn a_stopped_run_resumes_from_its_snapshot_and_ends_as_an_unbroken_one() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots { dir: dir.path().join("resume"), every: std::time::Duration::ZERO };
        let stopped = run(40, Some(&snapshots), Some(25));
        assert!(matches!(stopped, Err(Stopped::Interrupted { resumes_from: Some(25), .. })), "{stopped:?}");
        let (_, resumed) = run(40, Some(&snapshots), None).unwrap();
        let (_, unbroken) = run(40, None, None).unwrap();
        assert_eq!(resumed.log, unbroken.log);
    }
}
