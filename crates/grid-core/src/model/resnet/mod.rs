//! ResNet (He et al. 2016) for Zhou et al.'s image protocol (issue 47):
//! ResNet-18 and ResNet-34 as torchvision builds them — basic blocks of two
//! 3 × 3 convolutions with batch norm, a 1 × 1 projection where the shape
//! changes, a 7 × 7 stem with max pooling — and a variant for small images
//! on a CPU: a 3 × 3 stem without pooling, and fewer channels.
//!
//! [`ResNet::features`] ends at the last convolutional block, what GradCAM
//! reads; [`ResNet::head`] pools and classifies. Weights in torchvision's
//! layout load with [`load::load_torchvision`].

pub mod load;

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Initializer, Linear, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::image::{IMAGENET_MEAN, IMAGENET_STD, Image};
use crate::kernels;
use crate::model::init;

/// How deep: the number of basic blocks in each of the four stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Depth {
    #[serde(rename = "18")]
    R18,
    #[serde(rename = "34")]
    R34,
}

impl Depth {
    pub fn blocks(self) -> [usize; 4] {
        match self {
            Depth::R18 => [2, 2, 2, 2],
            Depth::R34 => [3, 4, 6, 3],
        }
    }
}

/// The first layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stem {
    /// torchvision's: a 7 × 7 convolution of stride 2 and a 3 × 3 max pool
    /// of stride 2 (224 pixels → 56 before the first stage).
    ImageNet,
    /// For small images (32–64 pixels): one 3 × 3 convolution of stride 1,
    /// no pooling, as ResNets for CIFAR-10 begin.
    Small,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResNetConfig {
    pub depth: Depth,
    /// Channels of the first stage (torchvision: 64), doubled at each of
    /// the next three.
    pub width: usize,
    pub stem: Stem,
    pub classes: usize,
}

impl ResNetConfig {
    /// torchvision's `resnet18` / `resnet34` with `classes` outputs.
    pub fn torchvision(depth: Depth, classes: usize) -> ResNetConfig {
        ResNetConfig { depth, width: 64, stem: Stem::ImageNet, classes }
    }

    /// The model, its weights drawn as torchvision draws them (He-normal
    /// convolutions over their outputs, batch norms at identity, the linear
    /// layer uniform in `±1/√fan_in`), from a ChaCha stream of `seed`: one
    /// seed, one model, on every backend and beside any other training.
    /// Multiply-adds of one forward pass of a `side × side` image: the
    /// convolutions (with the downsampling ones) and the linear head, what
    /// a cost estimate weighs (batch norm, ReLU and pooling are noise).
    pub fn macs_per_image(&self, side: usize) -> f64 {
        let w = self.width.max(1) as f64;
        // A convolution's output side: ⌊(side + 2·padding − kernel) / stride⌋ + 1.
        let out =
            |side: usize, kernel: usize, stride: usize, padding: usize| (side + 2 * padding - kernel) / stride + 1;
        let mut side = side.max(1);
        let mut macs = 0.0;
        match self.stem {
            Stem::ImageNet => {
                side = out(side.max(7), 7, 2, 3);
                macs += (side * side) as f64 * 49.0 * 3.0 * w;
                side = out(side.max(3), 3, 2, 1);
            }
            Stem::Small => macs += (side * side) as f64 * 27.0 * w,
        }
        let mut channels = w;
        for (stage, blocks) in self.depth.blocks().into_iter().enumerate() {
            let outputs = w * f64::from(1u32 << stage);
            for block in 0..blocks {
                let stride = if stage > 0 && block == 0 { 2 } else { 1 };
                side = out(side, 3, stride, 1);
                let pixels = (side * side) as f64;
                macs += pixels * 9.0 * (channels * outputs + outputs * outputs);
                if stride != 1 || channels != outputs {
                    macs += pixels * channels * outputs;
                }
                channels = outputs;
            }
        }
        macs + channels * self.classes.max(1) as f64
    }

