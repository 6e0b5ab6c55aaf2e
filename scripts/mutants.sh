#!/usr/bin/env bash
# The mutation score of the verifier: injects bugs into the shipped decision logic with
# cargo-mutants (pinned; installed into .cache/cargo-mutants on first use) and counts how many
# the tests catch, then imports the run into reports/mutants.json and renders reports/mutants.md
# (`listsync report --mutants target/mutants`). Slow (tens of seconds per mutant on 2 cores), so
# it is not part of .ci/run; the report is regenerated on purpose and committed.
#
# Each mutant is judged in two passes, so that the run stays affordable:
#   1. core, model and store tests, every model configuration but the cluster ones and the large
#      ones (`--skip cluster --skip large`: the small single-node configurations);
#   2. the survivors of pass 1 only, by the tests pass 1 skipped (the cluster configurations and
#      large ones).
# A mutant is caught if either pass catches it; the report says which pass judged it.
#
# Usage: scripts/mutants.sh [--shard K/N] [--one-pass] [FILE...]
#   FILE defaults to the scope: core/src/server.rs core/src/client.rs store/src/flight.rs
#   --shard K/N runs the K-th of N slices of the scope's mutants (cargo-mutants' --shard).
#   --one-pass stops after pass 1 (the report then says so: its survivors include mutants that
#   only the cluster configurations would catch).
set -euo pipefail
cd "$(dirname "$0")/.."
shard=""
one_pass=""
files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shard) shard="${2:-}"; [[ -n $shard ]] || { echo "scripts/mutants.sh: --shard wants K/N" >&2; exit 2; }; shift 2 ;;
    --one-pass) one_pass=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "scripts/mutants.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
given="${files[*]:-}"
if [[ ${#files[@]} -eq 0 ]]; then
  files=(core/src/server.rs core/src/client.rs store/src/flight.rs)
fi
for f in "${files[@]}"; do
  [[ -f $f ]] || { echo "scripts/mutants.sh: no such file: $f" >&2; exit 2; }
done
if [[ -n $shard && ! $shard =~ ^[0-9]+/[1-9][0-9]*$ ]]; then
  echo "scripts/mutants.sh: --shard wants K/N (e.g. 0/4), got: $shard" >&2; exit 2
fi
VERSION=27.0.0
TOOL=.cache/cargo-mutants/bin/cargo-mutants
if ! [[ -x $TOOL ]] || ! "$TOOL" mutants --version | grep -qF "$VERSION"; then
  echo "scripts/mutants.sh: installing cargo-mutants $VERSION into .cache/cargo-mutants (first use, about 3 minutes)" >&2
  cargo install --quiet cargo-mutants --version "$VERSION" --locked --root .cache/cargo-mutants
fi
OUT=target/mutants
rm -rf "$OUT"
mkdir -p "$OUT"
scope=()
for f in "${files[@]}"; do scope+=(--file "$f"); done
common=(mutants --workspace "${scope[@]}" --profile mutants
  --test-package listsync-core --test-package listsync-model --test-package listsync-store
  --output "$OUT" --no-shuffle --colors never)
[[ -n $shard ]] && common+=(--shard "$shard")
tests1="core, model and store tests (cargo test --profile mutants --lib --tests), every model configuration but the cluster ones and the large ones (--skip cluster --skip large)"
tests2="pass 1's survivors again, by the tests pass 1 skipped: the cluster configurations and the large ones (cargo test --profile mutants --lib --tests -- cluster large)"
start=$(date +%s)
echo "scripts/mutants.sh: pass 1 of 2: $tests1" >&2
# cargo-mutants exits 2 when a mutant survives and 3 on a timeout: those are results, not failures.
status=0
# cargo-mutants times the unmutated tests of the mutated package alone, which would set a
# timeout far below what the model's tests need: set it. A mutant that makes the model's state
# space explode times out, and counts as caught.
"$TOOL" "${common[@]}" --timeout 180 -- --lib --tests -- --skip cluster --skip large || status=$?
[[ $status -eq 0 || $status -eq 2 || $status -eq 3 ]] || exit "$status"
cp -r "$OUT/mutants.out" "$OUT/pass1"
passes='{"dir": "pass1", "tests": "'"$tests1"'"}'
if [[ -z $one_pass && -s $OUT/mutants.out/missed.txt ]]; then
  echo "scripts/mutants.sh: pass 2 of 2: $(wc -l < "$OUT/mutants.out/missed.txt") survivors, $tests2" >&2
  status=0
  "$TOOL" "${common[@]}" --iterate --timeout 600 -- --lib --tests -- cluster large || status=$?
  [[ $status -eq 0 || $status -eq 2 || $status -eq 3 ]] || exit "$status"
  cp -r "$OUT/mutants.out" "$OUT/pass2"
  passes="$passes"', {"dir": "pass2", "tests": "'"$tests2"'"}'
fi
wall=$(( $(date +%s) - start ))
dirty=false
[[ -z $(git status --porcelain --untracked-files=no) ]] || dirty=true
scope_json=$(printf '"%s",' "${files[@]}")
shard_json=null
[[ -n $shard ]] && shard_json="\"$shard\""
cat > "$OUT/run.json" <<EOF
{
  "tree": "$(git rev-parse 'HEAD^{tree}')",
  "commit": "$(git rev-parse HEAD)",
  "dirty": $dirty,
  "tool": "cargo-mutants $VERSION",
  "command": "scripts/mutants.sh${shard:+ --shard $shard}${one_pass:+ --one-pass}${given:+ $given}",
  "scope": [${scope_json%,}],
  "passes": [$passes],
  "wall_s": $wall,
  "shard": $shard_json
}
EOF
cargo run --release --quiet -- report --mutants "$OUT" >/dev/null
echo "scripts/mutants.sh: reports/mutants.json and reports/mutants.md written" >&2
