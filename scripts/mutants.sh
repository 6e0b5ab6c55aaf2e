#!/usr/bin/env bash
# The mutation score of the verifier: injects bugs into the shipped decision logic with
# cargo-mutants (pinned; installed into .cache/cargo-mutants on first use) and counts how many
# the tests catch, then imports the run into reports/mutants.json and renders reports/mutants.md
# (`listsync report --mutants target/mutants`: the run's mutants replace those of the files it
# mutated; the other files keep their earlier runs). Slow (about 20 s per mutant on 2 cores), so
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
# A mutant is caught if any pass catches it; the report says which pass judged it, on which
# source tree, and which source of each mutated file (its git blob) the run mutated: runs on
# different trees that mutated the same source differ only in the tests that judged them.
#
# Usage: scripts/mutants.sh [--shard K/N | --rest | --again] [--passes N] [FILE...]
#   FILE defaults to the scope: core/src/server.rs core/src/client.rs store/src/flight.rs, the
#   monitor's checkers (core/src/monitor/*.rs) and the world's observers (core/src/world.rs, only
#   the functions that observe: the Watch of walks, observe_*, readers_see, the probe, the
#   quiescent end and the judging of situations; the rest of world.rs moves the environment and
#   is exercised by every model test, but a mutant of it changes the explored world, not what is
#   judged of it).
#   --shard K/N runs the K-th of N slices of the scope's mutants (cargo-mutants' --shard).
#   --rest runs only the scope's mutants reports/mutants.json does not have yet: it continues a
#   run that was stopped (its judged mutants were imported), on the same source of FILE.
#   --again judges once more the scope's mutants reports/mutants.json lists as survivors, on the
#   current tree: after checks were added for them.
#   --passes N stops after pass N (1 to 3, default 3). The report lists the passes that ran: its
#   survivors may include mutants a skipped pass would catch.
# A run stopped before its end can still be imported: write its run.json (as below, "partial":
# true, passes naming the copies of mutants.out) and `listsync report --mutants target/mutants`;
# `--rest` then continues it.
set -euo pipefail
cd "$(dirname "$0")/.."
shard=""
passes_max=3
select=""
files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shard) shard="${2:-}"; [[ -n $shard ]] || { echo "scripts/mutants.sh: --shard wants K/N" >&2; exit 2; }; shift 2 ;;
    --passes) passes_max="${2:-}"; [[ $passes_max =~ ^[123]$ ]] || { echo "scripts/mutants.sh: --passes wants 1, 2 or 3" >&2; exit 2; }; shift 2 ;;
    --one-pass) passes_max=1; shift ;;
    --rest) select=rest; shift ;;
    --again) select=again; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "scripts/mutants.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
if [[ -n $shard && -n $select ]]; then
  echo "scripts/mutants.sh: --shard does not go with --$select" >&2; exit 2
