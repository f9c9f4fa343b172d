package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/benchmark"
)

func init() {
	var history, at, readme string
	var list bool
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
			n := 0
			for _, set := range []bool{at != "", readme != "", list} {
				if set {
					n++
				}
			}
			if n != 1 {
				return fmt.Errorf("give exactly one of --at TIME, --readme FILE, --list")
			}
			entries, err := benchmark.ReadHistory(history)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case list:
				for _, e := range entries {
					fmt.Fprintf(out, "%s  %-10s  commit %s\n", benchmark.HistoryKey(e), e.Bench, e.Commit)
				}
				return nil
			case at != "":
				e, err := benchmark.FindHistory(entries, at)
				if err != nil {
					return err
				}
				return benchmark.HistoryTable(out, e)
			}
			b, err := os.ReadFile(readme)
			if err != nil {
				return err
			}
			filled, err := benchmark.RefillBenchTables(string(b), entries)
			if err != nil {
				return fmt.Errorf("%s: %w", readme, err)
			}
			blocks := len(benchmark.BenchTableRE.FindAllString(filled, -1))
			if filled == string(b) {
				fmt.Fprintf(out, "%s: %d table block(s), already up to date\n", readme, blocks)
				return nil
			}
			if err := os.WriteFile(readme, []byte(filled), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "%s: %d table block(s) regenerated from %s\n", readme, blocks, history)
			return nil
		},
	}
	table.Flags().StringVar(&history, "history", "benchmark/history.jsonl", "the history file (one JSON line per bench run)")
	table.Flags().StringVar(&at, "at", "", "print the tables of the history line of this time (YYYY-MM-DDTHH:MM:SSZ)")
	table.Flags().StringVar(&readme, "readme", "", "rewrite every BENCH TABLE block of this Markdown file")
	table.Flags().BoolVar(&list, "list", false, "list the history's lines (time, bench, commit)")
	benchCmd.AddCommand(table)
}
