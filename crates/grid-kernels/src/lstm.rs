//! The LSTM recurrence as one CPU kernel, forward and backward, over the whole
//! sequence (what PyTorch's and cuDNN's LSTM kernels do). Built from burn's
//! operations, each time step costs a dozen tensor ops, their allocations and
//! copies, and scalar `exp` / `tanh` passes; here a step is one GEMM for
//! `h_{t-1} W_hh` and one pass over the gates that computes everything else.
//!
//! Inputs: `projected` `[batch, time, 4h]` (`x W_ih + b_ih + b_hh`, gates
//! `i, f, g, o` as PyTorch orders them) and `weight_hh` `[h, 4h]`, row-major.
//! Output: every hidden state, `[batch, time, h]`, from `h_0 = c_0 = 0`.
//!
//! The backward pass also computes DeepLift's multipliers (the Rescale rule,
//! `Keep::Multipliers`): the batch then stacks inputs over their references,
//! and each nonlinearity's derivative is replaced by the secant between a row
//! and its counterpart, each product's by the pair's mean (see
//! `grid::model::rules`).

use std::mem::MaybeUninit;

use rayon::prelude::*;
use wide::f32x8;

use crate::chunks::written;
use crate::dispatch::{Loop, widest};
use crate::lanes::{groups, load_lanes, store_lanes, tanh};
use crate::layout::transpose;
use crate::math::{self, GROUP, load_group, store_group};
use crate::matmul::gemm;
use crate::packed::{PackedLhs, multiply_strided};
use crate::rescale::NEAR;

/// Rows of the batch per part at the least: the parts' products keep the
/// packed kernel's 8-row blocks full.
const MIN_PART_ROWS: usize = 8;

/// Rows per part of a batch. A row's recurrence depends on its own earlier
/// steps alone, so each part runs its rows through the whole sequence on
/// one thread and the threads meet once per pass. Shared out step by step
/// (each step's product and gate pass on the threads), they met twice per
/// step: two threads trained the IMDB BiLSTM (128 units, batches of 64
/// reviews of up to 500 words) 1.3× as fast as one. A value does not
/// depend on the parts: every row gets the same arithmetic in any of them.
fn part_rows(batch: usize) -> usize {
    let parts = rayon::current_num_threads().min(batch / MIN_PART_ROWS).max(1);
    batch.div_ceil(parts).max(1)
}

/// `dst [m, n] = a [m, k] · b [k, n]`, all row-major: one time step's
/// product with the recurrent weight (or its transpose), on this thread.
/// The weight is the same at every step, yet `gemm` packed it again at
/// each, and through strides for its transpose: packing took 1.3–1.8× the
/// multiply-adds' time in the recurrence's products (perf, the IMDB BiLSTM
/// at 128 units). Where the CPU has AVX-512 or AVX2 the packed kernel reads both
/// operands in place ([`multiply_strided`]); a value is the sum over `k` in
/// order. Elsewhere `gemm`.
fn step_product((m, n, k): (usize, usize, usize), dst: &mut [f32], a: &[f32], b: &[f32]) {
    if !PackedLhs::available() {
        gemm(false, (m, n, k), (dst, n), a, (k, 1), b, (n, 1));
        return;
    }
    multiply_strided((a, k), (b, n), (m, n, k), &mut dst[..m * n], false);
}

/// Sizes of one recurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub time: usize,
    pub hidden: usize,
}

impl Dims {
    fn gates(self) -> usize {
        4 * self.hidden
    }
}

/// The order in which each row's positions are visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order<'a> {
    /// Left to right.
    Forward,
    /// The backward direction of a BiLSTM on right-padded rows: each row's
    /// real tokens (its length, one per row) from last to first, then its
    /// padding left to right; every state is returned at its token's own
    /// position. The same as reversing each row's real tokens, running
    /// [`Order::Forward`] and reversing the states back, without the two
    /// copies of the inputs and states that costs.
    Reversed(&'a [usize]),
}

