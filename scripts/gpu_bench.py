#!/usr/bin/env python3
"""grid on a GPU, beside PyTorch and Captum, in one go: the driver behind
`scripts/gpu_bench.sh` (which sets the library paths; run that).

For every backend the binary has for the device (`libtorch`, `cubecl` on CUDA;
`flex`, `libtorch` on CPU):

1. the quickstart, timed: cold (an empty cache) and, for cubecl, warm (only its
   compiled kernels kept); its tables compared with a CPU run of the same binary
   (the largest difference of any cell, the cells that differ by more than 0.05,
   and how many shortcut models passed verification);
2. a BERT-base-sized model (12 layers, hidden 768, 12 heads; random init from a
   config, WordPiece vocabulary learnt from SST-2): trained for a fixed number of
   steps (`grid run`, training examples/s from its training.json), then
   attributed with gradients, IG-100 and LIME-1000 (`grid bench`, examples/s);

beside them PyTorch + transformers on the same sizes, vocabulary and data
(`scripts/torch_bert_bench.py`), and Captum on the very inputs grid explained
(`scripts/captum_bench.py`, when Captum is importable); peak GPU memory from
nvidia-smi (peak resident memory of the process on CPU). Prints one Markdown
table and writes it, with every log and JSON, to the output folder.

`--size tiny` shrinks everything (a 2-layer BERT of width 64, a small grid in
place of the quickstart, generated data when SST-2 is absent) so that CI checks
on a CPU, in a few minutes, that the script works. Needs no network and no Rust.
"""

import argparse
import csv
import datetime
import json
import os
import pathlib
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

SIZES = {
    # BERT-base: NOTES-gpu.md's recipe (SST-2, 4,000 examples, length <= 100, batch 16, 100 steps).
    # 256 examples attributed, so the attribution rates are not start-up noise (issue 42).
    "base": dict(hidden=768, layers=12, heads=12, intermediate=3072, vocab=30522, train=4000, steps=100,
                 attribute=256, methods=["gradp-l2", "igl-zero-100", "limeunk-1000"]),
    # all-MiniLM-L6-v2's shape (random init): the BERT a CPU user fine-tunes; sized for 2 cores.
    # One epoch (2,000 / 16 = 125 steps), so grid and PyTorch see the same examples: over 30
    # steps each side's own shuffle drew batches of other lengths (117 vs 87 ex/s for PyTorch).
    "minilm": dict(hidden=384, layers=6, heads=12, intermediate=1536, vocab=8000, train=2000, steps=125,
                   attribute=8, methods=["gradp-l2", "igl-zero-100", "limeunk-1000"]),
    "tiny": dict(hidden=64, layers=2, heads=4, intermediate=256, vocab=1000, train=600, steps=20,
                 attribute=8, methods=["gradp-l2", "igl-zero-100", "limeunk-1000"]),
}  # fmt: skip

# The quickstart's architectures and methods at test size (tests/shapes.rs), for --size tiny.
SMALL_QUICKSTART = """
name = "quickstart"
metrics = ["precision", "rank"]

[[datasets]]
name = "generated"
generated = { train = 500, validation = 120, test = 100, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["st", "tic", "op"]
seed = 5

[[models]]
name = "lstm"
architecture = "bilstm"
embedding_dim = 16
hidden_size = 16
attention_size = 16
mlp_size = 16
dropout = 0.0
word_dropout = 0.0

[models.training]
batch_size = 32
learning_rate = 0.2
max_steps = 80
eval_every = 40
patience = 80

[[models]]
name = "tiny-bert"
architecture = "bert"
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 32
wordpiece_vocab_size = 200
dropout = 0.0

[models.training]
batch_size = 16
learning_rate = 1e-3
max_steps = 60
eval_every = 30
patience = 60

[attribution]
methods = ["gradp-l2", "gxil", "igl-zero-20", "limeunk-40", "occlusion-unk", "attn", "attn-last", "deeplift", "random"]
sample = 30
"""

