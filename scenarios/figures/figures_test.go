package figures

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/timeline/timelinetest"
)

// tlb is the tests' hand-written timeline (timeline/timelinetest).
type tlb = timelinetest.Builder

var (
	newTL = timelinetest.New
	ps    = timelinetest.Partitions
)

// base is timelinetest's wall clock: at_ms is visibly relative to it.
const base = timelinetest.Base

// computeTL replays b's records and fails t on any warning.
func computeTL(t *testing.T, b *tlb, opts FigureOptions) Result {
	t.Helper()
	res := Compute(b.Recs, b.Era, opts)
	if len(res.Warnings) != 0 {
		t.Fatalf("unexpected warnings: %q", res.Warnings)
	}
	return res
}

// want asserts named figures exactly.
func want(t *testing.T, what string, f Figures, exp map[string]int64) {
	t.Helper()
	for name, v := range exp {
		got, ok := f.Get(name)
		if !ok {
			t.Fatalf("%s: unknown figure %q", what, name)
		}
		if got != v {
			t.Errorf("%s: %s = %d, want %d", what, name, got, v)
		}
	}
}

func oneEvent(t *testing.T, res Result, n int) {
	t.Helper()
	if len(res.Events) != n {
		t.Fatalf("events = %d, want %d: %+v", len(res.Events), n, res.Events)
	}
}

// Eager join in the classic era: everything measured in the window, nothing after stable.
func TestFiguresEagerJoin(t *testing.T) {
	b := newTL("classic").
		Start(0, "m1").Begin(0, "m1").GroupRequest(10, "m1", "JoinGroup").GroupRequest(12, "m1", "SyncGroup").
		Assign(20, "m1", 0, 1).End(20, "m1", true, 1).
		Produce(500, 0, 0).Produce(500, 1, 0).Deliver(510, "m1", 0, 0).Deliver(510, "m1", 1, 0).
		Trigger(1000, "join").
		Start(1005, "m2").Begin(1006, "m2").GroupRequest(1006, "m2", "JoinGroup").
		GroupRequest(1010, "m1", "Heartbeat").Begin(1011, "m1").Commit(1011, "m1", 0, 1, 1, timeline.CommitApplied).
		Revoke(1012, "m1", 0, 1).GroupRequest(1013, "m1", "JoinGroup").GroupRequest(1013, "m1", "FindCoordinator").
		Produce(1020, 0, 1).Produce(1050, 1, 1).
		GroupRequest(1090, "m1", "SyncGroup").GroupRequest(1090, "m2", "SyncGroup").
		Assign(1100, "m1", 0).End(1100, "m1", true, 1).Assign(1100, "m2", 1).End(1100, "m2", true, 1).
		Deliver(1120, "m1", 0, 1).Deliver(1150, "m2", 1, 0, 1). // m2 starts at the last commit: 0 again
		GroupRequest(1500, "m1", "Heartbeat").GroupRequest(1500, "m2", "Heartbeat")
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	ev := res.Events[0]
	if ev.Trigger != "join" || ev.AtMs != 1000 || ev.EndMs != 1100 || ev.End != EndStable {
		t.Fatalf("event = %+v", ev)
	}
	want(t, "join", ev.Figures, map[string]int64{
		FigTimeToStableMs: 100, FigRebalanceParticipants: 2, FigGroupRequests: 5, FigRebalanceAttempts: 2,
		FigRebalanceFailures: 0, FigRevocations: 2, FigMaxConcurrentOwners: 1,
		FigUnownedPartitionMs: 80 + 50, // p0 pending 1020..1100, p1 1050..1100, both unowned since 1012
		FigDuplicates:         1,       // after the window's stable end, still this event's
		FigLost:               0, FigStaleCommitsApplied: 0, FigStaleCommitsRejected: 0,
	})
	// The totals leave the group's formation (before the first trigger) to its own window, Start.
	want(t, "totals", res.Totals, map[string]int64{
		FigTimeToStableMs: 100, FigDuplicates: 1, FigRebalanceParticipants: 2, FigGroupRequests: 7, FigRebalanceAttempts: 2,
		FigRevocations: 2, FigMaxConcurrentOwners: 1, FigUnownedPartitionMs: 130,
	})
	if st := res.Start; st == nil || st.Trigger != "start" || st.AtMs != 0 || st.EndMs != 20 || st.End != EndStable {
		t.Fatalf("start = %+v", st)
	}
	want(t, "start", res.Start.Figures, map[string]int64{
		FigTimeToStableMs: 20, FigRebalanceParticipants: 1, FigGroupRequests: 2, FigRebalanceAttempts: 1,
	})
	if !reflect.DeepEqual(res.FinalOwners, map[string]string{"t-0": "m1", "t-1": "m2"}) {
		t.Errorf("final owners = %v", res.FinalOwners)
	}
}

