package scenarios

// The spec's names as this package has always exported them: a scenario's steps, actions, params and
// timing live in scenarios/spec; these aliases keep the runner, the catalogue and the callers of
// scenarios (cmd, benchmark, docs/gen) unchanged while the pipeline's stages are split out (issue
// #31). New code imports spec.

import "github.com/rebalancelab/rebalancelab/scenarios/spec"

// The spec's script types.
type (
	Action = spec.Action
	Step   = spec.Step
	Timing = spec.Timing
	Params = spec.Params
	// StreamsSpec is spec.Streams: what makes a Scenario a Streams scenario.
	StreamsSpec = spec.Streams
)

// The step actions and broker roles: spec's.
const (
	ActTrigger            = spec.ActTrigger
	ActStart              = spec.ActStart
	ActStop               = spec.ActStop
	ActCrash              = spec.ActCrash
	ActStall              = spec.ActStall
	ActLatency            = spec.ActLatency
	ActCut                = spec.ActCut
	ActHeal               = spec.ActHeal
	ActZKStop             = spec.ActZKStop
	ActZKStart            = spec.ActZKStart
	ActBrokerStop         = spec.ActBrokerStop
	ActBrokerStart        = spec.ActBrokerStart
	ActBrokerKill         = spec.ActBrokerKill
	ActSettle             = spec.ActSettle
	ActHostDown           = spec.ActHostDown
	ActHostUp             = spec.ActHostUp
	ActPartition          = spec.ActPartition
	ActPartitionHeal      = spec.ActPartitionHeal
	ActHostDelay          = spec.ActHostDelay
	ActHostLoss           = spec.ActHostLoss
	ActRemoveThread       = spec.ActRemoveThread
	ActAddThread          = spec.ActAddThread
	BrokerRoleCoordinator = spec.BrokerRoleCoordinator
	BrokerRoleLeader      = spec.BrokerRoleLeader
	BrokerRoleDown        = spec.BrokerRoleDown
)

// LabTiming is spec.LabTiming: the lab's short settings.
func LabTiming() Timing { return spec.LabTiming() }

// KafkaTiming is spec.KafkaTiming: Kafka's own defaults.
func KafkaTiming() Timing { return spec.KafkaTiming() }

// FormatScript is spec.FormatScript: a script as JSON lines, one step per line.
func FormatScript(steps []Step) []byte { return spec.FormatScript(steps) }