BERT_GRID = """
name = "bert_bench"
metrics = ["precision"]

[[datasets]]
name = "{dataset}"
{source}
max_length = 100
batch_size = 16

[shortcuts]
kinds = ["st"]
mix_share = 0.2
max_distance = 50
seed = 13

[[models]]
name = "bert-{size}"
architecture = "bert"
hidden_size = {hidden}
num_hidden_layers = {layers}
num_attention_heads = {heads}
intermediate_size = {intermediate}
wordpiece_vocab_size = {vocab}
dropout = 0.1

[models.training]
batch_size = 16
learning_rate = 5e-5
weight_decay = 5e-6
warmup_share = 0.1
max_steps = {steps}
eval_every = {steps}
patience = {steps}
seed = 1

[attribution]
methods = ["gradp-l2"]
sample = {attribute}
seed = 7
"""


class Run:
    """One timed command: wall seconds, exit code, peak memory (MiB), log file."""

    def __init__(self, name, seconds, code, peak_mib, log):
        self.name, self.seconds, self.code, self.peak_mib, self.log = name, seconds, code, peak_mib, log

    @property
    def ok(self):
        return self.code == 0

    def status(self):
        if self.code == "timeout":
            return "timed out"
        return "ok" if self.ok else f"failed (exit {self.code}, {self.log.name})"