// A window that never becomes stable ends at the next trigger; records at the trigger's millisecond
// before the trigger belong to the earlier window.
func TestFiguresWindowEndsAtNextTrigger(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0).Joined(0, "m2", 1).
		Trigger(1000, "crash-m2").Stop(1000, "m2", "crash").
		ZK(1500, "m1", "read", "/consumers/g/ids", "").ZK(2000, "m1", "read", "/consumers/g/ids", "").
		Trigger(2000, "join-m3").ZK(2000, "m1", "write", "/consumers/g/ids/m3", "").
		Start(2010, "m3").Begin(2010, "m3").Begin(2020, "m1").Revoke(2020, "m1", 0).
		Assign(2100, "m1", 0).End(2100, "m1", true, 1).Assign(2100, "m3", 1).End(2100, "m3", true, 1)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 2)
	a, c := res.Events[0], res.Events[1]
	if a.Trigger != "crash-m2" || a.AtMs != 1000 || a.EndMs != 2000 || a.End != EndNextTrigger {
		t.Fatalf("first event = %+v", a)
	}
	want(t, "crash-m2", a.Figures, map[string]int64{
		FigTimeToStableMs: NeverStable, FigZKReads: 2, FigZKWrites: 0, FigRebalanceParticipants: 0,
	})
	if c.Trigger != "join-m3" || c.AtMs != 2000 || c.EndMs != 2100 || c.End != EndStable {
		t.Fatalf("second event = %+v", c)
	}
	want(t, "join-m3", c.Figures, map[string]int64{
		FigTimeToStableMs: 100, FigZKReads: 0, FigZKWrites: 1, FigRebalanceParticipants: 2, FigRevocations: 1,
		FigRebalanceAttempts: 2,
	})
	want(t, "totals", res.Totals, map[string]int64{FigTimeToStableMs: NeverStable, FigZKReads: 2, FigZKWrites: 1})
}

// A crash (member_stop how=crash) ends the member's ownership and delivery at once; its partition is
// unowned with a backlog until the survivor claims it.
func TestFiguresCrashEndsOwnership(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0).Joined(0, "m2", 1).
		Produce(100, 1, 0).Deliver(110, "m2", 1, 0).
		Trigger(1000, "crash-m2").Stop(1000, "m2", "crash").
		Produce(1200, 1, 1).Produce(1300, 1, 2).
		Watch(3000, "m1", "/consumers/g/ids").Begin(3000, "m1").Revoke(3002, "m1", 0).
		ZK(3005, "m1", "write", "/consumers/g/owners/t/0", "").ZK(3005, "m1", "write", "/consumers/g/owners/t/1", "").
		Assign(3010, "m1", 0, 1).End(3010, "m1", true, 1).
		Deliver(3050, "m1", 1, 1, 2)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	ev := res.Events[0]
	if ev.End != EndStable || ev.EndMs != 3010 {
		t.Fatalf("event = %+v", ev)
	}
	want(t, "crash", ev.Figures, map[string]int64{
		FigTimeToStableMs: 2010, FigUnownedPartitionMs: 3010 - 1200, FigMaxConcurrentOwners: 1,
		FigRevocations: 1, FigZKWrites: 2, FigZKWatchEvents: 1, FigZKReads: 0, FigRebalanceParticipants: 1,
		FigDuplicates: 0, FigLost: 0,
	})
	if !reflect.DeepEqual(res.FinalOwners, map[string]string{"t-0": "m1", "t-1": "m1"}) {
		t.Errorf("final owners = %v", res.FinalOwners)
	}
}

// zk split brain: m1's session is gone but it keeps delivering p0 while m2 owns it; m1's offset commit
// lands (ZooKeeper refuses nothing).
func TestFiguresSplitBrain(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0)
	for o := int64(0); o < 10; o++ {
		b.Produce(10+o, 0, o)
	}
	b.Deliver(20, "m1", 0, 0, 1, 2, 3, 4).
		Trigger(100, "expire-m1").Fault(100, "stall", "m1/zookeeper").
		Start(200, "m2").Begin(200, "m2").ZK(210, "m2", "write", "/consumers/g/owners/t/0", "").
		Assign(210, "m2", 0).End(210, "m2", true, 1).
		Deliver(220, "m2", 0, 3, 4, 5).Deliver(230, "m1", 0, 5, 6).
		Commit(240, "m1", 0, 7, 0, timeline.CommitApplied).Commit(250, "m2", 0, 6, 0, timeline.CommitApplied).
		Fault(300, "heal", "m1/zookeeper").
		Begin(400, "m1").Revoke(400, "m1", 0).Assign(410, "m1").End(410, "m1", true, 1).
		Deliver(420, "m2", 0, 6, 7, 8, 9)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	ev := res.Events[0]
	if ev.End != EndStable || ev.EndMs != 410 {
		t.Fatalf("event = %+v", ev)
	}
	want(t, "expire", ev.Figures, map[string]int64{
		FigTimeToStableMs: 310, FigMaxConcurrentOwners: 2, FigDuplicates: 4, // 3 before stable, 6 after FigStaleCommitsApplied: 1,
		FigConcurrentOwnerMs:    180, // m2 delivers from 220, m1 until its revoke at 400
		FigStaleCommitsRejected: 0, FigUnownedPartitionMs: 0, FigRevocations: 1, FigRebalanceParticipants: 2,
		FigRebalanceAttempts: 2, FigLost: 0,
	})
	want(t, "totals", res.Totals, map[string]int64{
		FigDuplicates: 4, FigLost: 0, FigMaxConcurrentOwners: 2, FigStaleCommitsApplied: 1, FigConcurrentOwnerMs: 180,
	})
	if res.FinalOwners["t-0"] != "m2" {
		t.Errorf("final owner = %q", res.FinalOwners["t-0"])
	}
}

