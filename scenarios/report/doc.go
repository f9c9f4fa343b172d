// Package report is the report stage of a scenario run (issue #31's pipeline spec → environment →
// members → timeline → figures → report): what a run measured, written as a table, JSON, an HTML page
// and SVG plots.
//
// In: a RunResult, which the runner (package scenarios) fills (scenarios.RunResult is this type): the run's spec
// (scenario, seed, Params, Timing, script), per era an EraRun (its merged timeline, the figures'
// Result, the relations as checked, errors, end owners, side producers, the ZooKeeper cross-check,
// member processes), the test hosts; a Streams run carries its own output (StreamsOutput). For a
// sweep, a SweepResult: the runs of each size N. Out: RunResult.WriteTable (the side-by-side figure
// table, relations, verdict line), WriteJSON (docs/design.md's result JSON), WriteReport (index.html,
// RenderHTML, with the timelines next to it), RenderBrokerComparison; SweepResult.WriteTable,
// WriteJSON, WriteSVG, WriteModel (the measured counts against the figures' models) and WriteReport,
// and its Verdict (package sweep's rankings, ties and crossovers). ReadSweep reads a sweep's JSON
// back.
//
// The report computes nothing from a cluster: it imports timeline, scenarios/spec, scenarios/figures
// and sweep, never the lab or the runner (`go list -deps` shows it). Package sweep (plots, the fit
// rule, the verdict) stays a package of its own, a leaf the report builds on, because `bench storm`
// draws with it without any scenario result.
package report

import ()
