package catalog

import (
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// The spec's script types, as a Scenario's fields and methods take them.
type (
	Step   = spec.Step
	Params = spec.Params
	Timing = spec.Timing
)