// CO-LATE-COMMIT-REWIND seen by the figures: the removed member's commit with its old generation is a
// stale commit refused; a commit after its own revoke that lands is a stale commit applied; the owner's
// own refused commit is not stale.
func TestFiguresStaleCommits(t *testing.T) {
	b := newTL("classic").Joined(0, "A", 1, 2).
		Produce(1, 1, 0).Produce(1, 2, 0, 1, 2).Deliver(5, "A", 1, 0).Deliver(10, "A", 2, 0, 1).
		Trigger(100, "join-B").Start(100, "B").Begin(100, "B").
		Assign(400, "B", 1, 2).End(400, "B", true, 1).
		Deliver(410, "B", 2, 1, 2).Commit(420, "B", 2, 3, 2, timeline.CommitApplied).
		Commit(450, "B", 1, 1, 2, timeline.CommitRejected).
		Commit(500, "A", 2, 2, 1, timeline.CommitRejected).
		Begin(510, "A").Revoke(510, "A", 1, 2).Assign(600, "A").End(600, "A", true, 1).
		Commit(700, "A", 1, 0, -1, timeline.CommitApplied)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	ev := res.Events[0]
	if ev.End != EndStable || ev.EndMs != 600 {
		t.Fatalf("event = %+v", ev)
	}
	want(t, "join-B", ev.Figures, map[string]int64{
		FigTimeToStableMs: 500, FigStaleCommitsRejected: 1, FigStaleCommitsApplied: 0, FigRevocations: 2,
		FigMaxConcurrentOwners: 2, FigDuplicates: 1, FigLost: 0,
	})
	want(t, "totals", res.Totals, map[string]int64{FigStaleCommitsRejected: 1, FigStaleCommitsApplied: 1})
}

// A commit is judged at the moment it was applied, not at its answer: the split-brain zombie Z's
// coordinator link stalls 1000..6000 ms; B takes Z's partition 0 at 3000. Z's commit sent at 999 (or
// in the millisecond the stall began) went through before the stall and was applied while Z owned
// the partition; only its answer waited for the heal: not stale. Its commit sent at 1500 was held by
// the stall and arrived at the heal, when B owned the partition: stale (refused). A commit without
// sent_ms is judged at its answer as before: stale applied. Dated by their answers (the old rule),
// the first two would count as 2 stale commits applied.
func TestFiguresCommitJudgedWhenApplied(t *testing.T) {
	b := newTL("classic").Joined(0, "Z", 0).Joined(0, "B", 1).
		Produce(1, 0, 0, 1, 2, 3, 4).Produce(1, 1, 0).Deliver(5, "Z", 0, 0, 1, 2).Deliver(5, "B", 1, 0).
		Trigger(1000, "stall").FaultPhase(1000, "stall", "Z/coordinator", timeline.FaultBegin).
		Begin(2900, "B").Revoke(2900, "B", 1).Assign(3000, "B", 0, 1).End(3000, "B", true, 1).
		Deliver(3010, "B", 0, 3, 4).
		FaultPhase(6000, "stall", "Z/coordinator", timeline.FaultEnd).
		Commit(6002, "Z", 0, 3, 1, timeline.CommitApplied).Sent(999, "OffsetCommit").
		Commit(6003, "Z", 0, 3, 1, timeline.CommitApplied).Sent(1000, "OffsetCommit").
		Commit(6004, "Z", 0, 3, 1, timeline.CommitRejected).Sent(1500, "OffsetCommit").
		Commit(6005, "Z", 0, 3, 1, timeline.CommitApplied).
		Begin(6010, "Z").Revoke(6010, "Z", 0).Assign(6100, "Z").End(6100, "Z", true, 1)
	res := computeTL(t, b, FigureOptions{})
	want(t, "totals", res.Totals, map[string]int64{FigStaleCommitsApplied: 1, FigStaleCommitsRejected: 1})

	stalls := stallWindows(b.Recs)
	for i, exp := range map[int]int64{len(b.Recs) - 8: 999, len(b.Recs) - 7: 1000, len(b.Recs) - 6: 6000, len(b.Recs) - 5: 6005} {
		if got := commitAppliedMs(b.Recs[i], "classic", stalls) - base; got != exp {
			t.Errorf("record %d (sent %d, answered %d): applied at %d, want %d", i, b.Recs[i].SentMs-base, b.Recs[i].TsMs-base, got, exp)
		}
	}
	if b.Recs[len(b.Recs)-8].TsMs != base+6002 {
		t.Errorf("Compute changed its input: %+v", b.Recs[len(b.Recs)-8])
	}
}

