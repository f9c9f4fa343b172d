package scenarios

import (
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/scenarios/streams"
)

// RunResult is one scenario run over one or more eras, as the runner fills it. Its writers (WriteTable,
// WriteJSON, WriteReport...) are the report's (package report), on RunResult.Report.
type RunResult struct {
	Scenario      string
	Description   string
	Seed          int64
	Params        spec.Params
	Timing        spec.Timing
	KafkaDefaults bool
	ZKConfig      map[string]string // Options.ZKConfig: the zk members' extra 0.8.2 properties
	Broker        string            // the broker implementation: "rebalancelab" or "kafka" (lab.Broker*), or BrokerExternal
	Cluster       string            // BrokerExternal: the cluster's bootstrap addresses
	MembersAs     string            // MembersAsGoroutines or MembersAsProcesses
	Members       string            // whose consumers: MembersRebalancelab, MembersKafka or MembersMixed
	RunID         string            // the run's id (an existing cluster's names carry it)
	Versions      map[string]string // "rebalancelab", "zookeeper", and "kafka" on a Kafka broker
	Script        []spec.Step
	Eras          []*EraRun
	// Hosts: the test hosts of a run with Params.Hosts (hosts.go), with each one's clock offset as
	// measured at the start; HostCapabilities what the kernel offered (netem or not).
	Hosts            []report.HostInfo
	HostCapabilities *lab.Capabilities
	Notes            []string // what the run did differently from what was asked, and why
	// Interrupted: the run was cancelled before it ended (report.RunResult.Interrupted).
	Interrupted bool
	// Streams is what a Streams scenario measured (Scenario.Streams); nil for the consumer eras'.
	Streams *streams.Result
}

// EraRun is one era of a run (report.EraRun): RunResult.Report hands the same memory to the report
// and to the catalogue's relations (catalog.CheckRelations).
type EraRun = report.EraRun

// checkRelations fills every applicable era's Relations (catalog.CheckRelations on r.Report(), whose
// eras are r's).
func (r *RunResult) checkRelations(sc *catalog.Scenario) { catalog.CheckRelations(sc, r.Report()) }
