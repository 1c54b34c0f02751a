//! Zhou et al.'s image protocol end to end on the CPU, at the smallest
//! scale that still says something: crops of the embedded photographs,
//! labels reassigned with r = 0.5 and one manipulation planted, a narrow
//! ResNet trained until it reads the manipulation, verified, explained by
//! the five saliency maps, and `Attr%` read against `%ER`.

use burn::backend::{Autodiff, Flex};
use grid_core::image::samples::{DEFAULT_CLASSES, crops};
use grid_core::image::slic::{SlicOptions, slic};
use grid_core::image::{Image, Mask};
use grid_core::model::resnet::{Depth, ResNetConfig, Stem};
use grid_core::train::Control;
use grid_core::train::images::{LabelledImage, predict_images, train_resnet};
use grid_core::train::recipe::{BestBy, Keep, Optimizer, Schedule, TrainingSpec};
use grid_core::values::{Positive, Share};
use grid_methods::metrics::pixel_attr::attr_share;
use grid_methods::salience::image::PixelMap;
use grid_methods::salience::image::gradcam::gradcam;
use grid_methods::salience::image::gradient::gradient;
use grid_methods::salience::image::gradient_shap::{GradientShapOptions, gradient_shap};
use grid_methods::salience::image::kernel_shap::{KernelShapOptions, kernel_shap};
use grid_methods::salience::image::lime::{LimeOptions, lime};
use grid_methods::salience::image::perturb::Evaluated;
use grid_methods::salience::image::smoothgrad::{SmoothGradOptions, smoothgrad};
use grid_methods::shortcut::image::ImageShortcut;
use grid_methods::shortcut::image::dataset::manipulate;
use grid_methods::shortcut::image::verification::{ImageThresholds, verify};

type A = Autodiff<Flex>;

fn labelled(set: &grid_methods::shortcut::image::dataset::ManipulatedSet) -> Vec<LabelledImage> {
    set.examples
        .iter()
        .map(|e| LabelledImage { image: e.image.clone(), label: e.label as u32, marked: e.manipulated })
        .collect()
}

struct Cell {
    accuracy: f64,
    passed: bool,
    region: f64,
    /// Mean Attr% per method over the manipulated and the untouched test images.
    attr: Vec<(&'static str, f64, f64)>,
}

/// How much to spend on a cell.
struct Budget {
    side: usize,
    train_images: usize,
    steps: usize,
    test_per_class: usize,
    /// All six maps, or the quick three (Gradient, GradCAM, KernelSHAP).
    every_method: bool,
}

fn run_cell(name: &str, budget: &Budget) -> Cell {
    let device = Default::default();
    let shortcut = ImageShortcut::default_of(name).unwrap();
    let data = |per_class, seed| {
        let images = crops(&DEFAULT_CLASSES, per_class, budget.side, seed).unwrap();
        let examples: Vec<(Image, usize)> = images.into_iter().map(|(i, l)| (i, l as usize)).collect();
        manipulate(&examples, &shortcut, 0.5, seed + 100).unwrap()
    };
    let (train, validation, test) = (data(budget.train_images / 2, 1), data(40, 2), data(budget.test_per_class, 3));
    let spec = TrainingSpec {
        batch_size: Positive::new(32),
        optimizer: Optimizer::Sgd { momentum: Share::new(0.9) },
        learning_rate: 0.05,
        weight_decay: 1e-4,
        schedule: Schedule::Constant,
        max_steps: Positive::new(budget.steps),
        eval_every: Positive::new(25),
        keep: Keep::Best { patience: Positive::new(budget.steps), by: BestBy::Accuracy },
        max_grad_norm: None,
        stop_at_accuracy: None,
        seed: 1,
    };
    let progress = indicatif::ProgressBar::hidden();
    let control = Control { progress: &progress, log: &|l| eprintln!("{name}: {l}"), snapshots: None, stop: &|| false };
    let config = ResNetConfig { depth: Depth::R18, width: 8, stem: Stem::Small, classes: 2 };
    let (model, _) = train_resnet(
        config.init::<A>(1, &device),
        &spec,
        &control,
        &labelled(&train),
        &labelled(&validation),
        &|_, _| {},
        &device,
    )
    .unwrap();
    let images: Vec<&Image> = test.examples.iter().map(|e| &e.image).collect();
    let labels: Vec<u32> = test.examples.iter().map(|e| e.label as u32).collect();
    let manipulated: Vec<bool> = test.examples.iter().map(|e| e.manipulated).collect();
    let predictions = predict_images(&model, &images, &device);
    let verification = verify(&predictions, &labels, &manipulated, 0.5, ImageThresholds::default());

    // The explained model on the autodiff backend (its weights, evaluated).
    let explained = config.moved::<Flex, A>(&model, &device).unwrap();
    let targets: Vec<usize> = predictions.iter().map(|&p| p as usize).collect();
    let streams: Vec<u64> = (0..images.len() as u64).collect();
    let segments: Vec<_> =
        images.iter().map(|i| slic(i, SlicOptions { segments: 16, ..SlicOptions::default() })).collect();
    let probabilities = Evaluated::<Flex>::new(&explained, 64, &device);
    let timed = |name: &'static str, f: &dyn Fn() -> Vec<PixelMap>| {
        let started = std::time::Instant::now();
        let maps = f();
        eprintln!("{name}: {} maps in {:.1} s", maps.len(), started.elapsed().as_secs_f64());
        (name, maps)
    };
    let smooth = SmoothGradOptions { samples: 16, ..Default::default() };
    let shap = GradientShapOptions { samples: 32, per_eval: 32, seed: 0 };
    let kernel_shap_samples = if budget.every_method { 100 } else { 64 };
    let mut maps: Vec<(&'static str, Vec<PixelMap>)> = vec![
        timed("gradient", &|| gradient(&explained, &images, &targets, &device)),
        timed("gradcam", &|| gradcam(&explained, &images, &targets, &device)),
        timed("kernelshap", &|| {
            let options = KernelShapOptions { samples: kernel_shap_samples, ..Default::default() };
            kernel_shap(&probabilities, &images, &segments, &targets, &streams, options)
        }),
    ];
    if budget.every_method {
        maps.push(timed("smoothgrad", &|| smoothgrad(&explained, &images, &targets, &streams, smooth, &device)));
        maps.push(timed("lime", &|| {
            lime(
                &probabilities,
                &images,
                &segments,
                &targets,
                &streams,
                LimeOptions { samples: 100, ..Default::default() },
            )
        }));
        maps.push(timed("gradientshap", &|| {
            gradient_shap(&explained, &images, &targets, &streams, &images, shap, &device)
        }));
    }
    let region: &Mask = &test.region;
    let attr = maps
        .iter()
        .map(|(method, maps)| {
            let mean = |want: bool| {
                let shares: Vec<f64> = maps
                    .iter()
                    .zip(&manipulated)
                    .filter(|(_, m)| **m == want)
                    .filter_map(|(map, _)| attr_share(&map.values, region))
                    .collect();
                shares.iter().sum::<f64>() / shares.len().max(1) as f64
            };
            (*method, mean(true), mean(false))
        })
        .collect();
    Cell { accuracy: verification.accuracy, passed: verification.passed, region: region.share(), attr }
}

