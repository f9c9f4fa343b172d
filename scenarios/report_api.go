package scenarios

// The report (package report) as the runner hands a run to it, and thin wrappers that keep the
// method-style calls of the CLI, the benchmark and the course generator working
// (res.WriteTable(w), res.WriteJSON(w), res.WriteReport(dir), res.Passed()...). The type and function
// aliases below are temporary, as figures_api.go's and spec_api.go's: the callers import package report.

import (
	"io"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// Report is the run as the report reads it: the same eras (a conversion of each *EraRun: the writers'
// changes, such as an era's timeline file name, are the run's too), the host capabilities and the
// Streams output converted.
func (r *RunResult) Report() *report.RunResult {
	out := &report.RunResult{Scenario: r.Scenario, Description: r.Description, Seed: r.Seed, Params: r.Params,
		Timing: r.Timing, KafkaDefaults: r.KafkaDefaults, ZKConfig: r.ZKConfig, Broker: r.Broker, Cluster: r.Cluster,
		MembersAs: r.MembersAs, Members: r.Members, RunID: r.RunID, Versions: r.Versions, Script: r.Script,
		Hosts: r.Hosts, Notes: r.Notes}
	for _, e := range r.Eras {
		out.Eras = append(out.Eras, (*report.EraRun)(e))
	}
	if c := r.HostCapabilities; c != nil {
		hc := report.HostCapabilities(*c)
		out.HostCapabilities = &hc
	}
	if r.Streams != nil {
		out.Streams = r.Streams
	}
	return out
}

// Passed is report.RunResult.Passed.
func (r *RunResult) Passed() bool { return r.Report().Passed() }

// Failures is report.RunResult.Failures.
func (r *RunResult) Failures() []string { return r.Report().Failures() }

// Counts is report.RunResult.Counts.
func (r *RunResult) Counts() RelationCounts { return r.Report().Counts() }

// Verdict is report.RunResult.Verdict.
func (r *RunResult) Verdict() string { return r.Report().Verdict() }

// ParamsMap is report.RunResult.ParamsMap.
func (r *RunResult) ParamsMap() map[string]any { return r.Report().ParamsMap() }

// WriteJSON is report.RunResult.WriteJSON.
func (r *RunResult) WriteJSON(w io.Writer) error { return r.Report().WriteJSON(w) }

// WriteTable is report.RunResult.WriteTable.
func (r *RunResult) WriteTable(w io.Writer) error { return r.Report().WriteTable(w) }

// WriteReport is report.RunResult.WriteReport.
func (r *RunResult) WriteReport(dir string) error { return r.Report().WriteReport(dir) }

// RenderBrokerComparison is report.RenderBrokerComparison of the runs' reports.
func RenderBrokerComparison(w io.Writer, runs ...*RunResult) error {
	rs := make([]*report.RunResult, len(runs))
	for i, r := range runs {
		rs[i] = r.Report()
	}
	return report.RenderBrokerComparison(w, rs...)
}

// Temporary aliases of the report's names (see above).
type (
	HostInfo       = report.HostInfo
	ProducerCheck  = report.ProducerCheck
	ZKCrosscheck   = report.ZKCrosscheck
	ZKCounters     = report.ZKCounters
	MemberProcess  = report.MemberProcess
	RelationCounts = report.RelationCounts
	SplitBrain     = report.SplitBrain
	Report         = report.Report
	EraReport      = report.EraReport
	Plot           = report.Plot
	SweepSize      = report.SweepSize
	SweepResult    = report.SweepResult
	ModelCell      = report.ModelCell
	ZKReadsFit     = report.ZKReadsFit
)

// SweepPlotFile is report.SweepPlotFile.
const SweepPlotFile = report.SweepPlotFile

// scriptEndTrigger is report.ScriptEndTrigger: the trigger the runner emits when the script is over.
const scriptEndTrigger = report.ScriptEndTrigger

// Temporary function aliases of the report's (see above).
var (
	SplitBrains = report.SplitBrains
	TimingName  = report.TimingName
	RenderHTML  = report.RenderHTML
	RenderTable = report.RenderTable
	EraColour   = report.EraColour
)
