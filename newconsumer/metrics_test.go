package newconsumer

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestRebalanceCountsFromRecords: rebalance-total counts ok rebalance_end records, failed-rebalance-total
// the others, rebalances started the rebalance_begin records, exactly as the timeline figures read them.
func TestRebalanceCountsFromRecords(t *testing.T) {
	var rc rebalanceCounts
	for _, r := range []timeline.Record{
		{Kind: timeline.RebalanceBegin},
		{Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: 1},
		{Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: 2},
		{Kind: timeline.Assigned},
		{Kind: timeline.RebalanceBegin},
		{Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: 1},
	} {
		rc.note(r)
	}
	if b, ok, f := rc.begun.Load(), rc.ok.Load(), rc.failed.Load(); b != 2 || ok != 2 || f != 1 {
		t.Fatalf("begun %d ok %d failed %d; want 2, 2, 1", b, ok, f)
	}
}
