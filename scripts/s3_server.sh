#!/usr/bin/env bash
# Starts a real S3-compatible server (moto in server mode, from PyPI) on the
# loopback address, with one bucket, for testing `grid --remote s3://…`:
#
#   scripts/s3_server.sh start DIR   # prints the environment to export
#   scripts/s3_server.sh stop DIR
#
# moto implements conditional writes (If-None-Match: *), which the remote
# cache's create-only records rely on. Installed once into a virtual
# environment ($GRID_CI_MOTO, default ~/.cache/grid-ci-moto) and kept.
set -euo pipefail

action="${1:?usage: $0 start|stop DIR}"
dir="$(mkdir -p "${2:?usage: $0 start|stop DIR}" && cd "$2" && pwd)"
venv="${GRID_CI_MOTO:-${HOME:-/tmp}/.cache/grid-ci-moto}"
bucket="${GRID_S3_BUCKET:-grid-ci}"

if [ "$action" = stop ]; then
    if [ -f "$dir/moto.pid" ]; then
        kill "$(cat "$dir/moto.pid")" 2>/dev/null || true
        rm -f "$dir/moto.pid"
    fi
    exit 0
fi
[ "$action" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

if [ ! -x "$venv/bin/moto_server" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet "moto[server]>=5.1" >&2
fi
# A free port, chosen by the kernel.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > "$dir/moto.log" 2>&1 &
echo $! > "$dir/moto.pid"
endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    if python3 -c "import urllib.request; urllib.request.urlopen('$endpoint/moto-api/')" 2>/dev/null; then break; fi
    sleep 0.2
done
# The bucket, through the server's own client library (boto3 comes with moto).
AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$venv/bin/python" - "$endpoint" "$bucket" >&2 <<'PY'
import sys, boto3
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1").create_bucket(Bucket=sys.argv[2])
PY
cat <<ENV
export AWS_ENDPOINT=$endpoint AWS_ALLOW_HTTP=true AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export GRID_TEST_S3=s3://$bucket
ENV
