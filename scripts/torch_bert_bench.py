"""The PyTorch + transformers side of grid's BERT throughput comparison.

Measures, on the same checkpoint, data and recipe as a grid train/attribute step:
- fine-tuning throughput (examples/s): BertForSequenceClassification with one
  logit, AdamW (lr 5e-5, weight decay 5e-6, eps 1e-8), linear warm-up/decay,
  gradient clipping at 1, batch 16, max length 100, batches of similar length;
- attribution throughput (examples/s) of a gradient method (grad-l2 on the
  word-embedding output, one forward and one backward per batch of 32);
- peak accelerator memory (CUDA only).

    python scripts/torch_bert_bench.py --model DIR --data sst2/train.parquet \
        --attribute-data sst2/test.parquet [--device cuda] [--steps 200]

`--model` is a Hugging Face checkpoint folder, or a grid BERT train step folder
(`config.json` with `"architecture": "bert"`, `tokenizer.json`): then the torch
model has that model's sizes and vocabulary and starts from a random init, as a
grid model without a checkpoint does (`scripts/gpu_bench.sh` uses this).

Prints one JSON object. Compare with `examples_per_second` in the cache's
train/<key>/training.json and attribute/<key>/summary.json.
"""

import argparse
import json
import os
import time

import pandas as pd
import torch
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    PreTrainedTokenizerFast,
    get_linear_schedule_with_warmup,
)

from grid_batches import batches


def read_table(path):
    """Parquet, or JSON lines with `text` and `label` (a grid cache's splits)."""
    return pd.read_json(path, lines=True) if str(path).endswith(".jsonl") else pd.read_parquet(path)


def load(folder):
    """(tokenizer, one-logit BertForSequenceClassification) of a Hugging Face
    checkpoint, or of a grid train step folder's sizes and vocabulary."""
    spec_path = os.path.join(folder, "config.json")
    spec = json.load(open(spec_path)) if os.path.isfile(spec_path) else {}
    if spec.get("architecture") != "bert":
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return tokenizer, BertForSequenceClassification.from_pretrained(folder, num_labels=1)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=os.path.join(folder, "tokenizer.json"),
        unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
    )  # fmt: skip
    keys = [
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
        "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
        "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id",
    ]  # fmt: skip
    config = BertConfig(**{k: spec["config"][k] for k in keys if k in spec["config"]}, num_labels=1)
    return tokenizer, BertForSequenceClassification(config)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--examples", type=int, default=8000)
    parser.add_argument("--attribute", type=int, default=512)
    parser.add_argument("--attribute-data", help="texts to attribute (default: --data)")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--amp", action="store_true",
                        help="automatic mixed precision: torch.autocast(dtype=torch.bfloat16) around forward and loss")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(1)
    generator = torch.Generator().manual_seed(1)

    frame = read_table(args.data)
    texts = frame["text"].tolist()[: args.examples]
    labels = frame["label"].tolist()[: args.examples]
    tokenizer, model = load(args.model)
    model = model.to(device)
    encoded = [tokenizer(t, truncation=True, max_length=100)["input_ids"] for t in texts]

    def tensors(idx):
        width = max(len(encoded[i]) for i in idx)
        ids = torch.zeros(len(idx), width, dtype=torch.long)
        mask = torch.zeros(len(idx), width, dtype=torch.long)
        for row, i in enumerate(idx):
            ids[row, : len(encoded[i])] = torch.tensor(encoded[i])
            mask[row, : len(encoded[i])] = 1
        return ids.to(device), mask.to(device)

    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=5e-6, eps=1e-8)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * args.steps), args.steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    plan = batches([len(e) for e in encoded], 16, generator)
    seen, step = 0, 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    while step < args.steps:
        for idx in plan:
            ids, mask = tensors(idx)
            y = torch.tensor([float(labels[i]) for i in idx], device=device)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.amp):
                logits = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1)
                loss = loss_fn(logits.float(), y)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            seen += len(idx)
            step += 1
            if step >= args.steps:
                break
    if device.type == "cuda":
        torch.cuda.synchronize()
    train_seconds = time.perf_counter() - started

    model.eval()
    if args.attribute_data:
        attributed = read_table(args.attribute_data)["text"].tolist()[: args.attribute]
        encoded = [tokenizer(t, truncation=True, max_length=100)["input_ids"] for t in attributed]
    order = sorted(range(min(args.attribute, len(encoded))), key=lambda i: len(encoded[i]))
    started = time.perf_counter()
    for start in range(0, len(order), 32):
        ids, mask = tensors(order[start : start + 32])
        embeddings = model.bert.embeddings.word_embeddings(ids).detach().requires_grad_(True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.amp):
            logits = model(inputs_embeds=embeddings, attention_mask=mask).logits.squeeze(-1).float()
        target = torch.where(logits > 0, logits, -logits)
        (grad,) = torch.autograd.grad(target.sum(), embeddings)
        grad.norm(dim=-1).cpu()
    if device.type == "cuda":
        torch.cuda.synchronize()
    attribute_seconds = time.perf_counter() - started
    result = {
        "device": str(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "amp": "bf16" if args.amp else None,
        "train_steps": step,
        "train_examples_per_second": seen / train_seconds,
        "attribute_examples": len(order),
        "attribute_examples_per_second": len(order) / attribute_seconds,
    }
    if device.type == "cuda":
        result["peak_memory_mib"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(result))


if __name__ == "__main__":
    main()
