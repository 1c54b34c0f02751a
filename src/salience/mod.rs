//! Input salience methods (Bastings et al. 2022 §3.2; PROTOCOL §1).
//!
//! A method config name, as the papers print it, leads straight to its file:
//! `grad{p,l}-{l1,l2,mean}` and `gxi{p,l}` → [`gradient`], `random` → [`random`].
//! Every method scores the *predicted* class: for a binary model predicting 0 the
//! target is −logit (probability 1 − p), so positive salience always means
//! "towards the prediction".

pub mod gradient;
pub mod random;
pub mod target;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What is differentiated: the predicted class's probability (`p`) or logit (`l`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Target {
    Probability,
    Logit,
}

/// How a gradient vector `∂f/∂e_i` becomes one score per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reduction {
    /// `Σ_d |∂f/∂e_id|`
    L1,
    /// `‖∂f/∂e_i‖₂`
    L2,
    /// `mean_d ∂f/∂e_id` (signed)
    Mean,
}

/// A salience method config, named as in the paper's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `grad{p,l}-{l1,l2,mean}`
    Gradient { target: Target, reduction: Reduction },
    /// `gxi{p,l}`: `∂f/∂e_i · e_i`
    GradientTimesInput { target: Target },
    /// `random`: uniform scores, the floor every method must beat.
    Random,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown salience method `{name}`; known: grad{{p,l}}-{{l1,l2,mean}}, gxi{{p,l}}, random")]
pub struct UnknownMethod {
    pub name: String,
}

fn target_letter(target: Target) -> char {
    match target {
        Target::Probability => 'p',
        Target::Logit => 'l',
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Gradient { target, reduction } => {
                let r = match reduction {
                    Reduction::L1 => "l1",
                    Reduction::L2 => "l2",
                    Reduction::Mean => "mean",
                };
                write!(f, "grad{}-{r}", target_letter(*target))
            }
            Method::GradientTimesInput { target } => write!(f, "gxi{}", target_letter(*target)),
            Method::Random => write!(f, "random"),
        }
    }
}

impl FromStr for Method {
    type Err = UnknownMethod;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownMethod { name: name.to_string() };
        let target = |c: &str| match c {
            "p" => Ok(Target::Probability),
            "l" => Ok(Target::Logit),
            _ => Err(unknown()),
        };
        if name == "random" {
            return Ok(Method::Random);
        }
        if let Some(rest) = name.strip_prefix("gxi") {
            return Ok(Method::GradientTimesInput { target: target(rest)? });
        }
        if let Some(rest) = name.strip_prefix("grad") {
            let (t, reduction) = rest.split_once('-').ok_or_else(unknown)?;
            let reduction = match reduction {
                "l1" => Reduction::L1,
                "l2" => Reduction::L2,
                "mean" => Reduction::Mean,
                _ => return Err(unknown()),
            };
            return Ok(Method::Gradient { target: target(t)?, reduction });
        }
        Err(unknown())
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Salience for one batch: per example, one score per token position of the
/// (padded) batch, and the predicted class. `example_ids` seed the per-example
/// randomness of stochastic methods, so batching never changes a score.
pub fn attribute_batch<B, M>(
    model: &M,
    method: Method,
    batch: &crate::model::TokenBatch<B>,
    example_ids: &[u64],
    seed: u64,
) -> (Vec<Vec<f32>>, Vec<u32>)
where
    B: burn::tensor::backend::AutodiffBackend,
    M: crate::model::Classifier<B>,
{
    use burn::prelude::*;
    let [rows, time] = batch.ids.dims();
    let to_rows = |t: Tensor<B::InnerBackend, 2>| -> Vec<Vec<f32>> {
        let values: Vec<f32> = t.into_data().convert::<f32>().to_vec().unwrap_or_default();
        values.chunks(time).map(<[f32]>::to_vec).collect()
    };
    match method {
        Method::Gradient { target, reduction } => {
            let g = gradient::input_gradients(model, batch, target);
            (to_rows(gradient::reduce(g.gradients, reduction)), g.predicted)
        }
        Method::GradientTimesInput { target } => {
            let g = gradient::input_gradients(model, batch, target);
            (to_rows(gradient::gradient_times_input(g.gradients, g.embeddings)), g.predicted)
        }
        Method::Random => {
            let predicted = crate::model::predicted_classes(model.logits(batch));
            let scores = example_ids.iter().take(rows).map(|&id| random::random_scores(seed, id, time)).collect();
            (scores, predicted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in ["gradp-l1", "gradl-l2", "gradp-mean", "gxip", "gxil", "random"] {
            let m: Method = name.parse().unwrap();
            assert_eq!(m.to_string(), name);
        }
        for bad in ["grad-l1", "gradx-l1", "gradp-l3", "gxi", "gxipp", "ig"] {
            assert!(bad.parse::<Method>().is_err(), "{bad}");
        }
    }
}
