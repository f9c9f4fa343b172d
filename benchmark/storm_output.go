package benchmark

// Output of a storm benchmark: docs/design.md's bench JSON, a text or Markdown table, and an SVG plot.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/sweep"
)

// WriteJSON writes r as docs/design.md's bench JSON: {"params": {...}, "cells": [{"era", "n", "case",
// "figures": {...}, "stopped_reason", ...}]}, indented.
func (r *StormResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// tableColumns are the figures the table shows (the JSON has them all), with short headers.
var tableColumns = []struct{ fig, head string }{
	{figures.FigTimeToStableMs, "stable ms"},
	{figures.FigRebalanceParticipants, "particip."},
	{figures.FigRebalanceAttempts, "attempts"},
	{figures.FigRebalanceFailures, "failures"},
	{figures.FigRevocations, "revoked"},
	{figures.FigZKReads, "zk reads"},
	{figures.FigZKWrites, "zk writes"},
	{figures.FigZKWatchEvents, "zk watches"},
	{figures.FigGroupRequests, "group reqs"},
	{figures.FigOwnershipConflicts, "conflicts"},
	{figures.FigUnownedPartitionMs, "unowned ms"},
	{figures.FigDuplicates, "dups"},
	{figures.FigLost, "lost"},
	{FigPeakRSSBytes, "peak RSS MiB"},
	{FigGoroutinesPeak, "goroutines"},
	{FigCPUMs, "cpu ms"},
	{FigBrokerCPUMs, "broker cpu ms"},
	{perMember + figures.FigGroupRequests, "group reqs/member"},
	{perMember + FigPeakRSSBytes, "KiB/member"},
	{perMember + FigGoroutinesPeak, "goroutines/member"},
}

// perMember prefixes a table column that is a figure divided by N (KiB for peak_rss_bytes).
const perMember = "per_member:"

// WriteTable writes one row per cell (the main figures; "n/a" where the era cannot produce one, "-"
// where the cell did not measure it), then the kgo peer comparison, the cells' checks and the zk
// cross-checks. markdown: GitHub tables instead of aligned columns.
func (r *StormResult) WriteTable(w io.Writer, markdown bool) error {
	head := []string{"era", "N", "case"}
	for _, c := range tableColumns {
		head = append(head, c.head)
	}
	head = append(head, "stopped_reason")
	var rows [][]string
	for _, c := range r.Cells {
		row := []string{c.Era, strconv.Itoa(c.N), c.Case}
		for _, col := range tableColumns {
			row = append(row, c.cellText(col.fig))
		}
		row = append(row, c.StoppedReason)
		rows = append(rows, row)
	}
	if err := writeRows(w, markdown, head, rows); err != nil {
		return err
	}

	var peer [][]string
	for _, c := range r.Cells {
		if p := c.Peer; p != nil {
			ratio := "-"
			if p.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f", p.Ratio)
			}
			why := strings.TrimSpace(strings.Join([]string{p.NewconsumerStoppedReason, p.StoppedReason}, " "))
			tl := c.cellText(figures.FigTimeToStableMs)
			peer = append(peer, []string{c.Era, strconv.Itoa(c.N), p.Balancer, msText(p.NewconsumerTimeToStableMs),
				msText(p.TimeToStableMs), ratio, tl, fmt.Sprintf("%.0f", float64(p.Figures[FigCPUMs])), why})
		}
	}
	if len(peer) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "storm, measured from the broker (DescribeGroups until Stable with N members and every partition assigned once):")
		if err := writeRows(w, markdown, []string{"era", "N", "balancer", "newconsumer ms", "kgo ms",
			"ratio newconsumer/kgo", "newconsumer timeline ms", "kgo cpu ms", "stopped"}, peer); err != nil {
			return err
		}
	}

	if err := r.writeFits(w, markdown); err != nil {
		return err
	}

	var lines []string
	for _, c := range r.Cells {
		for _, ch := range c.Checks {
			mark := "ok  "
			if !ch.OK {
				mark = "FAIL"
			}
			lines = append(lines, fmt.Sprintf("%s %s N=%d %s: %s", mark, c.Era, c.N, ch.Check, ch.Got))
		}
	}
	for _, c := range r.Cells {
		if c.ZKCrosscheck != nil {
			lines = append(lines, fmt.Sprintf("%s N=%d %s: zk cross-check: %s", c.Era, c.N, c.Case, c.ZKCrosscheck.Summary()))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			if markdown {
				l = "- " + l
			}
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

func msText(v int64) string {
	if v < 0 {
		return "not stable"
	}
	return strconv.FormatInt(v, 10)
}

// cellText is one figure as the table shows it.
func (c *StormCell) cellText(fig string) string {
	if base, ok := strings.CutPrefix(fig, perMember); ok {
		v, ok := c.Figure(base)
		if !ok || c.N == 0 || slices.Contains(c.NotApplicable, base) {
			return c.cellText(base)
		}
		x := float64(v) / float64(c.N)
		if base == FigPeakRSSBytes {
			x /= 1024
		}
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	for _, na := range c.NotApplicable {
		if na == fig {
			return "n/a"
		}
	}
	v, ok := c.Figure(fig)
	switch {
	case !ok:
		return "-"
	case fig == FigPeakRSSBytes:
		return fmt.Sprintf("%.0f", float64(v)/(1<<20))
	case fig == figures.FigTimeToStableMs && v == figures.NeverStable:
		return "never"
	}
	return strconv.FormatInt(v, 10)
}

func writeRows(w io.Writer, markdown bool, head []string, rows [][]string) error {
	if markdown {
		esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		line := func(cells []string) {
			out := make([]string, len(cells))
			for i, c := range cells {
				out[i] = esc(c)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(out, " | "))
		}
		line(head)
		sep := make([]string, len(head))
		for i := range sep {
			sep[i] = "---"
		}
		fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
		for _, r := range rows {
			line(r)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// ---- SVG ----

// FigCoordinationRequests is a plotted series, not a figure of the JSON: zk_reads + zk_writes in the
// zk era, group_requests in the coordinator eras (what a change costs the coordination service).
const FigCoordinationRequests = "coordination_requests"

// PlotFigures are the plot's rows, each a figure of the cells (or FigCoordinationRequests).
var PlotFigures = []string{figures.FigTimeToStableMs, FigCoordinationRequests, figures.FigRebalanceAttempts,
	figures.FigRevocations, figures.FigUnownedPartitionMs, FigPeakRSSBytes, FigGoroutinesPeak, FigCPUMs}

var plotTitles = map[string]string{
	figures.FigTimeToStableMs:     "time_to_stable_ms",
	FigCoordinationRequests:       "zk_reads+zk_writes (zk) / group_requests",
	figures.FigRebalanceAttempts:  "rebalance_attempts",
	figures.FigRevocations:        "revocations",
	figures.FigUnownedPartitionMs: "unowned_partition_ms",
	FigPeakRSSBytes:               "peak_rss_bytes",
	FigGoroutinesPeak:             "goroutines_peak",
	FigCPUMs:                      "cpu_ms",
}

// plotValue is the value a completed cell plots for fig; ok=false for cells that stopped and figures
// the cell lacks.
func (c *StormCell) plotValue(fig string) (int64, bool) {
	if c.StoppedReason != "" {
		return 0, false
	}
	if fig == FigCoordinationRequests {
		if spec.Era(c.Era).UsesZooKeeper() {
			r, ok1 := c.Figure(figures.FigZKReads)
			w, ok2 := c.Figure(figures.FigZKWrites)
			return r + w, ok1 && ok2
		}
		return c.Figure(figures.FigGroupRequests)
	}
	return c.Figure(fig)
}

// WriteSVG draws the cells on log-log axes (sweep.Chart): a grid of panels, one row per PlotFigures
// entry and one column per case; in each panel one polyline per era (x: N, y: the figure), over the
// cells that completed. Zero values sit on a "0" line below the axis; negative values (never stable)
// and stopped cells are left out. Each polyline carries data-era, data-figure and data-case attributes.
func (r *StormResult) WriteSVG(w io.Writer) error {
	var eras []string
	seenEra := map[string]bool{}
	for _, c := range r.Cells {
		if !seenEra[c.Era] {
			seenEra[c.Era] = true
			eras = append(eras, c.Era)
		}
	}
	ch := sweep.Chart{Title: "rebalancelab bench storm: figures per N (log-log), completed cells only",
		Columns: len(StormCases)}
	for i, era := range eras {
		ch.Legend = append(ch.Legend, sweep.Series{Label: era, Colour: colourOf(era, i)})
	}
	for _, fig := range PlotFigures {
		for _, cs := range StormCases {
			p := sweep.Panel{Title: plotTitles[fig] + " — " + cs, Attrs: map[string]string{"figure": fig, "case": cs}}
			for i, era := range eras {
				s := sweep.Series{Label: era, Colour: colourOf(era, i),
					Attrs: map[string]string{"era": era, "figure": fig, "case": cs}}
				for _, c := range r.Cells {
					if c.Era != era || c.Case != cs {
						continue
					}
					if v, ok := c.plotValue(fig); ok && v >= 0 {
						s.Points = append(s.Points, sweep.Point{X: float64(c.N), Y: float64(v)})
					}
				}
				p.Series = append(p.Series, s)
				if f, ok := fitPoints(s.Points); ok { // the fit, dashed, and its formula under the panel
					fs := sweep.Series{Label: era + " fit", Colour: s.Colour, Dashed: true, Points: f.curve,
						Attrs: map[string]string{"era": era, "figure": fig, "case": cs, "fit": f.text()}}
					p.Series = append(p.Series, fs)
					if len(p.Notes) < 2 {
						p.Notes = append(p.Notes, era+": "+f.text())
					}
				}
			}
			ch.Panels = append(ch.Panels, p)
		}
	}
	return ch.WriteSVG(w)
}

func colourOf(era string, i int) string { return report.EraColour(era, i) }

// powerFit is y ≈ k·N^e over a series' points (sweep.FitPowerLaw) and its curve across them.
type powerFit struct {
	k, e  float64
	curve []sweep.Point
}

func (f powerFit) text() string { return fmt.Sprintf("≈ %.3g·N^%.2f", f.k, f.e) }

// fitPoints fits a power law to the points with y > 0; ok=false with fewer than two sizes.
func fitPoints(pts []sweep.Point) (powerFit, bool) {
	k, e, err := sweep.FitPowerLaw(pts)
	if err != nil {
		return powerFit{}, false
	}
	lo, hi := pts[0].X, pts[0].X
	for _, p := range pts {
		lo, hi = min(lo, p.X), max(hi, p.X)
	}
	f := powerFit{k: k, e: e}
	for i := 0; i <= 8; i++ {
		x := lo * math.Pow(hi/lo, float64(i)/8)
		f.curve = append(f.curve, sweep.Point{X: x, Y: k * math.Pow(x, e)})
	}
	return f, true
}

// GrowthFigures are the figures whose growth with N the table's fit lines give.
var GrowthFigures = []string{figures.FigTimeToStableMs, figures.FigGroupRequests, FigCPUMs, FigBrokerCPUMs,
	FigPeakRSSBytes, FigGoroutinesPeak}

// writeFits prints, per era and case with two sizes or more, each GrowthFigures figure's power law
// over the completed cells (y ≈ k·N^e: e = 1 grows linearly with N).
func (r *StormResult) writeFits(w io.Writer, markdown bool) error {
	var rows [][]string
	var eras []string
	for _, c := range r.Cells {
		if !slices.Contains(eras, c.Era) {
			eras = append(eras, c.Era)
		}
	}
	for _, era := range eras {
		for _, cs := range StormCases {
			row := []string{era, cs}
			any := false
			for _, fig := range GrowthFigures {
				var pts []sweep.Point
				for _, c := range r.Cells {
					if c.Era == era && c.Case == cs {
						if v, ok := c.plotValue(fig); ok && v > 0 {
							pts = append(pts, sweep.Point{X: float64(c.N), Y: float64(v)})
						}
					}
				}
				if f, ok := fitPoints(pts); ok {
					row, any = append(row, fmt.Sprintf("N^%.2f", f.e)), true
				} else {
					row = append(row, "-")
				}
			}
			if any {
				rows = append(rows, row)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "growth with N (power law fitted over the completed cells' sizes, y ≈ k·N^e):")
	head := append([]string{"era", "case"}, GrowthFigures...)
	return writeRows(w, markdown, head, rows)
}

// cell returns the cell of era, n and case cs, nil if there is none.
func (r *StormResult) cell(era string, n int, cs string) *StormCell {
	for _, c := range r.Cells {
		if c.Era == era && c.N == n && c.Case == cs {
			return c
		}
	}
	return nil
}
