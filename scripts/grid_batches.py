"""grid's training batches, for the PyTorch sides of its training benchmarks.

A train step shuffles the examples, sorts pools of 50 batches by length, cuts
them into batches and shuffles the batches (`crates/grid-core/src/train`): the same shapes on
both sides of a comparison.
"""

import torch


def batches(lengths, batch_size, generator):
    order = torch.randperm(len(lengths), generator=generator).tolist()
    pool = batch_size * 50
    out = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        out.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [out[i] for i in torch.randperm(len(out), generator=generator).tolist()]