impl Order<'_> {
    /// The position of `row`'s `step`-th step.
    fn position(self, row: usize, step: usize) -> usize {
        match self {
            Order::Forward => step,
            Order::Reversed(lengths) if step < lengths[row] => lengths[row] - 1 - step,
            Order::Reversed(_) => step,
        }
    }

    fn check(self, dims: Dims) {
        if let Order::Reversed(lengths) = self {
            assert_eq!(lengths.len(), dims.batch, "one length per row");
            assert!(lengths.iter().all(|&l| l <= dims.time), "lengths within the sequence");
        }
    }
}

/// What a forward pass keeps for a backward one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Nothing: inference.
    Nothing,
    /// What gradients need.
    Gradients,
    /// What DeepLift's multipliers need: also the gates' pre-activations.
    Multipliers,
}

/// What the backward pass needs from the forward: the activated gates and
/// the cell states (and their tanh) of every step, time-major, per part of
/// the batch's rows (see [`part_rows`]).
#[derive(Debug, Clone)]
pub struct Tape {
    /// Rows per part: part `p` holds rows `p · rows ..`.
    rows: usize,
    parts: Vec<TapePart>,
}

/// One part's tape, its `rows` rows.
#[derive(Debug, Clone)]
struct TapePart {
    rows: usize,
    /// `[time, rows, 4h]`: σ(i), σ(f), tanh(g), σ(o).
    gates: Vec<f32>,
    /// `[time, rows, h]`.
    cells: Vec<f32>,
    tanh_cells: Vec<f32>,
    /// `[time, rows, 4h]`, the gates before their activations
    /// ([`Keep::Multipliers`] only).
    pre_activations: Option<Vec<f32>>,
}

/// One row of one step: activates the gates in place (σ(i), σ(f), tanh(g),
/// σ(o)), then `c = f·c + i·g`, `tanh(c)` and `h = o·tanh(c)`, in the CPU's
/// widest lanes ([`crate::dispatch`]), sixteen units at a time; a last
/// partial group goes through the same lanes, so every unit gets the same
/// arithmetic wherever it sits.
fn update_cell(gates: &mut [f32], cells: &mut [f32], tanh_cells: &mut [f32], states: &mut [f32]) {
    widest(Cell { gates, cells, tanh_cells, states })
}

struct Cell<'a> {
    gates: &'a mut [f32],
    cells: &'a mut [f32],
    tanh_cells: &'a mut [f32],
    states: &'a mut [f32],
}

impl Loop for Cell<'_> {
    #[inline(always)]
    fn run(self) {
        let Cell { gates, cells, tanh_cells, states } = self;
        let hidden = cells.len();
        for (j, n) in math::groups(hidden) {
            let mut i = load_group(gates, j, n);
            let mut f = load_group(gates, hidden + j, n);
            let mut g = load_group(gates, 2 * hidden + j, n);
            let mut o = load_group(gates, 3 * hidden + j, n);
            let mut c = load_group(cells, j, n);
            let (mut tc, mut h) = ([0.0f32; GROUP], [0.0f32; GROUP]);
            for k in 0..GROUP {
                i[k] = sigmoid(i[k]);
                f[k] = sigmoid(f[k]);
                g[k] = math::tanh(g[k]);
                o[k] = sigmoid(o[k]);
                c[k] = f[k] * c[k] + i[k] * g[k];
                tc[k] = math::tanh(c[k]);
                h[k] = o[k] * tc[k];
            }
            store_group(gates, j, n, &i);
            store_group(gates, hidden + j, n, &f);
            store_group(gates, 2 * hidden + j, n, &g);
            store_group(gates, 3 * hidden + j, n, &o);
            store_group(cells, j, n, &c);
            store_group(tanh_cells, j, n, &tc);
            store_group(states, j, n, &h);
        }
    }
}

/// `1 / (1 + e^{−x})`, as the lanes computed it.
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + math::exp(-x))
}