// zk era: a write of the offsets znode rides on the ZooKeeper link, 0.8.2's OffsetCommit to Kafka on
// the broker connections; only a stall of the carrying link holds a commit.
func TestCommitAppliedMsByLink(t *testing.T) {
	b := newTL("zk").FaultPhase(100, "stall", "Z/zookeeper", timeline.FaultBegin).
		Commit(900, "Z", 0, 1, 0, timeline.CommitApplied).Sent(200, "").
		Commit(901, "Z", 0, 1, 0, timeline.CommitApplied).Sent(200, "OffsetCommit").
		FaultPhase(800, "stall", "Z/zookeeper", timeline.FaultEnd).
		Commit(950, "Z", 0, 1, 0, timeline.CommitApplied).Sent(300, "").
		Commit(960, "Z", 0, 1, 0, timeline.CommitApplied).Sent(970, "")
	stalls := stallWindows(b.Recs)
	for i, exp := range []int64{0, 800, 200, 0, 800, 960} {
		if i == 0 || i == 3 {
			continue // the fault records
		}
		if got := commitAppliedMs(b.Recs[i], "zk", stalls) - base; got != exp {
			t.Errorf("record %d: applied at %d, want %d", i, got, exp)
		}
	}
}

// Duplicates and lost counted exactly; each lost offset in the first window ending at/after its produce.
func TestFiguresDuplicatesAndLost(t *testing.T) {
	b := newTL("classic").Joined(0, "m1", 0, 1).
		Produce(10, 0, 0, 1, 2, 3, 4).Produce(15, 1, 0, 1, 2).
		Deliver(20, "m1", 0, 0, 1, 2).Deliver(30, "m1", 0, 1, 2).
		Deliver(40, "m1", 1, 0).Deliver(41, "m1", 1, 0).
		Deliver(50, "m1", 0, 99). // never produced: neither duplicate nor lost
		Trigger(100, "stop-m1").Stop(100, "m1", "graceful").
		Start(110, "m2").Begin(110, "m2").Assign(120, "m2", 0, 1).End(120, "m2", true, 1).
		Produce(130, 1, 3).Deliver(150, "m2", 1, 0).
		Trigger(200, "nothing").Deliver(250, "m2", 0, 0).GroupRequest(300, "m2", "Heartbeat")
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 2)
	a, c := res.Events[0], res.Events[1]
	want(t, "stop-m1", a.Figures, map[string]int64{
		FigTimeToStableMs: 20, FigDuplicates: 1, FigLost: 4, FigUnownedPartitionMs: 20 + 20,
	})
	if c.End != EndOfRun || c.EndMs != 300 {
		t.Fatalf("undisturbed event = %+v", c)
	}
	want(t, "nothing", c.Figures, map[string]int64{
		FigTimeToStableMs: 0, FigDuplicates: 1, FigLost: 1, FigGroupRequests: 1, FigMaxConcurrentOwners: 1,
	})
	want(t, "totals", res.Totals, map[string]int64{
		FigTimeToStableMs: 20, FigDuplicates: 5, FigLost: 5, FigUnownedPartitionMs: 40,
	})
}

