package zkconsumer

import (
	"math"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestRebalanceTimerFromRecords: RebalanceRateAndTime counts syncedRebalance calls (rebalance_begin)
// and times each until an attempt succeeds; attempts and failed attempts are rebalance_end records.
// A rebalance retried once (failed at 1.1 s, ok at 1.6 s after its begin at 1.0 s) adds 0.6 s; one
// given up after its only attempt adds no time.
func TestRebalanceTimerFromRecords(t *testing.T) {
	var rt rebalanceTimer
	for _, r := range []timeline.Record{
		{TsMs: 1000, Kind: timeline.RebalanceBegin},
		{TsMs: 1100, Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: 1},
		{TsMs: 1600, Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: 2},
		{TsMs: 1700, Kind: timeline.Deliver},
		{TsMs: 2000, Kind: timeline.RebalanceBegin},
		{TsMs: 2100, Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: 1},
	} {
		rt.note(r)
	}
	if rt.count != 2 || rt.attempts != 3 || rt.fail != 2 || math.Abs(rt.seconds-0.6) > 1e-9 {
		t.Fatalf("count %d attempts %d failed %d seconds %v; want 2, 3, 2, 0.6", rt.count, rt.attempts, rt.fail, rt.seconds)
	}
}
