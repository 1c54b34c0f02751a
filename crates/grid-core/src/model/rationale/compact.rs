//! The predictor reading the selected words alone, in their order, as Lei et
//! al.'s and Bastings et al.'s encoders read a rationale (their recurrence
//! skips every unselected word, so neither its count nor its place reaches
//! the prediction). The selected words move to the front of each row and the
//! rest become padding; a row that selects nothing keeps one word, gated to
//! the zero vector, so that it still has a prediction (a constant one).

use burn::prelude::*;

use crate::model::bilstm::permute_time;

/// A batch's rows reordered: selected positions first.
#[derive(Debug, Clone)]
pub struct Compaction<B: Backend> {
    /// `[batch, time]`: the original position at each new one.
    order: Tensor<B, 2, Int>,
    /// `[batch, time]`: the new position of each original one.
    inverse: Tensor<B, 2, Int>,
    /// `[batch, time]`: 1 on the selected words' new positions (at least one).
    mask: Tensor<B, 2>,
    /// `[batch, time]`: 1 where the original position is selected.
    selected: Tensor<B, 2>,
}

impl<B: Backend> Compaction<B> {
    /// The reordering that `gates` (`[batch, time]`, 0 at padding and at
    /// unselected words) asks for. Reads the gates back to the host.
    pub fn of(gates: &Tensor<B, 2>) -> Self {
        let [batch, time] = gates.dims();
        let device = gates.device();
        let values: Vec<f32> = gates.clone().into_data().convert::<f32>().to_vec().expect("f32 gates");
        let (mut order, mut inverse, mut mask) =
            (Vec::with_capacity(batch * time), vec![0i64; batch * time], Vec::new());
        for row in values.chunks(time.max(1)) {
            let (chosen, rest): (Vec<usize>, Vec<usize>) = (0..time).partition(|&t| row[t] > 0.0);
            let kept = chosen.len().max(1);
            let base = order.len();
            for (new, &old) in chosen.iter().chain(&rest).enumerate() {
                order.push(old as i64);
                inverse[base + old] = new as i64;
            }
            mask.extend((0..time).map(|t| if t < kept { 1.0f32 } else { 0.0 }));
        }
        let ints = |v: Vec<i64>| Tensor::<B, 1, Int>::from_ints(v.as_slice(), &device).reshape([batch, time]);
        Self {
            order: ints(order),
            inverse: ints(inverse),
            mask: Tensor::<B, 1>::from_floats(mask.as_slice(), &device).reshape([batch, time]),
            selected: gates.clone().greater_elem(0.0).float(),
        }
    }

    /// `[batch, time, width]` features in the new order.
    pub fn gather(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        permute_time(x, self.order.clone())
    }

    /// The padding mask of the new order.
    pub fn mask(&self) -> Tensor<B, 2> {
        self.mask.clone()
    }

    /// Per-position values of the new order (`[batch, time]`) back at the
    /// original positions: 0 at every word not selected.
    pub fn spread(&self, values: Tensor<B, 2>) -> Tensor<B, 2> {
        (values * self.mask.clone()).gather(1, self.inverse.clone()) * self.selected.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;

    type B = Flex;

    fn rows(t: Tensor<B, 2>) -> Vec<f32> {
        t.into_data().to_vec().unwrap()
    }

    /// Two rows: words 1 and 3 selected of four; nothing selected of two
    /// (then padding). The first row reads its two words in order, the
    /// second one zero word; values come back at their own positions.
    #[test]
    fn selected_words_move_to_the_front_and_come_back() {
        let device = Default::default();
        let gates = Tensor::<B, 2>::from_floats([[0.0, 1.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0]], &device);
        let compaction = Compaction::of(&gates);
        assert_eq!(rows(compaction.mask()), [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let x =
            Tensor::<B, 1>::from_floats([10.0, 11.0, 12.0, 13.0, 20.0, 21.0, 22.0, 23.0], &device).reshape([2, 4, 1]);
        let moved: Vec<f32> = compaction.gather(x).into_data().to_vec().unwrap();
        assert_eq!(&moved[..2], [11.0, 13.0]);
        assert_eq!(moved[4], 20.0);
        let values = Tensor::<B, 2>::from_floats([[0.25, 0.75, 9.0, 9.0], [1.0, 9.0, 9.0, 9.0]], &device);
        assert_eq!(rows(compaction.spread(values)), [0.0, 0.25, 0.0, 0.75, 0.0, 0.0, 0.0, 0.0]);
    }
}