// Give-up rule: the last attempt failed and the rebalance was closed by a new rebalance_begin, a graceful
// stop or the end of the timeline; a crash is not a give-up. Conflicts are zk_op writes result=conflict.
func TestFiguresRebalanceFailuresAndConflicts(t *testing.T) {
	b := newTL("zk").
		Begin(0, "m1").End(10, "m1", false, 1).End(510, "m1", false, 2).End(1010, "m1", false, 3).
		End(1510, "m1", false, 4).Add(1510, "m1", timeline.Error, func(r *timeline.Record) { r.Text = "can't rebalance after 4 retries" }).
		Begin(5000, "m1").End(5010, "m1", true, 1).
		Begin(0, "m2").End(10, "m2", false, 1).End(510, "m2", true, 2).
		Begin(0, "m3").End(10, "m3", false, 1).Stop(20, "m3", "graceful").
		Begin(0, "m4").End(10, "m4", false, 1).Stop(20, "m4", "crash").
		Begin(0, "m5").End(6000, "m5", false, 1).
		ZK(10, "m1", "write", "/consumers/g/owners/t/0", ZKOwnerConflict).
		ZK(10, "m1", "write", "/consumers/g/owners/t/1", ZKOwnerConflict).
		ZK(10, "m1", "write", "/consumers/g/owners/t/2", "").
		ZK(10, "m1", "read", "/consumers/g/owners/t/0", ZKOwnerConflict)
	b.Recs = sortedCopy(b.Recs)
	res := computeTL(t, b, FigureOptions{})
	want(t, "totals", res.Totals, map[string]int64{
		FigRebalanceFailures: 3, FigRebalanceAttempts: 10, FigRebalanceParticipants: 5,
		FigOwnershipConflicts: 2, FigZKWrites: 3, FigZKReads: 1,
	})
}

// Between a failed attempt and the next one the rebalance is still running: stable only at the success.
func TestFiguresBackoffIsNotStable(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0).Joined(0, "m2", 1).
		Trigger(1000, "leave-m2").Stop(1000, "m2", "graceful").
		Begin(1001, "m1").Revoke(1001, "m1", 0).End(1010, "m1", false, 1).
		Assign(1510, "m1", 0, 1).End(1510, "m1", true, 2)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	want(t, "leave", res.Events[0].Figures, map[string]int64{
		FigTimeToStableMs: 510, FigRebalanceAttempts: 2, FigRebalanceFailures: 0, FigRevocations: 1,
	})
}

// Cooperative: assigned lists the full set, revoked only what moves; a repeated revoke counts once;
// kept partitions keep delivering.
func TestFiguresCooperative(t *testing.T) {
	b := newTL("cooperative").Joined(0, "m1", 0, 1, 2, 3).Produce(1, 0, 0).Deliver(5, "m1", 0, 0).
		Trigger(100, "join-m2").Start(101, "m2").Begin(101, "m2").Begin(102, "m1").
		Revoke(103, "m1", 2, 3).Revoke(104, "m1", 3).
		Assign(105, "m1", 0, 1).End(105, "m1", true, 1).Assign(105, "m2").End(106, "m2", true, 1).
		Begin(200, "m1").Begin(200, "m2").
		Assign(210, "m1", 0, 1).End(210, "m1", true, 1).Assign(210, "m2", 2, 3).End(210, "m2", true, 1).
		Produce(220, 0, 1).Deliver(230, "m1", 0, 1)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	want(t, "join-m2", res.Events[0].Figures, map[string]int64{
		FigTimeToStableMs: 110, FigRevocations: 2, FigRebalanceParticipants: 2, FigRebalanceAttempts: 4,
		FigMaxConcurrentOwners: 1, FigUnownedPartitionMs: 0,
	})
	want(t, "totals", res.Totals, map[string]int64{FigMaxConcurrentOwners: 1, FigLost: 0, FigDuplicates: 0})
	if !reflect.DeepEqual(res.FinalOwners, map[string]string{"t-0": "m1", "t-1": "m1", "t-2": "m2", "t-3": "m2"}) {
		t.Errorf("final owners = %v", res.FinalOwners)
	}
}

// Two members delivering one partition count as concurrent only across milliseconds: a hand-over
// inside one millisecond is not an overlap, one that spans a millisecond is.
func TestFiguresConcurrentOwnersResolution(t *testing.T) {
	for _, tc := range []struct {
		revokeAt int64
		want     int64
		wantMs   int64 // concurrent_owner_ms: the overlap's whole milliseconds
	}{{100, 1, 0}, {101, 2, 1}, {140, 2, 40}} {
		b := newTL("classic").Joined(0, "m1", 0).Produce(1, 0, 0, 1).Deliver(10, "m1", 0, 0).
			Assign(100, "m2", 0).Deliver(100, "m2", 0, 1).Revoke(tc.revokeAt, "m1", 0)
		res := computeTL(t, b, FigureOptions{})
		want(t, "handover", res.Totals, map[string]int64{FigMaxConcurrentOwners: tc.want, FigConcurrentOwnerMs: tc.wantMs})
	}
}

