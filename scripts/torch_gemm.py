#!/usr/bin/env python3
"""torch's side of `grid bench --gemm`: the same dense layers, timed the same way.

Reads the shapes grid times as JSON on stdin (a list of objects with `phase`,
`batch`, `tokens`, `inputs`, `outputs`), and prints one rate per shape
(GFLOP/s) as a JSON list. A pass is `F.linear` on `[batch, tokens, inputs]`
forward and backward: `train` tracks the weight and bias (three products),
`attribute` only the input (two), as grid's passes. The fastest pass of those
run in half a second counts, after one untimed pass.

    grid bench --gemm runs it; by hand:
    echo '[{"phase":"train","batch":16,"tokens":26,"inputs":384,"outputs":1536}]' \
        | python3 scripts/torch_gemm.py --threads 2
"""
import argparse
import json
import sys
import time

MIN_TIMED_SECONDS = 0.5
MAX_PASSES = 200


def rate(torch, shape):
    batch, tokens = shape["batch"], shape["tokens"]
    inputs, outputs = shape["inputs"], shape["outputs"]
    train = shape["phase"] == "train"
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(batch, tokens, inputs, generator=gen) * 2 - 1
    weight = (torch.rand(outputs, inputs, generator=gen) * 2 - 1).requires_grad_(train)
    bias = torch.zeros(outputs).requires_grad_(train)
    probe = torch.rand(batch, tokens, outputs, generator=gen) * 2 - 1

    def one_pass():
        start = time.perf_counter()
        xs = x.detach().requires_grad_(True)
        y = torch.nn.functional.linear(xs, weight, bias)
        y.backward(probe)
        weight.grad = None
        bias.grad = None
        return time.perf_counter() - start

    one_pass()
    begun, best = time.perf_counter(), float("inf")
    for _ in range(MAX_PASSES):
        best = min(best, one_pass())
        if time.perf_counter() - begun >= MIN_TIMED_SECONDS:
            break
    products = 3 if train else 2
    flops = 2.0 * products * batch * tokens * inputs * outputs
    return flops / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    shapes = json.load(sys.stdin)
    json.dump([rate(torch, shape) for shape in shapes], sys.stdout)


if __name__ == "__main__":
    main()
