#!/usr/bin/env bash
# make kafka-scenarios: every scenario of the catalogue (`rebalancelab scenario list --json`) on every
# era (both consumers) against real Kafka 3.9 brokers (`--era all --broker kafka`), each at the small
# size its test runs (the catalogue's "small": consumers, partitions, test hosts), so that a scenario
# added to the catalogue runs here without editing this script. A scenario that needs test hosts gets
# --hosts (network namespaces: root and iproute2, as its test needs; its members then run as processes);
# a scenario whose figures need the rebalancelab broker's group observer (streams-threads) runs anyway,
# those relations reported as skipped (not measured).
#
# Each run's table goes to OUT/<scenario>.txt, its progress to OUT/<scenario>.log, its JSON and
# timelines to OUT/<scenario>/ (result.json, timeline-<era>.jsonl); OUT/summary.txt has one line per
# scenario — PASS or FAIL, the relations held, failed and skipped (not measured), the errors the run
# recorded, seconds — followed by why each failed run failed (the JSON's "failures", or the exit status
# and the log's tail when there is no JSON). A run passes only when it recorded no error (a fault that
# could not be injected, a member that could not start...) and no relation failed (the fault-record
# relation among them). Exit status 1 when a run failed (every scenario is run first).
set -uo pipefail
bin=${1:-bin/rebalancelab}
out=${KAFKA_SCENARIOS_OUT:-kafka-scenarios-out}
seed=${KAFKA_SCENARIOS_SEED:-1}
only=${KAFKA_SCENARIOS_ONLY:-} # comma-separated names: run only these
mkdir -p "$out"

catalog=$("$bin" scenario list --json) || { echo "FAIL: $bin scenario list --json" >&2; exit 1; }
# name consumers partitions hosts, one line per scripted scenario (connect-workers, "driver": true, has
# no script nor small size: make connect-workers runs it)
list=$(jq -r '.[] | select(.driver | not) | [.name, .small.consumers, .small.partitions, (.small.hosts // 0)] | @tsv' <<<"$catalog") ||
	{ echo "FAIL: reading the catalogue's JSON" >&2; exit 1; }
if [[ -z "$list" ]]; then
	echo "FAIL: an empty catalogue" >&2
	exit 1
fi

summary="$out/summary.txt"
: >"$summary"
failed=0
fails=""
while IFS=$'\t' read -r name consumers partitions hosts; do
	if [[ -n "$only" && ",$only," != *",$name,"* ]]; then
		continue
	fi
	args=(scenario run "$name" --era all --broker kafka --consumers "$consumers" --partitions "$partitions" --seed "$seed")
	if [[ "$hosts" -gt 0 ]]; then
		args+=(--hosts "$hosts")
	fi
	rm -rf "${out:?}/$name"
	mkdir -p "$out/$name"
	echo "== rebalancelab ${args[*]}"
	start=$(date +%s)
	"$bin" "${args[@]}" --json "$out/$name/result.json" >"$out/$name.txt" 2>"$out/$name.log"
	rc=$?
	secs=$(($(date +%s) - start))
	held=0 bad=0 skipped=0 errs=0 passed=false
	json="$out/$name/result.json"
	if [[ -s "$json" ]]; then
		read -r held bad skipped errs passed < <(jq -r '[.relation_counts.held, .relation_counts.failed, .relation_counts.skipped,
			([.eras[].errors // [] | length] | add // 0), .passed] | @tsv' "$json")
	fi
	status=PASS
	if [[ $rc -ne 0 || "$passed" != true ]]; then
		status=FAIL
		failed=1
		if [[ -s "$json" ]]; then
			fails+=$(jq -r --arg n "$name" '.failures // [] | .[] | "\($n): \(.)"' "$json")$'\n'
		fi
		if [[ ! -s "$json" || "$passed" == true ]]; then
			fails+="$name: exit $rc: $(tail -3 "$out/$name.log" | tr '\n' ' ')"$'\n'
		fi
	fi
	hostnote=""
	if [[ "$hosts" -gt 0 ]]; then
		hostnote=" H=$hosts"
	fi
	line=$(printf '%-4s %-32s relations %3d held %2d failed %2d skipped  errors %2d  %4ds  (C=%s P=%s%s)' \
		"$status" "$name" "$held" "$bad" "$skipped" "$errs" "$secs" "$consumers" "$partitions" "$hostnote")
	echo "$line" | tee -a "$summary"
done <<<"$list"
if [[ -n "$fails" ]]; then
	printf '\n%s' "$fails" | tee -a "$summary"
fi
exit $failed