fi
given="${files[*]:-}"
# The world's observers: the mutants of core/src/world.rs the scope takes (by cargo-mutants'
# name of the function mutated).
observers='(Watch::|observe|readers_see| probe|World<C>::(quiescent|holds|expectations|client_step_ending)|is_list_changed)'
if [[ ${#files[@]} -eq 0 ]]; then
  files=(core/src/server.rs core/src/client.rs store/src/flight.rs)
  for f in core/src/monitor/*.rs; do
    # testing.rs: the checkers' test histories; tests.rs: the monitor's tests.
    [[ $f == core/src/monitor/testing.rs || $f == core/src/monitor/tests.rs ]] || files+=("$f")
  done
  files+=(core/src/world.rs)
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
scope=()
for f in "${files[@]}"; do scope+=(--file "$f"); done
common=(mutants --workspace "${scope[@]}" --profile mutants --output target/mutants
  --no-shuffle --colors never)
# Of world.rs, its observers only; every mutant of the other files (--again names its mutants).
if [[ " ${files[*]} " == *" core/src/world.rs "* && $select != again ]]; then
  others=""
  for f in "${files[@]}"; do
    if [[ $f != core/src/world.rs ]]; then others="$others${others:+|}$(printf '%s' "$f" | sed 's/[.]/\\./g')"; fi
  done
  common+=(--re "^(${others:-\$^}):|^core/src/world\\.rs:.*$observers")
fi
[[ -n $shard ]] && common+=(--shard "$shard")
# --rest and --again: the mutants to skip or to take, by their exact names in the report.
if [[ -n $select ]]; then
  which=judged
  [[ $select == again ]] && which=survivors
  names=$(cargo run --release --quiet -- report --list-mutants "$which" "${files[@]}")
  if [[ $select == again && -z $names ]]; then
    echo "scripts/mutants.sh: --again: reports/mutants.json lists no survivor of ${files[*]}" >&2
    exit 0
  fi
  flag=--exclude-re
  [[ $select == again ]] && flag=--re
  while IFS= read -r n; do
    [[ -n $n ]] && common+=("$flag" "^$(printf '%s' "$n" | sed 's/[][\.*^$(){}?+|]/\\&/g')\$")
  done <<< "$names"
fi
OUT=target/mutants
rm -rf "$OUT"
mkdir -p "$OUT"
commit=$(git rev-parse HEAD)
# The source the run judges is the work tree as cargo-mutants copies it when each pass starts,
# not HEAD when this script started: record that tree (its tracked files, `git stash create`
# writes it without touching the work tree or the stash), and say so if it changed between passes.
worktree() { local s; s=$(git stash create 2>/dev/null || true); git rev-parse "${s:-HEAD}^{tree}"; }
tree=""
moved=false
machines="--test-package listsync-core --test-package listsync-model --test-package listsync-store"
tests1="core, model and store tests (cargo test --profile mutants --lib --tests), every model configuration but the cluster ones and the large ones, not the checker's own graph tests (--skip cluster --skip large --skip checker_s_graph)"
tests2="the survivors again, by the simulator's campaigns, machine and stack level (cargo test --profile mutants -p listsync-sim --lib --tests)"
tests3="the survivors again, by the model configurations pass 1 skipped: the cluster configurations and the large ones (cargo test --profile mutants --lib --tests -- cluster large)"
passes=""
n=0
# One pass: cargo-mutants over the mutants still to judge (after the first, the survivors: its
# --iterate skips what was caught), its output kept as passN. cargo-mutants exits 2 when a mutant
# survives and 3 on a timeout: those are results, not failures.
pass() {
  local tests="$1" timeout="$2" packages iterate=()
  read -r -a packages <<< "$3"
  shift 3
  n=$((n + 1))
  local now
  now=$(worktree)
  if [[ -z $tree ]]; then
    tree=$now
  elif [[ $now != "$tree" ]]; then
    moved=true
    echo "scripts/mutants.sh: warning: the work tree changed since pass 1; the run is recorded as dirty" >&2
  fi
  [[ $n -gt 1 ]] && iterate=(--iterate)
  echo "scripts/mutants.sh: pass $n: $tests" >&2
  local status=0
  "$TOOL" "${common[@]}" "${packages[@]}" "${iterate[@]}" --timeout "$timeout" -- --lib --tests -- "$@" || status=$?
  [[ $status -eq 0 || $status -eq 2 || $status -eq 3 ]] || exit "$status"
  cp -r "$OUT/mutants.out" "$OUT/pass$n"
  passes="$passes${passes:+, }"'{"dir": "pass'"$n"'", "tests": "'"$tests"'"}'
}
start=$(date +%s)
# cargo-mutants times the unmutated tests of the mutated package alone, which would set a
# timeout far below what the model's tests need: set it (pass 1's tests take about 6 s
# unmutated on 2 cores). A mutant that makes the model's state space explode or a walk loop
# forever times out, and counts as caught.
pass "$tests1" 60 "$machines" --skip cluster --skip large --skip checker_s_graph
if [[ $passes_max -ge 2 && -s $OUT/mutants.out/missed.txt ]]; then
  echo "scripts/mutants.sh: $(wc -l < "$OUT/mutants.out/missed.txt") survivors" >&2
  # The stack-level campaigns run real tokio runtimes on simulated time: minutes, not hours.
  pass "$tests2" 600 "--test-package listsync-sim"
fi
if [[ $passes_max -ge 3 && -s $OUT/mutants.out/missed.txt ]]; then
  echo "scripts/mutants.sh: $(wc -l < "$OUT/mutants.out/missed.txt") survivors" >&2
  pass "$tests3" 600 "$machines" cluster large
fi
wall=$(( $(date +%s) - start ))
dirty=false
[[ $moved == false && $tree == $(git rev-parse "$commit^{tree}") ]] || dirty=true
scope_json=$(printf '"%s",' "${files[@]}")
# Each mutated file's source, as its blob in the tree the run mutated: runs on different trees
# can then be seen to have mutated the same source.
sources_json=""
for f in "${files[@]}"; do
  sources_json="$sources_json${sources_json:+, }\"$f\": \"$(git rev-parse "$tree:$f")\""
done
shard_json=null
[[ -n $shard ]] && shard_json="\"$shard\""
partial=false
[[ -n $shard || -n $select ]] && partial=true
cat > "$OUT/run.json" <<EOF
{
  "tree": "$tree",
  "commit": "$commit",
  "dirty": $dirty,
  "tool": "cargo-mutants $VERSION",
  "command": "scripts/mutants.sh${shard:+ --shard $shard}${select:+ --$select} --passes $passes_max${given:+ $given}",
  "scope": [${scope_json%,}],
  "passes": [$passes],
  "wall_s": $wall,
  "shard": $shard_json,
  "partial": $partial,
  "sources": {$sources_json}
}
EOF
cargo run --release --quiet -- report --mutants "$OUT" >/dev/null
echo "scripts/mutants.sh: reports/mutants.json and reports/mutants.md written" >&2
