//! BERT-family sequence classifiers (`BertForSequenceClassification` and its
//! RoBERTa and DistilBERT kin, [`family`]): a Hugging Face encoder, dropout on
//! the pooled first-token output, and one linear layer to 1 logit (binary) or C
//! logits.

pub mod config;
pub mod encoder;
pub mod family;
pub mod load;
pub mod saved;

use burn::module::Param;
use burn::nn::Linear;
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

pub use config::BertConfig;
use encoder::{BertModel, ProbsHook};

use super::init;
use super::noise::Noise;
use super::rules::Rules;
use super::{AttentionLeaf, Classifier, TokenBatch};
use crate::model::AttentionView;
use crate::model::objective::Trainable;

#[derive(Module, Debug)]
pub struct BertClassifier<B: Backend> {
    pub bert: BertModel<B>,
    pub classifier: Linear<B>,
    dropout: f64,
}

impl<B: Backend> BertClassifier<B> {
    /// A classifier on `bert` with a fresh head (N(0, initializer_range²), bias 0).
    pub fn with_encoder(
        bert: BertModel<B>,
        config: &BertConfig,
        num_outputs: usize,
        rng: &mut ChaCha8Rng,
        device: &B::Device,
    ) -> Self {
        let classifier = Linear {
            weight: init::normal(rng, [config.hidden_size, num_outputs], config.initializer_range, device),
            bias: Some(Param::from_tensor(Tensor::zeros([num_outputs], device))),
        };
        Self { bert, classifier, dropout: config.classifier_dropout() }
    }

    /// A classifier on `bert` with a head read from a checkpoint ([`load::load_head`]).
    pub fn with_head(bert: BertModel<B>, classifier: Linear<B>, config: &BertConfig) -> Self {
        Self { bert, classifier, dropout: config.classifier_dropout() }
    }

    /// A randomly initialised encoder and head.
    pub fn new(config: &BertConfig, num_outputs: usize, rng: &mut ChaCha8Rng, device: &B::Device) -> Self {
        let bert = BertModel::new(config, rng, device);
        Self::with_encoder(bert, config, num_outputs, rng, device)
    }

    /// Logits from word embeddings; with `noise`, the training forward pass.
    pub fn forward(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>, mut noise: Option<&mut Noise>) -> Tensor<B, 2> {
        // The last layer at `[CLS]` only: the classifier reads nothing else.
        let pooled = self.bert.pooled(words, mask, noise.as_deref_mut());
        let pooled = match noise {
            Some(noise) => noise.dropout_on_device(pooled, self.dropout),
            None => pooled,
        };
        self.classifier.forward(pooled)
    }

    /// Attention probabilities of every layer, `[batch, heads, time, time]` each.
    pub fn attentions(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>) -> Vec<Tensor<B, 4>> {
        self.bert.forward_from_words(words, mask, true, None).attentions
    }

    /// Inference logits with the salience hooks of [`BertModel::forward_under`],
    /// and every layer's attention probabilities (the last one after `last_attention`).
    pub fn forward_under(
        &self,
        words: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        rules: Rules,
        last_attention: Option<ProbsHook<B>>,
    ) -> (Tensor<B, 2>, Vec<Tensor<B, 4>>) {
        let output = self.bert.forward_under(words, mask, true, None, rules, last_attention);
        (self.classifier.forward(output.pooled), output.attentions)
    }
}

impl<B: Backend> Classifier<B> for BertClassifier<B> {
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.bert.embeddings.words(ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward(embeddings, mask, None)
    }

    fn num_outputs(&self) -> usize {
        self.classifier.weight.dims()[1]
    }

    fn max_length(&self) -> Option<usize> {
        Some(self.bert.max_length())
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        crate::model::first_token_attention(self.attentions(embeddings, mask), view)
    }

    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        let leaf = |probs: Tensor<B, 4>| probs.detach().require_grad();
        let (logits, mut attentions) = self.forward_under(embeddings, mask, Rules::Plain, Some(&leaf));
        Some(AttentionLeaf { probs: attentions.pop()?, logits })
    }

    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        Some(self.forward_under(embeddings, mask, Rules::Rescale, None).0)
    }
}

