package catalog

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestFaultRelationNeedsItsRecords: zk-quorum-loss's relations all hold on a timeline where no
// ZooKeeper node stopped; the fault relation does not: each zk-stop and zk-start step wants its
// fault record (begin when the node is down, end when it serves again), and a run missing one fails
// naming the step. With the records the runner writes, it holds.
func TestFaultRelationNeedsItsRecords(t *testing.T) {
	sc, err := Lookup("zk-quorum-loss")
	if err != nil {
		t.Fatal(err)
	}
	script, err := sc.ScriptFor(sc.Small, spec.LabTiming())
	if err != nil {
		t.Fatal(err)
	}
	var faults []timeline.Record
	var steps []string
	for i, st := range script {
		switch st.Action {
		case spec.ActZKStop:
			faults = append(faults, timeline.Record{TsMs: int64(i), Kind: timeline.Fault, Action: "zk-stop", Target: "zookeeper/" + string(rune('0'+st.Node)), Phase: timeline.FaultBegin})
			steps = append(steps, st.String())
		case spec.ActZKStart:
			faults = append(faults, timeline.Record{TsMs: int64(i), Kind: timeline.Fault, Action: "zk-stop", Target: "zookeeper/" + string(rune('0'+st.Node)), Phase: timeline.FaultEnd})
			steps = append(steps, st.String())
		}
	}
	if len(steps) != 4 {
		t.Fatalf("zk-quorum-loss's script has %d zk steps (%v), want 4 (two nodes stopped and started)", len(steps), steps)
	}
	rel := faultRelation()
	check := func(recs []timeline.Record) (bool, string) {
		era := &eraRun{Era: "zk", Applies: true, Records: recs}
		ok, got, skip := rel.evaluate(checkCtx{run: &report.RunResult{Script: script}, era: era})
		if skip {
			t.Fatalf("the fault relation skipped: %s", got)
		}
		return ok, got
	}
	if ok, got := check(faults); !ok || got != "4 fault steps, each with its record" {
		t.Errorf("with every record: ok=%v %q, want it to hold over 4 steps", ok, got)
	}
	if ok, got := check(nil); ok || got != "4 of 4 fault steps left no fault record: "+strings.Join(steps, "; ") {
		t.Errorf("with no record: ok=%v %q, want all 4 steps named", ok, got)
	}
	// The first node's stop left no record (it was already down): that step fails, the others hold.
	if ok, got := check(faults[1:]); ok || !strings.HasPrefix(got, "1 of 4 fault steps left no fault record: "+steps[0]) {
		t.Errorf("without the first stop's record: ok=%v %q, want %s named", ok, got, steps[0])
	}
	// A begin record of another node does not stand in for it.
	other := append([]timeline.Record{{Kind: timeline.Fault, Action: "zk-stop", Target: "zookeeper/9", Phase: timeline.FaultBegin}}, faults[1:]...)
	if ok, _ := check(other); ok {
		t.Errorf("another node's record counted as %s's", steps[0])
	}
}

