package scenarios

import (
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// RunResult is one scenario run over one or more eras, as the runner fills it: the report stage's type
// (report.RunResult, whose methods write it: WriteTable, WriteJSON, WriteReport...). A Streams run's
// Streams is a *streams.Result (streams.Of).
type RunResult = report.RunResult

// EraRun is one era of a run (report.EraRun): the same memory the report's writers and the
// catalogue's relations (catalog.CheckRelations) read.
type EraRun = report.EraRun

// checkRelations fills every applicable era's Relations (catalog.CheckRelations).
func checkRelations(r *RunResult, sc *catalog.Scenario) { catalog.CheckRelations(sc, r) }
