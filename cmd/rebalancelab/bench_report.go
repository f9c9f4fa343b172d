package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/benchmark"
	"github.com/rebalancelab/rebalancelab/lab"
)

// benchReportFlags are `bench report`'s flags: where the summaries go besides the tables.
type benchReportFlags struct {
	markdown          bool   // the tables as Markdown
	history, jsonFile string // "": not written
}

// newBenchReportCmd builds `bench report`: `go test -bench` output summarised into tables.
func newBenchReportCmd() *cobra.Command {
	var f benchReportFlags
	report := &cobra.Command{
		Use:   "report [FILE ...]",
		Short: "Summarise `go test -bench` output (medians and their 95% interval, as benchstat) into the performance tables (docs/reference/performance.md)",
		Long: "Reads `go test -bench` output from the files given, or from standard input, and prints one table per\n" +
			"benchmark function: a row per sub-benchmark, a column per unit it reported (ns/op, B/op, allocs/op and\n" +
			"the benchmarks' own units such as ms-kgo/op or x-rebalancelab-vs-kgo), each cell the median over the\n" +
			"runs (-count) with the runs' min-max, and from 6 runs the half-width of its 95% confidence interval\n" +
			"relative to it, as benchstat computes them (golang.org/x/perf). Above the tables: the machine, the\n" +
			"peers' versions and the commit; below them the targets' settings and the load average the benchmarks\n" +
			"printed (configuration lines \"<target>-settings: ...\", \"loadavg: ...\"). With --history FILE it\n" +
			"appends the medians, their spreads, the settings and the load to FILE as one JSON line (none by default).",
		Example: "  go test -run '^$' -bench 'Assignor|CoordinatorRebalance' -count 5 ./benchmark/ | rebalancelab bench report --markdown\n" +
			"  make bench-report    # appends to benchmark/history.jsonl (--history)",
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			name := "stdin"
			if len(args) > 0 {
				var readers []io.Reader
				for _, a := range args {
					f, err := os.Open(a)
					if err != nil {
						return err
					}
					defer f.Close()
					readers = append(readers, f)
				}
				in, name = io.MultiReader(readers...), strings.Join(args, ",")
			}
			sums, cfg, err := benchmark.ReadGoBench(in, name)
			if err != nil {
				return err
			}
			peers := map[string]string{
				"kgo (franz-go)": benchmark.ModuleVersion("github.com/twmb/franz-go"),
				"kfake":          benchmark.ModuleVersion("github.com/twmb/franz-go/pkg/kfake"),
			}
			if cp, err := lab.FindKafkaClasspath(); err == nil {
				if v, err := lab.KafkaVersionOf(cp); err == nil {
					peers["kafka"] = v
				}
			}
			m := benchmark.ThisMachine()
			out := cmd.OutOrStdout()
			// The benchmarks print their targets' settings as configuration lines ("<target>-settings:
			// ...") and the load average ("loadavg: ...") before their results.
			settings := map[string]string{}
			conditions := map[string]string{}
			for k, v := range cfg {
				if t, ok := strings.CutSuffix(k, "-settings"); ok {
					settings[t] = v
				}
			}
			if v := cfg["loadavg"]; v != "" {
				conditions["loadavg"] = v
			}
			fmt.Fprintf(out, "commit %s; %d CPUs (%s), %s/%s, kernel %s, %s; cpu reported by go test: %s\n",
				version, m.CPUs, m.CPUModel, m.GOOS, m.GOARCH, m.Kernel, m.Go, cfg["cpu"])
			fmt.Fprintf(out, "peers: kgo %s, kfake %s, Kafka %s\n\n", peers["kgo (franz-go)"], peers["kfake"], orNone(peers["kafka"]))
			if err := benchmark.WriteGoBenchTables(out, sums, f.markdown); err != nil {
				return err
			}
			fmt.Fprintln(out, "\nmedian (min-max of the runs) ±x%: the 95% confidence interval of the median (benchstat's; from 6 runs); x-A-vs-B units are A/B per run (below 1: A is faster)")
			fmt.Fprintln(out)
			if err := benchmark.WriteConditions(out, f.markdown, m, peers, settings, conditions); err != nil {
				return err
			}
			if f.history != "" {
				runs := map[string]int{}
				for _, s := range sums {
					runs[s.Name] = s.Runs
				}
				e := benchmark.HistoryEntry{Bench: "go-test", Time: time.Now().UTC(), Commit: version, Machine: m,
					Peers: peers, Params: map[string]any{"pkg": cfg["pkg"], "benchmarks": len(sums), "runs": runs},
					Medians: benchmark.GoBenchMedians(sums), Spreads: benchmark.GoBenchSpreads(sums),
					Settings: settings, Conditions: conditions}
				if err := benchmark.AppendHistory(f.history, e); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "history not appended: %v (--history FILE)\n", err)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "medians appended to %s\n", f.history)
				}
			}
			if f.jsonFile != "" {
				b, err := json.MarshalIndent(map[string]any{"peers": peers, "settings": settings, "conditions": conditions,
					"machine": m, "commit": version, "benchmarks": sums}, "", "  ")
				if err != nil {
					return err
				}
				return os.WriteFile(f.jsonFile, append(b, '\n'), 0o644)
			}
			return nil
		},
	}
	report.Flags().BoolVar(&f.markdown, "markdown", false, "print the tables as Markdown (docs/reference/performance.md's)")
	report.Flags().StringVar(&f.history, "history", "", "append the medians as one JSON line to this file (the repository's: benchmark/history.jsonl; default none)")
	report.Flags().StringVar(&f.jsonFile, "json", "", "also write the summaries as JSON to this file")
	return report
}

func orNone(s string) string {
	if s == "" {
		return "(not built: make deps)"
	}
	return s
}