// concurrent_owner_ms sums, over partitions, the time two or more members deliver one partition: p0 is
// delivered twice from 250 (m1, m2), three times from 300 (m3 too: still counted once), twice after m1's
// crash at 500 and once after m3's revoke at 600: 350 ms; p1 twice from 400 until the crash: 100 ms.
// The first event ends stable at 500 (the crash leaves one claim each): 250 + 100 ms in it; the second,
// from 550 to the end, holds p0's last 50 ms; the totals hold all 450 ms, the 50 ms between the windows
// too. The formation ends stable at 0, before any delivery.
func TestFiguresConcurrentOwnerMs(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0, 1).Joined(0, "m2")
	for o := int64(0); o < 10; o++ {
		b.Produce(1, 0, o).Produce(1, 1, o)
	}
	b.Deliver(10, "m1", 0, 0, 1).Deliver(10, "m1", 1, 0, 1).
		Trigger(100, "expire-m1").
		Begin(200, "m2").Assign(200, "m2", 0, 1).End(200, "m2", true, 1).
		Deliver(250, "m2", 0, 1, 2).Deliver(300, "m3", 0, 2).Deliver(400, "m2", 1, 1, 2).
		Stop(500, "m1", "crash").
		Trigger(550, "noop").
		Revoke(600, "m3", 0).Deliver(700, "m2", 0, 3)
	res := computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 2)
	if ev := res.Events[0]; ev.End != EndStable || ev.EndMs != 500 {
		t.Fatalf("first event = %+v", ev)
	}
	want(t, "expire-m1", res.Events[0].Figures, map[string]int64{FigConcurrentOwnerMs: 350, FigMaxConcurrentOwners: 3})
	want(t, "noop", res.Events[1].Figures, map[string]int64{FigConcurrentOwnerMs: 50, FigMaxConcurrentOwners: 2})
	want(t, "totals", res.Totals, map[string]int64{FigConcurrentOwnerMs: 450, FigMaxConcurrentOwners: 3})
	if res.Start == nil {
		t.Fatal("no formation window")
	}
	want(t, "start", res.Start.Figures, map[string]int64{FigConcurrentOwnerMs: 0, FigMaxConcurrentOwners: 0})
}

// A started member without an assignment is joining; known partitions must all be owned.
func TestFiguresFormation(t *testing.T) {
	b := newTL("classic").Start(0, "m1").Begin(0, "m1").GroupRequest(5, "m1", "JoinGroup").Assign(10, "m1", 0).End(12, "m1", true, 1).
		GroupRequest(50, "m1", "Heartbeat")
	want(t, "formation", computeTL(t, b, FigureOptions{}).Totals, map[string]int64{FigTimeToStableMs: 12})
	opts := FigureOptions{Partitions: map[string][]int32{"t": {0, 1}}}
	res := computeTL(t, b, opts)
	want(t, "formation+p1", res.Totals, map[string]int64{FigTimeToStableMs: NeverStable})
	if !reflect.DeepEqual(res.FinalOwners, map[string]string{"t-0": "m1", "t-1": ""}) {
		t.Errorf("final owners = %v", res.FinalOwners)
	}
	// A member that starts and never gets an assigned record keeps the group unstable.
	b = newTL("classic").Joined(0, "m1", 0).Trigger(100, "join").Start(100, "m2").GroupRequest(150, "m2", "JoinGroup")
	res = computeTL(t, b, FigureOptions{})
	oneEvent(t, res, 1)
	if ev := res.Events[0]; ev.Figures.TimeToStableMs != NeverStable || ev.End != EndOfRun {
		t.Errorf("joining member: %+v", ev)
	}
}

func TestFiguresNotApplicable(t *testing.T) {
	zkLike := newTL("").ZK(0, "m1", "read", "/x", "").ZK(0, "m1", "write", "/x", ZKOwnerConflict).Watch(0, "m1", "/x").
		GroupRequest(1, "m1", "JoinGroup").Begin(2, "m1").Assign(3, "m1", 0).End(3, "m1", true, 1).Revoke(4, "m1", 0).
		Commit(5, "m1", 0, 0, 1, timeline.CommitRejected).Commit(5, "m1", 0, 0, 1, timeline.CommitApplied)
	for _, tc := range []struct {
		era  string
		na   []string
		want map[string]int64
	}{
		{"zk", []string{"group_requests", "stale_commits_rejected"}, map[string]int64{
			FigZKReads: 1, FigZKWrites: 1, FigZKWatchEvents: 1, FigOwnershipConflicts: 1, FigGroupRequests: 0,
			FigStaleCommitsApplied: 1, FigStaleCommitsRejected: 0}},
		{"classic", []string{"zk_reads", "zk_writes", "zk_offset_writes", "zk_watch_events", "ownership_conflicts"}, map[string]int64{
			FigZKReads: 0, FigZKWrites: 0, FigZKWatchEvents: 0, FigOwnershipConflicts: 0, FigGroupRequests: 1,
			FigStaleCommitsApplied: 1, FigStaleCommitsRejected: 1}},
		{"cooperative", []string{"zk_reads", "zk_writes", "zk_offset_writes", "zk_watch_events", "ownership_conflicts"}, nil},
		{"static", []string{"zk_reads", "zk_writes", "zk_offset_writes", "zk_watch_events", "ownership_conflicts"}, nil},
		{"kip848", []string{"zk_reads", "zk_writes", "zk_offset_writes", "zk_watch_events", "ownership_conflicts"}, nil},
	} {
		res := Compute(zkLike.Recs, tc.era, FigureOptions{})
		if !reflect.DeepEqual(res.NotApplicable, tc.na) || !reflect.DeepEqual(NotApplicable(tc.era), tc.na) {
			t.Errorf("%s: not_applicable = %v, want %v", tc.era, res.NotApplicable, tc.na)
		}
		want(t, tc.era, res.Totals, tc.want)
		if len(res.Warnings) != 0 {
			t.Errorf("%s: warnings %q", tc.era, res.Warnings)
		}
	}
	res := Compute(zkLike.Recs, "zookeeper", FigureOptions{})
	if len(res.NotApplicable) != 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `unknown era "zookeeper"`) {
		t.Errorf("unknown era: na=%v warnings=%q", res.NotApplicable, res.Warnings)
	}
}