impl<B: Backend> Trainable<B> for BertClassifier<B> {
    fn logits_train(&self, batch: &TokenBatch<B>, noise: &mut Noise) -> Tensor<B, 2> {
        self.forward(self.embed(batch.ids.clone()), batch.mask.clone(), Some(noise))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenBatch;
    use burn::backend::{Autodiff, Flex};
    use rand::SeedableRng;

    type Ad = Autodiff<Flex>;

    use crate::model::toy::plain_bert as tiny;

    fn logits(model: &BertClassifier<Ad>, sequences: &[&[u32]]) -> Vec<f32> {
        let batch = TokenBatch::<Ad>::from_sequences(sequences, 0, &Default::default());
        model.logits(&batch).into_data().to_vec().unwrap()
    }

    /// Every parameter trains, however the encoder was built: from scratch
    /// with either position start, or from a `transformers` checkpoint with
    /// rows appended for the shortcut tokens.
    #[test]
    fn every_parameter_gets_a_gradient() {
        use crate::model::bert::encoder::BertModel;
        use crate::model::bert::load::{add_word_embeddings, load_pretrained};
        let device = Default::default();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let config = BertConfig::small(20, 16, 2, 2, 32, 16);
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bert_transformers");
        let (pretrained_config, pretrained, _) = load_pretrained::<Ad>(&fixture, &mut rng, &device).unwrap();
        let encoders = [
            (config.clone(), BertModel::<Ad>::new(&config, &mut rng, &device)),
            (config.clone(), BertModel::<Ad>::new(&config, &mut rng, &device).with_sinusoidal_positions(0.02)),
            (pretrained_config.clone(), add_word_embeddings(pretrained, 3, 0.02, &mut rng)),
        ];
        for (config, encoder) in encoders {
            let model = BertClassifier::with_encoder(encoder.with_dropout(&config), &config, 2, &mut rng, &device);
            let batch = TokenBatch::<Ad>::from_sequences(&[&[2, 5, 7, 3], &[2, 9, 3]], 0, &device);
            let grads = model.logits(&batch).sum().backward();
            let (missing, total) = crate::model::params_without_grad(&model, &grads);
            assert!(total > 10 && missing == 0, "{missing} of {total} parameters got no gradient");
        }
    }

    /// Inference runs the last layer at `[CLS]` only: the full pass's pooled
    /// state and logits, and their gradients at the word embeddings, to
    /// float rounding, with padding in the batch.
    #[test]
    fn inference_reads_the_last_layer_at_cls_only() {
        let model = tiny(3, 5);
        let batch = TokenBatch::<Ad>::from_sequences(
            &[&[2, 5, 7, 3], &[2, 9, 8, 9, 9, 6, 4, 3], &[2, 3]],
            0,
            &Default::default(),
        );
        let words = model.embed(batch.ids.clone()).detach().require_grad();
        let full = model.bert.forward_from_words(words.clone(), batch.mask.clone(), false, None).pooled;
        let fast = model.bert.pooled(words.clone(), batch.mask.clone(), None);
        assert_eq!(full.dims(), fast.dims());
        let close = |a: Tensor<Flex, 2>, b: Tensor<Flex, 2>, what: &str| {
            let (a, b): (Vec<f32>, Vec<f32>) = (a.into_data().to_vec().unwrap(), b.into_data().to_vec().unwrap());
            let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
            assert!(worst <= 1e-5, "{what} differ by {worst}");
        };
        close(full.inner(), fast.inner(), "pooled states");
        let (ours, _) = model.forward_under(words.clone(), batch.mask.clone(), Rules::Plain, None);
        let theirs = model.forward(words.clone(), batch.mask.clone(), None);
        close(ours.clone().inner(), theirs.clone().inner(), "logits");
        let gradient = |logits: Tensor<Ad, 2>| {
            let grads = logits.sum().backward();
            let g = words.grad(&grads).unwrap();
            let [b, t, h] = g.dims();
            g.reshape([b, t * h])
        };
        close(gradient(ours), gradient(theirs), "gradients at the words");
    }

    /// Training through the last layer at `[CLS]` only: with dropout
    /// everywhere and the backend seeded alike, the full pass's loss and
    /// every parameter's gradient to float rounding (each mask drawn whole
    /// and cut, so the random stream is the full pass's).
    #[test]
    fn training_reads_the_last_layer_at_cls_only() {
        use burn::module::Module;
        // Its dropout masks come from the backend's global RNG, seeded below:
        // no other training may draw from it meanwhile.
        let _turn = crate::train::ONE_TRAINING_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let device = Default::default();
        let mut config = BertConfig::small(20, 16, 2, 2, 32, 16);
        (config.hidden_dropout_prob, config.attention_probs_dropout_prob) = (0.3, 0.2);
        let model = BertClassifier::<Ad>::new(&config, 2, &mut ChaCha8Rng::seed_from_u64(8), &device);
        let batch = TokenBatch::<Ad>::from_sequences(&[&[2, 5, 7, 3], &[2, 9, 8, 9, 9, 6, 4, 3]], 0, &device);
        let run = |full: bool| {
            crate::model::noise::seed_device::<Ad>(&device, 21);
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut noise = Noise::new(&mut rng);
            let words = model.embed(batch.ids.clone());
            let logits = if full {
                let pooled = model.bert.forward_from_words(words, batch.mask.clone(), false, Some(&mut noise)).pooled;
                model.classifier.forward(noise.dropout_on_device(pooled, model.dropout))
            } else {
                model.forward(words, batch.mask.clone(), Some(&mut noise))
            };
            let loss = logits.clone().powf_scalar(2.0).sum();
            let grads = loss.clone().backward();
            struct Collect<'a> {
                grads: &'a <Ad as burn::tensor::backend::AutodiffBackend>::Gradients,
                into: Vec<f32>,
            }
            impl burn::module::ModuleVisitor<Ad> for Collect<'_> {
                fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<Ad, D>>) {
                    let grad = param.grad(self.grads).expect("every parameter gets a gradient");
                    self.into.extend(grad.into_data().to_vec::<f32>().unwrap());
                }
            }
            let mut collect = Collect { grads: &grads, into: loss.into_data().to_vec().unwrap() };
            model.visit(&mut collect);
            collect.into
        };
        let (full, ours) = (run(true), run(false));
        assert_eq!(full.len(), ours.len());
        assert!(full.len() > 1000, "every parameter's gradient: {}", full.len());
        let worst = full.iter().zip(&ours).map(|(a, b)| (a - b).abs() / (1.0 + a.abs())).fold(0.0f32, f32::max);
        assert!(worst <= 1e-5, "loss or a gradient differs by {worst}");
    }

    #[test]
    fn padding_never_changes_real_tokens() {
        let model = tiny(3, 1);
        let alone = logits(&model, &[&[2, 5, 7, 3]]);
        let padded = logits(&model, &[&[2, 5, 7, 3], &[2, 9, 9, 9, 9, 9, 4, 3]]);
        for (a, b) in alone.iter().zip(&padded[..3]) {
            assert!((a - b).abs() < 1e-5, "{alone:?} vs {padded:?}");
        }
        let batch = TokenBatch::<Ad>::from_sequences(&[&[2, 5, 3], &[2, 5, 6, 7, 3]], 0, &Default::default());
        let attentions = model.attentions(model.embed(batch.ids), batch.mask);
        assert_eq!(attentions.len(), 2);
        let first: Vec<f32> = attentions[0].clone().into_data().to_vec().unwrap();
        // Row [CLS] of head 0 in the short sequence: its two padding keys get 0, the rest sums to 1.
        let row = &first[0..5];
        assert!(row[3].abs() < 1e-9 && row[4].abs() < 1e-9, "{row:?}");
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn learns_a_three_class_rule() {
        use crate::train::recipe::{Optimizer, Schedule, TrainingSpec};
        use crate::train::{TrainExample, TrainSetup, train};
        use crate::values::{Positive, Share};
        use rand::Rng;
        // Class = which of tokens 5, 6, 7 the sequence contains.
        let data = |n: usize, seed: u64| -> Vec<TrainExample> {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..n)
                .map(|_| {
                    let label = rng.random_range(0..3u32);
                    let mut ids: Vec<u32> = (0..rng.random_range(3..8)).map(|_| rng.random_range(8..20)).collect();
                    let at = rng.random_range(0..ids.len());
                    ids[at] = 5 + label;
                    ids.insert(0, 2);
                    ids.push(3);
                    TrainExample { ids, label, marked: false }
                })
                .collect()
        };
        let spec = TrainingSpec {
            batch_size: Positive::new(16),
            optimizer: Optimizer::Adamw,
            learning_rate: 2e-3,
            weight_decay: 0.0,
            schedule: Schedule::Linear { warmup_share: Share::new(0.1) },
            max_steps: Positive::new(500),
            eval_every: Positive::new(100),
            keep: crate::train::recipe::Keep::Best {
                patience: Positive::new(500),
                by: crate::train::recipe::BestBy::Accuracy,
            },
            max_grad_norm: Some(1.0),
            stop_at_accuracy: None,
            seed: 4,
        };
        let progress = indicatif::ProgressBar::hidden();
        let setup = TrainSetup::quiet(&progress);
        let (model, summary) =
            train::<Ad, _>(tiny(3, 5), &spec, &setup, &data(600, 1), &data(150, 2), &Default::default()).unwrap();
        assert_eq!(model.num_outputs(), 3);
        assert!(summary.best_validation_accuracy > 0.9, "{summary:?}");
    }

    /// With dropout drawn from the backend's RNG, a run stopped part way and
    /// resumed from its snapshot ends with the weights of an unbroken run:
    /// the RNG is re-seeded at every evaluation step, and on the CPU backend
    /// the snapshot keeps where its mask stream stood, so the run resumes
    /// where it stopped, with or without dropout.
    #[test]
    fn training_with_device_dropout_resumes_exactly() {
        use crate::train::recipe::{Optimizer, Schedule, TrainingSpec};
        use crate::train::{Snapshots, Stopped, TrainExample, TrainSetup, train};
        use crate::values::{Positive, Share};
        use rand::Rng;
        let data = |n: usize, seed: u64| -> Vec<TrainExample> {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..n)
                .map(|_| {
                    let label = rng.random_range(0..2u32);
                    let mut ids: Vec<u32> = (0..rng.random_range(3..8)).map(|_| rng.random_range(8..20)).collect();
                    let at = rng.random_range(0..ids.len());
                    ids[at] = 5 + label;
                    TrainExample { ids, label, marked: false }
                })
                .collect()
        };
        let spec = TrainingSpec {
            batch_size: Positive::new(16),
            optimizer: Optimizer::Adamw,
            learning_rate: 2e-3,
            weight_decay: 0.01,
            schedule: Schedule::Linear { warmup_share: Share::new(0.1) },
            max_steps: Positive::new(60),
            eval_every: Positive::new(20),
            keep: crate::train::recipe::Keep::Last,
            max_grad_norm: Some(1.0),
            stop_at_accuracy: None,
            seed: 4,
        };
        let model = |dropout: f64| {
            let mut config = BertConfig::small(20, 16, 2, 2, 32, 16);
            config.hidden_dropout_prob = dropout;
            config.attention_probs_dropout_prob = dropout;
            BertClassifier::<Ad>::new(&config, 1, &mut ChaCha8Rng::seed_from_u64(3), &Default::default())
        };
        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots { dir: dir.path().join("resume"), every: std::time::Duration::ZERO };
        let run = |dropout: f64, snapshots: Option<&Snapshots>, stop_after: Option<usize>| {
            let progress = indicatif::ProgressBar::hidden();
            let batches = std::sync::atomic::AtomicUsize::new(0);
            let stop = || stop_after.is_some_and(|n| batches.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= n);
            let setup = TrainSetup { snapshots, stop: &stop, ..TrainSetup::quiet(&progress) };
            train::<Ad, _>(model(dropout), &spec, &setup, &data(300, 1), &data(60, 2), &Default::default())
        };
        let probe: Vec<Vec<u32>> = data(20, 9).into_iter().map(|e| e.ids).collect();
        let refs: Vec<&[u32]> = probe.iter().map(Vec::as_slice).collect();
        let outputs = |m: &BertClassifier<burn::backend::Flex>| -> Vec<f32> {
            let batch = TokenBatch::from_sequences(&refs, 0, &Default::default());
            m.logits(&batch).into_data().to_vec().unwrap()
        };
        let (unbroken, whole) = run(0.2, None, None).unwrap();
        let stopped = run(0.2, Some(&snapshots), Some(30)).expect_err("stopped");
        assert_eq!(stopped, Stopped::Interrupted { step: 31, resumes_from: Some(30) });
        let (resumed, summary) = run(0.2, Some(&snapshots), None).unwrap();
        assert_eq!(summary.log, whole.log);
        assert_eq!(outputs(&resumed), outputs(&unbroken));
        // The masks matter: the same run without dropout ends elsewhere, so
        // the resumed run matched because it drew the same masks.
        let (other, other_summary) = run(0.0, None, None).unwrap();
        assert_ne!(outputs(&other), outputs(&unbroken));
        let snapshots = Snapshots { dir: dir.path().join("resume without dropout"), ..snapshots };
        let stopped = run(0.0, Some(&snapshots), Some(30)).expect_err("stopped");
        assert_eq!(stopped, Stopped::Interrupted { step: 31, resumes_from: Some(30) });
        let (resumed, summary) = run(0.0, Some(&snapshots), None).unwrap();
        assert_eq!(summary.log, other_summary.log);
        assert_eq!(outputs(&resumed), outputs(&other));
    }
}
