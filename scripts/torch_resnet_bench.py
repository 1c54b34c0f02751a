"""PyTorch's CPU rate on the ResNets `grid` trains for Zhou et al.'s image
protocol, the peer for BENCHMARKS' "The image protocol's cost on a CPU".

For each (width, side, stem) given, torchvision's `ResNet` with
`BasicBlock`s (ResNet-18 or -34), two classes, the first stage `width`
channels wide (torchvision: 64); the small stem is grid's (a 3 x 3
convolution of stride 1, no max pool). Times, on random images:
- training: SGD steps (momentum 0.9, weight decay 1e-4) on batches of
  `--batch`, forward, cross-entropy, backward, update;
- inference: forward passes over batches of 64 in evaluation mode (what
  LIME and KernelSHAP run);
- gradients: the input gradient of a batch of 64 (Gradient, SmoothGrad).
Prints one JSON line per shape with images per second for each.

    python scripts/torch_resnet_bench.py --threads 2 --shape 8:32:small --shape 64:112:imagenet
"""

import argparse
import json
import time

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet


def resnet(depth, width, stem):
    layers = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[depth]
    model = ResNet(BasicBlock, layers, num_classes=2)
    if width != 64 or stem == "small":
        # torchvision's class fixes 64 channels: rebuild its layers narrower.
        model.inplanes = width
        model.conv1 = (
            nn.Conv2d(3, width, 7, 2, 3, bias=False) if stem == "imagenet" else nn.Conv2d(3, width, 3, 1, 1, bias=False)
        )
        model.bn1 = nn.BatchNorm2d(width)
        if stem == "small":
            model.maxpool = nn.Identity()
        model.layer1 = model._make_layer(BasicBlock, width, layers[0])
        model.layer2 = model._make_layer(BasicBlock, width * 2, layers[1], stride=2)
        model.layer3 = model._make_layer(BasicBlock, width * 4, layers[2], stride=2)
        model.layer4 = model._make_layer(BasicBlock, width * 8, layers[3], stride=2)
        model.fc = nn.Linear(width * 8, 2)
    return model


def rate(run, images, seconds):
    """Images per second of `run` (which handles `images`), repeated for `seconds`."""
    run()  # warm-up: allocations, kernel selection
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        done += images
    return done / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", action="append", required=True, help="width:side:stem, e.g. 8:32:small")
    parser.add_argument("--depth", type=int, default=18)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for shape in args.shape:
        width, side, stem = shape.split(":")
        width, side = int(width), int(side)
        model = resnet(args.depth, width, stem)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        images = torch.randn(args.batch, 3, side, side)
        labels = torch.randint(0, 2, (args.batch,))

        def train_step():
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()

        model.train()
        train = rate(train_step, args.batch, args.seconds)
        model.eval()
        many = torch.randn(64, 3, side, side)

        def forward():
            with torch.no_grad():
                model(many)

        def gradient():
            x = many.clone().requires_grad_(True)
            model(x)[:, 1].sum().backward()

        infer = rate(forward, 64, args.seconds)
        grad = rate(gradient, 64, args.seconds)
        print(json.dumps({
            "depth": args.depth, "width": width, "side": side, "stem": stem, "threads": args.threads,
            "torch": torch.__version__, "train_images_per_s": round(train, 1),
            "forward_images_per_s": round(infer, 1), "gradient_images_per_s": round(grad, 1),
        }), flush=True)


if __name__ == "__main__":
    main()
