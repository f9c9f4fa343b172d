package report

// The report's tests draw traces of hand-written timelines (timeline/timelinetest).

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
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
func computeTL(t *testing.T, b *tlb, opts figures.FigureOptions) figures.Result {
	t.Helper()
	res := figures.Compute(b.Recs, b.Era, opts)
	if len(res.Warnings) != 0 {
		t.Fatalf("unexpected warnings: %q", res.Warnings)
	}
	return res
}
