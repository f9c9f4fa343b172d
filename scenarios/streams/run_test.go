package streams

import (
	"context"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/groupview"
)

// TestStreamsFiguresFromGenerations: the events' figures from hand-written generations (no JVM): a
// thread leaves, the cooperative protocol's two rounds (the moving tasks revoked, then assigned) make
// two generations, time to stable is the second's, and the tasks moved are counted against the stable
// generation before the trigger; a processed record seen before counts as re-processed in its window.
func TestStreamsFiguresFromGenerations(t *testing.T) {
	m := func(thread string, tasks ...string) groupview.Member {
		parts := map[string][]int32{}
		for _, task := range tasks {
			p := int32(task[len(task)-1] - '0')
			parts["a"] = append(parts["a"], p)
			parts["b"] = append(parts["b"], p)
		}
		return groupview.Member{MemberID: thread, ClientID: thread + "-consumer", ActiveTasks: tasks, Partitions: parts}
	}
	gens := []groupview.Generation{
		{TsMs: 1000, State: "Stable", Generation: 1, Members: []groupview.Member{m("s1-StreamThread-1", "0_0", "0_2"), m("s1-StreamThread-2", "0_1", "0_3")}},
		{TsMs: 2100, State: "PreparingRebalance", Generation: 1},
		{TsMs: 2150, State: "Stable", Generation: 2, Members: []groupview.Member{m("s1-StreamThread-2", "0_1", "0_3")}},
		{TsMs: 2160, State: "PreparingRebalance", Generation: 2},
		{TsMs: 2200, State: "Stable", Generation: 3, Members: []groupview.Member{m("s1-StreamThread-2", "0_0", "0_1", "0_2", "0_3")}},
	}
	r := &runner{run: &Result{Inputs: []string{"a", "b"}}, in: Input{Partitions: 4}, gens: gens,
		triggers: []Event{{Trigger: "start", AtMs: 500}, {Trigger: "remove-thread", AtMs: 2000}},
		app:      []AppEvent{{Ev: "processed", TsMs: 1500, Out: "a/0/0"}, {Ev: "processed", TsMs: 2300, Out: "a/0/0"}, {Ev: "processed", TsMs: 2300, Out: "a/0/1"}}}
	r.compute()
	ev := r.run.Events
	if len(ev) != 2 || ev[0].TimeToStableMs != 500 || ev[0].TasksMoved != 4 {
		t.Fatalf("start: %+v", ev)
	}
	rm := ev[1]
	if rm.TimeToStableMs != 200 || rm.Rebalances != 2 || rm.Generations != 2 || rm.TasksMoved != 2 || rm.RecordsReprocessed != 1 ||
		strings.Join(rm.Moves, "; ") != "0_0 s1-StreamThread-1 -> s1-StreamThread-2; 0_2 s1-StreamThread-1 -> s1-StreamThread-2" {
		t.Fatalf("remove-thread: %+v", rm)
	}
	if len(r.run.Lanes) != 3 || r.run.Totals.RecordsProcessed != 3 || r.run.Totals.RecordsReprocessed != 1 || r.run.Totals.Rebalances != 2 {
		t.Fatalf("lanes %d, totals %+v", len(r.run.Lanes), r.run.Totals)
	}
	for _, l := range r.run.Lanes {
		if err := l.CoPartitioned([]string{"a", "b"}); err != nil {
			t.Fatal(err)
		}
	}
	bad := Lane{Generation: 9, Members: []LaneMember{{Thread: "x", Tasks: []string{"0_1"}, Partitions: map[string][]int32{"a": {1}, "b": {2}}}}}
	if err := bad.CoPartitioned([]string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "b partitions [2]") {
		t.Fatalf("a task on another partition of b: %v", err)
	}
}

// TestStreamsRefusals: a Streams run is refused, before anything starts, on a broker the lab does not
// have, on an existing cluster, and for a consumer era: no output, the error naming the option.
func TestStreamsRefusals(t *testing.T) {
	for _, tc := range []struct {
		in   Input
		want string
	}{
		{Input{Broker: "redpanda"}, "--broker redpanda: want rebalancelab or kafka"},
		{Input{Bootstrap: "127.0.0.1:1"}, "not on an existing cluster (--bootstrap)"},
		{Input{Eras: []string{"classic"}}, "--era classic: its members are Kafka Streams instances"},
		{Input{Eras: []string{"streams, zk"}}, "--era zk: its members are Kafka Streams instances"},
	} {
		tc.in.Scenario = "streams-threads"
		out, err := Run(context.Background(), tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.want)
		}
	}
}
