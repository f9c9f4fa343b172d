package catalog

// The relations' evaluator: a scenario's relations as data (spec.Relation: a comparison of a figure
// of an event or of the totals, or of an extra counter, with an expression of the run; or a
// relation registered here by name) checked on one era of a run.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// namedRelation checks a relation registered in Go on x, with its data's Args: ok, what it found,
// and skip when it could not be checked.
type namedRelation func(x checkCtx, args map[string]string) (ok bool, got string, skip bool)

// The relations registered in Go, by the name a spec.Relation's Named gives.
const (
	// relOwnedOnce: every partition ends owned by exactly one live member (EraRun.EndOwners).
	relOwnedOnce = "owned-once"
)

// namedRelations is the registry of relations a comparison cannot say.
var namedRelations = map[string]namedRelation{
	relOwnedOnce:                      checkOwnedOnce,
	relCrashedOwnNothing:              checkCrashedOwnNothing,
	relCrashNoticedAfterSession:       checkCrashNoticedAfterSession,
	relRestartRebalancesTwice:         checkRestartRebalancesTwice,
	relRestartRevocationsBelowClassic: checkRestartRevocationsBelowClassic,
	relRestartOthersPause:             checkRestartOthersPause,
	relStaticRestartNoPause:           checkStaticRestartNoPause,
	relNoRebalanceThroughOutage:       checkNoRebalanceThroughOutage,
	relWindowEndsStable:               checkWindowEndsStable,
	relDeliversAgainBeforeReturn:      checkDeliversAgainBeforeReturn,
	relCoordinatorFoundAgain:          checkCoordinatorFoundAgain,
	relStableAfterFailover:            checkStableAfterFailover,
	relDuplicatesBoundedByUncommitted: checkDuplicatesBoundedByUncommitted,
	relSurvivorsOwnAll:                checkSurvivorsOwnAll,
	relSurvivorsRangeOwners:           checkSurvivorsRangeOwners,
	relDownedLoseTheirPartitions:      checkDownedLoseTheirPartitions,
	relBreaksAreTheDowned:             checkBreaksAreTheDowned,
	relSlowHostWindows:                checkSlowHostWindows,
	relCrashStableWithinTwoSessions:   checkCrashStableWithinTwoSessions,
	relFaultsTookEffect:               checkFaultsTookEffect,
	relPerPartition:                   checkPerPartition,
	relProducerKeptAcknowledged:       onProducer(producerKeptAcknowledged),
	relProducerCarriedOn:              onProducer(producerCarriedOn),
	relProducerLostOnlyWhereDownLed:   onProducer(producerLostOnlyWhereDownLed),
}

// NamedRelations lists the names of the relations registered in Go, sorted (a scenario file's
// "named" takes one of them).
func NamedRelations() []string {
	out := make([]string, 0, len(namedRelations))
	for n := range namedRelations {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// dataRelation is the catalogue's Relation of r: its eras, its text (r.Describe()), the figure it
// reads (a figure the era did not measure skips it).
func dataRelation(r spec.Relation) Relation {
	return Relation{Eras: r.Eras, Text: r.Describe(), CrossEra: r.CrossEra, Fig: r.Figure, Spec: &r}
}

// evaluate checks rel on x: its data through the vocabulary (evalRelation); a relation without data
// fails saying so.
func (rel Relation) evaluate(x checkCtx) (ok bool, got string, skip bool) {
	if rel.Spec == nil {
		return false, "relation without data (spec.Relation)", false
	}
	return evalRelation(*rel.Spec, x)
}

// evalRelation checks r on x. A comparison reads its subject — the figure of the first event whose
// trigger is r.Event, of the totals, or the extra counter r.Extra — and compares it with r.Value of
// the run's N (consumers), P (partitions) and H (test hosts); got says the subject's value ("<v> (want
// <cmp> <w>)" for an event's figure, "<v>" for the totals', "<key> = <v>" for an extra counter). A
// missing event, extra counter or unknown figure fails the relation with what is missing: never a 0
// that could let it hold. A Named relation runs the registered check.
func evalRelation(r spec.Relation, x checkCtx) (bool, string, bool) {
	if r.Named != "" {
		fn, ok := namedRelations[r.Named]
		if !ok {
			return false, fmt.Sprintf("no relation named %q (registered: %s)", r.Named, strings.Join(NamedRelations(), ", ")), false
		}
		return fn(x, r.Args)
	}
	want, err := r.Value.Eval(spec.Vars{N: int64(x.p.Consumers), P: int64(x.p.Partitions), H: int64(x.p.Hosts)})
	if err != nil {
		return false, err.Error(), false
	}
	switch {
	case r.Extra != "":
		got, ok := x.era.Extra[r.Extra]
		if !ok {
			return false, "no " + r.Extra, false
		}
		return r.Cmp.Holds(got, want), fmt.Sprintf("%s = %d", r.Extra, got), false
	case r.Event != "":
		ev, ok := x.era.eventNamed(r.Event)
		if !ok {
			return false, "no " + r.Event + " event", false
		}
		got, err := fig(r.Figure, ev.Figures)
		if err != nil {
			return false, err.Error(), false
		}
		return r.Cmp.Holds(got, want), fmt.Sprintf("%d (want %s %d)", got, r.Cmp, want), false
	}
	got, err := fig(r.Figure, x.era.Result.Totals)
	if err != nil {
		return false, err.Error(), false
	}
	return r.Cmp.Holds(got, want), fmt.Sprintf("%d", got), false
}

// checkOwnedOnce: every partition of the era's topic ends owned by exactly one live member.
func checkOwnedOnce(x checkCtx, _ map[string]string) (bool, string, bool) {
	var bad []string
	owners := map[string]int{}
	for p := 0; p < x.p.Partitions; p++ {
		key := fmt.Sprintf("%s-%d", x.era.Topic, p)
		o := x.era.EndOwners[key]
		if o == "" || strings.Contains(o, ",") {
			bad = append(bad, fmt.Sprintf("%s=%q", key, o))
			continue
		}
		owners[o]++
	}
	if len(bad) > 0 {
		return false, "not owned once: " + strings.Join(bad, " "), false
	}
	return true, fmt.Sprintf("owners %s", formatCounts(owners)), false
}
