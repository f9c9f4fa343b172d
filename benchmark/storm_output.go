package benchmark

// Output of a storm benchmark: DESIGN.md's bench JSON, a text or Markdown table, and an SVG plot.

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

// WriteJSON writes r as DESIGN.md's bench JSON: {"params": {...}, "cells": [{"era", "n", "case",
// "figures": {...}, "stopped_reason", ...}]}, indented.
func (r *StormResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// tableColumns are the figures the table shows (the JSON has them all), with short headers.
var tableColumns = []struct{ fig, head string }{
	{scenarios.FigTimeToStableMs, "stable ms"},
	{scenarios.FigRebalanceParticipants, "particip."},
	{scenarios.FigRebalanceAttempts, "attempts"},
	{scenarios.FigRebalanceFailures, "failures"},
	{scenarios.FigRevocations, "revoked"},
	{scenarios.FigZKReads, "zk reads"},
	{scenarios.FigZKWrites, "zk writes"},
	{scenarios.FigZKWatchEvents, "zk watches"},
	{scenarios.FigGroupRequests, "group reqs"},
	{scenarios.FigOwnershipConflicts, "conflicts"},
	{scenarios.FigUnownedPartitionMs, "unowned ms"},
	{scenarios.FigDuplicates, "dups"},
	{scenarios.FigLost, "lost"},
	{FigPeakRSSBytes, "peak RSS MiB"},
	{FigGoroutinesPeak, "goroutines"},
	{FigCPUMs, "cpu ms"},
}

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
			tl := c.cellText(scenarios.FigTimeToStableMs)
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
	case fig == scenarios.FigTimeToStableMs && v == scenarios.NeverStable:
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
var PlotFigures = []string{scenarios.FigTimeToStableMs, FigCoordinationRequests, scenarios.FigRebalanceAttempts,
	scenarios.FigRevocations, scenarios.FigUnownedPartitionMs, FigPeakRSSBytes, FigGoroutinesPeak, FigCPUMs}

var plotTitles = map[string]string{
	scenarios.FigTimeToStableMs:     "time_to_stable_ms",
	FigCoordinationRequests:         "zk_reads+zk_writes (zk) / group_requests",
	scenarios.FigRebalanceAttempts:  "rebalance_attempts",
	scenarios.FigRevocations:        "revocations",
	scenarios.FigUnownedPartitionMs: "unowned_partition_ms",
	FigPeakRSSBytes:                 "peak_rss_bytes",
	FigGoroutinesPeak:               "goroutines_peak",
	FigCPUMs:                        "cpu_ms",
}

var eraColours = map[string]string{"zk": "#d62728", "classic": "#1f77b4", "cooperative": "#2ca02c", "static": "#9467bd", "kip848": "#ff7f0e"}

// plotValue is the value a completed cell plots for fig; ok=false for cells that stopped and figures
// the cell lacks.
func (c *StormCell) plotValue(fig string) (int64, bool) {
	if c.StoppedReason != "" {
		return 0, false
	}
	if fig == FigCoordinationRequests {
		if c.Era == "zk" {
			r, ok1 := c.Figure(scenarios.FigZKReads)
			w, ok2 := c.Figure(scenarios.FigZKWrites)
			return r + w, ok1 && ok2
		}
		return c.Figure(scenarios.FigGroupRequests)
	}
	return c.Figure(fig)
}

// WriteSVG draws the cells on log-log axes: a grid of panels, one row per PlotFigures entry and one
// column per case; in each panel one polyline per era (x: N, y: the figure), over the cells that
// completed. Zero values sit on a "0" line below the axis; negative values (never stable) and stopped
// cells are left out. Each polyline carries data-era, data-figure and data-case attributes.
func (r *StormResult) WriteSVG(w io.Writer) error {
	const (
		panelW, panelH = 300, 190
		left, top      = 70, 80
		gapX, gapY     = 40, 55
		plotW, plotH   = panelW - 20, panelH - 40 // inside a panel: axes area
	)
	var eras []string
	seenEra := map[string]bool{}
	var ns []int
	seenN := map[int]bool{}
	for _, c := range r.Cells {
		if !seenEra[c.Era] {
			seenEra[c.Era] = true
			eras = append(eras, c.Era)
		}
		if !seenN[c.N] {
			seenN[c.N] = true
			ns = append(ns, c.N)
		}
	}
	sort.Ints(ns)
	width := left + len(StormCases)*(panelW+gapX)
	height := top + len(PlotFigures)*(panelH+gapY)
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">rebalancelab bench storm: figures per N (log-log), completed cells only</text>`+"\n", left)
	for i, era := range eras {
		x := left + i*120
		fmt.Fprintf(&b, `<line x1="%d" y1="40" x2="%d" y2="40" stroke="%s" stroke-width="2"/><text x="%d" y="44">%s</text>`+"\n",
			x, x+20, colourOf(era, i), x+25, esc(era))
	}

	lnMin, lnMax := 1.0, 10.0
	if len(ns) > 0 {
		lnMin, lnMax = math.Floor(math.Log10(float64(ns[0]))), math.Ceil(math.Log10(float64(ns[len(ns)-1])))
		if lnMax <= lnMin {
			lnMax = lnMin + 1
		}
	}
	for row, fig := range PlotFigures {
		// One y range per figure (shared by the cases of a row): decades around the positive values.
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range r.Cells {
			if v, ok := c.plotValue(fig); ok && v > 0 {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
		}
		lvMin, lvMax := 0.0, 1.0
		if !math.IsInf(lo, 1) {
			lvMin, lvMax = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
			if lvMax <= lvMin {
				lvMax = lvMin + 1
			}
		}
		for col, cs := range StormCases {
			ox := left + col*(panelW+gapX)
			oy := top + row*(panelH+gapY)
			x0, y0 := float64(ox), float64(oy+plotH) // axes origin (bottom left)
			px := func(n int) float64 {
				return x0 + (math.Log10(float64(n))-lnMin)/(lnMax-lnMin)*plotW
			}
			py := func(v int64) float64 {
				if v <= 0 {
					return y0 + 14 // the "0" line below the axis
				}
				return y0 - (math.Log10(float64(v))-lvMin)/(lvMax-lvMin)*plotH
			}
			fmt.Fprintf(&b, `<g class="panel" data-figure="%s" data-case="%s">`+"\n", esc(fig), esc(cs))
			fmt.Fprintf(&b, `<text x="%.0f" y="%d" font-size="12">%s — %s</text>`+"\n", x0, oy-8, esc(plotTitles[fig]), esc(cs))
			fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, oy, plotW, plotH)
			for d := lnMin; d <= lnMax; d++ {
				x := x0 + (d-lnMin)/(lnMax-lnMin)*plotW
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n",
					x, oy, x, y0, x, y0+32, decade(d))
			}
			for d := lvMin; d <= lvMax; d++ {
				y := y0 - (d-lvMin)/(lvMax-lvMin)*plotH
				fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
					x0, y, x0+plotW, y, x0-4, y+4, decade(d))
			}
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#999">0</text>`+"\n", x0-4, y0+18)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">N</text>`+"\n", x0+plotW/2, y0+46)
			for i, era := range eras {
				var pts []string
				var dots strings.Builder
				for _, n := range ns {
					c := r.cell(era, n, cs)
					if c == nil {
						continue
					}
					v, ok := c.plotValue(fig)
					if !ok || v < 0 {
						continue
					}
					x, y := px(n), py(v)
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
					fmt.Fprintf(&dots, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s N=%d %s: %d</title></circle>`+"\n",
						x, y, colourOf(era, i), esc(era), n, esc(fig), v)
				}
				fmt.Fprintf(&b, `<polyline class="series" data-era="%s" data-figure="%s" data-case="%s" points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n",
					esc(era), esc(fig), esc(cs), strings.Join(pts, " "), colourOf(era, i))
				b.WriteString(dots.String())
			}
			b.WriteString("</g>\n")
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *StormResult) cell(era string, n int, cs string) *StormCell {
	for _, c := range r.Cells {
		if c.Era == era && c.N == n && c.Case == cs {
			return c
		}
	}
	return nil
}

func colourOf(era string, i int) string {
	if c, ok := eraColours[era]; ok {
		return c
	}
	return []string{"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}[i%4]
}

// decade labels 10^d: 1, 10, 100, 1k, 10k, 100k, 1M, ...
func decade(d float64) string {
	v := math.Pow(10, d)
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
