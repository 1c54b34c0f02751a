//! Every method scores the same through the model layer's machinery as
//! without it: through shape buckets ([`grid_core::model::shapes`]) and, with the
//! `libtorch` feature, on LibTorch's kernels as on Flex's. They sit with the
//! methods because they run all of them.

#[cfg(test)]
mod through_buckets {
    use grid_core::buckets::Buckets;
    use grid_core::model::shapes::Shaped;

    /// Every method gives the same scores and predictions through the buckets as
    /// without them, on both architectures: the padding is masked, the filler
    /// rows dropped, and randomness is seeded per example, not per batch.
    #[test]
    fn every_method_scores_the_same_through_the_buckets() {
        use crate::salience::test_models::{
            Ad, EVERY_METHOD, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings, three_examples,
        };
        use crate::salience::{Method, attribute};

        let (lstm_ids, bert_ids) = three_examples();
        let methods = EVERY_METHOD;
        let lstm = bilstm(11);
        let bert = bert(12, 2);
        let device = Default::default();
        let buckets = Buckets { length_multiple: 8, pad_rows: true };
        let mut compared = 0;
        for name in methods {
            let method: Method = name.parse().unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let pairs = [
                (
                    attribute::<Ad, _>(&lstm, method, &lstm_examples(&lstm_ids), &VOCAB, &settings(), &device),
                    attribute::<Ad, _>(
                        &Shaped::new(&lstm, buckets),
                        method,
                        &lstm_examples(&lstm_ids),
                        &VOCAB,
                        &settings(),
                        &device,
                    ),
                ),
                (
                    attribute::<Ad, _>(&bert, method, &bert_examples(&bert_ids), &VOCAB, &settings(), &device),
                    attribute::<Ad, _>(
                        &Shaped::new(&bert, buckets),
                        method,
                        &bert_examples(&bert_ids),
                        &VOCAB,
                        &settings(),
                        &device,
                    ),
                ),
            ];
            for (exact, bucketed) in pairs {
                let (Ok(exact), Ok(bucketed)) = (exact, bucketed) else { continue };
                compared += 1;
                assert_eq!(exact.predicted, bucketed.predicted, "{name}");
                for (a, b) in exact.scores.iter().flatten().zip(bucketed.scores.iter().flatten()) {
                    let scale = a.abs().max(1.0);
                    assert!((a - b).abs() <= 1e-5 * scale, "{name}: {a} vs {b}");
                }
                assert_eq!(
                    exact.scores.iter().map(Vec::len).collect::<Vec<_>>(),
                    bucketed.scores.iter().map(Vec::len).collect::<Vec<_>>()
                );
            }
        }
        // attn is the BiLSTM's alone, attn-last/-all BERT's alone.
        assert_eq!(compared, 2 * methods.len() - 3, "every method ran on every model it supports");
    }
}

/// Equivalence with Flex, on the CPU: every method, both architectures, the
/// same seeded models. Flex agrees with Captum and transformers, so LibTorch
/// does too where these agree.
#[cfg(all(test, feature = "libtorch"))]
mod on_libtorch {
    use crate::salience::test_models::{
        EVERY_METHOD, VOCAB, bert_examples, bert_on, bilstm_on, lstm_examples, settings, three_examples,
    };
    use crate::salience::{Method, attribute};
    use grid_core::backend::CpuAutodiff;
    use grid_core::backend::DeviceChoice;
    use grid_core::backend::libtorch::{self, LibTorchAutodiff};

    /// The two libraries' kernels sum in different orders; measured: 4.8e-7
    /// relative at most, over every method and both architectures.
    const TOLERANCE: f32 = 1e-5;

    #[test]
    fn every_method_scores_as_on_flex() {
        let (lstm_ids, bert_ids) = three_examples();
        let methods = EVERY_METHOD;
        let flex = Default::default();
        let torch = libtorch::device(DeviceChoice::Cpu);
        let lstm_flex = bilstm_on::<CpuAutodiff>(11, &flex);
        let lstm_torch = bilstm_on::<LibTorchAutodiff>(11, &torch);
        let bert_flex = bert_on::<CpuAutodiff>(12, 2, &flex);
        let bert_torch = bert_on::<LibTorchAutodiff>(12, 2, &torch);
        let mut compared = 0;
        let mut worst = 0f32;
        for name in methods {
            let method: Method = name.parse().unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let lstm = lstm_examples(&lstm_ids);
            let bert = bert_examples(&bert_ids);
            let pairs = [
                (
                    attribute::<CpuAutodiff, _>(&lstm_flex, method, &lstm, &VOCAB, &settings(), &flex),
                    attribute::<LibTorchAutodiff, _>(&lstm_torch, method, &lstm, &VOCAB, &settings(), &torch),
                ),
                (
                    attribute::<CpuAutodiff, _>(&bert_flex, method, &bert, &VOCAB, &settings(), &flex),
                    attribute::<LibTorchAutodiff, _>(&bert_torch, method, &bert, &VOCAB, &settings(), &torch),
                ),
            ];
            for (on_flex, on_torch) in pairs {
                let (on_flex, on_torch) = match (on_flex, on_torch) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(_), Err(_)) => continue, // a method the architecture lacks, on both
                    (a, b) => panic!("{name}: flex {:?} but libtorch {:?}", a.err(), b.err()),
                };
                compared += 1;
                assert_eq!(on_flex.predicted, on_torch.predicted, "{name}");
                assert_eq!(
                    on_flex.scores.iter().map(Vec::len).collect::<Vec<_>>(),
                    on_torch.scores.iter().map(Vec::len).collect::<Vec<_>>()
                );
                for (a, b) in on_flex.scores.iter().flatten().zip(on_torch.scores.iter().flatten()) {
                    let difference = (a - b).abs() / a.abs().max(1.0);
                    worst = worst.max(difference);
                    assert!(difference <= TOLERANCE, "{name}: flex {a} vs libtorch {b}");
                }
            }
        }
        assert_eq!(compared, 2 * methods.len() - 3, "every method ran on every model it supports");
        eprintln!("largest relative difference, libtorch vs flex: {worst:e}");
    }
}