// TestFaultWantsOfEveryAction: each fault action wants the record the runner writes for it
// (runner.go's do, brokersteps.go, hosts.go): the coordination link resolved per era, a broker by
// its role's id, a latency or host delay of 0 as the end of the one in force.
func TestFaultWantsOfEveryAction(t *testing.T) {
	script := []Step{
		{Action: spec.ActStart, Member: "m1"}, {Action: spec.ActTrigger, Name: "x"},
		{Action: spec.ActStall, Member: "m1", Link: CoordinationLink}, {Action: spec.ActHeal, Member: "m1", Link: CoordinationLink},
		{Action: spec.ActLatency, Member: "m1", Link: "fetch", LatencyMs: 300}, {Action: spec.ActLatency, Member: "m1", Link: "fetch"},
		{Action: spec.ActCut, Member: "m1", Link: "fetch"}, {Action: spec.ActCrash, Member: "m1"},
		{Action: spec.ActBrokerKill, Broker: spec.BrokerRoleLeader}, {Action: spec.ActBrokerStart, Broker: spec.BrokerRoleDown},
		{Action: spec.ActHostDown, Host: 3}, {Action: spec.ActHostUp, Host: 3},
		{Action: spec.ActPartition, Host: 1, Peer: 2}, {Action: spec.ActPartitionHeal, Host: 1, Peer: 2},
		{Action: spec.ActHostDelay, Host: 2, LatencyMs: 200}, {Action: spec.ActHostLoss, Host: 2, LossPct: 5}, {Action: spec.ActHostDelay, Host: 2},
		{Action: spec.ActSettle},
	}
	rec := func(action, target, phase string) timeline.Record {
		return timeline.Record{Kind: timeline.Fault, Action: action, Target: target, Phase: phase}
	}
	recs := []timeline.Record{
		rec("stall", "m1/coordinator", timeline.FaultBegin), rec("stall", "m1/coordinator", timeline.FaultEnd),
		rec("latency 300ms", "m1/fetch", timeline.FaultBegin), rec("latency 300ms", "m1/fetch", timeline.FaultEnd),
		rec("cut", "m1/fetch", timeline.FaultBegin), rec("crash", "m1", ""),
		rec("broker-kill", "broker/2", timeline.FaultBegin), rec("broker-kill", "broker/2", timeline.FaultEnd),
		rec("host-down", "h3", timeline.FaultBegin), rec("host-down", "h3", timeline.FaultEnd),
		rec("partition", "h1|h2", timeline.FaultBegin), rec("partition", "h1|h2", timeline.FaultEnd),
		rec("host-delay 200ms", "h2", timeline.FaultBegin), rec("host-loss 5%", "h2", timeline.FaultBegin),
		rec("host-delay 200ms", "h2", timeline.FaultEnd),
	}
	wants := faultWants(script, "classic")
	if len(wants) != 15 {
		t.Fatalf("%d fault steps, want 15 (start, trigger and settle are none)", len(wants))
	}
	if missing := checkFaults(wants, recs); len(missing) != 0 {
		t.Errorf("classic: steps without their record: %v", missing)
	}
	// In the zk era the coordination link is the ZooKeeper link: the coordinator link's records are
	// not the stall's.
	if missing := checkFaults(faultWants(script, "zk"), recs); strings.Join(missing, ",") != "stall m1/coordination,heal m1/coordination" {
		t.Errorf("zk: steps without their record %v, want the coordination stall and heal", missing)
	}
	// Each record removed fails exactly its step.
	for i := range recs {
		rest := append(append([]timeline.Record(nil), recs[:i]...), recs[i+1:]...)
		if missing := checkFaults(wants, rest); len(missing) != 1 {
			t.Errorf("without %+v: missing %v, want exactly one step", recs[i], missing)
		}
	}
}

// TestPassedNeedsNoErrors: a run whose relations all hold but which recorded an error (a fault that
// could not be injected) fails, and says why; a skipped relation neither holds nor fails.
func TestPassedNeedsNoErrors(t *testing.T) {
	res := &report.RunResult{Eras: []*report.EraRun{{Era: "zk", Applies: true, Relations: []report.RelationResult{
		{Era: "zk", Relation: "a", OK: true, Got: "1"},
		{Era: "zk", Relation: "b", Skipped: true, Got: "n/a"},
	}}}}
	if !res.Passed() || len(res.Failures()) != 0 {
		t.Fatalf("passed=%v failures=%v, want a pass", res.Passed(), res.Failures())
	}
	if c := res.Counts(); c != (report.RelationCounts{Held: 1, Skipped: 1}) {
		t.Errorf("counts %+v, want 1 held, 1 skipped", c)
	}
	res.Eras[0].Errors = []string{"zk-stop 1: zookeeper/1 is not running (already stopped)"}
	if res.Passed() {
		t.Fatal("a run with an error passed")
	}
	if f := res.Failures(); len(f) != 1 || f[0] != "zk: error: zk-stop 1: zookeeper/1 is not running (already stopped)" {
		t.Errorf("failures %q", f)
	}
	var tbl strings.Builder
	if err := res.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "skip zk           b: n/a") ||
		!strings.Contains(tbl.String(), "result: FAIL (relations: 1 held, 0 failed, 1 skipped (not measured); errors: 1)") {
		t.Errorf("table:\n%s", tbl.String())
	}
	var js strings.Builder
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"passed": false`, `"relations_hold": true`, `"zk: error: zk-stop 1: zookeeper/1 is not running (already stopped)"`,
		`"relation_counts": {`, `"skipped": 1`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
}
