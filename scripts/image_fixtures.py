"""A torchvision ResNet with the saliency maps Captum (and the `lime`
package, the paper's LIME) compute on it, for the image protocol's
equivalence tests (issue 47; grid-core `model::resnet::load`, grid-methods
`salience::image::equivalence`).

The model is torchvision's own `ResNet` class, its `BasicBlock` and
`_make_layer`, at ResNet-34's depth (3, 4, 6, 3 blocks) but 4 channels
wide instead of 64 (so the fixture stays small), with the ImageNet stem and
two classes; random weights under a fixed seed, batch-norm statistics and
affine parameters moved off their initial values (a layer that failed to
load would show), evaluation mode. Three 64 x 64 crops of scikit-image's
sample photographs (public domain / CC0: chelsea, coffee, astronaut) are the
inputs, ImageNet-normalised as `grid` does.

`reference.safetensors` holds, per image: the logits; the target (predicted
class, and the other for the third image); Captum's Saliency (abs, channels summed), GradCAM at `layer4`
(ReLU, bilinear upsampling), SmoothGrad (NoiseTunnel over Saliency, 512
samples, sigma 0.15 (max - min)) and GradientShap (2,000 samples, the three
images as background, signed, per channel); scikit-image's SLIC segments
(at most 7), Captum's exact ShapleyValues over them (segment-mean baseline,
class probability), and the `lime` package's samples, targets and ridge
coefficients over the same segments. SmoothGrad and GradientShap are random
in Captum: the tests compare them statistically.

Regenerate (needs torch, torchvision, captum, lime, scikit-image; a CPU is
enough):

    python scripts/image_fixtures.py tests/fixtures/resnet_torchvision
"""

import json
import pathlib
import sys

import numpy as np
import skimage.data
import skimage.segmentation
import skimage.transform
import torch
import torchvision
from captum.attr import GradientShap, LayerAttribution, LayerGradCam, NoiseTunnel, Saliency, ShapleyValues
from lime import lime_image
from safetensors.torch import save_file
from sklearn.metrics import pairwise_distances
from torchvision.models.resnet import BasicBlock

WIDTH = 4
SIDE = 64
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def narrow_resnet34(width: int, classes: int) -> torchvision.models.ResNet:
    """torchvision's ResNet-34, every stage `width / 64` as wide."""
    model = torchvision.models.ResNet(BasicBlock, [3, 4, 6, 3], num_classes=classes)
    model.inplanes = width
    model.conv1 = torch.nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
    model.bn1 = torch.nn.BatchNorm2d(width)
    model.layer1 = model._make_layer(BasicBlock, width, 3)
    model.layer2 = model._make_layer(BasicBlock, 2 * width, 4, stride=2)
    model.layer3 = model._make_layer(BasicBlock, 4 * width, 6, stride=2)
    model.layer4 = model._make_layer(BasicBlock, 8 * width, 3, stride=2)
    model.fc = torch.nn.Linear(8 * width, classes)
    return model


def photos() -> torch.Tensor:
    """Three centre crops of scikit-image's sample photographs, [3, 3, 64, 64] on [0, 1]."""
    out = []
    for name in ["chelsea", "coffee", "astronaut"]:
        image = getattr(skimage.data, name)()
        h, w = image.shape[:2]
        side = min(h, w)
        top, left = (h - side) // 2, (w - side) // 2
        crop = image[top : top + side, left : left + side]
        small = skimage.transform.resize(crop, (SIDE, SIDE), anti_aliasing=True)
        out.append(torch.tensor(small, dtype=torch.float32).permute(2, 0, 1))
    return torch.stack(out).clamp(0, 1)


def segments_of(image_hwc: np.ndarray) -> np.ndarray:
    """skimage's SLIC with at most 7 segments (exact Shapley values stay cheap), labels 0..k."""
    for n in range(16, 3, -1):
        labels = skimage.segmentation.slic(image_hwc, n_segments=n, compactness=10, start_label=0)
        _, labels = np.unique(labels, return_inverse=True)
        labels = labels.reshape(image_hwc.shape[:2])
        if labels.max() + 1 <= 7:
            return labels
    raise SystemExit("no segmentation with at most 7 segments")


