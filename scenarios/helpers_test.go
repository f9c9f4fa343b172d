package scenarios

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// The catalogue's small readers of a run (package catalog keeps its own, unexported), as the runner's
// tests read results.

// crashed: the members the script crashes.
func crashedIn(r *RunResult) map[string]bool {
	out := map[string]bool{}
	for _, s := range r.Script {
		if s.Action == spec.ActCrash {
			out[s.Member] = true
		}
	}
	return out
}

// producerCheck is the era's durability check of producer name.
func producerCheck(e *EraRun, name string) (report.ProducerCheck, bool) {
	for _, c := range e.Durability {
		if c.Producer == name {
			return c, true
		}
	}
	return report.ProducerCheck{}, false
}

// fig returns the figure named name; a name that is no figure is an error.
func fig(name string, f figures.Figures) (int64, error) {
	v, ok := f.Get(name)
	if !ok {
		return 0, fmt.Errorf("unknown figure %q", name)
	}
	return v, nil
}

// era returns r's era called name, nil when it has none.
func eraOf(r *RunResult, name string) *EraRun {
	for _, e := range r.Eras {
		if e.Era == name {
			return e
		}
	}
	return nil
}
