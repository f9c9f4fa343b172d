package scenarios

// A Streams scenario (Scenario.Streams) in the runner: Run hands it to the Streams driver (package
// scenarios/streams), then checks its relations and writes its report as for the eras.

import (
	"context"
	"fmt"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/scenarios/streams"
)

// runStreams is Run for a Streams scenario: streams.Run on the scenario's spec, script, partitions and
// timing and o's lab options; its one era is streams.Era.
func runStreams(ctx context.Context, o Options, sc *catalog.Scenario, p spec.Params, t spec.Timing) (*RunResult, error) {
	script := sc.Script(p, t, spec.NewRand(p.Seed, sc.Name))
	logDir := o.ReportDir // the instances' stderr beside the report or the timelines
	if logDir == "" {
		logDir = o.OutputDir
	}
	out, runErr := streams.Run(ctx, streams.Input{Scenario: sc.Name, Spec: *sc.Streams, Script: script, Partitions: p.Partitions,
		Timing: t, Eras: o.Eras, Broker: o.Broker, Bootstrap: o.Bootstrap, KafkaDefaults: o.KafkaDefaults, ExternalZK: o.ExternalZK,
		LabLog: o.LabLog, Progress: o.Progress, LogDir: logDir})
	if out == nil { // refused before anything started
		return nil, runErr
	}
	run := out.Result
	res := &RunResult{Scenario: sc.Name, Description: sc.Description, Seed: p.Seed, Params: p, Timing: t,
		KafkaDefaults: o.KafkaDefaults, Broker: o.Broker, MembersAs: MembersAsProcesses, RunID: env.NewRunID(),
		Versions: map[string]string{"rebalancelab": o.Version, "kafka-streams": streams.Version},
		Script:   script, Streams: run}
	if out.KafkaVersion != "" {
		res.Versions["kafka"] = out.KafkaVersion
	}
	res.Eras = []*EraRun{{Era: streams.Era, Applies: true, Group: run.Application, Topic: strings.Join(run.Inputs, ","), Errors: out.Errors}}
	checkRelations(res, sc)
	switch {
	case o.ReportDir != "":
		if err := res.WriteReport(o.ReportDir); err != nil && runErr == nil {
			runErr = fmt.Errorf("report: %w", err)
		}
	case o.OutputDir != "":
		if err := res.WriteTimelines(o.OutputDir); err != nil && runErr == nil {
			runErr = fmt.Errorf("timelines: %w", err)
		}
	}
	return res, runErr
}