/// Runs the recurrence, visiting each row's positions in `order`; keeps what
/// [`backward`] needs as `keep` says.
pub fn forward(dims: Dims, order: Order, projected: &[f32], weight_hh: &[f32], keep: Keep) -> (Vec<f32>, Option<Tape>) {
    let Dims { batch, time, hidden } = dims;
    assert_eq!(projected.len(), batch * time * dims.gates(), "projected inputs");
    assert_eq!(weight_hh.len(), hidden * dims.gates(), "recurrent weights");
    order.check(dims);
    let rows = part_rows(batch);
    let mut parts: Vec<TapePart> = Vec::new();
    // Every state is written (each row visits each of its positions once):
    // zero-filling them first was a pass over 16 MB a direction.
    let states = written(batch * time * hidden, |states| {
        if time * hidden > 0 {
            let run = Recurrence { dims, order, projected, weight_hh, keep };
            parts = states
                .par_chunks_mut(rows * time * hidden)
                .enumerate()
                .map(|(p, states)| run.part(p * rows, states))
                .collect();
        }
    });
    (states, (keep != Keep::Nothing).then_some(Tape { rows, parts }))
}

/// One forward pass's inputs, shared by its parts.
#[derive(Clone, Copy)]
struct Recurrence<'a> {
    dims: Dims,
    order: Order<'a>,
    projected: &'a [f32],
    weight_hh: &'a [f32],
    keep: Keep,
}

impl Recurrence<'_> {
    /// The rows from `first` on (as many as `states` `[rows, time, h]`
    /// holds) through every step, on this thread; every state written.
    fn part(self, first: usize, states: &mut [MaybeUninit<f32>]) -> TapePart {
        let Recurrence { dims, order, projected, weight_hh, keep } = self;
        let Dims { time, hidden, .. } = dims;
        let width = dims.gates();
        let rows = states.len() / (time * hidden);
        let mut gates = vec![0.0f32; rows * width];
        let mut cells = vec![0.0f32; rows * hidden];
        // h_{t-1} of every row, contiguous whatever the positions visited.
        let mut previous = vec![0.0f32; rows * hidden];
        let mut tanh_cells = vec![0.0f32; rows * hidden];
        let multipliers = keep == Keep::Multipliers;
        let kept = |len: usize| if keep == Keep::Nothing { Vec::new() } else { Vec::with_capacity(time * rows * len) };
        let mut tape = TapePart {
            rows,
            gates: kept(width),
            cells: kept(hidden),
            tanh_cells: kept(hidden),
            pre_activations: multipliers.then(|| kept(width)),
        };
        for step in 0..time {
            // gates = h_{t-1} W_hh, then + the step's inputs. The product is
            // taken alone, not accumulated onto the inputs, so that its
            // rounding does not depend on how many rows the batch has.
            if step > 0 {
                step_product((rows, width, hidden), &mut gates, &previous, weight_hh);
            }
            let rows_of_step = gates
                .chunks_mut(width)
                .zip(cells.chunks_mut(hidden))
                .zip(tanh_cells.chunks_mut(hidden))
                .zip(previous.chunks_mut(hidden))
                .zip(states.chunks_mut(time * hidden));
            for (local, ((((g, c), tc), h), all)) in rows_of_step.enumerate() {
                let row = first + local;
                let at = order.position(row, step);
                let from = (row * time + at) * width;
                let inputs = &projected[from..from + width];
                if step > 0 {
                    g.iter_mut().zip(inputs).for_each(|(g, x)| *g += x);
                } else {
                    g.copy_from_slice(inputs);
                }
                if let Some(pre) = tape.pre_activations.as_mut() {
                    pre.extend_from_slice(g);
                }
                update_cell(g, c, tc, h);
                all[at * hidden..(at + 1) * hidden].write_copy_of_slice(h);
            }
            if keep != Keep::Nothing {
                tape.gates.extend_from_slice(&gates);
                tape.cells.extend_from_slice(&cells);
                tape.tanh_cells.extend_from_slice(&tanh_cells);
            }
        }
        tape
    }
}