    /// Parameters (weights, batch-norm scales and shifts, the head's bias).
    pub fn parameters(&self) -> f64 {
        let w = self.width.max(1) as f64;
        let stem = match self.stem {
            Stem::ImageNet => 49.0,
            Stem::Small => 9.0,
        };
        let mut total = stem * 3.0 * w + 2.0 * w;
        let mut channels = w;
        for (stage, blocks) in self.depth.blocks().into_iter().enumerate() {
            let outputs = w * f64::from(1u32 << stage);
            for block in 0..blocks {
                total += 9.0 * (channels * outputs + outputs * outputs) + 4.0 * outputs;
                if stage > 0 && block == 0 {
                    total += channels * outputs + 2.0 * outputs;
                }
                channels = outputs;
            }
        }
        total + (channels + 1.0) * self.classes.max(1) as f64
    }

    pub fn init<B: Backend>(&self, seed: u64, device: &B::Device) -> ResNet<B> {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed);
        let w = self.width.max(1);
        let (conv1, pool) = match self.stem {
            Stem::ImageNet => (
                conv(rng, [3, w], 7, 2, 3, device),
                Some(
                    MaxPool2dConfig::new([3, 3])
                        .with_strides([2, 2])
                        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                        .init(),
                ),
            ),
            Stem::Small => (conv(rng, [3, w], 3, 1, 1, device), None),
        };
        let mut channels = w;
        let mut stages: Vec<Vec<BasicBlock<B>>> = Vec::new();
        for (stage, blocks) in self.depth.blocks().into_iter().enumerate() {
            let out = w << stage;
            let stride = if stage == 0 { 1 } else { 2 };
            let mut layer = Vec::with_capacity(blocks);
            for block in 0..blocks {
                let (inputs, stride) = if block == 0 { (channels, stride) } else { (out, 1) };
                layer.push(BasicBlock::new(rng, inputs, out, stride, device));
            }
            channels = out;
            stages.push(layer);
        }
        let [layer1, layer2, layer3, layer4] = <[Vec<BasicBlock<B>>; 4]>::try_from(stages).expect("four stages");
        ResNet {
            conv1,
            bn1: BatchNormConfig::new(w).init(device),
            pool,
            layer1,
            layer2,
            layer3,
            layer4,
            fc: init::linear(rng, channels, self.classes.max(1), true, device),
        }
    }
}