def main(out: pathlib.Path) -> None:
    torch.manual_seed(0)
    model = narrow_resnet34(WIDTH, 2)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.6, 1.4)
                module.bias.uniform_(-0.2, 0.2)
    model.eval()
    images = photos()
    x = (images - MEAN) / STD
    with torch.no_grad():
        logits = model(x)
    # Both classes explained: the first two images' predicted class, the third's other one.
    targets = logits.argmax(1)
    targets[2] = 1 - targets[2]
    probability = lambda inputs: torch.softmax(model(inputs), 1)  # noqa: E731

    saliency, gradcam, smoothgrad, gradient_shap, shapley, segments = [], [], [], [], [], []
    lime_keeps, lime_targets, lime_coefficients = {}, {}, {}
    explainer = lime_image.LimeImageExplainer(random_state=0)
    for i in range(len(images)):
        xi, t = x[i : i + 1], int(targets[i])
        saliency.append(Saliency(model).attribute(xi, target=t, abs=True).sum(1)[0])
        cam = LayerGradCam(model, model.layer4).attribute(xi, target=t, relu_attributions=True)
        gradcam.append(LayerAttribution.interpolate(cam, (SIDE, SIDE), "bilinear")[0, 0])
        sigma = 0.15 * float(xi.max() - xi.min())
        torch.manual_seed(1 + i)
        tunnel = NoiseTunnel(Saliency(model))
        smooth = tunnel.attribute(xi, nt_type="smoothgrad", nt_samples=512, nt_samples_batch_size=64, stdevs=sigma, target=t, abs=True)
        smoothgrad.append(smooth.sum(1)[0])
        torch.manual_seed(10 + i)
        phi = GradientShap(model).attribute(xi, baselines=x, n_samples=2000, stdevs=0.0, target=t)
        gradient_shap.append(phi[0])

        hwc = images[i].permute(1, 2, 0).numpy().astype(np.float64)
        labels = segments_of(hwc)
        segments.append(torch.tensor(labels, dtype=torch.int64))
        d = int(labels.max()) + 1
        fudged = hwc.copy()
        for s in range(d):
            fudged[labels == s] = hwc[labels == s].mean(0)
        baseline = (torch.tensor(fudged, dtype=torch.float32).permute(2, 0, 1)[None] - MEAN) / STD
        mask = torch.tensor(labels)[None, None]
        values = ShapleyValues(probability).attribute(xi, baselines=baseline, target=t, feature_mask=mask, perturbations_per_eval=32)
        shapley.append(values[0, 0])

        def classifier(batch: np.ndarray) -> np.ndarray:
            inputs = (torch.tensor(batch, dtype=torch.float32).permute(0, 3, 1, 2) - MEAN) / STD
            with torch.no_grad():
                return probability(inputs).numpy().astype(np.float64)

        data, labels_out = explainer.data_labels(hwc, fudged, labels, classifier, num_samples=1000, batch_size=100)
        distances = pairwise_distances(data, data[0].reshape(1, -1), metric="cosine").ravel()
        _, local_exp, _, _ = explainer.base.explain_instance_with_data(data, labels_out, distances, t, num_features=100000)
        coefficients = np.zeros(d)
        for feature, weight in local_exp:
            coefficients[feature] = weight
        lime_keeps[f"lime_keeps_{i}"] = torch.tensor(data, dtype=torch.uint8)
        lime_targets[f"lime_targets_{i}"] = torch.tensor(labels_out[:, t], dtype=torch.float64)
        lime_coefficients[f"lime_coefficients_{i}"] = torch.tensor(coefficients, dtype=torch.float64)

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    save_file(state, str(out / "model.safetensors"))
    reference = {
        "images": images.contiguous(),
        "logits": logits.contiguous(),
        "targets": targets.contiguous(),
        "saliency": torch.stack(saliency).detach().contiguous(),
        "gradcam": torch.stack(gradcam).detach().contiguous(),
        "smoothgrad": torch.stack(smoothgrad).detach().contiguous(),
        "gradient_shap": torch.stack(gradient_shap).detach().contiguous(),
        "segments": torch.stack(segments).contiguous(),
        "shapley": torch.stack(shapley).detach().contiguous(),
        **lime_keeps,
        **lime_targets,
        **lime_coefficients,
    }
    versions = {"torch": torch.__version__, "torchvision": torchvision.__version__, "captum": __import__("captum").__version__, "lime": "0.2.0.1"}
    save_file(reference, str(out / "reference.safetensors"), metadata={"versions": json.dumps(versions), "width": str(WIDTH), "side": str(SIDE)})
    print(f"wrote {out}: {sum(v.numel() for v in state.values())} parameters; targets {targets.tolist()}; segments {[int(s.max()) + 1 for s in segments]}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/resnet_torchvision"))
