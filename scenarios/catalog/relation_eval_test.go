package catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/timeline/timelinetest"
)

// TestCatalogRelationsAsData: every relation of the built-in catalogue is data, validates, and names a
// known figure or a registered relation. (The Streams scenario joins the catalogue from package
// scenarios, Register: TestCatalogueWithStreams there counts it.)
func TestCatalogRelationsAsData(t *testing.T) {
	data := 0
	for _, sc := range Catalog() {
		for _, rel := range append(append([]Relation(nil), sc.Relations...), invariantRelations(sc)...) {
			if rel.Spec == nil {
				t.Errorf("%s: %q is no data", sc.Name, rel.Text)
				continue
			}
			data++
			if err := rel.Spec.Validate(); err != nil {
				t.Errorf("%s: %v", sc.Name, err)
			}
			if f := rel.Spec.Figure; f != "" && !slices.Contains(figures.FigureNames, f) {
				t.Errorf("%s: %q: no figure %q", sc.Name, rel.Text, f)
			}
			if n := rel.Spec.Named; n != "" && namedRelations[n] == nil {
				t.Errorf("%s: %q: no registered relation %q", sc.Name, rel.Text, n)
			}
			if rel.Text != rel.Spec.Describe() {
				t.Errorf("%s: text %q, data describes %q", sc.Name, rel.Text, rel.Spec.Describe())
			}
		}
	}
	if data != 229 {
		t.Errorf("%d relations as data, want the built-in catalogue's 229 (each scenario's with its invariant relations)", data)
	}
}

// TestEvalRelation: a comparison reads its subject with the run's N and P; what is missing fails
// with what is missing; an unregistered name fails naming the registered ones.
func TestEvalRelation(t *testing.T) {
	era := &eraRun{Era: "classic", Topic: "t", Extra: map[string]int64{"rebalances_of_the_others": 0},
		EndOwners: map[string]string{"t-0": "m1", "t-1": "m2"},
		Result:    figures.Result{Totals: figures.Figures{Lost: 0}, Events: []figures.Event{{Trigger: "join", Figures: figures.Figures{GroupRequests: 7}}}}}
	x := checkCtx{era: era, p: Params{Consumers: 2, Partitions: 2}}
	if names := NamedRelations(); len(names) != 24 || !slices.Contains(names, relOwnedOnce) || !slices.Contains(names, relFaultsTookEffect) {
		t.Errorf("registered relations %v: want the catalogue's 24 with owned-once and faults-took-effect", names)
	}
	for _, c := range []struct {
		r    spec.Relation
		ok   bool
		want string
	}{
		{spec.Relation{Event: "join", Figure: figures.FigGroupRequests, Cmp: spec.Ge, Value: "2(N+1)"}, true, "7 (want >= 6)"},
		{spec.Relation{Event: "join", Figure: figures.FigGroupRequests, Cmp: spec.Ge, Value: "4N"}, false, "7 (want >= 8)"},
		{spec.Relation{Figure: figures.FigLost, Cmp: spec.Eq, Value: "0"}, true, "0"},
		{spec.Relation{Extra: "rebalances_of_the_others", Cmp: spec.Eq, Value: "0"}, true, "rebalances_of_the_others = 0"},
		{spec.Relation{Extra: "revocations_of_m1", Cmp: spec.Eq, Value: "0"}, false, "no revocations_of_m1"},
		{spec.Relation{Event: "leave", Figure: figures.FigLost, Cmp: spec.Eq, Value: "0"}, false, "no leave event"},
		{spec.Relation{Named: relOwnedOnce}, true, "owners m1:1 m2:1"},
		{spec.Relation{Named: "owned-twice"}, false, `no relation named "owned-twice" (registered: ` + strings.Join(NamedRelations(), ", ") + ")"},
	} {
		ok, got, skip := evalRelation(c.r, x)
		if ok != c.ok || got != c.want || skip {
			t.Errorf("%s: ok=%v got=%q skip=%v, want ok=%v %q", c.r.Describe(), ok, got, skip, c.ok, c.want)
		}
	}
}

// TestPerPartitionRelation: the registered per-partition relation compares quantities of each
// partition's end (Kafka's consumer-bounce checks): t-0 delivered 0..2 then 1 again after a hard
// bounce (position 2, consumed 4), committed 2; t-1 delivered 0..1, committed 2.
func TestPerPartitionRelation(t *testing.T) {
	b := timelinetest.New("classic")
	b.Deliver(1, "m1", 0, 0, 1, 2).Deliver(2, "m2", 0, 1).Commit(3, "m2", 0, 2, 1, timeline.CommitApplied)
	b.Deliver(4, "m1", 1, 0, 1).Commit(5, "m1", 1, 2, 1, timeline.CommitApplied)
	x := checkCtx{era: &eraRun{Era: "classic", Records: b.Recs}}
	for _, c := range []struct {
		a    string
		cmp  cmp
		b    string
		ok   bool
		want string
	}{
		{endPosition, eq, endConsumed, false, "t-0: 2 == 4; t-1: 2 == 2"},
		{endPosition, le, endConsumed, true, "t-0: 2 <= 4; t-1: 2 <= 2"},
		{endLastCommit, eq, endPosition, true, "t-0: 2 == 2; t-1: 2 == 2"},
		{"offset", eq, endPosition, false, `unknown quantity "offset" (want position, consumed or last_commit)`},
	} {
		ok, got, _ := perPartitionRel("r", c.a, c.cmp, c.b).evaluate(x)
		if ok != c.ok || got != c.want {
			t.Errorf("%s %s %s: ok=%v %q, want ok=%v %q", c.a, c.cmp, c.b, ok, got, c.ok, c.want)
		}
	}
	if ok, got, _ := perPartitionRel("r", endPosition, eq, endConsumed).evaluate(checkCtx{era: &eraRun{}}); ok || got != "nothing consumed" {
		t.Errorf("no deliveries: ok=%v %q", ok, got)
	}
}
