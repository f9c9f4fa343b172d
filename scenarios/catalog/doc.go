// Package catalog is the scenarios' catalogue and the checking of their relations on a run's result
// (issue #31: the catalogue out of the scenario loop).
//
// In: the scenario files embedded from this directory (*.yaml, decoded by spec.DecodeFile against
// FileVocabulary), the one scenario built in Go (split-brain-divergent-views), the scenarios and
// relations other packages add from their init (Register, RegisterRelation: the Streams scenario,
// whose result this package cannot read), a --script file (LoadScenarioFile), and after a run its
// result (report.RunResult, with each era's timeline, figures and extra counters).
//
// Out: Catalog, Lookup and Scenario (what to run: params and their bounds, ParamsFor; the script,
// ScriptFor; the relations as data, spec.Relation), and CheckRelations, which fills each era's
// report.RelationResult: the scenario's relations, Kafka's consumer invariants (their figures are 0
// except where the scenario breaks them by design) and the fault relation (every scripted fault left
// its record). The relations registered in Go (NamedRelations) and the extra counter sets a file may
// name read an era's records through the timeline helpers of eras.go.
//
// It imports spec, figures, report, timeline and lab (for the bound on test hosts), never the scenario
// loop (package scenarios), which imports it.
package catalog
