#!/usr/bin/env python3
"""A seeded random subset of a parquet file's rows, in their original order.

For carrying a dataset too large for a device call (IMDB's 29 MB beside a
checkpoint): `subset_parquet.py IN OUT N [--seed S]` keeps N rows drawn
uniformly without replacement and writes them zstd-compressed at level 19.
"""
import argparse
import random

import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("rows", type=int)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    table = pq.read_table(args.input)
    if not 0 < args.rows <= table.num_rows:
        raise SystemExit(f"{args.input}: asked for {args.rows} rows of {table.num_rows}")
    keep = sorted(random.Random(args.seed).sample(range(table.num_rows), args.rows))
    pq.write_table(table.take(keep), args.output, compression="zstd", compression_level=19)
    print(f"{args.output}: {args.rows} of {table.num_rows} rows (seed {args.seed})")


if __name__ == "__main__":
    main()