// Bad input: skipped and described, never a crash; other eras' records are ignored; order is restored.
func TestFiguresBadInput(t *testing.T) {
	b := newTL("classic").Joined(0, "m1", 0).Produce(5, 0, 0).
		Add(6, "m1", timeline.Deliver, func(r *timeline.Record) { r.Topic = "t" }).                               // no partition
		Add(7, "m1", timeline.Deliver, func(r *timeline.Record) { r.Topic, r.Partition = "t", timeline.I32(0) }). // no offset
		Add(8, "m1", timeline.RebalanceEnd, nil).                                                                 // no ok
		Add(9, "m1", "bogus", nil)
	b.Recs = append(b.Recs, timeline.Record{TsMs: base + 1, Era: "zk", Member: "z", Kind: timeline.ZKOp, Op: "read"})
	b.Recs = append(b.Recs, timeline.Record{TsMs: base + 3, Era: "classic", Member: "m1", Kind: timeline.Deliver,
		Topic: "t", Partition: timeline.I32(0), Offset: timeline.I64(0)})
	res := Compute(b.Recs, "classic", FigureOptions{})
	for _, w := range []string{"1 records of other eras skipped", "not sorted", "no topic/partition",
		"no offset", "no ok field", "unknown kind"} {
		found := false
		for _, got := range res.Warnings {
			found = found || strings.Contains(got, w)
		}
		if !found {
			t.Errorf("no warning containing %q in %q", w, res.Warnings)
		}
	}
	want(t, "bad", res.Totals, map[string]int64{FigZKReads: 0, FigLost: 0, FigRebalanceAttempts: 2})
	if empty := Compute(nil, "zk", FigureOptions{}); len(empty.Events) != 0 || empty.Totals != (Figures{}) ||
		len(empty.Warnings) != 1 || empty.NotApplicable == nil {
		t.Errorf("empty timeline: %+v", empty)
	}
}

// The JSON keys are docs/design.md's names, in its order.
func TestFiguresJSONKeys(t *testing.T) {
	var f Figures
	for i, p := range f.fields() {
		*p = int64(i + 1)
	}
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int64
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != len(FigureNames) {
		t.Fatalf("%d keys, want %d: %s", len(m), len(FigureNames), raw)
	}
	for i, name := range FigureNames {
		if m[name] != int64(i+1) {
			t.Errorf("%s = %d, want %d", name, m[name], i+1)
		}
		if v, _ := f.Get(name); v != int64(i+1) {
			t.Errorf("Get(%s) = %d", name, v)
		}
	}
	if !strings.HasPrefix(string(raw), `{"time_to_stable_ms":1,"rebalance_participants":2,"zk_reads":3`) {
		t.Errorf("order: %s", raw)
	}
}

func sortedCopy(recs []timeline.Record) []timeline.Record {
	out := append([]timeline.Record(nil), recs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].TsMs < out[j].TsMs })
	return out
}

// TestPausedMemberMs: in an eager rebalance every member that was consuming holds nothing until its
// new assignment (the stop-the-world pause); in a cooperative one a member that keeps a partition is
// not paused; a joiner that held nothing is never paused.
func TestPausedMemberMs(t *testing.T) {
	eager := newTL("classic")
	eager.Joined(0, "m1", 0).Joined(0, "m2", 1).Trigger(10, "join").Start(100, "m3").Begin(100, "m3")
	eager.Begin(100, "m1").Revoke(100, "m1", 0).Begin(120, "m2").Revoke(120, "m2", 1)
	eager.Assign(300, "m1", 0).End(300, "m1", true, 1).Assign(350, "m2", 1).End(350, "m2", true, 1)
	eager.Assign(350, "m3").End(350, "m3", true, 1)
	res := computeTL(t, eager, FigureOptions{})
	want(t, "eager", res.Events[0].Figures, map[string]int64{FigPausedMemberMs: (300 - 100) + (350 - 120)})

	coop := newTL("cooperative")
	coop.Joined(0, "m1", 0, 1).Joined(0, "m2", 2).Trigger(10, "join").Start(100, "m3").Begin(100, "m3")
	coop.Begin(100, "m1").Begin(100, "m2")
	coop.Revoke(200, "m1", 1).Assign(200, "m1", 0).End(200, "m1", true, 1) // keeps 0: not paused
	coop.Revoke(200, "m2", 2).Assign(260, "m2", 2).End(260, "m2", true, 1) // gave up all it had: paused 60 ms
	coop.Assign(300, "m3", 1).End(300, "m3", true, 1)
	res = computeTL(t, coop, FigureOptions{})
	want(t, "cooperative", res.Events[0].Figures, map[string]int64{FigPausedMemberMs: 60})
}

