//! Where the gradient methods take "the input embedding" `e_i`.
//!
//! PROTOCOL §1: the word-embedding output, before anything position-dependent
//! is added (`word`, the default). A transformer adds position and segment
//! embeddings to it and normalises the sum per token (LayerNorm); taking `e_i`
//! at that sum instead (`summed`) leaves the gradient as it is (the sum is
//! additive) but changes every method that multiplies by or moves along the
//! input: gradient × input (`(w + p + t) · ∂f/∂e`), IG (its path, and a zero
//! baseline that zeroes the positions too), DeepLift and SmoothGrad's noise.
//! Since LayerNorm is scale-invariant, IG from the zero baseline at the sum
//! evaluates `f` at a constant value along its path and equals gradient × input
//! at the sum times the harmonic number `H_m`: the identity Bastings et al.'s
//! BERT tables show (their IG-zero rows equal their gradient × input row cell
//! for cell), which IG at the word embeddings does not satisfy.
//!
//! [`Summed`] is the model seen from the sum: it embeds a token as its word
//! embedding plus what the model adds at its position, and takes logits from a
//! sum by removing that again. A one-token lookup (IG's `[PAD]` / `[MASK]`
//! baseline row) is at position 0. Models that add nothing (the BiLSTM) are
//! unchanged by it.

use burn::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::{AttentionLeaf, AttentionView, Classifier};

/// `attribution.embeddings` in a grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingPoint {
    /// The word embeddings (PROTOCOL §1).
    #[default]
    Word,
    /// Word + position + segment embeddings, before LayerNorm.
    Summed,
}

impl EmbeddingPoint {
    pub fn is_word(&self) -> bool {
        *self == EmbeddingPoint::Word
    }
}

/// A classifier whose input embeddings are the summed ones (see the module).
#[derive(Debug)]
pub struct Summed<'a, M> {
    inner: &'a M,
}

impl<'a, M> Summed<'a, M> {
    pub fn new(inner: &'a M) -> Self {
        Summed { inner }
    }
}

impl<M> Summed<'_, M> {
    /// `x ± added` at each position (`sign` 1 or −1); `x` unchanged when the
    /// model adds nothing.
    fn shift<B: Backend>(&self, x: Tensor<B, 3>, sign: f64) -> Tensor<B, 3>
    where
        M: Classifier<B>,
    {
        let [_, time, _] = x.dims();
        match self.inner.added_embeddings(time) {
            Some(added) => x + added.mul_scalar(sign).unsqueeze::<3>(),
            None => x,
        }
    }
}

