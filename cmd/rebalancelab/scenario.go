package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

func init() {
	scenarioCmd := &cobra.Command{Use: "scenario", Short: "Scripted comparisons of the eras: herd effect, crashes, split brain, restarts, storms"}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the scenarios, one line each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, s := range scenarios.Catalog() {
				fmt.Fprintf(w, "%s\t%s\n", s.Name, s.Description)
			}
			return w.Flush()
		},
	}

	var (
		eras          []string
		consumers     int
		partitions    int
		jsonFile      string
		reportDir     string
		seed          int64
		zkAddrs       string
		kafkaDefaults bool
		membersAs     string
		brokerImpl    string
	)
	run := &cobra.Command{
		Use:   "run NAME [--era all] [--broker rebalancelab|kafka|rebalancelab,kafka] [--consumers N] [--partitions P] [--json FILE] [--report DIR] [--seed S] [--zk ADDRS]",
		Short: "Run a scenario on one or more eras and print the figures side by side",
		Long: `Starts a lab (a real ZooKeeper — three nodes for zk-quorum-loss — and one broker), then for each era a
topic, a producer (one record every 20 ms, acks=all) and the scenario's members, running as goroutines of
this process, each behind its own fault proxies. The scripted events are fixed by --seed. At the end the
producer stops, the members deliver what was produced and stop gracefully, and the figures are computed
from the timeline. The table goes to stdout with the relations the scenario expects (ok/FAIL); progress
goes to stderr. --json writes the result JSON, --report DIR an HTML page with the timelines beside it.
--broker kafka runs it on a real Kafka 3.9 broker; --broker rebalancelab,kafka runs it on each in turn
and then prints one table of both, "a / b" where a figure differs (--json FILE and --report DIR then get
one result per broker: <FILE's dir>/<broker>/FILE, DIR/<broker>).
Exit status 1 on errors and when a relation does not hold (the table and JSON are written first).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if membersAs != "goroutines" {
				return fmt.Errorf("--members-as %q: only \"goroutines\" is implemented (members as processes are not yet)", membersAs)
			}
			runOn := func(brokerImpl, jsonFile, reportDir string) (*scenarios.RunResult, error) {
				o := scenarios.Options{
					Scenario: args[0], Eras: eras, KafkaDefaults: kafkaDefaults, ExternalZK: zkAddrs, Broker: brokerImpl,
					Params:    scenarios.Params{Consumers: consumers, Partitions: partitions, Seed: seed},
					ReportDir: reportDir, Version: version, Progress: cmd.ErrOrStderr(),
					Log: logrus.NewEntry(logrus.StandardLogger()),
				}
				if jsonFile != "" && reportDir == "" {
					o.OutputDir = filepath.Dir(jsonFile) // the JSON names the timeline files next to it
				}
				if logrus.GetLevel() >= logrus.DebugLevel {
					o.LabLog = logrus.NewEntry(logrus.StandardLogger())
				}
				res, err := scenarios.Run(cmd.Context(), o)
				if res != nil && len(res.Eras) > 0 && (err == nil || cmd.Context().Err() != nil) {
					if werr := res.WriteTable(cmd.OutOrStdout()); werr != nil {
						return res, werr
					}
					if jsonFile != "" {
						f, ferr := os.Create(jsonFile)
						if ferr != nil {
							return res, ferr
						}
						if werr := res.WriteJSON(f); werr != nil {
							f.Close()
							return res, werr
						}
						if cerr := f.Close(); cerr != nil {
							return res, cerr
						}
					}
				}
				if err != nil {
					return res, fmt.Errorf("scenario %s: %w", args[0], err)
				}
				if reportDir != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", filepath.Join(reportDir, "index.html"))
				}
				return res, nil
			}
			brokers := strings.Split(brokerImpl, ",")
			if len(brokers) == 1 {
				res, err := runOn(brokerImpl, jsonFile, reportDir)
				if err != nil {
					return err
				}
				if !res.Passed() {
					return fmt.Errorf("scenario %s: some expected relations do not hold (FAIL lines above)", args[0])
				}
				return nil
			}
			var runs []*scenarios.RunResult
			passed := true
			for _, b := range brokers {
				jf, rd := jsonFile, reportDir
				if jf != "" { // DIR/<broker>/FILE, its timelines beside it
					jf = filepath.Join(filepath.Dir(jf), b, filepath.Base(jf))
					if err := os.MkdirAll(filepath.Dir(jf), 0o755); err != nil {
						return err
					}
				}
				if rd != "" {
					rd = filepath.Join(rd, b)
				}
				res, err := runOn(b, jf, rd)
				if err != nil {
					return err
				}
				runs = append(runs, res)
				passed = passed && res.Passed()
				fmt.Fprintln(cmd.OutOrStdout())
			}
			if err := scenarios.RenderBrokerComparison(cmd.OutOrStdout(), runs...); err != nil {
				return err
			}
			if !passed {
				return fmt.Errorf("scenario %s: some expected relations do not hold (FAIL lines above)", args[0])
			}
			return nil
		},
	}
	f := run.Flags()
	f.StringSliceVar(&eras, "era", []string{"all"}, "eras to run: zk, classic, cooperative, static, or all (comma-separated or repeated)")
	f.IntVar(&consumers, "consumers", 0, "members N (0: the scenario's default)")
	f.IntVar(&partitions, "partitions", 0, "partitions P of the topic (0: the scenario's default)")
	f.StringVar(&jsonFile, "json", "", "write the result JSON to FILE (timelines next to it unless --report)")
	f.StringVar(&reportDir, "report", "", "write DIR/index.html and DIR/timeline-<era>.jsonl")
	f.Int64Var(&seed, "seed", 1, "seed of the scripted events (same seed, same script)")
	f.StringVar(&zkAddrs, "zk", "", "use this running ZooKeeper (host:port,...) instead of starting one")
	f.BoolVar(&kafkaDefaults, "kafka-defaults", false, "Kafka's own timing (45 s sessions...) instead of the lab's short settings")
	addBrokerListFlag(run, &brokerImpl)
	f.StringVar(&membersAs, "members-as", "goroutines", `how members run: "goroutines" (processes: not implemented yet)`)

	scenarioCmd.AddCommand(list, run)
	rootCmd.AddCommand(scenarioCmd)
}
