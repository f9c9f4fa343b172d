package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestOCTranslator: the 0.8.2.2 harness's lines and its ZooKeeper proxy's events as the records the
// figures read, on hand-written input: one rebalance_begin per rebalance (a retry opens none), a
// rebalance_end per try (ok only for the try that reached "selected partitions"), assigned with that
// try's claims only (a failed try's claims are never assigned), the deletes of owned owner znodes as
// revocations (not those of a failed try's claims), a NODEEXISTS on an owner znode as a conflict,
// paths below the chroot, and reads, writes and notifications as zk_op / zk_watch.
func TestOCTranslator(t *testing.T) {
	col := &timeline.Collector{}
	tr := newOCTranslator(&timeline.Recorder{Sink: col, Era: "zk", Member: "m2"}, "/c", "g")
	lines := func(ls ...string) {
		for _, l := range ls {
			tr.line([]byte(l))
		}
	}
	zk := func(kind, op, path, result string) {
		tr.zk(lab.ZKProxyEvent{Kind: kind, Op: op, Path: path, Result: result})
	}
	lines(`[2026] WARN not json`,
		`{"event":"rebalance_begin","ts":100,"attempt":0}`,
		`{"event":"owned","ts":101,"thread":"g_m2-0","topic":"t","partition":0}`,
		`{"event":"selected","ts":102,"partitions":"t:0"}`,
		`{"event":"rebalance_end","ts":103,"attempt":0}`,
		`{"event":"started","ts":104,"consumer_id":"g_m2"}`,
		`{"event":"delivered","ts":105,"stream":0,"topic":"t","partition":0,"offset":7}`)
	zk(lab.ZKProxyWatch, "NodeChildrenChanged", "/c/consumers/g/ids", "")
	lines(`{"event":"rebalance_begin","ts":110,"attempt":0}`)
	zk(lab.ZKProxyRead, "getChildren", "/c/consumers/g/ids", "")
	zk(lab.ZKProxyWrite, "setData", "/c/consumers/g/offsets/t/0", "")
	zk(lab.ZKProxyWrite, "delete", "/c/consumers/g/owners/t/0", "")
	lines(`{"event":"owned","ts":111,"thread":"g_m2-0","topic":"t","partition":1}`)
	zk(lab.ZKProxyWrite, "create", "/c/consumers/g/owners/t/2", lab.ZKProxyNodeExists)
	lines(`{"event":"claim_conflict","ts":112,"attempt":0,"partition":2}`)
	zk(lab.ZKProxyWrite, "delete", "/c/consumers/g/owners/t/1", "") // the failed try's claim: not owned
	lines(`{"event":"rebalance_end","ts":113,"attempt":0}`,
		`{"event":"rebalance_failed","ts":113,"attempt":0}`,
		`{"event":"rebalance_begin","ts":120,"attempt":1}`,
		`{"event":"owned","ts":121,"thread":"g_m2-0","topic":"t","partition":2}`,
		`{"event":"owned","ts":121,"thread":"g_m2-0","topic":"t","partition":3}`,
		`{"event":"selected","ts":122,"partitions":"t:2,t:3"}`,
		`{"event":"rebalance_end","ts":123,"attempt":1}`)
	zk(lab.ZKProxyOther, "ping", "", "")
	zk(lab.ZKProxyRead, "getData", "/elsewhere", "") // outside the chroot
	var got []string
	for _, r := range col.Records() {
		s := string(r.Kind)
		switch r.Kind {
		case timeline.Assigned, timeline.Revoked:
			s += " " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Partitions["t"])), ","), "[]")
		case timeline.RebalanceEnd:
			s += fmt.Sprintf(" %v#%d", *r.OK, r.Attempt)
		case timeline.Deliver:
			s += fmt.Sprintf(" %d@%d", *r.Partition, *r.Offset)
		case timeline.ZKOp:
			s += " " + r.Op + " " + r.Path + " " + r.Result
		case timeline.ZKWatch:
			s += " " + r.Type + " " + r.Path
		}
		got = append(got, strings.TrimSpace(s))
	}
	want := []string{"rebalance_begin", "assigned 0", "rebalance_end true#1", "deliver 0@7",
		"zk_watch NodeChildrenChanged /consumers/g/ids", "rebalance_begin", "zk_op read /consumers/g/ids",
		"zk_op write /consumers/g/offsets/t/0", "revoked 0", "zk_op write /consumers/g/owners/t/0",
		"zk_op write /consumers/g/owners/t/2 conflict", "zk_op write /consumers/g/owners/t/1",
		"rebalance_end false#1", "assigned 2,3", "rebalance_end true#2"}
	if !slices.Equal(got, want) {
		t.Fatalf("records\n got %q\nwant %q", got, want)
	}
}

// TestZKEraKafkaMembers: herd-effect on the zk era with the real 0.8.2.2 connector as every member
// (3 stable, one joins, one leaves): every relation holds (rebalance_participants == N+1, eager
// revocations == P, zk_watch_events >= N), every measured invariant is 0, nothing is lost, and the
// ZooKeeper figures — counted by each member's proxy — are present and not zero, the server's
// watches fired equal to the members' notifications (the broker sets none during the era).
func TestZKEraKafkaMembers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.OldConnector)
	res := runWithMembers(t, lab.BrokerRebalancelab, MembersKafka, "herd-effect", []string{"zk"},
		Params{Consumers: 3, Partitions: 6, Seed: 1})
	e := res.Eras[0]
	if res.Versions["kafka_members_zk"] != "0.8.2.2" {
		t.Errorf("versions.kafka_members_zk %q, want 0.8.2.2", res.Versions["kafka_members_zk"])
	}
	tot := e.Result.Totals
	for _, name := range []string{FigZKReads, FigZKWrites, FigZKOffsetWrites, FigZKWatchEvents, FigRebalanceAttempts} {
		v, err := fig(name, tot)
		if slices.Contains(e.Result.NotApplicable, name) || err != nil || v <= 0 {
			t.Errorf("%s = %d (%v, n/a: %v): want measured and > 0", name, v, err, slices.Contains(e.Result.NotApplicable, name))
		}
	}
	for _, name := range append(slices.Clone(InvariantNames), FigLost, FigOwnershipConflicts) {
		if slices.Contains(e.Result.NotApplicable, name) {
			continue
		}
		if v, err := fig(name, tot); err != nil || v != 0 {
			t.Errorf("%s = %d (%v), want 0", name, v, err)
		}
	}
	if !slices.Contains(e.Result.NotApplicable, FigStaleCommitsApplied) {
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
		Params{Consumers: 3, Partitions: 6, Seed: 1})
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
