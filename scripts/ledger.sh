#!/usr/bin/env bash
# Writes the findings ledger of the committed experiments: `grid ledger` over
# each grid, one file per grid in docs/ledger/, each with the date, commit and
# machine it was written on, and docs/ledger.md, their index and contents.
# The README's and docs' comparisons with the papers point here, so what they
# say is what the tool says.
#
# A grid whose report is not in this machine's cache keeps the file an earlier
# machine wrote (runs are long and machines change: each grid's findings come
# from whichever machine last ran it); one never run anywhere is listed as such.
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
committed=(
    experiments/sst2_lstm_glove.toml
    experiments/sst2_lstm_glove_ig_lime.toml
    experiments/sst2_natural.toml
    experiments/sst2_natural_minilm.toml
    experiments/sst2_natural_mpnet.toml
    experiments/imdb_lstm.toml
    experiments/imdb_lstm_paper.toml
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
    experiments/images_quick.toml
    experiments/images_scaled.toml
    experiments/images_scaled_figure4.toml
    experiments/images_scaled_visibility.toml
)
grids=("${committed[@]}")
if [ "${1:-}" = --grids ]; then
    read -r -a grids <<< "$2"
    shift 2
fi
out="$here/docs/ledger"
mkdir -p "$out"
reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
cpu="$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
commit="$(git -C "$here" rev-parse --short HEAD)"

for g in "${grids[@]}"; do
    name="$(basename "$g" .toml)"
    if ! "$grid" ledger "$g" --compare-as sst2=SST --reports "$reports/$name" "$@" \
        > /dev/null 2> "$reports/$name.err"; then
        echo "$g: not written here ($(tail -1 "$reports/$name.err")); docs/ledger/$name.md kept" >&2
        continue
    fi
    if grep -q ': not run yet (' "$reports/$name/ledger.md"; then
        echo "$g: not in this cache; docs/ledger/$name.md kept" >&2
        continue
    fi
    {
        echo "<!-- Written by scripts/ledger.sh; do not edit by hand. -->"
        echo
        echo "# Findings ledger: $name"
        echo
        echo "Written $(date -u +%Y-%m-%d) at commit \`$commit\` on ${cpu:-an unnamed CPU}, $(nproc) cores,"
        echo "from that machine's run of \`$g\` (BENCHMARKS.md has each run's date, machine and commit)."
        sed '1{/^# Findings ledger$/d}' "$reports/$name/ledger.md"
    } > "$out/$name.md"
    echo "$g: docs/ledger/$name.md written" >&2
done

# The index: one row per committed grid, then every grid's ledger, its headings
# one level down.
tally() { # FILE -> "holds fails undecided", summed over its papers
    awk '/ finding\(s\): / { h += $3; f += $5; u += $7 } END { printf "%d %d %d", h, f, u }' \
        FS='[ ,]+' "$1"
}
{
    echo "<!-- Written by scripts/ledger.sh from docs/ledger/*.md; do not edit by hand. -->"
    echo
    echo "# Findings ledger of the committed experiments"
    echo
    echo "\`grid ledger\` over each committed grid, from the cache of the machine that last ran it: each"
    echo "section says when, at which commit and on which CPU. Rewrite it with \`scripts/ledger.sh"
    echo "target/release/grid --with experiments/data/local.toml --data-root DATA\` after a run; a grid your"
    echo "machine has not run keeps the section another machine wrote."
    echo
    echo "| grid | holds | fails | undecided | written |"
    echo "|---|---:|---:|---:|---|"
    for g in "${committed[@]}"; do
        name="$(basename "$g" .toml)"
        file="$out/$name.md"
        if [ -f "$file" ]; then
            read -r h f u <<< "$(tally "$file")"
            when="$(sed -n 's/^Written \([0-9-]*\) at commit \(`[0-9a-f]*`\) on \(.*\), \([0-9]*\) cores,$/\1, \2, \3/p' "$file")"
            echo "| [\`$name\`](#findings-ledger-$name) | $h | $f | $u | $when |"
        else
            echo "| \`$name\` | | | | no ledger written yet: run the grid, then this script |"
        fi
    done
    for g in "${committed[@]}"; do
        name="$(basename "$g" .toml)"
        file="$out/$name.md"
        [ -f "$file" ] || continue
        echo
        sed -n '/^# Findings ledger: /,$p' "$file" | sed 's/^#/##/'
    done
} > "$here/docs/ledger.md"
echo "wrote $here/docs/ledger.md" >&2
