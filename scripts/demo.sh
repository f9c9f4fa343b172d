#!/usr/bin/env bash
# make demo: the main job on an embedded default. Every run starts its own real ZooKeeper and broker
# and removes them afterwards.
#   1. herd-join (herd-effect's join) as a sweep over N, every era, the median of 3 runs per size, until the size from
#      which every coordinator era stabilises faster than the ZooKeeper era (the crossover) or the
#      time budget ends: the figures against N, the zk reads fitted to a·N² + b·N + c, the plots.
#   2. split-brain-zombie on every era: a member's coordination link stalls past its session timeout
#      while it keeps fetching: does the zombie deliver and commit for partitions others took?
# Results (JSON, SVG plots, the HTML report with the ownership timelines) go to ./demo-out/.
set -euo pipefail
bin=${1:-bin/rebalancelab}
out=${DEMO_OUT:-demo-out}
sizes=${DEMO_SIZES:-4,16,64}
budget=${DEMO_BUDGET:-2m}
mkdir -p "$out"
echo
echo "== rebalancelab scenario run herd-join --era all --consumers $sizes --repeat 3 --until-crossover --budget $budget"
echo "   (plots: $out/herd-sweep.svg; report with the plots and the largest run's timelines: $out/herd-join/index.html)"
"$bin" scenario run herd-join --era all --consumers "$sizes" --partitions 64 --repeat 3 --until-crossover \
	--budget "$budget" --json "$out/herd-sweep.json" --plot "$out/herd-sweep.svg" --report "$out/herd-join"
echo
echo "== rebalancelab scenario run split-brain-zombie --era all   (report: $out/split-brain-zombie/index.html)"
"$bin" scenario run split-brain-zombie --era all --json "$out/split-brain-zombie.json" --report "$out/split-brain-zombie"
