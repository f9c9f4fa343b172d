package catalog

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// RunRelation is a relation registered in Go from outside the catalogue (RegisterRelation), for a
// result this package cannot read itself (a Streams run's report.RunResult.Streams): it checks run,
// sized by p, with the relation's Args; ok, what it found, and skip when it could not be checked.
type RunRelation func(run *report.RunResult, p Params, args map[string]string) (ok bool, got string, skip bool)

// registered are the scenarios added to the catalogue by the packages that run them (Register).
var registered struct{ scenarios []func() *Scenario }

// Register appends the scenario mk makes to Catalog (after the built-in ones, in the order of the
// calls). It is called from a package's init, before any Catalog or Lookup.
func Register(mk func() *Scenario) { registered.scenarios = append(registered.scenarios, mk) }

// RegisterRelation registers fn as the relation called name (a spec.Relation's Named; listed by
// NamedRelations). It is called from a package's init; a name already registered panics.
func RegisterRelation(name string, fn RunRelation) {
	if _, dup := namedRelations[name]; dup {
		panic(fmt.Sprintf("catalog: relation %q registered twice", name))
	}
	namedRelations[name] = func(x checkCtx, args map[string]string) (bool, string, bool) { return fn(x.run, x.p, args) }
}

// NamedRel is the catalogue's Relation naming the registered relation name with args, reported as
// text, on eras (nil: every era), compared across eras when crossEra.
func NamedRel(eras []spec.Era, crossEra bool, text, name string, args map[string]string) Relation {
	return namedRel(eras, crossEra, text, name, args)
}