/// In the suite: the watermark, the manipulation the paper finds easiest,
/// is learned and verified, and KernelSHAP puts most of its attribution on
/// it where it is present, well above the even map's `%ER`, and more than
/// where it is absent (the paper: presence is found more easily).
#[test]
fn a_planted_watermark_is_learned_verified_and_found() {
    let budget = Budget { side: 32, train_images: 800, steps: 150, test_per_class: 10, every_method: false };
    let cell = run_cell("watermark", &budget);
    assert!(cell.passed, "accuracy {}", cell.accuracy);
    let (_, present, absent) = cell.attr.iter().find(|(m, ..)| *m == "kernelshap").copied().unwrap();
    assert!(
        present > cell.region + 0.2 && present > absent,
        "KernelSHAP {present:.3} / {absent:.3}, %ER {:.3}",
        cell.region
    );
}

fn report(name: &str) -> Cell {
    let started = std::time::Instant::now();
    // GRID_IMAGE_SIDE and GRID_IMAGE_STEPS change the defaults (32, 300).
    let env = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (side, steps) = (env("GRID_IMAGE_SIDE", 32), env("GRID_IMAGE_STEPS", 300));
    let budget = Budget { side, train_images: 800, steps, test_per_class: 20, every_method: true };
    let cell = run_cell(name, &budget);
    println!(
        "{name} ({side} px, {steps} steps): accuracy {:.3} passed {} %ER {:.3} ({:.0} s)",
        cell.accuracy,
        cell.passed,
        cell.region,
        started.elapsed().as_secs_f64()
    );
    for (method, on, off) in &cell.attr {
        println!("  {method:<13} Attr% manipulated {on:.3}  untouched {off:.3}");
    }
    cell
}

#[test]
#[ignore = "minutes: the protocol's numbers on the CPU (prints them)"]
fn watermark_on_the_cpu() {
    report("watermark");
}

#[test]
#[ignore = "minutes: the protocol's numbers on the CPU (prints them)"]
fn brightness_on_the_cpu() {
    report("brightness");
}

#[test]
#[ignore = "minutes: the protocol's numbers on the CPU (prints them)"]
fn hue_on_the_cpu() {
    report("hue");
}

#[test]
#[ignore = "minutes: the protocol's numbers on the CPU (prints them)"]
fn noise_on_the_cpu() {
    report("noise");
}

#[test]
#[ignore = "minutes: the protocol's numbers on the CPU (prints them)"]
fn blur_on_the_cpu() {
    report("blur");
}