/// A convolution without bias (batch norm follows every one), He-normal
/// over its outputs as torchvision draws them.
/// A convolution without bias, its weights He-normal over its outputs
/// (torchvision's `kaiming_normal_(mode="fan_out")`), drawn from `rng`.
fn conv<B: Backend>(
    rng: &mut ChaCha8Rng,
    [inputs, outputs]: [usize; 2],
    kernel: usize,
    stride: usize,
    padding: usize,
    device: &B::Device,
) -> Conv2d<B> {
    let mut conv = Conv2dConfig::new([inputs, outputs], [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(padding, padding, padding, padding))
        .with_bias(false)
        .with_initializer(Initializer::Zeros)
        .init(device);
    let std = (2.0 / (outputs * kernel * kernel) as f64).sqrt();
    conv.weight = init::normal(rng, [outputs, inputs, kernel, kernel], std, device);
    conv
}

/// `conv` applied to `x`: through the fused kernel (`kernels::conv2d`) where
/// one applies, else burn's convolution.
fn convolve<B: Backend>(conv: &Conv2d<B>, x: Tensor<B, 4>) -> Tensor<B, 4> {
    let plain = conv.bias.is_none() && conv.groups == 1 && conv.dilation == [1, 1];
    if plain
        && kernels::applies(&x)
        && let PaddingConfig2d::Explicit(top, left, bottom, right) = conv.padding
        && top == bottom
        && left == right
        && let Some(y) = kernels::conv2d(x.clone(), conv.weight.val(), conv.stride, [top, left])
    {
        return y;
    }
    conv.forward(x)
}

/// `pool` applied to `x`: through the kernel (`kernels::max_pool2d`) where
/// one applies, else burn's pooling.
fn max_pool<B: Backend>(pool: &MaxPool2d, x: Tensor<B, 4>) -> Tensor<B, 4> {
    if pool.dilation == [1, 1]
        && !pool.ceil_mode
        && let PaddingConfig2d::Explicit(top, left, bottom, right) = pool.padding
        && top == bottom
        && left == right
        && let Some(y) = kernels::max_pool2d(x.clone(), pool.kernel_size, pool.stride, [top, left])
    {
        return y;
    }
    pool.forward(x)
}

/// Two 3 × 3 convolutions with batch norm and a skip connection.
#[derive(Module, Debug)]
pub struct BasicBlock<B: Backend> {
    pub conv1: Conv2d<B>,
    pub bn1: BatchNorm<B>,
    pub conv2: Conv2d<B>,
    pub bn2: BatchNorm<B>,
    /// A 1 × 1 projection of the input where the block changes the shape.
    pub downsample: Option<Downsample<B>>,
}

/// The skip connection's projection.
#[derive(Module, Debug)]
pub struct Downsample<B: Backend> {
    pub conv: Conv2d<B>,
    pub bn: BatchNorm<B>,
}

impl<B: Backend> BasicBlock<B> {
    fn new(rng: &mut ChaCha8Rng, inputs: usize, outputs: usize, stride: usize, device: &B::Device) -> BasicBlock<B> {
        let conv1 = conv(rng, [inputs, outputs], 3, stride, 1, device);
        let conv2 = conv(rng, [outputs, outputs], 3, 1, 1, device);
        let downsample = (stride != 1 || inputs != outputs).then(|| Downsample {
            conv: conv(rng, [inputs, outputs], 1, stride, 0, device),
            bn: BatchNormConfig::new(outputs).init(device),
        });
        BasicBlock {
            conv1,
            bn1: BatchNormConfig::new(outputs).init(device),
            conv2,
            bn2: BatchNormConfig::new(outputs).init(device),
            downsample,
        }
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.forward_with(x, Statistics::Backend)
    }

    fn forward_with(&self, x: Tensor<B, 4>, statistics: Statistics) -> Tensor<B, 4> {
        let skip = match &self.downsample {
            Some(d) => norm_then(&d.bn, convolve(&d.conv, x.clone()), statistics, None, false),
            None => x.clone(),
        };
        let y = norm_then(&self.bn1, convolve(&self.conv1, x), statistics, None, true);
        norm_then(&self.bn2, convolve(&self.conv2, y), statistics, Some(skip), true)
    }
}

/// Which statistics the batch norms use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statistics {
    /// burn's choice: the batch's on an autodiff backend (training), the
    /// running ones otherwise.
    Backend,
    /// The running ones always: an evaluated model, differentiated (what
    /// attribution needs: each image on its own, as at test time).
    Running,
}

/// `relu?(bn(x) + skip?)`: batch norm as [`norm`] computes it with what
/// follows it in a block, through the fused kernel (`kernels::batch_norm`)
/// where one applies, else burn's operations. With the batch's statistics
/// the running ones move as burn's `BatchNorm` moves them.
fn norm_then<B: Backend>(
    bn: &BatchNorm<B>,
    x: Tensor<B, 4>,
    statistics: Statistics,
    skip: Option<Tensor<B, 4>>,
    relu_after: bool,
) -> Tensor<B, 4> {
    if kernels::applies(&x) {
        let device = x.device();
        let running = match statistics {
            Statistics::Running => true,
            Statistics::Backend => !B::ad_enabled(&device),
        };
        let inputs = kernels::BatchNormInputs {
            gamma: bn.gamma.val(),
            beta: bn.beta.val(),
            epsilon: bn.epsilon as f32,
            running: running.then(|| (bn.running_mean.value(), bn.running_var.value())),
        };
        if let Some(out) = kernels::batch_norm(x.clone(), inputs, skip.clone(), relu_after) {
            if let Some((mean, var)) = out.batch_statistics {
                let moved = |state: Tensor<B, 1>, batch: &[f32]| {
                    let batch = Tensor::<B, 1>::from_floats(batch, &device);
                    state.mul_scalar(1.0 - bn.momentum).add(batch.mul_scalar(bn.momentum)).detach()
                };
                bn.running_mean.update(moved(bn.running_mean.value_sync().to_device(&device), &mean));
                bn.running_var.update(moved(bn.running_var.value_sync().to_device(&device), &var));
            }
            return out.y;
        }
    }
    let y = norm(bn, x, statistics);
    let y = match skip {
        Some(skip) => y + skip,
        None => y,
    };
    if relu_after { relu(y) } else { y }
}

