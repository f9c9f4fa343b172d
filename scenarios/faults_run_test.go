package scenarios

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// runFailingFault runs a script of one era (classic) on the lab, with real members, in which a fault's
// injection really fails, and checks that the run fails with that error: Run returns no error (the run
// went on and was measured), Passed is false, the era's errors are exactly wantErrs (each also in
// Failures, the table and the JSON), and the fault relation names the steps that left no record.
func runFailingFault(t *testing.T, sc *catalog.Scenario, wantErrs []string, wantFaultRel string) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{Definition: sc, Eras: []string{"classic"}, Params: spec.Params{Consumers: 2, Partitions: 2, Seed: 1},
		Version: "test", Log: quietLog(), LabLog: quietLog(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	e := res.Eras[0]
	if !e.Applies {
		t.Fatalf("classic did not run: %s", e.Reason)
	}
	if res.Passed() {
		t.Fatalf("the run passed although a fault could not be injected")
	}
	if !slices.Equal(e.Errors, wantErrs) {
		t.Errorf("errors %q\nwant %q", e.Errors, wantErrs)
	}
	failures := res.Failures()
	for _, msg := range wantErrs {
		if !slices.Contains(failures, "classic: error: "+msg) {
			t.Errorf("failures %q lack %q", failures, "classic: error: "+msg)
		}
		if !strings.Contains(table.String(), "classic: error: "+msg) {
			t.Errorf("the table does not print the error %q", msg)
		}
	}
	if !strings.Contains(table.String(), "result: FAIL (") {
		t.Errorf("the table does not end with result: FAIL")
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"passed": false`) || !strings.Contains(js.String(), `"failures": [`) {
		t.Errorf("the JSON does not say the run failed and why")
	}
	var faultRel *report.RelationResult
	for i := range e.Relations {
		if e.Relations[i].Relation == catalog.FaultRelationText {
			faultRel = &e.Relations[i]
		}
	}
	switch {
	case faultRel == nil:
		t.Errorf("no fault relation among %d relations", len(e.Relations))
	case faultRel.Got != wantFaultRel || faultRel.OK != strings.HasSuffix(wantFaultRel, "each with its record"):
		t.Errorf("fault relation ok=%v %q\nwant %q", faultRel.OK, faultRel.Got, wantFaultRel)
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
	return res
}

// faultScenario is a definition of one era's run: two members started and settled, then steps.
func faultScenario(name string, zkNodes int, steps func(s *catalog.Builder)) *catalog.Scenario {
	return &catalog.Scenario{Name: name, Description: "a fault that cannot be injected", MinConsumers: 1, ZKNodes: zkNodes,
		StopsZKNode: zkNodes > 1,
		Script: func(p spec.Params, t spec.Timing, _ *rand.Rand) []spec.Step {
			s := catalog.NewBuilder(t)
			s.StartAll(p.Consumers)
			s.Trigger("fault")
			steps(s)
			return s.Steps()
		}}
}

// TestFaultFailsZKNodeAlreadyStopped: a 3-node ensemble; node 1 is stopped, then stopped again. The
// second stop finds it down (the lab's Stop would do nothing): the run's error, and the step left no
// fault record.
func TestFaultFailsZKNodeAlreadyStopped(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	sc := faultScenario("fault-zk", 3, func(s *catalog.Builder) {
		s.Add(spec.Step{Action: spec.ActZKStop, Node: 1}).Add(spec.Step{Action: spec.ActZKStop, Node: 1}).Add(spec.Step{Action: spec.ActZKStart, Node: 1}).Settle()
	})
	runFailingFault(t, sc, []string{"zk-stop 1: zookeeper/1 is not running (already stopped)"},
		"1 of 3 fault steps left no fault record: zk-stop 1")
}

// TestFaultFailsLinkThatDoesNotExist: a stall of a link no member has (a misspelt name) and of the
// ZooKeeper link of a coordinator-era member (it has none): both the run's errors, neither leaves a
// fault record; the heal of the coordination link that was really stalled does.
func TestFaultFailsLinkThatDoesNotExist(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	sc := faultScenario("fault-link", 1, func(s *catalog.Builder) {
		s.Link(0, spec.ActStall, "m1", "coordinatr").Link(0, spec.ActStall, "m1", string(timeline.LinkZooKeeper)).
			Link(0, spec.ActStall, "m2", catalog.CoordinationLink).Link(200, spec.ActHeal, "m2", catalog.CoordinationLink).Settle()
	})
	runFailingFault(t, sc, []string{
		`stall m1/coordinatr: no such link "coordinatr" (want coordination, zookeeper, coordinator or fetch)`,
		"stall m1/zookeeper: the classic era's members have no zookeeper link (they talk to brokers only)",
	}, "2 of 4 fault steps left no fault record: stall m1/coordinatr; stall m1/zookeeper")
}

// TestFaultFailsCrashOfExitedMember: m2 is crashed, the group settles, and m2 is crashed again: it
// has already exited, so the second crash is the run's error and leaves no crash record.
func TestFaultFailsCrashOfExitedMember(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	sc := faultScenario("fault-crash", 1, func(s *catalog.Builder) {
		s.Member(0, spec.ActCrash, "m2").Settle().Member(0, spec.ActCrash, "m2")
	})
	runFailingFault(t, sc, []string{"crash m2: not running"}, "1 of 2 fault steps left no fault record: crash m2")
}

// TestFaultFailsBrokerAlreadyStopped: the lab's broker is stopped, stopped again (it is gone: the
// lab's Stop would do nothing), and started: the second stop is the run's error and leaves no record.
func TestFaultFailsBrokerAlreadyStopped(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	sc := faultScenario("fault-broker", 1, func(s *catalog.Builder) {
		s.Add(spec.Step{Action: spec.ActBrokerStop, Node: 0}).Add(spec.Step{Action: spec.ActBrokerStop, Node: 0}).
			Add(spec.Step{Action: spec.ActBrokerStart, Node: 0}).Settle()
	})
	runFailingFault(t, sc, []string{"broker-stop 0: broker 1 is not running (already stopped or killed)"},
		"1 of 3 fault steps left no fault record: broker-stop 0")
}

// TestFaultFailsHostThatDoesNotExist: a host-down of test host 2 on a run without test hosts: the
// run's error, and no host-down record.
func TestFaultFailsHostThatDoesNotExist(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	sc := faultScenario("fault-host", 1, func(s *catalog.Builder) {
		s.Add(spec.Step{Action: spec.ActHostDown, Host: 2}).Add(spec.Step{DelayMs: 200, Action: spec.ActHostUp, Host: 2}).Settle()
	})
	runFailingFault(t, sc, []string{
		"host-down h2: needs test hosts (scenario run --hosts N)",
		"host-up h2: needs test hosts (scenario run --hosts N)",
	}, "2 of 2 fault steps left no fault record: host-down h2; host-up h2")
}
