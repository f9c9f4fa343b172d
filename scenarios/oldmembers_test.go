package scenarios

import (
	"slices"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestZKEraKafkaMembers: herd-effect on the zk era with the real 0.8.2.2 connector as every member
// (3 stable, one joins, one leaves): every relation holds (rebalance_participants == N+1, eager
// revocations == P, zk_watch_events >= N), every measured invariant is 0, nothing is lost, and the
// ZooKeeper figures — counted by each member's proxy — are present and not zero, the server's
// watches fired equal to the members' notifications (the broker sets none during the era).
func TestZKEraKafkaMembers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.OldConnector)
	res := runWithMembers(t, lab.BrokerRebalancelab, MembersKafka, "herd-effect", []string{"zk"},
		spec.Params{Consumers: 3, Partitions: 6, Seed: 1})
	e := res.Eras[0]
	if res.Versions["kafka_members_zk"] != "0.8.2.2" {
		t.Errorf("versions.kafka_members_zk %q, want 0.8.2.2", res.Versions["kafka_members_zk"])
	}
	tot := e.Result.Totals
	for _, name := range []string{figures.FigZKReads, figures.FigZKWrites, figures.FigZKOffsetWrites, figures.FigZKWatchEvents, figures.FigRebalanceAttempts} {
		v, err := fig(name, tot)
		if slices.Contains(e.Result.NotApplicable, name) || err != nil || v <= 0 {
			t.Errorf("%s = %d (%v, n/a: %v): want measured and > 0", name, v, err, slices.Contains(e.Result.NotApplicable, name))
		}
	}
	for _, name := range append(slices.Clone(figures.InvariantNames), figures.FigLost, figures.FigOwnershipConflicts) {
		if slices.Contains(e.Result.NotApplicable, name) {
			continue
		}
		if v, err := fig(name, tot); err != nil || v != 0 {
			t.Errorf("%s = %d (%v), want 0", name, v, err)
		}
	}
	if !slices.Contains(e.Result.NotApplicable, figures.FigStaleCommitsApplied) {
		t.Errorf("stale_commits_applied is measured; the harness reports no commit (want n/a)")
	}
	if c := e.ZKCrosscheck; c == nil || !c.Comparable || c.WatchesNotInTimeline != 0 || len(c.MembersWithoutWatch) > 0 {
		t.Errorf("zk cross-check: %+v; want comparable, every fired watch in the timeline, every live member watching ids", c)
	} else {
		t.Logf("zk cross-check: %s", c.Summary())
	}
	stops := 0
	for _, p := range e.Processes {
		if p.Stop == "stop" && p.ExitCode == 0 {
			stops++
		}
	}
	if stops != len(e.Processes) || stops != 4 {
		t.Errorf("processes %+v: want 4 connectors, each stopped by its stop line, exit 0", e.Processes)
	}
}

// TestZKEraKafkaMemberCrash: consumer-crash on the zk era with 0.8.2.2 connectors only, one killed
// with -9: its session expires on the server, the others take its partitions no sooner than the
// session timeout less a liveness interval, nothing is lost, every partition is owned once.
func TestZKEraKafkaMemberCrash(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.OldConnector)
	res := runWithMembers(t, lab.BrokerRebalancelab, MembersKafka, "consumer-crash", []string{"zk"},
		spec.Params{Consumers: 3, Partitions: 6, Seed: 1})
	kills := 0
	for _, p := range res.Eras[0].Processes {
		if p.Stop == "sigkill" && p.Signal == "SIGKILL" {
			kills++
		}
	}
	if kills != 1 {
		t.Errorf("processes %+v: want one connector killed with SIGKILL", res.Eras[0].Processes)
	}
}