/// Gradients of the inputs (`[batch, time, 4h]`) and, with `weight_grad`, of
/// the recurrent weights (`[h, 4h]`) from the gradient of the states
/// (`[batch, time, h]`), for a [`forward`] run in `order`. Attribution
/// differentiates the inputs alone (the weights are not tracked), and
/// skipping `dW_hh` saves a third of the recurrence's products. On a tape
/// kept with [`Keep::Multipliers`], DeepLift's multipliers instead of the
/// gradients (each row paired with its counterpart half a batch away). The
/// parts of the batch's rows run apart, as in [`forward`].
pub fn backward(
    dims: Dims,
    order: Order,
    weight_hh: &[f32],
    states: &[f32],
    tape: &Tape,
    grad_states: &[f32],
    weight_grad: bool,
) -> (Vec<f32>, Option<Vec<f32>>) {
    let Dims { batch, time, hidden } = dims;
    let width = dims.gates();
    assert_eq!(grad_states.len(), batch * time * hidden, "state gradients");
    order.check(dims);
    // W_hhᵀ `[4h, h]`, once for every step's product.
    let mut weight_t = vec![0.0f32; hidden * width];
    transpose(weight_hh, (hidden, width), &mut weight_t);
    if tape.keeps_multipliers() {
        assert_eq!(batch % 2, 0, "DeepLift stacks inputs over references");
    }
    // Every position's gate gradients are written, as in `forward`.
    let grad_projected = written(batch * time * width, |grad_projected| {
        if time * hidden > 0 {
            let run = BackwardPass { dims, order, weight_t: &weight_t, tape, grad_states };
            grad_projected
                .par_chunks_mut(tape.rows * time * width)
                .enumerate()
                .for_each(|(p, grad_projected)| run.part(p * tape.rows, grad_projected));
        }
    });
    if !weight_grad {
        return (grad_projected, None);
    }
    // dW_hh = Σ_t h_{t-1}ᵀ dgates_t: one product per row over its steps
    // t > 0, in step order (h_{t-1} is the state one step earlier).
    let mut grad_weight = vec![0.0f32; hidden * width];
    if time < 2 {
        return (grad_projected, Some(grad_weight));
    }
    let (mut row_states, mut row_gates) = (Vec::new(), Vec::new());
    for row in 0..batch {
        let (row_states, row_gates): (&[f32], &[f32]) = match order {
            // Step order is position order: read in place.
            Order::Forward => (&states[row * time * hidden..], &grad_projected[(row * time + 1) * width..]),
            Order::Reversed(_) => {
                row_states.clear();
                row_gates.clear();
                for step in 0..time {
                    let at = row * time + order.position(row, step);
                    row_states.extend_from_slice(&states[at * hidden..(at + 1) * hidden]);
                    if step > 0 {
                        row_gates.extend_from_slice(&grad_projected[at * width..(at + 1) * width]);
                    }
                }
                (&row_states, &row_gates)
            }
        };
        gemm(
            true,
            (hidden, width, time - 1),
            (&mut grad_weight, width),
            row_states,
            (1, hidden),
            row_gates,
            (width, 1),
        );
    }
    (grad_projected, Some(grad_weight))
}

/// One backward pass's inputs, shared by its parts.
#[derive(Clone, Copy)]
struct BackwardPass<'a> {
    dims: Dims,
    order: Order<'a>,
    /// W_hhᵀ `[4h, h]`.
    weight_t: &'a [f32],
    tape: &'a Tape,
    grad_states: &'a [f32],
}

