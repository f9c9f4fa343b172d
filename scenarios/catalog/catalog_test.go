package catalog

import (
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
)

// TestRelationOnUnknownFigureFails: a relation that names no figure (a misspelling) fails with the
// name in its text; it never reads a 0 that could make "== 0" hold.
func TestRelationOnUnknownFigureFails(t *testing.T) {
	era := &eraRun{Era: "classic", Result: figures.Result{
		Totals: figures.Figures{StaleCommitsApplied: 0},
		Events: []figures.Event{{Trigger: "join"}},
	}}
	x := checkCtx{era: era}
	for _, r := range []Relation{
		totalFig(nil, "stale_commit_applied", eq, 0),
		eventFig(nil, "join", "rebalance_participant", eq, "0"),
	} {
		ok, got, skip := r.evaluate(x)
		if ok || skip {
			t.Errorf("%s: ok=%v skip=%v, want a failure", r.Text, ok, skip)
		}
		if !strings.Contains(got, "unknown figure") {
			t.Errorf("%s: got %q, want it to name the unknown figure", r.Text, got)
		}
	}
	// The same relations on real names hold.
	for _, r := range []Relation{
		totalFig(nil, figures.FigStaleCommitsApplied, eq, 0),
		eventFig(nil, "join", figures.FigRebalanceParticipants, eq, "0"),
	} {
		if ok, got, _ := r.evaluate(x); !ok {
			t.Errorf("%s: failed with %q", r.Text, got)
		}
	}
}

// TestSmallSizes: every scenario carries the small size its test and `make kafka-scenarios` run it at,
// and that size is one its params accept.
func TestSmallSizes(t *testing.T) {
	for _, sc := range Catalog() {
		if sc.Small.Consumers == 0 || sc.Small.Partitions == 0 {
			t.Errorf("%s: no small size (Small %+v)", sc.Name, sc.Small)
			continue
		}
		if _, err := sc.ParamsFor(sc.Small); err != nil {
			t.Errorf("%s: small size %+v: %v", sc.Name, sc.Small, err)
		}
	}
}
