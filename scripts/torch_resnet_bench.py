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
Prints one JSON line per shape with images per second for each: the fastest
pass of those run for `--seconds`, as `grid bench --resnet` reports its own.

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
    """Images per second of the fastest pass of `run` (which handles `images`),
    passes repeated for `seconds` after one untimed: the statistic `grid bench
    --resnet` reports for its own passes (a mean would count the scheduler's
    noise on one side only)."""
    run()  # warm-up: allocations, kernel selection
    start, best = time.perf_counter(), float("inf")
    while True:
        begun = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - begun)
        if time.perf_counter() - start >= seconds:
            break
    return images / best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", action="append", required=True, help="width:side:stem, e.g. 8:32:small")
    parser.add_argument("--depth", type=int, default=18)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--maps", default="", help="Captum methods to time, e.g. gradient,smoothgrad,gradcam,gradient-shap")
    parser.add_argument("--map-images", type=int, default=8, help="images explained per timed pass")
    parser.add_argument("--smoothgrad-samples", type=int, default=50)
    parser.add_argument("--smoothgrad-spread", type=float, default=0.15)
    parser.add_argument("--gradient-shap-samples", type=int, default=64)
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
            # As Captum's Saliency takes it: the input's gradient alone
            # (`autograd.grad`), no parameter gradients.
            x = many.clone().requires_grad_(True)
            torch.autograd.grad(model(x)[:, 1].sum(), x)

        infer = rate(forward, 64, args.seconds)
        grad = rate(gradient, 64, args.seconds)
        maps = {name: round(rate(captum(name, model, side, args), args.map_images, args.seconds), 2)
                for name in filter(None, args.maps.split(","))}
        print(json.dumps({
            "depth": args.depth, "width": width, "side": side, "stem": stem, "threads": args.threads,
            "torch": torch.__version__, "train_images_per_s": round(train, 1),
            "forward_images_per_s": round(infer, 1), "gradient_images_per_s": round(grad, 1),
            "maps_per_s": maps,
        }), flush=True)


def captum(name, model, side, args):
    """One pass of Captum's `name` over `--map-images` images, each explained
    for its own target, batched as Captum batches them; the settings are
    grid's (`[images.attribution]`): SmoothGrad's copies and noise, and
    GradientSHAP's draws from a background of as many images."""
    from captum.attr import GradientShap, LayerAttribution, LayerGradCam, NoiseTunnel, Saliency

    x = torch.randn(args.map_images, 3, side, side)
    targets = torch.arange(args.map_images) % 2
    background = torch.randn(args.map_images, 3, side, side)
    sigma = args.smoothgrad_spread * float(x.max() - x.min())
    if name == "gradient":
        return lambda: Saliency(model).attribute(x, target=targets, abs=True).sum(1)
    if name == "smoothgrad":
        tunnel = NoiseTunnel(Saliency(model))
        return lambda: tunnel.attribute(
            x, nt_type="smoothgrad", nt_samples=args.smoothgrad_samples, stdevs=sigma, target=targets, abs=True
        ).sum(1)
    if name == "gradcam":
        cam = LayerGradCam(model, model.layer4)
        return lambda: LayerAttribution.interpolate(
            cam.attribute(x, target=targets, relu_attributions=True), (side, side), "bilinear"
        )
    if name == "gradient-shap":
        shap = GradientShap(model)
        return lambda: shap.attribute(
            x, baselines=background, n_samples=args.gradient_shap_samples, stdevs=0.0, target=targets
        ).sum(1)
    raise SystemExit(f"unknown map method {name!r}")


if __name__ == "__main__":
    main()
