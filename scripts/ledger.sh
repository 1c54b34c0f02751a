#!/usr/bin/env bash
# Writes docs/ledger.md: `grid ledger` over the committed experiments, with
# the date, commit and machine it was written on. The README's and docs'
# comparisons with the papers point here, so what they say is what the tool
# says. A grid whose report is not in the cache is listed as not run yet; run
# it first (`grid run`, same --with / --data-root / --cache).
#
#   scripts/ledger.sh target/release/grid --with experiments/data/local.toml --data-root DATA
#   scripts/ledger.sh target/release/grid --grids "experiments/zhou_attention_imdb.toml" ...
set -euo pipefail

grid="${1:?usage: $0 GRID_BINARY [--grids \"A.toml B.toml\"] [grid ledger options]}"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
grid="$(cd "$(dirname "$grid")" && pwd)/$(basename "$grid")"
# Paths relative to the repository, as the ledger's notes print them.
cd "$here"
grids=(
    experiments/sst2_lstm_glove.toml
    experiments/sst2_lstm_glove_ig_lime.toml
    experiments/sst2_natural.toml
    experiments/imdb_lstm.toml
    experiments/articles.toml
    experiments/sst2_articles.toml
    experiments/zhou_attention_imdb.toml
    experiments/zhou_attention_sst2.toml
    experiments/rationale.toml
    experiments/rationale_cn_nc.toml
    experiments/zhou_rationale.toml
    experiments/zhou_rationale_each.toml
    experiments/zhou_rationale_cn_nc.toml
    experiments/zhou_rationale_cn_nc_each.toml
)
if [ "${1:-}" = --grids ]; then
    read -r -a grids <<< "$2"
    shift 2
fi
reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
"$grid" ledger "${grids[@]}" --compare-as sst2=SST --reports "$reports" "$@" > /dev/null
cpu="$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
{
    echo "<!-- Written by scripts/ledger.sh; do not edit by hand. -->"
    echo
    echo "Written $(date -u +%Y-%m-%d) at commit \`$(git -C "$here" rev-parse --short HEAD)\` on ${cpu:-an unnamed CPU}, $(nproc) cores,"
    echo "from the cache of that machine's runs (BENCHMARKS.md has each run's date, machine and commit)."
    echo "Grids: $(for g in "${grids[@]}"; do printf '`%s` ' "$g"; done)"
    echo
    sed 's/^# Findings ledger/# Findings ledger of the committed experiments/' "$reports/ledger.md"
} > "$here/docs/ledger.md"
echo "wrote $here/docs/ledger.md" >&2
