"""The Captum side of grid's attribution benchmark, and a numerical cross-check.

`grid bench ... --dump FILE.jsonl` times our salience methods on a grid's cached
shortcut models and writes every timed example as one JSON line: cell, method,
index, token ids (with [CLS]/[SEP] for BERT), a special-token flag per token, the
predicted class, our scores and, for IG, the completeness gap. This script

1. loads the same trained checkpoint (a cache `train` step folder:
   `model.safetensors` with burn's parameter paths and Linear weights stored
   [in, out], `config.json`, `vocab.json` or `tokenizer.json`) into an equivalent
   PyTorch model: `transformers.BertForSequenceClassification` for BERT, and the
   module below for the BiLSTM of `crates/grid-core/src/model/bilstm/mod.rs`;
2. checks it: the torch model's prediction must equal the dumped one for every
   example, and the deterministic methods (grad*, gxi*, ig*, occlusion-*) must
   reproduce the dumped scores (max absolute and relative difference; for IG also
   the completeness gap). LIME and KernelSHAP sample differently from ours, so
   only the top-1 token agreement is shown for them; our KernelSHAP scores are
   checked on their own instead (untimed): efficiency, sum_i ours_i =
   p(full) - p(empty) with both probabilities from the torch model, and, for
   examples whose coalitions ours enumerated (n >= 2^d - 2, d ordinary tokens),
   equality with the exact Shapley values computed from all 2^d coalitions;
3. times each method with Captum on the dumped examples, after one untimed
   warm-up example, and prints a Markdown table.

Methods, as in PROTOCOL.md §1 (salience explains the predicted class: the logit,
negated for class 0 of a one-logit model, or the class probability):
- `grad{p,l}-{l1,l2,mean}`: `Saliency(abs=False)` on the word embeddings (BERT:
  the word-embedding output, before position embeddings; fed as `inputs_embeds`),
  reduced per token;
- `gxi{p,l}`: `InputXGradient`, summed per token;
- `ig{p,l}-{zero,unk,pad,mask}-{m}`: `IntegratedGradients(method="riemann_right",
  n_steps=m, internal_batch_size=K)`; the baseline keeps the embedding of special
  tokens and padding, elsewhere it is zero or the [UNK]/[PAD]/[MASK] embedding
  (Captum needs m >= 2);
- `lime{unk,mask,erase}-{n}`: `Lime` with our recipe: the features are the
  non-special tokens, sample 1 is the unperturbed input and every other hides
  k ~ U{1..d} of them, LIT's kernel sqrt(exp(-(100 cosine distance)^2 / 25^2)),
  `SkLearnRidge(alpha=1)`, target = the predicted class's probability,
  `perturbations_per_eval=K`, one example at a time (as Captum recommends);
- `occlusion-{unk,mask,erase}`: `Occlusion` with a one-token window over the
  non-special tokens, `perturbations_per_eval=K`: p(y|x) - p(y|x with token i hidden);
- `kernelshap-{unk,mask,erase}-{n}`: `KernelShap` with Captum's own recipe, on
  the same features, hiding and target as LIME: `n_samples=n` (the full and
  empty coalitions included, weighted 1e6; ours draws n besides them, in
  complementary pairs, and enforces efficiency exactly), `perturbations_per_eval=K`,
  one example at a time, torch's global generator seeded per example. With one
  ordinary token Captum's size distribution is empty, and the score is
  p(full) - p(empty) computed directly, as ours gives.
- `deeplift[-{zero,unk,pad,mask}]`: `DeepLift` (Rescale) on the predicted
  class's logit, with IG's baselines. Captum hooks only the nonlinear modules it
  knows (not HF's GELU module, the attention's functional softmax, or nn.LSTM),
  ours every nonlinearity: the cost compares, the scores do not (top-1 agreement);
- `smooth-{grad*,gxi*}-{n}-{σ}`: `NoiseTunnel(nt_type="smoothgrad")` over
  `Saliency` / `InputXGradient`, `nt_samples=n`, one standard deviation per
  call (σ times the batch's mean embedding range; ours: per example), the noise
  sampled differently from ours (top-1 agreement only).
`erase` deletes tokens: hidden positions carry the id -1, and the forward pass
moves the remaining tokens together.

The gradient of a probability is taken through a sigmoid/softmax whose backward
is written as p * (1 - p) with 1 - p computed from the other classes, as
`crates/grid-methods/src/salience/target.rs` does: a shortcut model's logits of 20-40 round p to 1.0
in float32, and autograd's own sigmoid backward would then return 0.

Gradient and IG methods explain `--batch-size` examples per call (ours: 32), in
length order; LIME, KernelSHAP and occlusion one example per call. `--repeats R`
times R passes per method and reports the fastest (for a busy machine).

The relative difference of an example is max_t |ours - torch| / max_t |ours|.
For `grad*-mean` the denominator is at least max_t mean_d |df/de_td|: a mean of
signed entries cancels (on BERT exactly, since LayerNorm makes each token's
gradient sum to zero), so its value is rounding noise at that scale.

Run (the dump and the checkpoint must come from the same cache):

    target/release/grid bench experiments/quickstart.toml --cache CACHE --only /st/ \
        --methods gradl-l2,gxil,igl-unk-20,limeunk-100,occlusion-unk,kernelshap-unk-200 --examples 16 \
        --dump /tmp/dump.jsonl
    /work/torchenv/bin/python scripts/captum_bench.py --checkpoint CACHE \
        --dump /tmp/dump.jsonl --cell generated/st/lstm [--device cuda] [--threads 2] \
        [--methods ...] [--internal-batch-size 256] [--perturbations-per-eval 256] \
        [--json OUT.json]

`--checkpoint` is a train step folder, or a cache root in which the step whose
manifest label is `train/<cell>` is looked up. `--methods` defaults to every
method the dump holds for the cell. Exits with status 1 when a prediction differs,
a deterministic method's relative difference exceeds `--tolerance`, or one of our
KernelSHAP checks (absolute, on the probability scale) does.
"""

