#!/usr/bin/env bash
# make demo: the main job on an embedded default. Until the scenario engine lands it starts a lab
# (a real ZooKeeper and one broker), creates a topic, produces 1,000 messages and consumes them back.
set -euo pipefail
bin=${1:-bin/rebalancelab}
work=$(mktemp -d -t rebalancelab-demo-XXXX)
lab_pid=
cleanup() {
	[ -n "$lab_pid" ] && kill -INT "$lab_pid" 2>/dev/null && wait "$lab_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "== starting a lab: real ZooKeeper + 1 broker (logs: $work/lab.log)"
"$bin" lab up --data "$work/data" >"$work/lab.out" 2>"$work/lab.log" &
lab_pid=$!
for _ in $(seq 1 300); do
	[ -s "$work/lab.out" ] && break
	kill -0 "$lab_pid" 2>/dev/null || { cat "$work/lab.log" >&2; exit 1; }
	sleep 0.1
done
head -n1 "$work/lab.out"
bootstrap=$(head -n1 "$work/lab.out" | sed -E 's/.*"brokers":\["([^"]+)".*/\1/')

echo "== topic create demo --partitions 4"
"$bin" topic create demo --partitions 4 --bootstrap "$bootstrap"
echo "== produce 1000 messages"
"$bin" produce --bootstrap "$bootstrap" --topic demo --count 1000
echo "== consume them back with kcat (librdkafka)"
n=$(kcat -C -b "$bootstrap" -t demo -e -q -f '%p %o %s\n' | tee "$work/consumed" | wc -l)
head -n3 "$work/consumed"
echo "... $n messages consumed from 4 partitions"
[ "$n" -eq 1000 ]
