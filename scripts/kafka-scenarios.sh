#!/usr/bin/env bash
# make kafka-scenarios: every scenario of `rebalancelab scenario list` on every era (both consumers)
# against real Kafka 3.9 brokers (`--era all --broker kafka`), at the small sizes the scenario tests use
# (scenarios/run_test.go). Each run's table and relations go to OUT/<scenario>.txt, its JSON and
# timelines to OUT/<scenario>/ (result.json, timeline-<era>.jsonl); OUT/summary.txt has one line per scenario (relations held / checked, seconds)
# followed by every FAIL line. Exit status 1 when a run fails or a relation does not hold (every
# scenario is run first). A scenario with no size below fails: add it beside its test's.
set -uo pipefail
bin=${1:-bin/rebalancelab}
out=${KAFKA_SCENARIOS_OUT:-kafka-scenarios-out}
seed=${KAFKA_SCENARIOS_SEED:-1}
only=${KAFKA_SCENARIOS_ONLY:-} # comma-separated names: run only these
mkdir -p "$out"

# consumers partitions, as in scenarios/run_test.go (host-link-down: scenarios/hosts_test.go; it runs on 3 test hosts, members as processes)
declare -A size=(
	[herd-effect]="2 4" [herd-join]="2 4" [consumer-crash]="2 2" [split-brain-zombie]="2 2"
	[split-brain-divergent-views]="3 6" [rolling-restart]="2 4" [zk-quorum-loss]="2 2" [storm]="4 8"
	[consumer-bounce-clean-rolling]="2 1" [consumer-bounce-clean-all]="2 1"
	[consumer-bounce-hard-rolling]="2 1" [consumer-bounce-hard-all]="2 1"
	[static-member-bounce]="3 3" [static-fencing]="2 2" [consumer-failure]="2 2"
	[consumer-failure-manual-commit]="2 2" [host-link-down]="6 6"
)

# Scenarios whose members are not the lab's consumers and that run on this project's broker only (its
# group observer): listed in summary.txt as skipped, with why.
declare -A ours_only=(
	[streams-threads]="Kafka Streams instances; the group observer is the rebalancelab broker's coordinator"
)

summary="$out/summary.txt"
: >"$summary"
failed=0
fails=""
for name in $("$bin" scenario list | awk '{print $1}'); do
	if [[ -n "$only" && ",$only," != *",$name,"* ]]; then
		continue
	fi
	if [[ -n "${ours_only[$name]:-}" ]]; then
		echo "skip $name: rebalancelab broker only (${ours_only[$name]})" | tee -a "$summary"
		continue
	fi
	if [[ -z "${size[$name]:-}" ]]; then
		line="FAIL $name: no size in scripts/kafka-scenarios.sh (add the one its test in scenarios/run_test.go uses)"
		echo "$line" | tee -a "$summary"
		failed=1
		continue
	fi
	read -r consumers partitions <<<"${size[$name]}"
	mkdir -p "$out/$name"
	echo "== rebalancelab scenario run $name --era all --broker kafka --consumers $consumers --partitions $partitions --seed $seed"
	start=$(date +%s)
	"$bin" scenario run "$name" --era all --broker kafka --consumers "$consumers" --partitions "$partitions" \
		--seed "$seed" --json "$out/$name/result.json" >"$out/$name.txt" 2>"$out/$name.log"
	rc=$?
	secs=$(($(date +%s) - start))
	ok=$(grep -c '^ok ' "$out/$name.txt")
	bad=$(grep -c '^FAIL' "$out/$name.txt")
	status=ok
	if [[ $rc -ne 0 || $bad -ne 0 ]]; then
		status=FAIL
		failed=1
		fails+=$(grep '^FAIL' "$out/$name.txt" | sed "s/^/$name: /")$'\n'
		if [[ $bad -eq 0 ]]; then
			fails+="$name: exit $rc: $(tail -3 "$out/$name.log" | tr '\n' ' ')"$'\n'
		fi
	fi
	line=$(printf '%-4s %-32s relations %3d of %3d held  %4ds  (C=%s P=%s)' "$status" "$name" "$ok" $((ok + bad)) "$secs" "$consumers" "$partitions")
	echo "$line" | tee -a "$summary"
done
if [[ -n "$fails" ]]; then
	printf '\n%s' "$fails" | tee -a "$summary"
fi
exit $failed
