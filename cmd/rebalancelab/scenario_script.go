package main

// scenario run --script FILE and scenario show: a scenario given as a file (issue #31, part 2).

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/connect"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// scenarioTarget resolves what `scenario <verb>` runs: the catalogue scenario NAME (args[0]) or the
// scenario file given by --script (script), never both and never neither. It returns the scenario's
// name and, for a file, the loaded file (the Scenario to run as Options.Definition). Errors: NAME and
// --script together; neither; a file that cannot be read ("--script FILE: open ...: no such file");
// a malformed file ("FILE:LINE: field X: what is wrong").
func scenarioTarget(verb string, args []string, script string) (string, *catalog.ScenarioFile, error) {
	switch {
	case len(args) == 1 && script != "":
		return "", nil, fmt.Errorf("scenario %s: NAME %q and --script %s: give one (a catalogue scenario by NAME, or a scenario file with --script)", verb, args[0], script)
	case len(args) == 0 && script == "":
		return "", nil, fmt.Errorf("scenario %s: give a scenario NAME (scenario list) or --script FILE", verb)
	case len(args) == 1:
		return args[0], nil, nil
	}
	sf, err := catalog.LoadScenarioFile(script)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", nil, fmt.Errorf("--script %s: cannot read it: %w", script, pe.Err)
		}
		return "", nil, err // FILE:LINE: field X: ...
	}
	return sf.Scenario.Name, sf, nil
}

// errConnectNoScript is scenario show's answer for connect-workers, a driver scenario: no script to show.
var errConnectNoScript = fmt.Errorf("%s is a driver scenario without a script: its phases are fixed in Go (the four worker layouts, then a worker killed with -9, once per Connect protocol); run it with `rebalancelab scenario run %s [--connect-protocol sessioned,eager] [--json FILE]` or make connect-workers", connect.Scenario, connect.Scenario)

// scenarioShowFlags are `scenario show`'s flags, as given.
type scenarioShowFlags struct {
	script                string // a scenario file instead of a catalogue NAME
	consumers, partitions int
	seed, downMs          int64
	hosts                 int
	kafkaDefaults         bool // Kafka's timing instead of the lab's
	relations             bool // then print the relations
}

// params are the size and seed the script is shown for (zero fields: the scenario's defaults).
func (f *scenarioShowFlags) params() spec.Params {
	return spec.Params{Consumers: f.consumers, Partitions: f.partitions, Seed: f.seed, DownMs: f.downMs, Hosts: f.hosts}
}

// newScenarioShowCmd builds `scenario show NAME|--script FILE`: the scenario's script for a size, seed
// and timing, as JSON lines (FormatScript: what a run performs, and what --steps reads).
func newScenarioShowCmd() *cobra.Command {
	var f scenarioShowFlags
	show := &cobra.Command{
		Use:   "show NAME|--script FILE [--consumers N] [--partitions P] [--seed S] [--down-ms MS] [--hosts H] [--kafka-defaults] [--relations]",
		Short: "Print a scenario's script (JSON lines, one step each) for a size, seed and timing",
		Long: `Prints the script a run of the scenario performs: JSON lines, one step each, as the result JSON's
"script" holds and scenario run --steps reads, for --consumers, --partitions, --seed (the scenario's
defaults and seed 1 when not given) and the lab's timing (--kafka-defaults: Kafka's). NAME is a catalogue
scenario; --script FILE a scenario file (YAML or JSON, docs/reference/scenarios.md "Scenario files"),
checked as scenario run checks it. --relations then prints the relations, one line each: the eras they
apply to ("all" for every era) and the relation as a run reports it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, sf, err := scenarioTarget("show", args, f.script)
			if err != nil {
				return err
			}
			var sc *catalog.Scenario
			if sf != nil {
				sc = sf.Scenario
			} else if name == connect.Scenario {
				return errConnectNoScript
			} else if sc, err = catalog.Lookup(name); err != nil {
				return err
			}
			t := spec.LabTiming()
			if f.kafkaDefaults {
				t = spec.KafkaTiming()
			}
			p := f.params()
			if sf != nil {
				if err := sf.Check(p); err != nil {
					return fmt.Errorf("--script %s: %w", f.script, err)
				}
			}
			steps, err := sc.ScriptFor(p, t)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(spec.FormatScript(steps)); err != nil {
				return err
			}
			if f.relations {
				for _, r := range sc.Relations {
					eras := "all"
					if len(r.Eras) > 0 {
						eras = fmt.Sprint(r.Eras)
					}
					if _, err := fmt.Fprintf(out, "relation %s: %s\n", eras, r.Text); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	fs := show.Flags()
	fs.StringVar(&f.script, "script", "", "a scenario file (YAML or JSON) instead of a catalogue NAME")
	fs.IntVar(&f.consumers, "consumers", 0, "members N (0: the scenario's default)")
	fs.IntVar(&f.partitions, "partitions", 0, "partitions P (0: the scenario's default)")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the scripted events")
	fs.Int64Var(&f.downMs, "down-ms", 0, "how long a restarted member stays down, in ms (0: half the session timeout)")
	fs.IntVar(&f.hosts, "hosts", 0, "test hosts H (0: the scenario's default)")
	fs.BoolVar(&f.kafkaDefaults, "kafka-defaults", false, "Kafka's own timing instead of the lab's short settings")
	fs.BoolVar(&f.relations, "relations", false, "then print the relations, one line each")
	return show
}
