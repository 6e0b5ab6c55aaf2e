#!/usr/bin/env bash
# Regenerates the committed simulator summaries under reports/sim/ and renders reports/sim.md:
# the reference campaigns at both levels, one campaign per known-bad strategy (their shrunk
# traces go to reports/sim-traces/), and, with --scale, the scale runs (minutes each).
# Usage: scripts/sim-reports.sh [--scale]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
sim() { ./target/release/listsync sim "$@" >/dev/null; }
sim --seeds 10000 --report reports/sim/1-machine-reference.json
sim --level stack --seeds 200 --report reports/sim/2-stack-reference.json
if [[ "${1:-}" == "--scale" ]]; then
  sim --level stack --clients 1000 --burst 1000 --faults none \
    --report reports/sim/3-scale-stack-1000c.json
  sim --clients 100000 --burst 1000 --faults none \
    --report reports/sim/4-scale-machine-100000c-1node.json
  sim --clients 100000 --burst 1000 --nodes 3 --faults none \
    --report reports/sim/5-scale-machine-100000c-3nodes.json
fi
for s in $(./target/release/listsync sim --list | awk '/^strategies/ {on = 1; next}
    on && $1 != "reference" && NF {print $1}'); do
  # A known-bad campaign exits non-zero only when it is not caught.
  sim --strategy "$s" --seeds 1000 --report "reports/sim/6-known-bad-$s.json"
done
./target/release/listsync report >/dev/null
echo "scripts/sim-reports.sh: reports/sim/ and reports/sim.md regenerated"
