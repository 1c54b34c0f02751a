#!/usr/bin/env bash
# The remote cache's numbers (issue 46): a cached grid published to a real
# S3-compatible server (moto, `scripts/s3_server.sh`), an empty cache served
# its report, and every step pulled; beside them the same bytes uploaded and
# downloaded by the store's own client (boto3, the AWS SDK), which measures
# the server's own limit on this machine.
#
#   scripts/remote_bench.sh GRID_BINARY GRID_FILE CACHE_WITH_THE_GRID [extra grid options…]
set -euo pipefail
grid="${1:?usage: $0 GRID_BINARY GRID_FILE CACHE [options…]}"
file="${2:?grid file}"
cache="${3:?a cache holding the grid}"
shift 3
work="$(mktemp -d)"
trap 'scripts/s3_server.sh stop "$work/s3"; rm -rf "$work"' EXIT
eval "$(scripts/s3_server.sh start "$work/s3")"
venv="${GRID_CI_MOTO:-${HOME:-/tmp}/.cache/grid-ci-moto}"
remote="$GRID_TEST_S3/bench"
seconds() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$1"; }

echo "== grid: publish the cached grid (a run that finds every step cached)"
cp -r "$cache" "$work/filled"
"$grid" run "$file" --cache "$work/filled" --remote "$remote" --reports "$work/r0" "$@" 2>&1 >/dev/null | grep -E "published|steps:"

echo "== grid: an empty cache served the grid (the report comes down)"
start=$(date +%s.%N)
"$grid" run "$file" --cache "$work/served" --remote "$remote" --reports "$work/r1" "$@" 2>&1 >/dev/null | grep -E "steps:"
echo "served in $(seconds "$start") s; tables equal the cached run's: $(diff -rq "$work/r0" "$work/r1" >/dev/null && echo yes || echo NO)"

echo "== grid pull: every step down into an empty cache"
"$grid" pull "$file" --cache "$work/pulled" --remote "$remote" "$@" 2>&1 | grep pulled

echo "== boto3: the same payload bytes up and down"
"$venv/bin/python" - "$work/filled" "${GRID_TEST_S3#s3://}" "$work/down" <<'PY'
import os, sys, time, boto3
root, bucket, down = sys.argv[1], sys.argv[2], sys.argv[3]
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT"], region_name="us-east-1")
kinds = ["corpus", "synth", "train", "verify", "evaluate", "attribute", "erasure", "agreement", "score", "report"]
files = [os.path.join(d, f) for k in kinds if os.path.isdir(os.path.join(root, k))
         for d, _, fs in os.walk(os.path.join(root, k)) for f in fs if d.count(os.sep) - root.count(os.sep) == 3]
size = sum(os.path.getsize(f) for f in files)
start = time.time()
for f in files:
    s3.upload_file(f, bucket, "boto3/" + os.path.relpath(f, root))
up = time.time() - start
start = time.time()
for f in files:
    target = os.path.join(down, os.path.relpath(f, root))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    s3.download_file(bucket, "boto3/" + os.path.relpath(f, root), target)
dn = time.time() - start
print(f"{len(files)} files, {size / 1e6:.1f} MB: upload {up:.1f} s ({size / 1e6 / up:.1f} MB/s), "
      f"download {dn:.1f} s ({size / 1e6 / dn:.1f} MB/s)")
PY
