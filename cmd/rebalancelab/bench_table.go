package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/benchmark"
)

// benchTableFlags are `bench table`'s flags, as given: --history and one of --at, --readme, --list.
type benchTableFlags struct {
	history, at, readme string
	list                bool
}

// check refuses anything but exactly one of --at, --readme and --list.
func (f *benchTableFlags) check() error {
	n := 0
	for _, set := range []bool{f.at != "", f.readme != "", f.list} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("give exactly one of --at TIME, --readme FILE, --list")
	}
	return nil
}

// newBenchTableCmd builds `bench table`: the performance tables from the history file.
func newBenchTableCmd() *cobra.Command {
	var f benchTableFlags
	table := &cobra.Command{
		Use:   "table (--at TIME | --readme FILE | --list)",
		Short: "the performance tables (docs/reference/performance.md), generated from benchmark/history.jsonl",
		Long: "Prints the tables of one history line (--at, its time to the second in UTC, as --list shows it), or\n" +
			"rewrites every generated block of a Markdown file (--readme: each \"<!-- BEGIN BENCH TABLE TIME -->\" ...\n" +
			"\"<!-- END BENCH TABLE -->\" block gets the tables of the line at TIME). Each table names this command\n" +
			"above it and the machine, its load, the peers' versions and every target's settings below it; a ratio\n" +
			"against Kafka from `go test` benchmarks is shown only where the line records Kafka's JVM warm-up.\n" +
			"Errors: a TIME naming no single line, a bench without tables (storm).",
		Example: "  rebalancelab bench table --list\n  rebalancelab bench table --at 2026-12-04T19:24:07Z\n  rebalancelab bench table --readme docs/reference/performance.md   # make bench-tables",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			entries, err := benchmark.ReadHistory(f.history)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case f.list:
				for _, e := range entries {
					fmt.Fprintf(out, "%s  %-10s  commit %s\n", benchmark.HistoryKey(e), e.Bench, e.Commit)
				}
				return nil
			case f.at != "":
				e, err := benchmark.FindHistory(entries, f.at)
				if err != nil {
					return err
				}
				return benchmark.HistoryTable(out, e)
			}
			b, err := os.ReadFile(f.readme)
			if err != nil {
				return err
			}
			filled, err := benchmark.RefillBenchTables(string(b), entries)
			if err != nil {
				return fmt.Errorf("%s: %w", f.readme, err)
			}
			blocks := len(benchmark.BenchTableRE.FindAllString(filled, -1))
			if filled == string(b) {
				fmt.Fprintf(out, "%s: %d table block(s), already up to date\n", f.readme, blocks)
				return nil
			}
			if err := os.WriteFile(f.readme, []byte(filled), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "%s: %d table block(s) regenerated from %s\n", f.readme, blocks, f.history)
			return nil
		},
	}
	table.Flags().StringVar(&f.history, "history", "benchmark/history.jsonl", "the history file (one JSON line per bench run)")
	table.Flags().StringVar(&f.at, "at", "", "print the tables of the history line of this time (YYYY-MM-DDTHH:MM:SSZ)")
	table.Flags().StringVar(&f.readme, "readme", "", "rewrite every BENCH TABLE block of this Markdown file")
	table.Flags().BoolVar(&f.list, "list", false, "list the history's lines (time, bench, commit)")
	return table
}
