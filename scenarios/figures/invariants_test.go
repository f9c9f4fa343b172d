package figures

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestInvariantsEachBrokenOnce feeds hand-written timelines that each break one of Kafka's consumer
// invariants exactly once and checks that its figure is 1 and every other invariant figure 0, in the
// totals and in the event window where it happened.
func TestInvariantsEachBrokenOnce(t *testing.T) {
	cases := []struct {
		name  string
		era   string
		build func(b *tlb)
	}{
		{FigInvConsumedNotMember, "zk", func(b *tlb) {
			// The zk member keeps delivering after its session expired (its ids znode is gone).
			b.Joined(0, "m1", 0).Produce(1, 0, 0, 1).Trigger(2, "x").Deliver(3, "m1", 0, 0)
			b.Add(4, "m1", timeline.SessionExpired, nil).Deliver(5, "m1", 0, 1)
		}},
		{FigInvConsumedUnowned, "classic", func(b *tlb) {
			// m2's generation owns p0; m1 (a zombie that has not learnt it) delivers it.
			b.Joined(0, "m1", 0).Produce(1, 0, 0).Trigger(2, "x").Joined(3, "m2", 0).Deliver(4, "m1", 0, 0)
		}},
		{FigInvOffsetsNotContiguous, "classic", func(b *tlb) {
			b.Joined(0, "m1", 0).Produce(1, 0, 0, 1, 2, 3).Trigger(2, "x").Deliver(3, "m1", 0, 0, 2).Deliver(4, "m1", 0, 3)
		}},
		{FigInvCommitAheadOfPosition, "cooperative", func(b *tlb) {
			b.Joined(0, "m1", 0).Produce(1, 0, 0, 1).Trigger(2, "x").Deliver(3, "m1", 0, 0, 1).
				Commit(4, "m1", 0, 2, 1, timeline.CommitApplied).Commit(5, "m1", 0, 5, 1, timeline.CommitApplied)
		}},
		{FigInvConsumedBehindCommitted, "zk", func(b *tlb) {
			// m1 commits 3 and hands p0 over; m2 starts from 2, behind the commit.
			b.Joined(0, "m1", 0).Produce(1, 0, 0, 1, 2).Trigger(2, "x").Deliver(3, "m1", 0, 0, 1, 2).
				Commit(4, "m1", 0, 3, 1, timeline.CommitApplied).Revoke(5, "m1", 0).Joined(6, "m2", 0).Deliver(7, "m2", 0, 2)
		}},
		{FigInvRevokedUnowned, "cooperative", func(b *tlb) {
			b.Joined(0, "m1", 0).Trigger(2, "x").Revoke(3, "m1", 0, 1).Assign(4, "m1")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTL(tc.era)
			tc.build(b)
			res := computeTL(t, b, FigureOptions{})
			if len(res.Events) != 1 {
				t.Fatalf("events: %d, want 1", len(res.Events))
			}
			exp := map[string]int64{}
			for _, name := range InvariantNames {
				exp[name] = 0
			}
			exp[tc.name] = 1
			want(t, "totals", res.Totals, exp)
			want(t, "event", res.Events[0].Figures, exp)
		})
	}
}

// TestInvariantsHoldOnACleanHandover: an eager handover with a commit before the revoke, the new owner
// resuming at the committed offset and committing its own position, and a cooperative move of one
// partition while another is kept: no invariant figure moves.
func TestInvariantsHoldOnACleanHandover(t *testing.T) {
	b := newTL("cooperative")
	b.Joined(0, "m1", 0, 1).Produce(1, 0, 0, 1, 2, 3).Produce(1, 1, 0, 1).Trigger(2, "join")
	b.Deliver(3, "m1", 0, 0, 1).Deliver(3, "m1", 1, 0)
	b.Commit(4, "m1", 0, 2, 1, timeline.CommitApplied).Commit(4, "m1", 1, 1, 1, timeline.CommitApplied)
	b.Start(5, "m2").Begin(5, "m2").Begin(5, "m1")
	b.Revoke(6, "m1", 1).Assign(6, "m1", 0).End(6, "m1", true, 1)
	b.Deliver(7, "m1", 0, 2) // p0 kept: the same assignment goes on at 2
	b.Assign(8, "m2", 1).End(8, "m2", true, 1)
	b.Commit(9, "m2", 1, 1, 2, timeline.CommitApplied) // its position before any delivery: the commit
	b.Deliver(10, "m2", 1, 1).Commit(11, "m2", 1, 2, 2, timeline.CommitApplied).Deliver(12, "m1", 0, 3)
	res := computeTL(t, b, FigureOptions{})
	exp := map[string]int64{}
	for _, name := range InvariantNames {
		exp[name] = 0
	}
	want(t, "totals", res.Totals, exp)
	want(t, "totals", res.Totals, map[string]int64{FigDuplicates: 0, FigLost: 0, FigRevocations: 1})
}

// TestInvariantCommitBeforeDelivery: a new owner may commit the position it was handed before it
// delivers anything (Kafka's commitSync() commits every owned position; the 0.8 connector commits its
// fetched offset): it is checked against the group's position, which a commit the timeline missed (a
// crashed member's last one) cannot push below what was consumed.
func TestInvariantCommitBeforeDelivery(t *testing.T) {
	b := newTL("zk")
	b.Joined(0, "m1", 0).Produce(1, 0, 0, 1, 2, 3).Trigger(2, "crash")
	b.Deliver(3, "m1", 0, 0, 1).Commit(3, "m1", 0, 1, 1, timeline.CommitApplied).Stop(4, "m1", "crash")
	// m1's commit of 2 reached ZooKeeper but not the timeline; m2 starts at 2 and commits it.
	b.Joined(5, "m2", 0).Commit(6, "m2", 0, 2, 1, timeline.CommitApplied).Deliver(7, "m2", 0, 2, 3)
	b.Commit(8, "m2", 0, 4, 1, timeline.CommitApplied)
	res := computeTL(t, b, FigureOptions{})
	want(t, "totals", res.Totals, map[string]int64{FigInvCommitAheadOfPosition: 0})
	// Ahead of anything anyone consumed is a violation.
	b.Commit(9, "m2", 0, 9, 1, timeline.CommitApplied)
	res = computeTL(t, b, FigureOptions{})
	want(t, "totals", res.Totals, map[string]int64{FigInvCommitAheadOfPosition: 1})
}