impl BackwardPass<'_> {
    /// The rows from `first` on (as many as `grad_projected` `[rows, time,
    /// 4h]` holds) back through every step, on this thread; every value
    /// written.
    fn part(self, first: usize, grad_projected: &mut [MaybeUninit<f32>]) {
        let BackwardPass { dims, order, weight_t, tape, grad_states } = self;
        let Dims { batch, time, hidden } = dims;
        let width = dims.gates();
        let rows = grad_projected.len() / (time * width);
        let multipliers = tape.keeps_multipliers();
        // The step's gate gradients, contiguous whatever the positions visited.
        let mut grad_gates = vec![0.0f32; rows * width];
        let mut grad_hidden = vec![0.0f32; rows * hidden]; // from step t+1 through W_hh
        let mut grad_cell = vec![0.0f32; rows * hidden];
        for step in (0..time).rev() {
            let rows_of_step = grad_gates
                .chunks_mut(width)
                .zip(grad_cell.chunks_mut(hidden))
                .zip(grad_projected.chunks_mut(time * width));
            for (local, ((out, grad_cell), all)) in rows_of_step.enumerate() {
                let row = first + local;
                let at = order.position(row, step);
                let grads = StepGradients {
                    states: &grad_states[(row * time + at) * hidden..(row * time + at + 1) * hidden],
                    hidden: &grad_hidden[local * hidden..(local + 1) * hidden],
                };
                if multipliers {
                    let counterpart = (row + batch / 2) % batch;
                    let pair = [tape.step(dims, step, row), tape.step(dims, step, counterpart)];
                    gate_multipliers(&pair, grads, grad_cell, out);
                } else {
                    gate_gradients(&tape.step(dims, step, row), grads, grad_cell, out);
                }
                all[at * width..(at + 1) * width].write_copy_of_slice(out);
            }
            // dh_{t-1} = dgates_t · W_hhᵀ.
            if step > 0 {
                step_product((rows, hidden, width), &mut grad_hidden, &grad_gates, weight_t);
            }
        }
    }
}

/// One row's values of one step on the tape.
struct StepValues<'a> {
    /// σ(i), σ(f), tanh(g), σ(o).
    gates: &'a [f32],
    /// The gates before their activations ([`Keep::Multipliers`] only).
    pre_activations: &'a [f32],
    cells: &'a [f32],
    tanh_cells: &'a [f32],
    /// The cell one step earlier (`None` at the first step: zero).
    previous_cells: Option<&'a [f32]>,
}

impl Tape {
    /// Whether the forward pass kept DeepLift's pre-activations
    /// ([`Keep::Multipliers`]): the backward pass then gives multipliers.
    fn keeps_multipliers(&self) -> bool {
        self.parts.iter().any(|part| part.pre_activations.is_some())
    }

    fn step(&self, dims: Dims, step: usize, row: usize) -> StepValues<'_> {
        let (hidden, width) = (dims.hidden, dims.gates());
        let part = &self.parts[row / self.rows];
        let (row, rows) = (row % self.rows, part.rows);
        let gates = (step * rows + row) * width..(step * rows + row + 1) * width;
        let units = |step: usize| (step * rows + row) * hidden..(step * rows + row + 1) * hidden;
        StepValues {
            gates: &part.gates[gates.clone()],
            pre_activations: part.pre_activations.as_ref().map_or(&[][..], |pre| &pre[gates]),
            cells: &part.cells[units(step)],
            tanh_cells: &part.tanh_cells[units(step)],
            previous_cells: (step > 0).then(|| &part.cells[units(step - 1)]),
        }
    }
}

/// The gradient arriving at one row's state in one step: from the output at
/// its position, and from step t+1 through `W_hh`.
#[derive(Clone, Copy)]
struct StepGradients<'a> {
    states: &'a [f32],
    hidden: &'a [f32],
}

/// One row of one step, backward: the gradients of the four gates'
/// pre-activations from the state's gradient (`dh`, from the output and from
/// step t+1) and the cell's; `grad_cell` becomes the gradient passed to step
/// t−1. In the CPU's widest lanes, sixteen units at a time, each lane
/// computing exactly the scalar expression (same operations in the same
/// order: no fused multiply-add), so the result does not depend on the lane
/// width.
fn gate_gradients(values: &StepValues, grads: StepGradients, grad_cell: &mut [f32], out: &mut [f32]) {
    widest(GateGradients { values, grads, grad_cell, out })
}

struct GateGradients<'a> {
    values: &'a StepValues<'a>,
    grads: StepGradients<'a>,
    grad_cell: &'a mut [f32],
    out: &'a mut [f32],
}