// TestFIDStallTimeWindowsFromRecords: the fault windows are read from the fault records' begin and end
// (when the faults really took effect), whatever the script said: a stall of m1's ZooKeeper link and a
// latency of m2's coordinator link that overlap, a cut still in force at the end (open), instants
// (crash, no phase) that are no window, and an end without a begin (warned, no window).
func TestFIDStallTimeWindowsFromRecords(t *testing.T) {
	b := newTL("zk").Joined(0, "m1", 0).
		FaultPhase(100, "stall", "m1/zookeeper", timeline.FaultBegin).
		FaultPhase(150, "latency 300ms", "m2/coordinator", timeline.FaultBegin).
		Fault(200, "crash", "m3").
		FaultPhase(5102, "stall", "m1/zookeeper", timeline.FaultEnd).
		FaultPhase(6150, "latency 300ms", "m2/coordinator", timeline.FaultEnd).
		FaultPhase(7000, "cut", "m1/fetch", timeline.FaultBegin).
		Deliver(8000, "m1", 0, 0)
	res := computeTL(t, b, FigureOptions{})
	want := []FaultWindow{
		{Action: "stall", Target: "m1/zookeeper", StartMs: 100, EndMs: 5102, DurationMs: 5002},
		{Action: "latency 300ms", Target: "m2/coordinator", StartMs: 150, EndMs: 6150, DurationMs: 6000},
		{Action: "cut", Target: "m1/fetch", StartMs: 7000, EndMs: 8000, DurationMs: 1000, Open: true},
	}
	if !reflect.DeepEqual(res.Faults, want) {
		t.Errorf("fault windows\n%+v\nwant\n%+v", res.Faults, want)
	}

	orphan := newTL("zk").Joined(0, "m1", 0).FaultPhase(10, "stall", "m1/zookeeper", timeline.FaultEnd)
	got := Compute(orphan.Recs, "zk", FigureOptions{})
	if len(got.Faults) != 0 || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "ends without a begin") {
		t.Errorf("an end without a begin: windows %+v, warnings %q", got.Faults, got.Warnings)
	}
}

// zk_offset_writes counts the zk_op writes of /consumers/<g>/offsets and below (offset znodes and their
// parents), per window like zk_writes; reads there, and writes elsewhere (owners, ids, a group named
// "offsets"), are not offset writes. For coordinator eras the figure is n/a.
func TestFIDOffsetsStorageFigureZKOffsetWrites(t *testing.T) {
	b := newTL("zk").
		ZK(0, "m1", "write", "/consumers/g/offsets/t/0", "").
		ZK(0, "m1", "write", "/consumers/g/offsets/t", "").
		ZK(0, "m1", "write", "/consumers/g/offsets", "").
		ZK(0, "m1", "read", "/consumers/g/offsets/t/0", "").
		ZK(0, "m1", "write", "/consumers/g/owners/t/0", "").
		ZK(0, "m1", "write", "/consumers/offsets/ids/c", "").
		Trigger(100, "join").
		ZK(150, "m2", "write", "/consumers/g/offsets/t/1", "").
		ZK(150, "m2", "write", "/consumers/g/offsetsx/t/1", "")
	res := computeTL(t, b, FigureOptions{})
	// Before the trigger is the group's formation (Start); the totals begin at the trigger.
	want(t, "start", res.Start.Figures, map[string]int64{FigZKOffsetWrites: 3, FigZKWrites: 5, FigZKReads: 1})
	want(t, "totals", res.Totals, map[string]int64{FigZKOffsetWrites: 1, FigZKWrites: 2, FigZKReads: 0})
	if len(res.Events) != 1 {
		t.Fatalf("%d events, want 1", len(res.Events))
	}
	want(t, "join", res.Events[0].Figures, map[string]int64{FigZKOffsetWrites: 1, FigZKWrites: 2})
	if v, ok := res.Totals.Get(FigZKOffsetWrites); !ok || v != 1 {
		t.Fatalf("Get(zk_offset_writes) = %d, %v", v, ok)
	}
}
