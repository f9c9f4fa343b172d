#!/usr/bin/env bash
# make demo: the main job on an embedded default. Runs two scenarios on every era — each starts its
# own real ZooKeeper and broker and removes them afterwards — and prints the side-by-side tables:
#   herd-effect         N stable members, one joins, one leaves: who wakes up, what it costs
#   split-brain-zombie  a member's coordination link stalls past its session timeout while it
#                       keeps fetching: does the zombie deliver and commit for partitions others took?
# Results (JSON, HTML report with the ownership timelines) go to ./demo-out/.
set -euo pipefail
bin=${1:-bin/rebalancelab}
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
for s in herd-effect split-brain-zombie; do
	echo
	echo "== rebalancelab scenario run $s --era all   (report: $out/$s/index.html)"
	"$bin" scenario run "$s" --era all --json "$out/$s.json" --report "$out/$s"
done
