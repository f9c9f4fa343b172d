package scenarios

// The run as the runner hands it to the report stage (RunResult.Report), and the methods the CLI, the
// benchmark and the course generator call on a run (res.WriteTable(w), res.WriteJSON(w),
// res.WriteReport(dir), res.Passed()...), each the report's.

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
		Hosts: r.Hosts, Notes: r.Notes, Interrupted: r.Interrupted}
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
func (r *RunResult) Counts() report.RelationCounts { return r.Report().Counts() }

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

// scriptEndTrigger is report.ScriptEndTrigger: the trigger the runner emits when the script is over.
const scriptEndTrigger = report.ScriptEndTrigger