fn norm<B: Backend>(bn: &BatchNorm<B>, x: Tensor<B, 4>, statistics: Statistics) -> Tensor<B, 4> {
    match statistics {
        Statistics::Backend => bn.forward(x),
        Statistics::Running => {
            let channels = x.dims()[1];
            let shape = |t: Tensor<B, 1>| t.reshape([1, channels, 1, 1]);
            let mean = shape(bn.running_mean.value().to_device(&x.device()));
            let var = shape(bn.running_var.value().to_device(&x.device()));
            let scale = shape(bn.gamma.val()) / (var + bn.epsilon).sqrt();
            (x - mean) * scale + shape(bn.beta.val())
        }
    }
}

/// `images` (one size), ImageNet-normalised, as the `[n, 3, h, w]` batch a
/// ResNet reads.
pub fn batch<B: Backend>(images: &[&Image], device: &B::Device) -> Tensor<B, 4> {
    let (h, w) = (images[0].height(), images[0].width());
    let data: Vec<f32> = images.iter().flat_map(|i| i.normalised(IMAGENET_MEAN, IMAGENET_STD)).collect();
    Tensor::from_data(TensorData::new(data, [images.len(), 3, h, w]), device)
}

/// A ResNet classifier over `[batch, 3, height, width]` normalised images.
#[derive(Module, Debug)]
pub struct ResNet<B: Backend> {
    pub conv1: Conv2d<B>,
    pub bn1: BatchNorm<B>,
    pub pool: Option<MaxPool2d>,
    pub layer1: Vec<BasicBlock<B>>,
    pub layer2: Vec<BasicBlock<B>>,
    pub layer3: Vec<BasicBlock<B>>,
    pub layer4: Vec<BasicBlock<B>>,
    pub fc: Linear<B>,
}

impl<B: Backend> ResNet<B> {
    /// The last convolutional block's output, `[batch, channels, h, w]`
    /// (batch norm as burn runs it: batch statistics when training).
    pub fn features(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        self.features_with(images, Statistics::Backend)
    }

    /// [`features`](Self::features) of the evaluated model, on any backend:
    /// batch norm with its running statistics, so that an autodiff backend
    /// differentiates what the model computes at test time.
    pub fn evaluated_features(&self, images: Tensor<B, 4>) -> Tensor<B, 4> {
        self.features_with(images, Statistics::Running)
    }

    /// [`forward`](Self::forward) of the evaluated model (see
    /// [`evaluated_features`](Self::evaluated_features)).
    pub fn evaluate(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.head(self.evaluated_features(images))
    }

    fn features_with(&self, images: Tensor<B, 4>, statistics: Statistics) -> Tensor<B, 4> {
        let mut x = norm_then(&self.bn1, convolve(&self.conv1, images), statistics, None, true);
        if let Some(pool) = &self.pool {
            x = max_pool(pool, x);
        }
        for block in self.layer1.iter().chain(&self.layer2).chain(&self.layer3).chain(&self.layer4) {
            x = block.forward_with(x, statistics);
        }
        x
    }

    /// Global average pooling and the linear layer: the logits.
    pub fn head(&self, features: Tensor<B, 4>) -> Tensor<B, 2> {
        let [batch, channels, _, _] = features.dims();
        self.fc.forward(features.mean_dim(3).mean_dim(2).reshape([batch, channels]))
    }

    /// `[batch, classes]` logits.
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.head(self.features(images))
    }
}

