"""The PyTorch side of grid's BiLSTM training throughput comparison.

Trains the torch copy of grid's BiLSTM (`BiLstmClassifier` of
`scripts/captum_bench.py`: embedding, one bidirectional `nn.LSTM` over each
sequence's own length, keys-only additive attention, Linear + ReLU, Linear)
with grid's LSTM recipe on the same data and batch shapes as a grid train
step: SGD with momentum, weight decay, dropout after the embedding, the LSTM
and the hidden layer, binary cross-entropy on one logit, batches of
`--batch-size` drawn in grid's way (shuffle, sort pools of 50 batches by
length, shuffle the batches). The model starts from torch's own random
init: the time of a step does not depend on the weights.

    python scripts/torch_lstm_train_bench.py --train-step CACHE/train/xx/KEY \
        --data CACHE/synth/yy/KEY/train.jsonl [--steps 1000] [--threads 2]

`--train-step` is a grid BiLSTM train step folder (`config.json`,
`vocab.json`, `training.json`): the sizes, the vocabulary, the maximum length
and grid's own examples/s come from it. Prints one JSON object: torch's
training examples per second (training time only, as grid's
`examples_per_second` counts it), grid's, and the ratio.
"""

import argparse
import json
import pathlib
import platform
import sys
import time

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from captum_bench import BiLstmClassifier  # noqa: E402
from grid_batches import batches  # noqa: E402


class Training(nn.Module):
    """The classifier with grid's training-time dropout (PROTOCOL §2: after the
    embedding, the LSTM and the hidden layer)."""

    def __init__(self, model, dropout):
        super().__init__()
        self.model = model
        self.drop = nn.Dropout(dropout)

    def forward(self, ids, mask):
        m = self.model
        embeddings = self.drop(m.embed(ids))
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(embeddings, lengths, batch_first=True, enforce_sorted=False)
        states, _ = nn.utils.rnn.pad_packed_sequence(m.lstm(packed)[0], batch_first=True, total_length=ids.shape[1])
        states = self.drop(states)
        scores = m.scorer(torch.tanh(m.projection(states))).squeeze(-1)
        real = mask.bool()
        alpha = torch.softmax(scores.masked_fill(~real, -1.0e9), dim=1) * real
        context = (states * alpha.unsqueeze(-1)).sum(1)
        return m.output(self.drop(torch.relu(m.hidden(context))))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-step", required=True, type=pathlib.Path)
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.2)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    saved = json.loads((args.train_step / "config.json").read_text())
    if saved.get("architecture") != "bilstm":
        sys.exit(f"{args.train_step}: not a BiLSTM train step")
    config, max_length = saved["config"], saved["max_length"]
    words = json.loads((args.train_step / "vocab.json").read_text())["words"]
    index = {w: i for i, w in enumerate(words)}
    unk = index["[UNK]"]
    examples = []
    # Lines end at "\n" only: `splitlines` also splits at U+2028 and U+0085,
    # which IMDB's reviews hold inside their JSON strings.
    for number, line in enumerate(args.data.read_text().split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{args.data}:{number}: not JSON ({e})")
        ids = [index.get(w, unk) for w in row["text"].split()[:max_length]]
        examples.append((ids, int(row["label"])))
    if not examples:
        sys.exit(f"{args.data}: no examples")

    model = Training(BiLstmClassifier(config), config["dropout"])
    model.train()
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.learning_rate, momentum=args.momentum, weight_decay=args.weight_decay
    )
    loss_fn = nn.BCEWithLogitsLoss()
    generator = torch.Generator().manual_seed(args.seed)
    lengths = [len(ids) for ids, _ in examples]
    step, seen, seconds = 0, 0, 0.0
    while step < args.steps:
        for batch in batches(lengths, args.batch_size, generator):
            if step >= args.steps:
                break
            width = max(lengths[i] for i in batch)
            ids = torch.zeros(len(batch), width, dtype=torch.long)
            mask = torch.zeros(len(batch), width)
            for row, i in enumerate(batch):
                ids[row, : lengths[i]] = torch.tensor(examples[i][0])
                mask[row, : lengths[i]] = 1.0
            labels = torch.tensor([[float(examples[i][1])] for i in batch])
            started = time.perf_counter()
            optimizer.zero_grad()
            loss = loss_fn(model(ids, mask), labels)
            loss.backward()
            optimizer.step()
            seconds += time.perf_counter() - started
            seen += len(batch)
            step += 1
    torch_rate = seen / seconds
    grid_summary = json.loads((args.train_step / "training.json").read_text())["summary"]
    grid_rate = grid_summary["examples_per_second"]
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "threads": args.threads,
                "cpu": platform.processor() or platform.machine(),
                "steps": step,
                "torch_examples_per_second": round(torch_rate, 1),
                "grid_examples_per_second": round(grid_rate, 1),
                "grid_steps": grid_summary["steps"],
                "grid_over_torch": round(grid_rate / torch_rate, 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