impl Loop for GateGradients<'_> {
    #[inline(always)]
    fn run(self) {
        let GateGradients { values, grads, grad_cell, out } = self;
        let hidden = grad_cell.len();
        let StepValues { gates, tanh_cells, previous_cells, .. } = *values;
        for (j, n) in math::groups(hidden) {
            let (i, f) = (load_group(gates, j, n), load_group(gates, hidden + j, n));
            let (candidate, o) = (load_group(gates, 2 * hidden + j, n), load_group(gates, 3 * hidden + j, n));
            let tc = load_group(tanh_cells, j, n);
            let (from_states, from_hidden) = (load_group(grads.states, j, n), load_group(grads.hidden, j, n));
            let mut cell = load_group(grad_cell, j, n);
            let c_prev = previous_cells.map_or([0.0f32; GROUP], |p| load_group(p, j, n));
            let mut d = [[0.0f32; GROUP]; 4];
            for k in 0..GROUP {
                let dh = from_states[k] + from_hidden[k];
                let dc = cell[k] + dh * o[k] * (1.0 - tc[k] * tc[k]);
                d[0][k] = dc * candidate[k] * i[k] * (1.0 - i[k]);
                d[1][k] = dc * c_prev[k] * f[k] * (1.0 - f[k]);
                d[2][k] = dc * i[k] * (1.0 - candidate[k] * candidate[k]);
                d[3][k] = dh * tc[k] * o[k] * (1.0 - o[k]);
                cell[k] = dc * f[k];
            }
            for (gate, lanes) in d.iter().enumerate() {
                store_group(out, gate * hidden + j, n, lanes);
            }
            store_group(grad_cell, j, n, &cell);
        }
    }
}

/// Rescale's multiplier of `φ` between `x` and its counterpart `x0`
/// (`y = φ(x)`, `y0 = φ(x0)`): the secant, or `slope` at the midpoint where
/// the two are too close for one.
fn secant(x: f32x8, x0: f32x8, y: f32x8, y0: f32x8, slope: impl Fn(f32x8) -> f32x8) -> f32x8 {
    let dx = x - x0;
    let near = dx.abs().simd_lt((x.abs() + x0.abs() + f32x8::ONE) * f32x8::splat(NEAR));
    let secant = (y - y0) / near.select(f32x8::ONE, dx);
    near.select(slope((x + x0) * f32x8::splat(0.5)), secant)
}

fn sigmoid_slope(m: f32x8) -> f32x8 {
    let s = f32x8::ONE / (f32x8::ONE + (-m).exp());
    s * (f32x8::ONE - s)
}

fn tanh_slope(m: f32x8) -> f32x8 {
    let t = tanh(m);
    f32x8::ONE - t * t
}