import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import re
import sys
import time

import captum
import torch
import transformers
from captum._utils.models.linear_model import SkLearnRidge
from captum.attr import (
    DeepLift,
    InputXGradient,
    IntegratedGradients,
    KernelShap,
    Lime,
    NoiseTunnel,
    Occlusion,
    Saliency,
)
from safetensors.torch import load_file
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# The id that marks a deleted token in perturbed inputs (`erase`).
DELETED = -1
# LIME as LIT runs it (crates/grid-methods/src/salience/lime.rs).
LIME_KERNEL_WIDTH = 25.0
LIME_DISTANCE_SCALE = 100.0
LIME_RIDGE_ALPHA = 1.0


# ---------------------------------------------------------------- models


class BiLstmClassifier(nn.Module):
    """`crates/grid-core/src/model/bilstm/mod.rs` in PyTorch: embedding -> one bidirectional LSTM layer
    run over each sequence's own length -> keys-only additive attention
    softmax_t(v . tanh(W h_t)) over real tokens -> context sum_t a_t h_t ->
    Linear + ReLU -> Linear to the logits."""

    def __init__(self, config):
        super().__init__()
        hidden = config["hidden_size"]
        self.embeddings = nn.Embedding(config["vocab_size"], config["embedding_dim"])
        self.lstm = nn.LSTM(config["embedding_dim"], hidden, batch_first=True, bidirectional=True)
        self.projection = nn.Linear(2 * hidden, config["attention_size"])
        self.scorer = nn.Linear(config["attention_size"], 1, bias=False)
        self.hidden = nn.Linear(2 * hidden, config["mlp_size"])
        self.output = nn.Linear(config["mlp_size"], config["num_outputs"])

    @staticmethod
    def parameter_names(burn_name):
        """burn path -> (torch parameter, whether burn stores it transposed)."""
        lstm = re.fullmatch(r"lstm_(forward|backward)\.(weight_ih|weight_hh|bias_ih|bias_hh)", burn_name)
        if lstm:
            suffix = "_l0" + ("_reverse" if lstm.group(1) == "backward" else "")
            return "lstm." + lstm.group(2) + suffix, lstm.group(2).startswith("weight")
        name = burn_name.replace("attention.projection.", "projection.").replace("attention.scorer.", "scorer.")
        return name, name.endswith(".weight") and name != "embeddings.weight"

    def embed(self, ids):
        return self.embeddings(ids)

    def logits(self, embeddings, mask):
        # A sequence with every token deleted has length 0; pack it as length 1
        # (its attention weights are all 0 anyway, as in ours).
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(embeddings, lengths, batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=embeddings.shape[1])
        scores = self.scorer(torch.tanh(self.projection(states))).squeeze(-1)
        real = mask.bool()
        alpha = torch.softmax(scores.masked_fill(~real, -1.0e9), dim=1) * real
        context = (states * alpha.unsqueeze(-1)).sum(1)
        return self.output(torch.relu(self.hidden(context)))


class BertClassifier(nn.Module):
    """`BertForSequenceClassification` fed word embeddings through `inputs_embeds`
    (HF adds position and token-type embeddings, then LayerNorm, as ours does)."""

    def __init__(self, config, num_outputs):
        super().__init__()
        keys = [
            "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout",
            "max_position_embeddings", "type_vocab_size", "initializer_range", "layer_norm_eps",
            "pad_token_id", "position_embedding_type",
        ]  # fmt: skip
        hf = transformers.BertConfig(**{k: config[k] for k in keys if k in config}, num_labels=num_outputs)
        self.hf = transformers.BertForSequenceClassification(hf)

    @staticmethod
    def parameter_names(burn_name):
        """burn path -> (torch parameter, whether burn stores it transposed)."""
        name = "hf." + burn_name.replace(".self_attention.", ".self.")
        name = name.replace("layer_norm.gamma", "LayerNorm.weight").replace("layer_norm.beta", "LayerNorm.bias")
        is_linear = name.endswith(".weight") and "LayerNorm" not in name and not name.endswith("_embeddings.weight")
        return name, is_linear

    def embed(self, ids):
        return self.hf.bert.embeddings.word_embeddings(ids)

    def logits(self, embeddings, mask):
        return self.hf(inputs_embeds=embeddings, attention_mask=mask).logits


