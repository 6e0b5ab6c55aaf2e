#!/usr/bin/env bash
# The mutation score of the verifier: injects bugs into the shipped decision logic with
# cargo-mutants (pinned; installed into .cache/cargo-mutants on first use) and counts how many
# the tests catch, then imports the run into reports/mutants.json and renders reports/mutants.md
# (`listsync report --mutants target/mutants`: the run's mutants replace those of the files it
# mutated, the other files keep their earlier runs). Slow (about 20 s per mutant on 2 cores), so
# it is not part of .ci/run; the report is regenerated on purpose and committed.
#
# Each mutant is judged in up to three passes, so that the run stays affordable:
#   1. core, model and store tests, every model configuration but the cluster ones and the large
#      ones (`--skip cluster --skip large`: the small single-node configurations), without the
#      tests that compare the checker's recorded graph with a second exploration
#      (`--skip checker_s_graph`: both sides run the same mutated machine, so they agree on any
#      mutant; they test the checker, not the machines);
#   2. the survivors of pass 1 only, by the simulator's campaigns (listsync-sim's tests: the
#      machine level and the stack level, whose fault plans reach inputs the model never gives a
#      machine: transport failures, lost listen streams, timers on a clock); each mutant
#      rebuilds rt and the simulator, so this pass is for survivors only;
#   3. the survivors of pass 2 only, by the model configurations pass 1 skipped (the cluster
#      configurations and the large ones).
# A mutant is caught if any pass catches it; the report says which pass judged it, and on which
# source tree.
#
# Usage: scripts/mutants.sh [--shard K/N] [--passes N | --one-pass] [FILE...]
#        scripts/mutants.sh --again [--passes N | --one-pass]
#   FILE defaults to the scope: core/src/server.rs core/src/client.rs store/src/flight.rs
#   --shard K/N runs the K-th of N slices of the scope's mutants (cargo-mutants' --shard).
#   --passes N stops after pass N (1 to 3, default 3); --one-pass is --passes 1. The report
#   lists the passes that ran: its survivors may include mutants a skipped pass would catch.
#   --again judges the survivors of the last run (left in target/mutants) once more, on the
#   current tree, by every pass's tests in turn: after checks were added for them. The mutated
#   files must be unchanged since that run (the mutants are found again by name).
set -euo pipefail
cd "$(dirname "$0")/.."
shard=""
passes_max=3
again=""
files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shard) shard="${2:-}"; [[ -n $shard ]] || { echo "scripts/mutants.sh: --shard wants K/N" >&2; exit 2; }; shift 2 ;;
    --one-pass) passes_max=1; shift ;;
    --passes) passes_max="${2:-}"; [[ $passes_max =~ ^[123]$ ]] || { echo "scripts/mutants.sh: --passes wants 1, 2 or 3" >&2; exit 2; }; shift 2 ;;
    --again) again=1; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    -*) echo "scripts/mutants.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