impl ResNetConfig {
    /// `model`'s weights and batch-norm statistics in a model of this shape on
    /// backend `To`: a trained (inner-backend) model put on the autodiff
    /// backend that saliency maps differentiate on.
    pub fn moved<From: Backend, To: Backend>(
        &self,
        model: &ResNet<From>,
        device: &To::Device,
    ) -> anyhow::Result<ResNet<To>> {
        use burn::record::{FullPrecisionSettings, NamedMpkBytesRecorder, Recorder};
        let recorder = NamedMpkBytesRecorder::<FullPrecisionSettings>::default();
        let bytes = Recorder::<From>::record(&recorder, model.clone().into_record(), ())?;
        let record = Recorder::<To>::load(&recorder, bytes, device)?;
        Ok(self.init::<To>(0, device).load_record(record))
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::{Distribution, TensorData};

    use super::*;

    type B = Flex;

    #[test]
    fn shapes_through_both_stems_and_depths() {
        let device = Default::default();
        let small = ResNetConfig { depth: Depth::R18, width: 4, stem: Stem::Small, classes: 2 }.init::<B>(0, &device);
        let images = Tensor::<B, 4>::random([2, 3, 32, 32], Distribution::Normal(0.0, 1.0), &device);
        // Stride 1 stem, then halved three times: 32 → 4; 4 · 8 channels.
        assert_eq!(small.features(images.clone()).dims(), [2, 32, 4, 4]);
        assert_eq!(small.forward(images).dims(), [2, 2]);
        assert_eq!(small.layer1.len() + small.layer2.len() + small.layer3.len() + small.layer4.len(), 8);
        assert!(small.layer1[0].downsample.is_none() && small.layer2[0].downsample.is_some());

        let wide = ResNetConfig { depth: Depth::R34, width: 2, stem: Stem::ImageNet, classes: 3 }.init::<B>(0, &device);
        let images = Tensor::<B, 4>::random([1, 3, 64, 64], Distribution::Normal(0.0, 1.0), &device);
        // 64 → 32 (stem) → 16 (pool) → 16, 8, 4, 2.
        assert_eq!(wide.features(images.clone()).dims(), [1, 16, 2, 2]);
        assert_eq!(wide.forward(images).dims(), [1, 3]);
        assert_eq!([wide.layer1.len(), wide.layer2.len(), wide.layer3.len(), wide.layer4.len()], [3, 4, 6, 3]);
    }

    /// The published costs of torchvision's models at 224 pixels (its model
    /// cards: 1.81 and 3.66 GFLOPS, counted as multiply-adds).
    #[test]
    fn multiply_adds_match_torchvisions_published_costs() {
        let gmacs = |depth| ResNetConfig::torchvision(depth, 1000).macs_per_image(224) / 1e9;
        assert!((gmacs(Depth::R18) - 1.81).abs() < 0.01, "{}", gmacs(Depth::R18));
        assert!((gmacs(Depth::R34) - 3.66).abs() < 0.01, "{}", gmacs(Depth::R34));
        // The small stem keeps the full resolution through the first stage.
        let small = ResNetConfig { depth: Depth::R18, width: 8, stem: Stem::Small, classes: 2 };
        assert!(small.macs_per_image(32) > small.macs_per_image(16) * 3.9);
        // torchvision's counts (`sum(p.numel() for p in resnet18().parameters())`).
        assert_eq!(ResNetConfig::torchvision(Depth::R18, 1000).parameters(), 11_689_512.0);
        assert_eq!(ResNetConfig::torchvision(Depth::R34, 1000).parameters(), 21_797_672.0);
    }

    /// torchvision's resnet18 has 11,689,512 parameters with 1,000 classes,
    /// resnet34 21,797,672; burn counts the batch norms' running mean and
    /// variance too (torch's buffers): 4,800 and 8,512 features, twice.
    #[test]
    fn resnets_have_torchvisions_parameter_counts() {
        let model = ResNetConfig::torchvision(Depth::R18, 1000).init::<B>(0, &Default::default());
        assert_eq!(model.num_params(), 11_689_512 + 2 * 4_800);
        let model = ResNetConfig::torchvision(Depth::R34, 1000).init::<B>(0, &Default::default());
        assert_eq!(model.num_params(), 21_797_672 + 2 * 8_512);
    }

    /// A skip connection: a block whose second batch norm outputs zeros
    /// passes its (non-negative) input through.
    #[test]
    fn an_identity_block_passes_its_input_through() {
        let device = Default::default();
        let mut block = BasicBlock::<B>::new(&mut ChaCha8Rng::seed_from_u64(0), 3, 3, 1, &device);
        block.bn2.gamma = burn::module::Param::from_tensor(Tensor::zeros([3], &device));
        let x = Tensor::<B, 4>::random([1, 3, 5, 5], Distribution::Uniform(0.0, 1.0), &device);
        let y = block.forward(x.clone());
        y.into_data().assert_approx_eq::<f32>(&x.into_data(), burn::tensor::Tolerance::absolute(1e-6));
    }

    /// On an autodiff backend `evaluate` is what `forward` computes on the
    /// inner one: running statistics, each image on its own.
    #[test]
    fn evaluation_uses_the_running_statistics_on_any_backend() {
        let device = Default::default();
        let model =
            ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<Autodiff<B>>(0, &device);
        let images = Tensor::<B, 4>::random([3, 3, 8, 8], Distribution::Normal(0.0, 1.0), &device);
        let inner = burn::module::AutodiffModule::valid(&model);
        let expected = inner.forward(images.clone()).into_data();
        let got = model.evaluate(Tensor::from_inner(images.clone())).inner().into_data();
        got.assert_approx_eq::<f32>(&expected, burn::tensor::Tolerance::absolute(1e-5));
        let one = model.evaluate(Tensor::from_inner(images.clone().narrow(0, 1, 1))).inner();
        let row = inner.forward(images).narrow(0, 1, 1);
        one.into_data().assert_approx_eq::<f32>(&row.into_data(), burn::tensor::Tolerance::absolute(1e-5));
    }

    /// A training forward through the fused batch norm moves the running
    /// statistics as burn's `BatchNorm` does (the batch's mean and biased
    /// variance, momentum 0.1), twice in a row.
    #[test]
    fn the_fused_batch_norm_moves_the_running_statistics_as_burns() {
        let device = Default::default();
        let ours = BatchNormConfig::new(3).init::<Autodiff<B>>(&device);
        let burns = BatchNormConfig::new(3).init::<Autodiff<B>>(&device);
        for seed in 0..2 {
            let values: Vec<f32> =
                (0..2 * 3 * 4 * 5).map(|i| ((i + 7 * seed) as f32 * 0.37).sin() * 3.0 + 1.0).collect();
            let x = Tensor::<Autodiff<B>, 1>::from_floats(values.as_slice(), &device).reshape([2, 3, 4, 5]);
            let a = norm_then(&ours, x.clone(), Statistics::Backend, None, false);
            let b = burns.forward(x);
            a.inner()
                .into_data()
                .assert_approx_eq::<f32>(&b.inner().into_data(), burn::tensor::Tolerance::absolute(1e-5));
        }
        for (a, b) in [(&ours.running_mean, &burns.running_mean), (&ours.running_var, &burns.running_var)] {
            a.value()
                .into_data()
                .assert_approx_eq::<f32>(&b.value().into_data(), burn::tensor::Tolerance::absolute(1e-6));
        }
    }

    /// Gradients reach the input pixels (what Gradient and SmoothGrad read).
    #[test]
    fn the_input_gets_a_gradient() {
        let device = Default::default();
        let model =
            ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<Autodiff<B>>(0, &device);
        let images = Tensor::<Autodiff<B>, 4>::from_data(
            TensorData::new((0..3 * 16 * 16).map(|i| (i % 7) as f32 / 7.0).collect::<Vec<_>>(), [1, 3, 16, 16]),
            &device,
        )
        .require_grad();
        let logit = model.forward(images.clone()).narrow(1, 1, 1).sum();
        let grads = logit.backward();
        let grad = images.grad(&grads).unwrap();
        assert_eq!(grad.dims(), [1, 3, 16, 16]);
        assert!(grad.abs().sum().into_scalar() > 0.0);
    }
}
