package catalog

import (
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// invariantRelations are the relations every scenario gets on every era: each invariant figure is 0,
// except those the scenario breaks by design on that era (Scenario.ByDesign), which are measured and
// reported, not asserted.
func invariantRelations(sc *Scenario) []Relation {
	var out []Relation
	for _, name := range figures.InvariantNames {
		name := name
		var eras []spec.Era
		for _, era := range spec.Eras() {
			if !sc.breaksByDesign(era, name) {
				eras = append(eras, era)
			}
		}
		if len(eras) == 0 {
			continue
		}
		out = append(out, totalFig(eras, name, eq, 0))
	}
	return out
}

// breaksByDesign: the scenario breaks invariant figure name on era by design.
func (sc *Scenario) breaksByDesign(era spec.Era, name string) bool {
	for _, n := range sc.ByDesign[era] {
		if n == name {
			return true
		}
	}
	return false
}