def load_weights(model, path):
    """Copies every tensor of a burn checkpoint into `model`, transposing Linear
    weights, and refuses any unmatched name or shape."""
    params = dict(model.named_parameters())
    assigned = set()
    for burn_name, tensor in load_file(str(path)).items():
        name, transposed = model.parameter_names(burn_name)
        if name not in params:
            raise SystemExit(f"{path}: tensor `{burn_name}` has no place in the torch model (mapped to `{name}`)")
        tensor = tensor.float()
        if transposed:
            if tensor.dim() != 2:
                raise SystemExit(f"{path}: `{burn_name}` should be a 2-D Linear weight, has shape {list(tensor.shape)}")
            tensor = tensor.t()
        if tuple(tensor.shape) != tuple(params[name].shape):
            raise SystemExit(
                f"{path}: `{burn_name}` -> `{name}`: shape {list(tensor.shape)}, expected {list(params[name].shape)}"
            )
        with torch.no_grad():
            params[name].copy_(tensor)
        assigned.add(name)
    missing = sorted(set(params) - assigned)
    if missing:
        raise SystemExit(f"{path}: the checkpoint lacks {missing}")


def special_ids(directory, architecture):
    """pad, unk and mask ids, as the Rust encoders define them."""
    if architecture == "bilstm":
        return {"pad": 0, "unk": 1, "mask": None}  # WordVocab: [PAD] = 0, [UNK] = 1, no [MASK]
    tokenizer = json.loads((directory / "tokenizer.json").read_text())
    ids = dict(tokenizer["model"]["vocab"])
    ids.update({t["content"]: t["id"] for t in tokenizer.get("added_tokens", [])})
    unk = tokenizer["model"].get("unk_token", "[UNK]")
    return {"pad": ids["[PAD]"], "unk": ids[unk], "mask": ids.get("[MASK]")}


def find_checkpoint(path, cell):
    """A train step folder, or the one in cache root `path` labelled `train/<cell>`."""
    path = pathlib.Path(path)
    if (path / "config.json").is_file():
        return path
    for manifest in sorted(path.glob("train/*/*/manifest.json")):
        if json.loads(manifest.read_text()).get("label") == f"train/{cell}":
            return manifest.parent
    raise SystemExit(f"{path}: neither a checkpoint folder nor a cache holding train/{cell}")


def load_checkpoint(directory, device):
    spec = json.loads((directory / "config.json").read_text())
    if spec["architecture"] == "bilstm":
        model = BiLstmClassifier(spec["config"])
    elif spec["architecture"] == "bert":
        model = BertClassifier(spec["config"], spec["num_outputs"])
    else:
        raise SystemExit(f"{directory}: unknown architecture {spec['architecture']!r}")
    load_weights(model, directory / "model.safetensors")
    model.eval().requires_grad_(False).to(device)  # inputs only: no weight gradients
    return model, spec["architecture"], special_ids(directory, spec["architecture"])


# ---------------------------------------------------------------- the explained scalar


class _BinaryProbability(torch.autograd.Function):
    """sigmoid(s) with the backward sigmoid(s) sigmoid(-s), exact where p rounds to 1."""

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return torch.sigmoid(s)

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        return grad * torch.sigmoid(s) * torch.sigmoid(-s)