class GpuMemory:
    """Polls nvidia-smi for the device's used memory; the peak above the baseline."""

    def __init__(self, index):
        self.index = index
        self.available = index is not None and shutil.which("nvidia-smi") is not None

    def used(self):
        out = subprocess.run(
            ["nvidia-smi", f"--id={self.index}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        try:
            return float(out.stdout.strip().splitlines()[0])
        except (ValueError, IndexError):
            return None

    def __enter__(self):
        self.peak, self.baseline, self.stop = None, self.used() if self.available else None, threading.Event()
        if self.available:
            self.thread = threading.Thread(target=self.poll, daemon=True)
            self.thread.start()
        return self

    def poll(self):
        while not self.stop.is_set():
            used = self.used()
            if used is not None:
                self.peak = used if self.peak is None else max(self.peak, used)
            self.stop.wait(0.25)

    def __exit__(self, *exc):
        self.stop.set()
        if self.available:
            self.thread.join()

    def peak_mib(self):
        if self.peak is None or self.baseline is None:
            return None
        return max(self.peak - self.baseline, 0.0)


def run(name, command, out, limit, env=None, gpu=None):
    """Runs `command` (its own process group, killed after `limit` s) with its
    output in out/<name>.log."""
    log = out / f"{name}.log"
    print(f"[{datetime.datetime.now():%H:%M:%S}] {name}: {' '.join(map(str, command))}", file=sys.stderr, flush=True)
    with open(log, "w") as sink, GpuMemory(gpu) as memory:
        started = time.perf_counter()
        process = subprocess.Popen(
            list(map(str, command)), stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        code, rss_kib = None, None
        deadline = started + limit
        while code is None:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                rss_kib = usage.ru_maxrss
                break
            if time.perf_counter() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                os.wait4(process.pid, 0)
                code = "timeout"
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
    peak = memory.peak_mib() if gpu is not None else (rss_kib / 1024 if rss_kib else None)
    result = Run(name, seconds, code, peak, log)
    print(f"    {result.status()} in {seconds:.1f} s", file=sys.stderr, flush=True)
    return result


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compare_tables(reports, reference):
    """(largest |difference| of any cell, cells differing by > 0.05, cells) between
    two runs' results_long.csv."""
    key = ("model", "dataset", "shortcut", "method", "metric", "seed")

    def cells(folder):
        return {tuple(r[k] for k in key): r["value"] for r in read_csv(folder / "results_long.csv")}

    ours, theirs = cells(reports), cells(reference)
    largest, differing, compared = 0.0, 0, 0
    for cell, value in ours.items():
        if cell not in theirs or value in ("", "NaN") or theirs[cell] in ("", "NaN"):
            continue
        difference = abs(float(value) - float(theirs[cell]))
        largest, compared = max(largest, difference), compared + 1
        differing += difference > 0.05
    missing = len(set(theirs) ^ set(ours))
    return largest, differing, compared, missing


def verified(reports):
    rows = read_csv(reports / "verification.csv")
    return sum(r["passed"] == "true" for r in rows), len(rows)


def backends_for(args):
    """Backends to run, each `name` or `name:precision` (e.g. `libtorch:bf16-mixed`)."""
    if args.backends:
        return args.backends
    if args.device.startswith("cuda"):
        return ["libtorch", "libtorch:bf16-mixed", "cubecl"]
    return ["flex", "libtorch", "libtorch:bf16-mixed"]


def backend_args(spec):
    """`--backend` (and `--precision`) for a backend spec of `backends_for`."""
    name, _, precision = spec.partition(":")
    return ["--backend", name] + (["--precision", precision] if precision else [])


def not_built(result):
    text = result.log.read_text(errors="replace")
    return result.code == 2 and ("this build of grid has no" in text or "runs on" in text)


def quickstart(args, out, grid_file, env, gpu):
    """Rows: backend, cold s, warm s, tables vs CPU, verified."""
    rows, reference = [], None
    common = [grid_file, "-q"]
    if args.data_root:
        common += ["--data-root", args.data_root]
    if args.cpu_reference:
        # A CPU run of the same grid made earlier (same keys: any binary of the
        # same grid version), e.g. on the build machine, to spare the GPU machine.
        reference = args.cpu_reference.resolve()
        rows.append(dict(backend=f"flex (cpu, {reference})", cold=None, warm=None, reports=reference, given=True))
    elif args.device.startswith("cuda") and not args.no_cpu_reference:
        folder = out / "quickstart-cpu"
        r = run("quickstart-cpu", [args.grid, "run", *common, "--cache", folder / "cache", "--reports",
                folder / "reports", "--device", "cpu"], out, args.time_limit, env)  # fmt: skip
        if r.ok:
            reference = folder / "reports" / "quickstart"
        rows.append(dict(backend="flex (cpu)", cold=r, warm=None, reports=reference))
    for backend in [b for b in backends_for(args) if ":" not in b]:
        folder = out / f"quickstart-{backend}"
        cache = folder / "cache"
        command = [args.grid, "run", *common, "--cache", cache, "--reports", folder / "reports",
                   "--device", args.device, "--backend", backend]  # fmt: skip
        if args.gpu_jobs and args.device.startswith("cuda"):
            command += ["--gpu-jobs", args.gpu_jobs]
        cold = run(f"quickstart-{backend}-cold", command, out, args.time_limit, env, gpu)
        if not_built(cold):
            rows.append(dict(backend=backend, cold=None, warm=None, reports=None, absent=True))
            continue
        warm = None
        if backend == "cubecl" and (cache / "kernels").is_dir():
            # Every step again, with only the compiled kernels and autotune results kept.
            kept = folder / "kernels"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(cache / "kernels", kept)
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir(parents=True)
            shutil.move(kept, cache / "kernels")
            warm = run(f"quickstart-{backend}-warm", command, out, args.time_limit, env, gpu)
        reports = folder / "reports" / "quickstart"
        rows.append(dict(backend=backend, cold=cold, warm=warm, reports=reports if cold.ok else None))
        if reference is None and cold.ok:
            reference = reports  # on CPU the first backend (flex) is the reference
    if args.device.startswith("cuda"):
        # What a user gets without choosing: `--device auto` and `--backend auto`
        # (the quickstart's small models stay on the CPU cores).
        folder = out / "quickstart-auto"
        r = run("quickstart-auto", [args.grid, "run", *common, "--cache", folder / "cache", "--reports",
                folder / "reports", "--device", "auto"], out, args.time_limit, env, gpu)  # fmt: skip
        rows.append(dict(backend="auto (--device auto)", cold=r, warm=None,
                         reports=folder / "reports" / "quickstart" if r.ok else None))  # fmt: skip
    for row in rows:
        row["reference"] = reference
    return rows


def bert(args, out, env, gpu):
    """Rows per grid backend (train and attribution examples/s, peak memory), the
    PyTorch and Captum results, and the cell's checkpoint folder."""
    size = SIZES[args.size]
    # Absolute: the grid file lives in the output folder, and grid resolves
    # relative data paths against the grid file's folder.
    sst2 = (pathlib.Path(args.data_root or ROOT / "../shared/data") / "sst2").resolve()
    if (sst2 / "train.parquet").is_file():
        source = (f'train = "{sst2 / "train.parquet"}"\nvalidation = "{sst2 / "validation.parquet"}"\n'
                  f'test = "{sst2 / "test.parquet"}"\ntext_column = "text"\nlabel_column = "label"\n'
                  f'limits = {{ train = {size["train"]}, validation = 200, test = 400 }}')  # fmt: skip
        dataset = "sst2"
    elif args.size == "tiny":
        source = f"generated = {{ train = {size['train']}, validation = 100, test = 100, seed = 1 }}"
        dataset = "generated"
    else:
        raise SystemExit(f"{sst2}/train.parquet not found: pass --data-root with the SST-2 parquet files")
    grid_file = out / "bert_bench.toml"
    grid_file.write_text(BERT_GRID.format(dataset=dataset, source=source, size=args.size, **size))
    results = {}
    for backend in backends_for(args):
        folder = out / f"bert-{backend.replace(':', '-')}"
        cache = folder / "cache"
        common = [grid_file, "--cache", cache, "--device", args.device, *backend_args(backend)]
        # One training at a time, so each has every thread, as the peer has
        # (two at once on a CPU would halve each one's share).
        train = run(f"bert-{backend.replace(':', '-')}-run", [args.grid, "run", *common, "--jobs", "1", "--reports", folder / "reports", "-q"],
                    out, args.time_limit, env, gpu)  # fmt: skip
        if not_built(train):
            results[backend] = dict(absent=True)
            continue
        row = dict(train=train)
        checkpoint = find_train_dir(cache, "/st/")
        if checkpoint:
            log = json.loads((checkpoint / "training.json").read_text())
            row["train_eps"] = (log.get("summary") or log).get("examples_per_second")
            row["checkpoint"] = checkpoint
        if train.ok:
            bench = run(f"bert-{backend.replace(':', '-')}-bench", [args.grid, "bench", *common, "--methods", ",".join(size["methods"]),
                        "--examples", size["attribute"], "--only", "/st/", "--json", folder / "bench.json",
                        "--dump", folder / "dump.jsonl"], out, args.time_limit, env, gpu)  # fmt: skip
            row["bench"] = bench
            if bench.ok:
                rows = json.loads((folder / "bench.json").read_text())["rows"]
                row["methods"] = {r["method"]: r["examples_per_second"] for r in rows}
                row["dump"] = folder / "dump.jsonl"
        results[backend] = row
    return results, size


def find_train_dir(cache, part):
    for manifest in sorted(cache.glob("train/*/*/manifest.json")):
        if part in json.loads(manifest.read_text()).get("label", ""):
            return manifest.parent
    return None


def python_has(python, module):
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def peers(args, out, results, size, env, gpu):
    """PyTorch + transformers and Captum on the first backend's model and inputs."""
    peer = {}
    source = next((r for r in results.values() if r.get("checkpoint") and r.get("dump")), None)
    if source is None:
        return dict(skipped="no grid model was trained and attributed")
    if not python_has(args.python, "torch") or not python_has(args.python, "transformers"):
        return dict(skipped=f"no PyTorch + transformers in {args.python}")
    torch_device = "cuda" if args.device.startswith("cuda") else "cpu"
    data = out / "bert_texts.jsonl"
    write_texts(source["checkpoint"], data)
    threads = ["--threads", str(args.threads)] if args.threads else []
    r = run("torch-bert", [args.python, ROOT / "scripts/torch_bert_bench.py", "--model", source["checkpoint"],
            "--data", data, "--device", torch_device, "--steps", size["steps"], "--examples", size["train"],
            "--attribute", size["attribute"], *threads], out, args.time_limit, env, gpu)  # fmt: skip
    peer["torch_run"] = r
    if r.ok:
        peer["torch"] = json.loads(r.log.read_text().strip().splitlines()[-1])
    if any(b.endswith(":bf16-mixed") for b in results):
        r = run("torch-bert-amp", [args.python, ROOT / "scripts/torch_bert_bench.py", "--model", source["checkpoint"],
                "--data", data, "--device", torch_device, "--steps", size["steps"], "--examples", size["train"],
                "--attribute", size["attribute"], "--amp", *threads], out, args.time_limit, env, gpu)  # fmt: skip
        peer["torch_amp_run"] = r
        if r.ok:
            peer["torch_amp"] = json.loads(r.log.read_text().strip().splitlines()[-1])
    if not python_has(args.python, "captum"):
        peer["captum_skipped"] = f"no Captum in {args.python} (pip install captum: pure Python)"
        return peer
    r = run("captum", [args.python, ROOT / "scripts/captum_bench.py", "--checkpoint", source["checkpoint"],
            "--dump", source["dump"], "--device", torch_device, "--methods", ",".join(size["methods"]),
            "--json", out / "captum.json", *threads], out, args.time_limit, env, gpu)  # fmt: skip
    peer["captum_run"] = r
    if r.ok:
        peer["captum"] = json.loads((out / "captum.json").read_text())
    return peer


def write_texts(checkpoint, path):
    """The texts and labels the grid model trained on (the synth step's training
    split), as JSON lines for torch_bert_bench.py: the same data on both sides."""
    cache = checkpoint.parent.parent.parent
    for manifest in sorted(cache.glob("synth/*/*/manifest.json")):
        train = manifest.parent / "train.jsonl"
        if train.is_file():
            shutil.copy(train, path)
            return
    for manifest in sorted(cache.glob("corpus/*/*/manifest.json")):
        shutil.copy(manifest.parent / "train.jsonl", path)
        return
    raise SystemExit(f"{cache}: no training texts found")


def captum_rate(captum, method):
    for row in (captum or {}).get("rows", []):
        if row.get("method") == method:
            return row.get("examples_per_second")
    return None


def captum_cell(captum, method):
    """Captum's rate for a method, or why captum_bench.py skipped it."""
    rate = captum_rate(captum, method)
    if rate is not None:
        return fmt(rate)
    reason = next((s for s in (captum or {}).get("skipped", []) if s.split(" ")[0] == method), None)
    return "skipped" + (f": {reason.split('(', 1)[-1].rstrip(')')}" if reason else "")


def fmt(x, digits=1):
    return "—" if x is None else f"{x:,.{digits}f}"


def ratio(a, b):
    return "—" if not a or not b else f"{a / b:.2f}×"


def table(args, quick, results, size, peer):
    lines = [f"## grid GPU benchmark · {datetime.datetime.now():%Y-%m-%d %H:%M} · {machine(args)}", ""]
    lines += ["### Quickstart", "",
              "| backend | cold s | warm s | tables vs CPU: max diff / cells > 0.05 | verified |",
              "|---|---:|---:|---|---|"]  # fmt: skip
    for row in quick:
        if row.get("absent"):
            lines.append(f"| {row['backend']} | not built | | | |")
            continue
        if row.get("given"):
            n, total = verified(row["reports"])
            lines.append(f"| {row['backend']} | (given) | | (reference) | {n}/{total} |")
            continue
        cold, warm = row["cold"], row["warm"]
        cold_s = fmt(cold.seconds) if cold.ok else cold.status()
        warm_s = "—" if warm is None else (fmt(warm.seconds) if warm.ok else warm.status())
        versus, passed = "", ""
        if row["reports"] is not None:
            n, total = verified(row["reports"])
            passed = f"{n}/{total}"
            if row["reference"] is not None and row["reference"] != row["reports"]:
                largest, differing, compared, missing = compare_tables(row["reports"], row["reference"])
                versus = f"{largest:.3f} / {differing} of {compared}" + (f" ({missing} unmatched)" if missing else "")
            elif row["reference"] == row["reports"]:
                versus = "(reference)"
        lines.append(f"| {row['backend']} | {cold_s} | {warm_s} | {versus} | {passed} |")
    s = size
    lines += ["", f"### BERT {args.size}: {s['layers']} layers × {s['hidden']}, {s['steps']} training steps of 16, "
              f"{s['attribute']} examples attributed", "",
              "| who | training ex/s | " + " | ".join(f"{m} ex/s" for m in s["methods"]) + " | peak MiB |",
              "|---|---:|" + "---:|" * len(s["methods"]) + "---:|"]  # fmt: skip
    torch = peer.get("torch") or {}
    captum = peer.get("captum")
    for backend, row in results.items():
        if row.get("absent"):
            lines.append(f"| grid {backend} | not built |" + " |" * len(s["methods"]) + " |")
            continue
        train = fmt(row.get("train_eps")) if row["train"].ok else row["train"].status()
        methods = row.get("methods", {})
        bench = row.get("bench")
        cells = [fmt(methods.get(m)) if bench and bench.ok else (bench.status() if bench else "—") for m in s["methods"]]
        peaks = [r.peak_mib for r in (row["train"], bench) if r is not None and r.peak_mib is not None]
        lines.append(f"| grid {backend} | {train} | " + " | ".join(cells) + f" | {fmt(max(peaks) if peaks else None, 0)} |")
    if "skipped" in peer:
        lines.append(f"| PyTorch / Captum | {peer['skipped']} |" + " |" * len(s["methods"]) + " |")
    else:
        run_ = peer["torch_run"]
        grad = torch.get("attribute_examples_per_second")
        peak = torch.get("peak_memory_mib") or run_.peak_mib
        lines.append(f"| PyTorch + transformers | {fmt(torch.get('train_examples_per_second')) if run_.ok else run_.status()} | "
                     f"{fmt(grad)} (own grad-l2) |" + " |" * (len(s["methods"]) - 1) + f" {fmt(peak, 0)} |")  # fmt: skip
        amp, amp_run = peer.get("torch_amp") or {}, peer.get("torch_amp_run")
        if amp_run is not None:
            amp_peak = amp.get("peak_memory_mib") or amp_run.peak_mib
            lines.append(f"| PyTorch + transformers, AMP bf16 | "
                         f"{fmt(amp.get('train_examples_per_second')) if amp_run.ok else amp_run.status()} | "
                         f"{fmt(amp.get('attribute_examples_per_second'))} (own grad-l2) |"
                         + " |" * (len(s["methods"]) - 1) + f" {fmt(amp_peak, 0)} |")  # fmt: skip
        if "captum_skipped" in peer:
            lines.append(f"| Captum | {peer['captum_skipped']} | |" + " |" * len(s["methods"]))
        else:
            cr = peer["captum_run"]
            cells = [captum_cell(captum, m) if cr.ok else cr.status() for m in s["methods"]]
            lines.append("| Captum | — | " + " | ".join(cells) + f" | {fmt(cr.peak_mib, 0)} |")
        lines += ["", "Ratios (grid / peer, > 1 is grid faster):", ""]
        for backend, row in results.items():
            if row.get("absent") or not row["train"].ok:
                continue
            methods = row.get("methods", {})
            # A bf16-mixed row is compared with PyTorch under autocast.
            mixed = backend.endswith(":bf16-mixed")
            versus = (peer.get("torch_amp") or {}) if mixed else torch
            who = "PyTorch AMP" if mixed else "PyTorch"
            parts = [f"training {ratio(row.get('train_eps'), versus.get('train_examples_per_second'))} {who}",
                     f"gradients {ratio(methods.get(s['methods'][0]), versus.get('attribute_examples_per_second'))} {who}"]  # fmt: skip
            if captum:
                parts += [f"{m} {ratio(methods.get(m), captum_rate(captum, m))} Captum" for m in s["methods"]]
            lines.append(f"- {backend}: " + ", ".join(parts))
    if args.size == "tiny":
        lines += ["", "(--size tiny checks that the benchmark runs: its models are too small to pass verification.)"]
    lines += ["", f"Logs and JSON: {args.out}"]
    return "\n".join(lines) + "\n"


def machine(args):
    gpu = ""
    if args.device.startswith("cuda") and shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)  # fmt: skip
        gpu = q.stdout.strip().splitlines()[0] if q.stdout.strip() else ""
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    return f"{gpu + ' · ' if gpu else ''}{cpu}, {os.cpu_count()} CPUs · device {args.device}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", default=os.environ.get("GRID_BIN", ROOT / "target/release/grid"), help="the grid binary")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--data-root", help="folder with sst2/{train,validation,test}.parquet (default ../shared/data)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(f"gpu-bench-{datetime.date.today()}"))
    parser.add_argument("--python", default=sys.executable, help="Python with torch, transformers (and captum)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads for the peers (0: torch's default)")
    parser.add_argument("--time-limit", type=float, default=240, help="seconds per command before it is killed")
    parser.add_argument("--no-cpu-reference", action="store_true", help="skip the quickstart on the CPU (cuda only)")
    parser.add_argument("--cpu-reference", type=pathlib.Path,
                        help="reports folder of an earlier CPU quickstart (results_long.csv, verification.csv) to compare with")
    parser.add_argument("--backends", type=lambda s: [b for b in s.split(",") if b],
                        help="comma-separated backends to run, each NAME or NAME:PRECISION "
                             "(default: libtorch,libtorch:bf16-mixed,cubecl on cuda; flex,libtorch,libtorch:bf16-mixed on cpu)")
    parser.add_argument("--gpu-jobs", type=int, default=0,
                        help="the quickstart's model steps sharing the GPU at once (grid run --gpu-jobs; 0: grid's default)")
    parser.add_argument("--skip-quickstart", action="store_true")
    args = parser.parse_args()
    args.grid = pathlib.Path(args.grid).resolve()
    if not args.grid.is_file():
        raise SystemExit(f"{args.grid}: no grid binary (build one with --release, or pass --grid)")
    args.out.mkdir(parents=True, exist_ok=True)
    args.out = args.out.resolve()
    gpu = int(args.device.split(":")[1]) if args.device.startswith("cuda:") else (0 if args.device == "cuda" else None)
    env = dict(os.environ)
    started = time.perf_counter()

    quick = []
    if not args.skip_quickstart:
        if args.size == "tiny":
            grid_file = args.out / "quickstart.toml"
            grid_file.write_text(SMALL_QUICKSTART)
        else:
            grid_file = ROOT / "experiments/quickstart.toml"
        quick = quickstart(args, args.out, grid_file, env, gpu)
    results, size = bert(args, args.out, env, gpu)
    peer = peers(args, args.out, results, size, env, gpu)
    text = table(args, quick, results, size, peer)
    text += f"Total: {time.perf_counter() - started:.0f} s\n"
    (args.out / "table.md").write_text(text)
    print(text)
    built = [r for r in results.values() if not r.get("absent")]
    failed = [r for r in built if not r["train"].ok or not (r.get("bench") and r["bench"].ok)]
    sys.exit(1 if not built or failed else 0)


if __name__ == "__main__":
    main()
