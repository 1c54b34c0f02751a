#!/usr/bin/env python3
"""Wikipedia Toxicity (Wulczyn et al. 2017) as grid reads it: text,label CSVs.

Bastings et al. (2022) evaluate on "Toxicity (Wulczyn et al., 2017)": Wikipedia
talk-page comments with crowd toxicity annotations, about 9% toxic. The
release ("Wikipedia Talk Labels: Toxicity", figshare) is two TSV files:

  toxicity_annotated_comments.tsv  rev_id, comment, year, logged_in, ns, sample, split
  toxicity_annotations.tsv         rev_id, worker_id, toxicity, toxicity_score

This script applies the dataset's own preprocessing (as its authors' notebook
does): a comment's label is 1 when more than half of its annotators marked it
toxic (mean of `toxicity` > 0.5), and the NEWLINE_TOKEN / TAB_TOKEN
placeholders become spaces; the release's own `split` column (train / dev /
test) gives the splits. It writes

  OUT/toxicity/train.csv, validation.csv (the `dev` split), test.csv

with the columns `text` and `label` (0 = not toxic, 1 = toxic), which
experiments/toxicity.toml reads under --data-root OUT. Standard library only.

  python3 scripts/toxicity_from_wulczyn.py DIR_WITH_THE_TSVS OUT
"""

import csv
import sys
from collections import defaultdict
from pathlib import Path

COMMENTS = "toxicity_annotated_comments.tsv"
ANNOTATIONS = "toxicity_annotations.tsv"
SPLITS = {"train": "train", "dev": "validation", "test": "test"}


def fail(message):
    sys.exit(f"toxicity_from_wulczyn: {message}")


def rows(path, needed):
    """The TSV's rows as dicts, after checking its header names `needed`."""
    if not path.is_file():
        fail(f"{path}: not found (the Wikipedia Talk Labels: Toxicity release has {COMMENTS} and {ANNOTATIONS})")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            fail(f"{path}: no column {', '.join(missing)} (columns: {', '.join(reader.fieldnames or [])})")
        for line, row in enumerate(reader, start=2):
            yield line, row


def main(argv):
    if len(argv) != 3:
        fail("usage: toxicity_from_wulczyn.py DIR_WITH_THE_TSVS OUT")
    source, out = Path(argv[1]), Path(argv[2])

    votes = defaultdict(list)
    for line, row in rows(source / ANNOTATIONS, ["rev_id", "toxicity"]):
        try:
            votes[row["rev_id"]].append(float(row["toxicity"]))
        except ValueError:
            fail(f"{source / ANNOTATIONS}:{line}: toxicity {row['toxicity']!r} is not a number")

    written = {name: [] for name in SPLITS.values()}
    for line, row in rows(source / COMMENTS, ["rev_id", "comment", "split"]):
        split = SPLITS.get(row["split"])
        if split is None:
            fail(f"{source / COMMENTS}:{line}: split {row['split']!r} (expected train, dev or test)")
        scores = votes.get(row["rev_id"])
        if not scores:
            fail(f"{source / COMMENTS}:{line}: comment {row['rev_id']} has no annotation in {ANNOTATIONS}")
        text = row["comment"].replace("NEWLINE_TOKEN", " ").replace("TAB_TOKEN", " ")
        text = " ".join(text.split())
        label = 1 if sum(scores) / len(scores) > 0.5 else 0
        written[split].append((text, label))

    folder = out / "toxicity"
    folder.mkdir(parents=True, exist_ok=True)
    for split, examples in written.items():
        with (folder / f"{split}.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows(examples)
        toxic = sum(label for _, label in examples)
        share = 100 * toxic / len(examples) if examples else 0
        print(f"{folder / (split + '.csv')}: {len(examples)} comments, {toxic} toxic ({share:.1f}%)")


if __name__ == "__main__":
    main(sys.argv)