class _ClassProbability(torch.autograd.Function):
    """softmax(l)[c] with dp_c/dl_j = p_c (delta_cj - p_j), where the c-th entry
    p_c (1 - p_c) takes 1 - p_c as the sum of the other classes' probabilities."""

    @staticmethod
    def forward(ctx, logits, classes):
        p = torch.softmax(logits, dim=1)
        ctx.save_for_backward(p, classes)
        return p.gather(1, classes[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        p, classes = ctx.saved_tensors
        onehot = torch.zeros_like(p).scatter_(1, classes[:, None], 1.0)
        p_c = p.gather(1, classes[:, None])
        others = (p * (1 - onehot)).sum(1, keepdim=True)
        return grad[:, None] * p_c * (onehot * others - (1 - onehot) * p), None


def predicted_class_scalar(logits, classes, target):
    """f per row: the predicted class's logit (`l`; -logit for class 0 of one
    logit) or probability (`p`)."""
    if logits.shape[1] == 1:
        s = logits[:, 0] * (2 * classes - 1).to(logits.dtype)
        return s if target == "l" else _BinaryProbability.apply(s)
    if target == "l":
        return logits.gather(1, classes[:, None]).squeeze(1)
    return _ClassProbability.apply(logits, classes)


class ExplainedScore(nn.Module):
    """The predicted class's logit as a module of its own: Captum's DeepLift hooks
    the modules of the model it is given."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, embeddings, mask, classes):
        return predicted_class_scalar(self.model.logits(embeddings, mask), classes, "l")


def per_token(g, reduction):
    """Token scores from gradients [n, T, D]: their L1 or L2 norm, mean or sum over D."""
    if reduction == "l1":
        return g.abs().sum(-1)
    if reduction == "l2":
        return g.norm(dim=-1)
    if reduction == "mean":
        return g.mean(-1)
    return g.sum(-1)


def predicted_classes(logits):
    if logits.shape[1] == 1:
        return (logits[:, 0] > 0).long()
    return logits.argmax(1)


def class_probability(logits, classes):
    """p(class) in float64 from float32 logits, as crates/grid-methods/src/salience/perturb.rs reads it."""
    logits = logits.double()
    if logits.shape[1] == 1:
        return torch.sigmoid(logits[:, 0] * (2 * classes - 1).double())
    return torch.softmax(logits, dim=1).gather(1, classes[:, None]).squeeze(1)


# ---------------------------------------------------------------- methods


def parse_method(name):
    """(family, options) or None for a method this script cannot run."""
    if m := re.fullmatch(r"grad([pl])-(l1|l2|mean)", name):
        return "grad", {"target": m.group(1), "reduction": m.group(2)}
    if m := re.fullmatch(r"gxi([pl])", name):
        return "gxi", {"target": m.group(1)}
    if m := re.fullmatch(r"ig([pl])-(zero|unk|pad|mask)-(\d+)", name):
        return "ig", {"target": m.group(1), "baseline": m.group(2), "steps": int(m.group(3))}
    if m := re.fullmatch(r"lime(unk|mask|erase)-(\d+)", name):
        return "lime", {"hiding": m.group(1), "samples": int(m.group(2))}
    if m := re.fullmatch(r"occlusion-(unk|mask|erase)", name):
        return "occlusion", {"hiding": m.group(1)}
    if m := re.fullmatch(r"kernelshap-(unk|mask|erase)-(\d+)", name):
        return "kernelshap", {"hiding": m.group(1), "samples": int(m.group(2))}
    if m := re.fullmatch(r"deeplift(?:-(zero|unk|pad|mask))?", name):
        return "deeplift", {"target": "l", "baseline": m.group(1) or "zero"}
    if m := re.fullmatch(r"smooth-(grad[pl]-(?:l1|l2|mean)|gxi[pl])-(\d+)-([0-9.]+)", name):
        inner, options = parse_method(m.group(1))
        return "smooth", {**options, "inner": inner, "samples": int(m.group(2)), "sigma": float(m.group(3))}
    return None


# Families whose numbers must equal ours (LIME and KernelSHAP draw their own samples).
DETERMINISTIC = {"grad", "gxi", "ig", "occlusion"}
# Families explained one example at a time, over its non-special tokens.
PERTURBATION = {"lime", "occlusion", "kernelshap"}


class Runner:
    def __init__(self, model, vocab, device, args):
        self.model = model
        self.vocab = vocab
        self.device = device
        self.args = args

    def replacement(self, name):
        """The id a hidden token or a baseline position takes; None for zero vectors."""
        if name == "zero":
            return None
        if name == "erase":
            return DELETED
        token = self.vocab[name]
        if token is None:
            raise ValueError(f"the model's vocabulary has no [{name.upper()}] token")
        return token

    def batch(self, examples):
        width = max(len(e["ids"]) for e in examples)
        ids = torch.full((len(examples), width), self.vocab["pad"], dtype=torch.long)
        mask = torch.zeros((len(examples), width), dtype=torch.long)
        special = torch.ones((len(examples), width), dtype=torch.bool)  # padding counts as special
        for row, e in enumerate(examples):
            n = len(e["ids"])
            ids[row, :n] = torch.tensor(e["ids"])
            mask[row, :n] = 1
            special[row, :n] = torch.tensor(e["special"])
        return ids.to(self.device), mask.to(self.device), special.to(self.device)

    def explain(self, family, options, examples):
        """Per example, in `examples` order: scores, predicted class, IG's
        completeness gap, and the scale against which a difference in the scores
        counts as rounding (None: the scores' own largest magnitude)."""
        n = len(examples)
        if family in PERTURBATION:
            out = [self.perturbation(family, options, e) for e in examples]
            return [o[0] for o in out], [o[1] for o in out], [None] * n, [None] * n
        order = sorted(range(n), key=lambda i: len(examples[i]["ids"]))
        scores, predicted, gaps, scales = [None] * n, [None] * n, [None] * n, [None] * n
        for start in range(0, n, self.args.batch_size):
            chunk = order[start : start + self.args.batch_size]
            s, p, g, scale = self.gradient_batch(family, options, [examples[i] for i in chunk])
            for k, i in enumerate(chunk):
                scores[i], predicted[i] = s[k, : len(examples[i]["ids"])].tolist(), int(p[k])
                gaps[i] = None if g is None else float(g[k])
                scales[i] = None if scale is None else float(scale[k])
        return scores, predicted, gaps, scales

    def gradient_batch(self, family, options, examples):
        ids, mask, special = self.batch(examples)
        with torch.no_grad():
            embeddings = self.model.embed(ids)
        target = options["target"]
        seen = {}

        def forward(e, mask, classes=None):
            """f per row; without `classes`, of each row's own prediction, so that a
            gradient method needs one forward pass, as ours does."""
            logits = self.model.logits(e, mask)
            if classes is None:
                classes = seen["classes"] = predicted_classes(logits.detach())
            return predicted_class_scalar(logits, classes, target)

        def clean_classes():
            """The clean input's predicted classes, for methods that explain them at
            other inputs (IG's path, DeepLift's reference, SmoothGrad's noise)."""
            with torch.no_grad():
                seen["classes"] = predicted_classes(self.model.logits(embeddings, mask))
            return seen["classes"]

        inputs = embeddings.detach().requires_grad_(True)
        gaps, scale = None, None
        if family == "grad":
            g = Saliency(forward).attribute(inputs, additional_forward_args=(mask,), abs=False)
            reduction = options["reduction"]
            scores = per_token(g, reduction)
            if reduction == "mean":
                # A mean of signed entries cancels (on BERT exactly: LayerNorm makes
                # every row of g sum to 0), so rounding is judged against mean |g|.
                scale = g.abs().mean(-1).amax(1).detach().cpu()
        elif family == "gxi":
            scores = InputXGradient(forward).attribute(inputs, additional_forward_args=(mask,)).sum(-1)
        elif family == "deeplift":
            # Captum's Rescale rule covers the nonlinearities it can hook (nn.ReLU,
            # nn.Sigmoid, nn.Tanh, nn.Softmax, ...): neither HF's GELU module, the
            # functional softmax of its attention, nor nn.LSTM's gates; those pass
            # plain gradients. Ours applies Rescale to every nonlinearity
            # (crates/grid-core/src/model/rules.rs), so only the cost compares, not the scores.
            classes = clean_classes()
            baselines = self.baselines(options["baseline"], ids, special, embeddings)
            attributions, gaps = DeepLift(ExplainedScore(self.model)).attribute(
                inputs, baselines=baselines, additional_forward_args=(mask, classes), return_convergence_delta=True
            )
            scores = attributions.sum(-1)
        elif family == "smooth":
            # NoiseTunnel averages the inner method's raw attributions over the noisy
            # copies, then we reduce; ours reduces each copy, then averages (the same
            # cost). Captum's noise has one standard deviation per call, so it is σ
            # times the batch's mean embedding range (ours: each example's), and it
            # lands on special tokens too (ours: ordinary tokens only).
            classes = clean_classes()
            ordinary = ~special.unsqueeze(-1)
            high = embeddings.masked_fill(~ordinary, -math.inf).amax(dim=(1, 2))
            low = embeddings.masked_fill(~ordinary, math.inf).amin(dim=(1, 2))
            stdev = float(options["sigma"] * (high - low).mean())
            inner = Saliency(forward) if options["inner"] == "grad" else InputXGradient(forward)
            extra = {"abs": False} if options["inner"] == "grad" else {}
            per_call = max(1, self.args.internal_batch_size // len(examples))
            g = NoiseTunnel(inner).attribute(
                inputs, nt_type="smoothgrad", nt_samples=options["samples"], nt_samples_batch_size=per_call,
                stdevs=stdev, additional_forward_args=(mask, classes), **extra,
            )  # fmt: skip
            scores = per_token(g, options.get("reduction", "sum"))
        else:
            # IG explains the input's prediction at every point of the path.
            classes = clean_classes()
            baselines = self.baselines(options["baseline"], ids, special, embeddings)
            attributions, gaps = IntegratedGradients(forward).attribute(
                inputs,
                baselines=baselines,
                additional_forward_args=(mask, classes),
                n_steps=options["steps"],
                method="riemann_right",
                internal_batch_size=self.args.internal_batch_size,
                return_convergence_delta=True,
            )
            scores = attributions.sum(-1)
        gaps = None if gaps is None else gaps.detach().cpu()
        return scores.detach().cpu(), seen["classes"].cpu(), gaps, scale

    def baselines(self, baseline, ids, special, embeddings):
        """IG's and DeepLift's reference: special tokens and padding keep their
        embedding; the other positions take zero or the baseline token's."""
        token = self.replacement(baseline)
        with torch.no_grad():
            replaced = torch.zeros_like(embeddings) if token is None else self.model.embed(torch.full_like(ids, token))
            return torch.where(special.unsqueeze(-1), embeddings, replaced)

    def hider(self, example, hiding):
        """One example's value function: (the ordinary positions, their ids as
        Captum's features [1, d], the clean input's predicted class [1], the hidden
        id, and `probability(features [k, d], cls)` -> p(cls) per row in float64,
        feature entries equal to the hidden id being hidden)."""
        template = torch.tensor(example["ids"], device=self.device)
        positions = torch.tensor([t for t, s in enumerate(example["special"]) if not s], device=self.device)
        pad = self.vocab["pad"]

        def sequences(features):
            """[k, d] feature ids (DELETED = erased) -> padded ids and mask."""
            ids = template.expand(features.shape[0], -1).clone()
            ids[:, positions] = features.long()
            deleted = ids == DELETED
            ids = ids.gather(1, torch.sort(deleted.to(torch.int8), dim=1, stable=True).indices)
            lengths = (~deleted).sum(1)
            width = max(int(lengths.max()), 1)
            ids, mask = ids[:, :width], torch.arange(width, device=ids.device)[None] < lengths[:, None]
            return ids.masked_fill(~mask, pad), mask.long()

        def probability(features, cls):
            ids, mask = sequences(features)
            return class_probability(self.model.logits(self.model.embed(ids), mask), cls.expand(ids.shape[0]))

        with torch.no_grad():
            clean = template[None]
            logits = self.model.logits(self.model.embed(clean), torch.ones_like(clean))
            cls = predicted_classes(logits)
        return positions, template[positions][None], cls, self.replacement(hiding), probability

    def perturbation(self, family, options, example):
        """One example; its non-special tokens are the features, so special
        tokens are never hidden and score 0."""
        positions, features, cls, replacement, probability = self.hider(example, options["hiding"])
        scores = torch.zeros(len(example["ids"]), dtype=torch.float64)
        d = len(positions)
        if d == 0:
            return scores.tolist(), int(cls)
        seed = self.args.seed * 1_000_003 + example["index"]
        # LIME and KernelSHAP: one feature per token, the same sample budget.
        sampled = dict(
            baselines=replacement,
            feature_mask=torch.arange(d, device=self.device)[None],
            additional_forward_args=(cls,),
            n_samples=options.get("samples"),
            perturbations_per_eval=self.args.perturbations_per_eval,
        )
        if family == "occlusion":
            attributions = Occlusion(probability).attribute(
                features,
                sliding_window_shapes=(1,),
                baselines=replacement,
                additional_forward_args=(cls,),
                perturbations_per_eval=self.args.perturbations_per_eval,
            )
        elif family == "kernelshap" and d == 1:
            # Captum's coalition-size distribution is empty for one player (it
            # fails); the Shapley value is then v(full) - v(empty), as ours gives.
            with torch.no_grad():
                v = probability(torch.cat([features, torch.full_like(features, replacement)]), cls)
            attributions = (v[0] - v[1]).reshape(1, 1)
        elif family == "kernelshap":
            # Captum's own recipe: sample 1 the full coalition, sample 2 the empty
            # one (both weighted 1e6, standing in for the exact constraints), then
            # sizes from the Shapley kernel's distribution, uniform subsets, weight 1,
            # not in complementary pairs, fit by unregularised least squares. It
            # draws from torch's global generator, seeded here per example.
            torch.manual_seed(seed)
            attributions = KernelShap(probability).attribute(features, **sampled)
        else:
            generator = torch.Generator().manual_seed(seed)

            def samples(original, **kwargs):  # a generator function: Captum starts it once per example
                for keep in lit_samples(generator, **kwargs):
                    yield keep.to(original.device)

            lime = Lime(
                probability,
                interpretable_model=SkLearnRidge(alpha=LIME_RIDGE_ALPHA),
                similarity_func=lit_kernel,
                perturb_func=samples,
            )
            attributions = lime.attribute(features, **sampled)
        scores[positions.cpu()] = attributions[0].double().cpu()
        return scores.tolist(), int(cls)

    def shapley_check(self, options, example):
        """Untimed checks of OUR KernelSHAP scores for one dumped example, with the
        torch model: (|sum_i ours_i - (p(full) - p(empty))|, and, where ours
        enumerated every coalition (n >= 2^d - 2, so its fit is the exact Shapley
        value), max_i |ours_i - exact phi_i| from all 2^d coalitions, else None)."""
        positions, features, cls, replacement, probability = self.hider(example, options["hiding"])
        d = len(positions)
        ours = torch.tensor(example["scores"], dtype=torch.float64)
        if d == 0:
            return float(ours.abs().sum()), None
        ours = ours[positions.cpu()]
        enumerable = d < 32 and options["samples"] >= 2**d - 2
        if enumerable:  # row c keeps player j where bit j of c is set: row 0 empty, the last full
            keep = (torch.arange(2**d, device=self.device)[:, None] >> torch.arange(d, device=self.device)) & 1 == 1
        else:
            keep = torch.arange(2, device=self.device)[:, None].expand(2, d) == 1
        with torch.no_grad():
            v = torch.cat([
                probability(torch.where(chunk, features, torch.full_like(features, replacement)), cls)
                for chunk in keep.split(self.args.perturbations_per_eval)
            ]).cpu()  # fmt: skip
        efficiency = abs(float(ours.sum()) - float(v[-1] - v[0]))
        if not enumerable:
            return efficiency, None
        # phi_i = sum over S without i of |S|! (d - |S| - 1)! / d! (v(S + i) - v(S)).
        weight = [math.factorial(s) * math.factorial(d - s - 1) / math.factorial(d) for s in range(d)]
        sizes = keep.sum(1).cpu().tolist()
        exact = torch.zeros(d, dtype=torch.float64)
        for c in range(2**d):
            for i in range(d):
                if not c >> i & 1:
                    exact[i] += weight[sizes[c]] * float(v[c | 1 << i] - v[c])
        return efficiency, float((ours - exact).abs().max())


def lit_samples(generator, num_interp_features, **_):
    """Keep-vectors: all ones first, then k ~ U{1..d} random features hidden."""
    d = num_interp_features
    yield torch.ones(1, d, dtype=torch.long)
    while True:
        keep = torch.ones(1, d, dtype=torch.long)
        k = int(torch.randint(1, d + 1, (), generator=generator))
        keep[0, torch.randperm(d, generator=generator)[:k]] = 0
        yield keep


def lit_kernel(original, perturbed, interpretable, **_):
    """sqrt(exp(-D^2 / width^2)), D = 100 x the cosine distance between the
    keep-vector and all-ones = 100 (1 - sqrt(kept / d))."""
    kept, d = float(interpretable.sum()), interpretable.numel()
    distance = LIME_DISTANCE_SCALE * (1.0 - math.sqrt(kept / d))
    return math.sqrt(math.exp(-(distance**2) / LIME_KERNEL_WIDTH**2))


# ---------------------------------------------------------------- comparison and report


def compare(dumped, scores, gaps, scales):
    """Max abs difference; max over examples of max|ours - torch| / scale, the
    scale being max|ours| unless the method gives one; top-1 agreement over
    non-special tokens; max completeness-gap difference (IG)."""
    abs_diff, rel_diff, agree, gap_diff = 0.0, 0.0, 0, None
    for e, s, gap, scale in zip(dumped, scores, gaps, scales):
        ours, theirs = torch.tensor(e["scores"], dtype=torch.float64), torch.tensor(s, dtype=torch.float64)
        if len(ours) == 0:
            continue
        diff = float((ours - theirs).abs().max())
        abs_diff = max(abs_diff, diff)
        scale = max(float(ours.abs().max()), scale or 0.0, 1e-30)
        rel_diff = max(rel_diff, diff / scale)
        ordinary = torch.tensor([not f for f in e["special"]])
        if ordinary.any():
            agree += int(ours[ordinary].argmax() == theirs[ordinary].argmax())
        if gap is not None and e.get("completeness_gap") is not None:
            gap_diff = max(gap_diff or 0.0, abs(e["completeness_gap"] - gap))
    return {"max_abs_diff": abs_diff, "max_rel_diff": rel_diff, "top1_agreement": agree / len(dumped),
            "max_gap_diff": gap_diff}  # fmt: skip


def number(value, spec):
    return "–" if value is None else format(value, spec)


def cpu_name():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="train step folder, or cache root")
    parser.add_argument("--dump", required=True, help="JSON lines from `grid bench --dump`")
    parser.add_argument("--cell", help="dataset/shortcut/model (default: the dump's only cell)")
    parser.add_argument("--methods", help="comma-separated (default: the dump's methods for the cell)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per call, gradient and IG methods")
    parser.add_argument("--internal-batch-size", type=int, default=256, help="IG points per forward/backward")
    parser.add_argument(
        "--perturbations-per-eval", type=int, default=256, help="LIME/KernelSHAP/occlusion inputs per forward"
    )
    parser.add_argument("--tolerance", type=float, default=1e-3, help="max relative difference, deterministic methods")
    parser.add_argument("--seed", type=int, default=7, help="LIME and KernelSHAP sampling")
    parser.add_argument("--repeats", type=int, default=1, help="timed passes per method; the fastest is reported")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    # "\n" only: `splitlines` also splits at U+2028 inside a JSON string.
    lines = [json.loads(line) for line in pathlib.Path(args.dump).read_text().split("\n") if line.strip()]
    cells = sorted({line["cell"] for line in lines})
    cell = args.cell or (cells[0] if len(cells) == 1 else None)
    if cell not in cells:
        raise SystemExit(f"--cell: choose one of {cells}")
    lines = [line for line in lines if line["cell"] == cell]
    by_method = {}
    for line in lines:
        by_method.setdefault(line["method"], []).append(line)
    # Every dumped method explains the same examples; methods missing from the dump use them, uncompared.
    examples = list({line["index"]: line for line in lines}.values())
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else list(by_method)

    directory = find_checkpoint(args.checkpoint, cell)
    model, architecture, vocab = load_checkpoint(directory, device)
    runner = Runner(model, vocab, device, args)

    rows, skipped, mismatches, failures = [], [], [], []
    for method in methods:
        parsed = parse_method(method)
        if parsed is None:
            skipped.append(f"{method} (not implemented here)")
            continue
        family, options = parsed
        if family == "ig" and options["steps"] < 2:
            skipped.append(f"{method} (Captum's Riemann sums need n_steps >= 2)")
            continue
        dumped = by_method.get(method, examples)
        try:
            runner.explain(family, options, dumped[:1])  # warm-up, untimed
        except ValueError as error:
            skipped.append(f"{method} ({error})")
            continue
        seconds = math.inf
        for _ in range(args.repeats):
            synchronize(device)
            started = time.perf_counter()
            scores, predicted, gaps, scales = runner.explain(family, options, dumped)
            synchronize(device)
            seconds = min(seconds, time.perf_counter() - started)
        row = {"method": method, "examples": len(dumped), "seconds": seconds,
               "examples_per_second": len(dumped) / seconds}  # fmt: skip
        if method in by_method:
            for e, p in zip(dumped, predicted):
                if e["predicted"] != p:
                    mismatches.append(f"{method} example {e['index']}: ours {e['predicted']}, torch {p}")
            row.update(compare(dumped, scores, gaps, scales))
            row["compared"] = "exact" if family in DETERMINISTIC else "sampled"
            if family in DETERMINISTIC and row["max_rel_diff"] > args.tolerance:
                failures.append(f"{method}: relative difference {row['max_rel_diff']:.3g} > {args.tolerance:g}")
            if family == "kernelshap":
                checks = [runner.shapley_check(options, e) for e in by_method[method]]
                row["efficiency_max_dev"] = max(c[0] for c in checks)
                exact = [c[1] for c in checks if c[1] is not None]
                row["exact_shapley_examples"] = len(exact)
                row["exact_shapley_max_abs_diff"] = max(exact) if exact else None
                if row["efficiency_max_dev"] > args.tolerance:
                    deviation = row["efficiency_max_dev"]
                    failures.append(f"{method}: efficiency deviation {deviation:.3g} > {args.tolerance:g}")
                if exact and row["exact_shapley_max_abs_diff"] > args.tolerance:
                    failures.append(
                        f"{method}: difference from the exact Shapley values "
                        f"{row['exact_shapley_max_abs_diff']:.3g} > {args.tolerance:g}"
                    )
        rows.append(row)
        print(f"captum: {cell} {method} {row['examples_per_second']:.2f} examples/s", file=sys.stderr)

    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cell": cell,
        "architecture": architecture,
        "checkpoint": str(directory),
        "torch": torch.__version__,
        "captum": captum.__version__,
        "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({cpu_name()})",
        "threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "internal_batch_size": args.internal_batch_size,
        "perturbations_per_eval": args.perturbations_per_eval,
        "repeats": args.repeats,
        "load_average": os.getloadavg()[0],
    }
    print(
        f"{context['date']} · {cell} ({architecture}) · torch {context['torch']} · captum {context['captum']} · "
        f"device {context['device']} · {context['threads']} threads · batch {args.batch_size}, "
        f"internal_batch_size {args.internal_batch_size}, perturbations_per_eval {args.perturbations_per_eval} · "
        f"best of {args.repeats} · load average {context['load_average']:.2f}\n"
    )
    print("| method | examples | seconds | examples/s | max abs diff | max rel diff | IG gap diff | top-1 agree |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        exact = r.get("compared") == "exact"
        cells = [
            r["method"], str(r["examples"]), f"{r['seconds']:.3f}", f"{r['examples_per_second']:.2f}",
            number(r.get("max_abs_diff") if exact else None, ".2e"),
            number(r.get("max_rel_diff") if exact else None, ".2e"),
            number(r.get("max_gap_diff"), ".2e"),
            number(r.get("top1_agreement"), ".2f"),
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    shap_rows = [r for r in rows if "efficiency_max_dev" in r]
    if shap_rows:
        print("\nOur KernelSHAP scores against the torch model (Captum's are sampled: top-1 agreement only):\n")
        print("| method | examples | max abs(sum ours - (p(full) - p(empty))) | enumerated examples "
              "| max abs diff from exact Shapley |")
        print("|---|---:|---:|---:|---:|")
        for r in shap_rows:
            cells = [
                r["method"], str(r["examples"]), f"{r['efficiency_max_dev']:.2e}",
                str(r["exact_shapley_examples"]), number(r["exact_shapley_max_abs_diff"], ".2e"),
            ]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    compared = sum(len(by_method[r["method"]]) for r in rows if r["method"] in by_method)
    if compared:
        print(f"\npredictions: {compared - len(mismatches)}/{compared} dumped predictions equal the torch model's")
    else:
        print("\nnothing compared: none of these methods is in the dump")
    for note in skipped:
        print(f"skipped: {note}")
    for problem in mismatches + failures:
        print(f"MISMATCH: {problem}")
    if args.json:
        result = {"context": context, "rows": rows, "skipped": skipped, "mismatches": mismatches, "failures": failures}
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if mismatches or failures else 0)


if __name__ == "__main__":
    main()
