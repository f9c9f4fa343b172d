package catalog

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestInvariantRelations: every scenario asserts each invariant at 0 on every era, except what it
// lists in ByDesign, and a violation fails the relation.
func TestInvariantRelations(t *testing.T) {
	sc := &Scenario{ByDesign: map[spec.Era][]string{spec.ZK: {figures.FigInvConsumedUnowned}}}
	rels := invariantRelations(sc)
	if len(rels) != len(figures.InvariantNames) {
		t.Fatalf("relations: %d, want %d", len(rels), len(figures.InvariantNames))
	}
	for _, r := range rels {
		byDesign := r.Text == figures.FigInvConsumedUnowned+" == 0"
		if got := r.appliesTo("zk"); got == byDesign {
			t.Errorf("%q applies to zk: %v", r.Text, got)
		}
		if !r.appliesTo("classic") {
			t.Errorf("%q does not apply to classic", r.Text)
		}
	}
	bad := &eraRun{Era: "classic", Result: figures.Result{Totals: figures.Figures{InvConsumedUnowned: 3}}}
	for _, r := range rels {
		ok, got, _ := r.evaluate(checkCtx{era: bad})
		if want := r.Text != figures.FigInvConsumedUnowned+" == 0"; ok != want {
			t.Errorf("%q on a run with 3 unowned deliveries: ok=%v (%s), want %v", r.Text, ok, got, want)
		}
	}
}