/// [`gate_gradients`] with DeepLift's Rescale rule, for a row (`pair[0]`) and
/// its counterpart (`pair[1]`): every activation's derivative becomes the
/// secant between the two, each factor of a product (`f·c`, `i·g`,
/// `o·tanh(c)`) the mean of the other factor over the two. The multipliers
/// are the same numbers for both rows.
fn gate_multipliers(pair: &[StepValues; 2], grads: StepGradients, grad_cell: &mut [f32], out: &mut [f32]) {
    let hidden = grad_cell.len();
    let half = f32x8::splat(0.5);
    let [own, other] = pair;
    for (j, n) in groups(hidden) {
        let load = |from: &[f32], at: usize| load_lanes(from, at, n);
        let store = |to: &mut [f32], at: usize, value: f32x8| store_lanes(to, at, n, value);
        let mean = |a: &[f32], b: &[f32], at: usize| (load(a, at) + load(b, at)) * half;
        let gate = |k: usize, slope: &dyn Fn(f32x8) -> f32x8| {
            let at = k * hidden + j;
            let (x, x0) = (load(own.pre_activations, at), load(other.pre_activations, at));
            secant(x, x0, load(own.gates, at), load(other.gates, at), slope)
        };
        let (m_i, m_f, m_g, m_o) =
            (gate(0, &sigmoid_slope), gate(1, &sigmoid_slope), gate(2, &tanh_slope), gate(3, &sigmoid_slope));
        let (c, c0) = (load(own.cells, j), load(other.cells, j));
        let m_tc = secant(c, c0, load(own.tanh_cells, j), load(other.tanh_cells, j), tanh_slope);
        let c_prev = match (own.previous_cells, other.previous_cells) {
            (Some(a), Some(b)) => mean(a, b, j),
            _ => f32x8::ZERO,
        };
        let dh = load(grads.states, j) + load(grads.hidden, j);
        let dc = load(grad_cell, j) + dh * mean(own.gates, other.gates, 3 * hidden + j) * m_tc;
        store(out, j, dc * mean(own.gates, other.gates, 2 * hidden + j) * m_i);
        store(out, hidden + j, dc * c_prev * m_f);
        store(out, 2 * hidden + j, dc * mean(own.gates, other.gates, j) * m_g);
        store(out, 3 * hidden + j, dh * mean(own.tanh_cells, other.tanh_cells, j) * m_o);
        store(grad_cell, j, dc * mean(own.gates, other.gates, hidden + j));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    /// `a · b` in f64, row-major.
    fn naive((m, n, k): (usize, usize, usize), a: &[f32], b: &[f32]) -> Vec<f64> {
        let mut out = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
            }
        }
        out
    }

    #[test]
    fn a_steps_product_is_the_product() {
        // A step of the forward recurrence and of the backward one (the
        // transposed weight), and rows that do not fill the last block.
        for (m, n, k) in [(5, 48, 12), (13, 20, 80), (64, 512, 128), (64, 128, 512)] {
            let (a, b) = (wave(m * k, 0.3, 0.1), wave(k * n, 0.7, 0.2));
            let mut dst = vec![f32::NAN; m * n];
            step_product((m, n, k), &mut dst, &a, &b);
            // f32 sums of k terms of magnitude ≤ 1.
            let tolerance = 1e-6 * k as f64;
            for (got, want) in dst.iter().zip(naive((m, n, k), &a, &b)) {
                assert!((f64::from(*got) - want).abs() <= tolerance, "{m}×{n}×{k}: {got} vs {want}");
            }
        }
    }

    /// Each row's steps visit each of its positions once, in both orders:
    /// what lets `forward` and `backward` write their outputs without
    /// zero-filling them first.
    #[test]
    fn every_position_is_visited_once() {
        let time = 9;
        let lengths: Vec<usize> = (0..=time).collect();
        for order in [Order::Forward, Order::Reversed(&lengths)] {
            for row in 0..lengths.len() {
                let mut seen: Vec<usize> = (0..time).map(|step| order.position(row, step)).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..time).collect::<Vec<_>>(), "{order:?}, row {row}");
            }
        }
    }

    /// The batch's rows in one part (one thread) or in several (three
    /// threads, the last part short) give the same bits: states, input
    /// gradients and the weight's gradient, both orders, gradients and
    /// DeepLift's multipliers.
    #[test]
    fn the_parts_of_a_batch_change_no_value() {
        let dims = Dims { batch: 26, time: 7, hidden: 20 };
        let width = dims.gates();
        let projected = wave(dims.batch * dims.time * width, 0.37, 0.1);
        let weight_hh = wave(dims.hidden * width, 0.11, 0.3);
        let grad_states = wave(dims.batch * dims.time * dims.hidden, 0.29, 0.4);
        let lengths: Vec<usize> = (0..dims.batch).map(|row| 1 + row % dims.time).collect();
        let run = |threads: usize, order: Order, keep: Keep| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                assert_eq!(part_rows(dims.batch), if threads == 1 { 26 } else { 9 });
                let (states, tape) = forward(dims, order, &projected, &weight_hh, keep);
                let tape = tape.expect("kept");
                let (grad_projected, grad_weight) =
                    backward(dims, order, &weight_hh, &states, &tape, &grad_states, true);
                let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                (bits(&states), bits(&grad_projected), bits(&grad_weight.expect("asked for")))
            })
        };
        for order in [Order::Forward, Order::Reversed(&lengths)] {
            for keep in [Keep::Gradients, Keep::Multipliers] {
                assert_eq!(run(1, order, keep), run(3, order, keep), "{order:?}, {keep:?}");
            }
        }
    }
}