OUT=target/mutants
if [[ -n $again ]]; then
  [[ ${#files[@]} -eq 0 && -z $shard ]] || { echo "scripts/mutants.sh: --again takes the files and shard of the last run" >&2; exit 2; }
  for f in scope shard passes.jsonl tree commit command wall_s dirty; do
    [[ -f $OUT/$f ]] || { echo "scripts/mutants.sh: --again: no earlier run in $OUT (missing $OUT/$f)" >&2; exit 2; }
  done
  read -r -a files < "$OUT/scope"
  shard=$(cat "$OUT/shard")
  if ! git diff --quiet "$(cat "$OUT/commit")" -- "${files[@]}"; then
    echo "scripts/mutants.sh: --again: ${files[*]} changed since the last run: run them afresh" >&2
    exit 2
  fi
fi
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
tree=$(git rev-parse 'HEAD^{tree}')
dirty=false
[[ -z $(git status --porcelain --untracked-files=no) ]] || dirty=true
if [[ -z $again ]]; then
  rm -rf "$OUT"
  mkdir -p "$OUT"
  echo "${files[*]}" > "$OUT/scope"
  echo "$shard" > "$OUT/shard"
  : > "$OUT/passes.jsonl"
  echo "$tree" > "$OUT/tree"
  git rev-parse HEAD > "$OUT/commit"
  echo "scripts/mutants.sh${shard:+ --shard $shard} --passes $passes_max${given:+ $given}" > "$OUT/command"
  echo 0 > "$OUT/wall_s"
  echo "$dirty" > "$OUT/dirty"
else
  [[ $dirty == true ]] && echo true > "$OUT/dirty"
  echo "$(cat "$OUT/command"); scripts/mutants.sh --again --passes $passes_max" > "$OUT/command"
fi
scope=()
for f in "${files[@]}"; do scope+=(--file "$f"); done
common=(mutants --workspace "${scope[@]}" --profile mutants
  --output "$OUT" --no-shuffle --colors never)
machines=(--test-package listsync-core --test-package listsync-model --test-package listsync-store)
[[ -n $shard ]] && common+=(--shard "$shard")
tests1="core, model and store tests (cargo test --profile mutants --lib --tests), every model configuration but the cluster ones and the large ones, not the checker's own graph tests (--skip cluster --skip large --skip checker_s_graph)"
tests2="the survivors again, by the simulator's campaigns, machine and stack level (cargo test --profile mutants -p listsync-sim --lib --tests)"
tests3="the survivors again, by the model configurations pass 1 skipped: the cluster configurations and the large ones (cargo test --profile mutants --lib --tests -- cluster large)"
# One pass: cargo-mutants over the mutants still to judge, its output kept as passN. cargo-mutants
# exits 2 when a mutant survives and 3 on a timeout: those are results, not failures.
pass() {
  local tests="$1" timeout="$2" packages
  read -r -a packages <<< "$3"
  shift 3
  local n iterate=()
  n=$(( $(wc -l < "$OUT/passes.jsonl") + 1 ))
  [[ $n -gt 1 ]] && iterate=(--iterate)
  echo "scripts/mutants.sh: pass $n: $tests" >&2
  local status=0
  "$TOOL" "${common[@]}" "${packages[@]}" "${iterate[@]}" --timeout "$timeout" -- --lib --tests -- "$@" || status=$?
  [[ $status -eq 0 || $status -eq 2 || $status -eq 3 ]] || exit "$status"
  rm -rf "$OUT/pass$n"
  cp -r "$OUT/mutants.out" "$OUT/pass$n"
  echo '{"dir": "pass'"$n"'", "tests": "'"$tests"'", "tree": "'"$tree"'"}' >> "$OUT/passes.jsonl"
}
start=$(date +%s)
# cargo-mutants times the unmutated tests of the mutated package alone, which would set a
# timeout far below what the model's tests need: set it (pass 1's tests take about 6 s
# unmutated on 2 cores). A mutant that makes the model's state space explode or a walk loop
# forever times out, and counts as caught.
if [[ -z $again || -s $OUT/mutants.out/missed.txt ]]; then
  pass "$tests1" 60 "${machines[*]}" --skip cluster --skip large --skip checker_s_graph
fi
if [[ $passes_max -ge 2 && -s $OUT/mutants.out/missed.txt ]]; then
  echo "scripts/mutants.sh: $(wc -l < "$OUT/mutants.out/missed.txt") survivors" >&2
  # The stack-level campaigns run real tokio runtimes on simulated time: a few minutes at most.
  pass "$tests2" 600 "--test-package listsync-sim"
fi
if [[ $passes_max -ge 3 && -s $OUT/mutants.out/missed.txt ]]; then
  echo "scripts/mutants.sh: $(wc -l < "$OUT/mutants.out/missed.txt") survivors" >&2
  pass "$tests3" 600 "${machines[*]}" cluster large
fi
wall=$(( $(cat "$OUT/wall_s") + $(date +%s) - start ))
echo "$wall" > "$OUT/wall_s"
scope_json=$(printf '"%s",' "${files[@]}")
shard_json=null
[[ -n $shard ]] && shard_json="\"$shard\""
passes=$(paste -sd, "$OUT/passes.jsonl")
cat > "$OUT/run.json" <<EOF
{
  "tree": "$(cat "$OUT/tree")",
  "commit": "$(cat "$OUT/commit")",
  "dirty": $(cat "$OUT/dirty"),
  "tool": "cargo-mutants $VERSION",
  "command": "$(cat "$OUT/command")",
  "scope": [${scope_json%,}],
  "passes": [$passes],
  "wall_s": $wall,
  "shard": $shard_json
}
EOF
cargo run --release --quiet -- report --mutants "$OUT" >/dev/null
echo "scripts/mutants.sh: reports/mutants.json and reports/mutants.md written" >&2