impl<B: Backend, M: Classifier<B>> Classifier<B> for Summed<'_, M> {
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.shift(self.inner.embed(ids), 1.0)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.inner.logits_from_embeddings(self.shift(embeddings, -1.0), mask)
    }

    fn num_outputs(&self) -> usize {
        self.inner.num_outputs()
    }

    fn max_length(&self) -> Option<usize> {
        self.inner.max_length()
    }

    fn added_embeddings(&self, _time: usize) -> Option<Tensor<B, 2>> {
        None
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        self.inner.attention_scores(self.shift(embeddings, -1.0), mask, view)
    }

    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        self.inner.attention_leaf(self.shift(embeddings, -1.0), mask)
    }

    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        self.inner.deeplift_logits(self.shift(embeddings, -1.0), mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenBatch;
    use crate::salience::test_models::{
        Ad, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings, three_examples,
    };
    use crate::salience::{Method, attribute};

    fn scores<M: Classifier<Ad>>(model: &M, method: &str, examples: &crate::salience::Examples<'_>) -> Vec<Vec<f32>> {
        let method: Method = method.parse().unwrap();
        attribute::<Ad, _>(model, method, examples, &VOCAB, &settings(), &Default::default()).unwrap().scores
    }

    fn close(a: f32, b: f32, tolerance: f32) -> bool {
        (a - b).abs() <= tolerance * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn the_summed_view_predicts_as_the_model_does() {
        let model = bert(1, 2);
        let (_, ids) = three_examples();
        let slices: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let batch = TokenBatch::<Ad>::bucketed(
            &slices,
            VOCAB.pad,
            crate::model::shapes::Buckets::EXACT,
            None,
            &Default::default(),
        );
        let plain: Vec<f32> = model.logits(&batch).into_data().to_vec().unwrap();
        let summed: Vec<f32> = Summed::new(&model).logits(&batch).into_data().to_vec().unwrap();
        assert!(plain.iter().zip(&summed).all(|(&a, &b)| close(a, b, 1e-5)), "{plain:?} vs {summed:?}");
    }

    #[test]
    fn the_sum_is_the_word_embedding_plus_what_the_model_adds_at_its_position() {
        let model = bert(2, 1);
        let ids = Tensor::<Ad, 2, Int>::from_data(TensorData::new(vec![2i64, 7, 9, 3], [1, 4]), &Default::default());
        let word: Vec<f32> = model.embed(ids.clone()).into_data().to_vec().unwrap();
        let summed: Vec<f32> = Summed::new(&model).embed(ids).into_data().to_vec().unwrap();
        let added: Vec<f32> = model.added_embeddings(4).unwrap().into_data().to_vec().unwrap();
        assert_eq!(added.len(), word.len());
        assert!(word.iter().zip(&added).zip(&summed).all(|((w, a), s)| close(w + a, *s, 1e-6)));
        assert!(added.iter().any(|&a| a != 0.0), "BERT adds positions");
        // So gradient × input moves with it, the gradient itself does not.
        let (_, examples_ids) = three_examples();
        let examples = bert_examples(&examples_ids);
        assert_ne!(scores(&model, "gxil", &examples), scores(&Summed::new(&model), "gxil", &examples));
        let (g_word, g_sum) =
            (scores(&model, "gradl-l2", &examples), scores(&Summed::new(&model), "gradl-l2", &examples));
        assert!(g_word.iter().flatten().zip(g_sum.iter().flatten()).all(|(&a, &b)| close(a, b, 1e-4)));
    }

    #[test]
    fn integrated_gradients_from_zero_at_the_sum_is_gradient_times_input_times_h_m() {
        // LayerNorm right after the sum is scale-invariant: f is constant along
        // the path from the zero baseline, the gradient at α·s is g(s)/α, and the
        // right Riemann sum gives H_m · (s · g(s)).
        let model = bert(3, 1);
        let (_, ids) = three_examples();
        let examples = bert_examples(&ids);
        let at_sum = Summed::new(&model);
        let gxi = scores(&at_sum, "gxil", &examples);
        let ig = scores(&at_sum, "igl-zero-20", &examples);
        let h: f32 = (1..=20).map(|j| 1.0 / j as f32).sum();
        for (g_row, i_row) in gxi.iter().zip(&ig) {
            for (t, (&g, &i)) in g_row.iter().zip(i_row).enumerate() {
                assert!(close(i, h * g, 1e-3), "token {t}: IG {i} vs H_m · gxi {}", h * g);
            }
        }
        // At the word embeddings the positions stay on the path: no such identity.
        let word_ig = scores(&model, "igl-zero-20", &examples);
        let word_gxi = scores(&model, "gxil", &examples);
        let proportional =
            word_ig.iter().flatten().zip(word_gxi.iter().flatten()).all(|(&i, &g)| close(i, h * g, 1e-3));
        assert!(!proportional);
    }

    #[test]
    fn a_model_that_adds_nothing_is_unchanged() {
        let model = bilstm(4);
        let (ids, _) = three_examples();
        let examples = lstm_examples(&ids);
        for method in ["gxil", "igl-zero-10", "deeplift"] {
            assert_eq!(scores(&model, method, &examples), scores(&Summed::new(&model), method, &examples), "{method}");
        }
    }
}
