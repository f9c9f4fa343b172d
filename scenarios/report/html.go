package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// EraReport is one era's input to RenderHTML: its merged timeline and the options its figures use.
type EraReport struct {
	Era      string
	Records  []timeline.Record
	Options  figures.FigureOptions
	Timeline string // the timeline file's name, shown in the page; may be ""
	// Relations are the scenario's relations as checked on this era (RunResult's); the page's opening
	// lists them. May be nil.
	Relations []RelationResult
	// Errors are what the era's run recorded as failed (EraRun.Errors): any fails the run, and the
	// page's opening says so. May be nil.
	Errors []string
}

// Report is one scenario run, as RenderHTML draws it.
type Report struct {
	Scenario    string
	Description string // one line; may be ""
	Seed        int64
	Params      map[string]any
	Versions    map[string]string
	Eras        []EraReport
	// Plots are drawn elsewhere (SweepResult.WriteSVG) and embedded in the page inline. May be nil.
	Plots []Plot
	// Verdict is a sweep's verdict, one sentence a line (SweepResult.Verdict: its header and
	// conclusions), shown at the top of the page beside the plots; VerdictRankings (its rankings and
	// growth) under them, folded. May be nil.
	Verdict, VerdictRankings []string
}

// Plot is one SVG document the page embeds inline, under its title, with a link to its file.
type Plot struct {
	Title string
	File  string // the SVG's file name next to the page (linked); may be ""
	SVG   []byte // the document, trusted (written into the page as is); an XML declaration before <svg is dropped
}

// RenderHTML writes one self-contained HTML page (inline CSS and SVG, no scripts, no external assets
// besides the links to the timeline and plot files) for a run:
//
//   - first, under the title, a sweep's verdict (Report.Verdict, `ul#verdict`) beside its plots
//     (Report.Plots), then its rankings (`details#verdict-rankings`), in `section#sweep`, when given;
//   - an opening "What the run showed": sentences generated from the eras' figures (who rebalanced per
//     change, the coordination load, the stop-the-world pause, the time to stable, duplicates and losses,
//     Kafka's consumer invariants), then the scenario's relations as checked, held or not;
//   - when the run has both the classic and the cooperative era and cooperative's figures show a cost
//     classic's do not (more rebalance attempts, group requests, a later stable time), a section saying
//     why: KIP-429's second round;
//   - the figures of every era side by side;
//   - one timeline for all eras under ONE time axis: x is ms since each era's first record, at the same
//     scale for every era (the axis spans the longest era);
//   - per era its faults, events and per-event figures.
//
// Timeline elements. The axis: `div.axis[data-axis-ms=D]` (exactly one per page), its ticks
// `span.tick[data-ms]`. Every x position is left:(ms·100/D)%. Per era a `div.era-lanes[data-era]
// [data-span-ms]` holds:
//   - per known partition a lane `div.lane[data-era][data-topic][data-partition][data-final-owner]`
//     labelled by partition number, where the final owner is Result.FinalOwners["T-P"] (one member, ""
//     for none, comma-joined when several still claim it). Inside: `div.seg[data-owner]` per ownership
//     interval (member view, coloured per member, concurrent owners stacked), `div.rebalance` where some
//     live member was rebalancing or joining, `div.mark.fault` and `div.mark.trigger[data-at-ms]`;
//   - under each lane its lag `div.lag-lane[data-era][data-partition][data-max-lag]`: an inline SVG of the
//     produced-but-not-delivered offsets of the partition over time (the max per pixel column);
//   - a `div.fault-lane` with a `div.fault-window` per fault window (Result.Faults);
//   - per member a lane `div.member-lane[data-era][data-member][data-delivers=count]` with a
//     `div.ms[data-state][data-from-ms][data-to-ms][data-delivers]` per interval of its state while live,
//     with its deliveries in that interval: consuming (owns
//     partitions), rebalancing (a rebalance runs while it still owns partitions: assigned, not taking new
//     work), paused (it held partitions when its rebalance began and holds none while it runs:
//     paused_member_ms), joining (rebalancing without having held any), idle (owns nothing); and its
//     deliveries as ticks of an inline SVG.
//
// Figure cells carry `data-era`, `data-figure` and `data-value` (the integer, or "n/a").
//
// Errors: the writer's.
func RenderHTML(w io.Writer, rep Report) error {
	page := htmlPage{Report: rep}
	var traces []*figures.Trace
	for _, er := range rep.Eras {
		res, tr := figures.ComputeTrace(er.Records, er.Era, er.Options)
		page.Results = append(page.Results, res)
		traces = append(traces, tr)
	}
	axisMs := int64(1)
	for _, tr := range traces {
		axisMs = max(axisMs, tr.LastTs-tr.FirstTs)
	}
	page.AxisMs = axisMs
	page.Ticks = axisTicks(axisMs)
	for i, er := range rep.Eras {
		page.Eras = append(page.Eras, eraView(er, page.Results[i], traces[i], axisMs))
	}
	page.Table = figureTable(page.Results)
	page.Summary, page.Relations = summarize(rep.Eras, page.Results, traces)
	page.Cooperative = cooperativeCost(page.Results)
	page.Verdict, page.Rankings = rep.Verdict, rep.VerdictRankings
	for _, p := range rep.Plots {
		svg := p.SVG
		if i := bytes.Index(svg, []byte("<svg")); i > 0 {
			svg = svg[i:]
		}
		page.PlotViews = append(page.PlotViews, plotView{Title: p.Title, File: p.File, SVG: template.HTML(svg)})
	}
	for k, v := range rep.Params {
		page.Params = append(page.Params, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(page.Params)
	for k, v := range rep.Versions {
		page.VersionList = append(page.VersionList, k+" "+v)
	}
	sort.Strings(page.VersionList)
	return pageTmpl.Execute(w, page)
}

// axisTicks puts a tick every 1, 2 or 5 × 10^k ms, about five over [0, axisMs].
func axisTicks(axisMs int64) []tickView {
	step := int64(1)
	for axisMs/step > 6 {
		switch s := step; {
		case strconv.FormatInt(s, 10)[0] == '2':
			step = s / 2 * 5
		default:
			step = s * 2
		}
	}
	var out []tickView
	for at := int64(0); at <= axisMs; at += step {
		label := fmt.Sprintf("%d ms", at)
		if step >= 1000 {
			label = fmt.Sprintf("%g s", float64(at)/1000)
		}
		out = append(out, tickView{Label: label, AtMs: at, Style: template.CSS(fmt.Sprintf("left:%.3f%%", float64(at)*100/float64(axisMs)))})
	}
	return out
}

// RenderTable writes the eras' total figures side by side as an aligned text table: one row per figure
// (FigureNames order), one column per result. A not-applicable figure shows "n/a"; a time_to_stable_ms of
// NeverStable shows "never". Errors: the writer's.
func RenderTable(w io.Writer, results ...figures.Result) error {
	lines := [][]string{{"figure"}}
	for _, r := range results {
		lines[0] = append(lines[0], r.Era)
	}
	for _, row := range figureTable(results) {
		line := []string{row.Label}
		for _, c := range row.Cells {
			line = append(line, c.Text)
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	writeAligned(&b, lines)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAligned writes lines as a table: the first column left-aligned (names), the others
// right-aligned (numbers), two spaces apart, each column as wide as its widest cell.
func writeAligned(b *strings.Builder, lines [][]string) {
	var widths []int
	for _, line := range lines {
		for i, c := range line {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, line := range lines {
		fmt.Fprintf(b, "%-*s", widths[0], line[0])
		for i, c := range line[1:] {
			fmt.Fprintf(b, "  %*s", widths[i+1], c)
		}
		b.WriteByte('\n')
	}
}

type figRow struct {
	Name  string // the figure's JSON name
	Label string // for people: the name, and what an aggregate is where it is not a sum
	Cells []figCell
}

// totalsLabels say what a totals cell is where it is not the run's sum: the run's time_to_stable_ms is
// its worst event's (max_concurrent_owners says it in its name).
var totalsLabels = map[string]string{figures.FigTimeToStableMs: figures.FigTimeToStableMs + " (worst event)"}

type figCell struct {
	Era   string
	Text  string // for people: "n/a", "never" or the integer
	Value string // for machines: "n/a" or the integer
}

func cell(era string, f figures.Figures, na []string, name string) figCell {
	for _, n := range na {
		if n == name {
			return figCell{Era: era, Text: "n/a", Value: "n/a"}
		}
	}
	v, _ := f.Get(name)
	c := figCell{Era: era, Text: strconv.FormatInt(v, 10), Value: strconv.FormatInt(v, 10)}
	if name == figures.FigTimeToStableMs && v == figures.NeverStable {
		c.Text = "never"
	}
	return c
}

func figureTable(results []figures.Result) []figRow {
	var rows []figRow
	for _, name := range figures.FigureNames {
		row := figRow{Name: name, Label: name}
		if l, ok := totalsLabels[name]; ok {
			row.Label = l
		}
		for _, r := range results {
			row.Cells = append(row.Cells, cell(r.Era, r.Totals, r.NotApplicable, name))
		}
		rows = append(rows, row)
	}
	return rows
}

// The page's view model.
type htmlPage struct {
	Report
	Results     []figures.Result
	Table       []figRow
	Params      []string
	VersionList []string
	AxisMs      int64
	Ticks       []tickView
	Eras        []eraPage
	Summary     []string
	Relations   []relationView
	Cooperative *coopView
	PlotViews   []plotView
	Verdict     []string
	Rankings    []string
}

type plotView struct {
	Title, File string
	SVG         template.HTML
}

type relationView struct {
	Era, Text, Got, Status string
}

type coopView struct {
	Costs []string // "rebalance_attempts: 10 against 5"
	Why   []string
}

type eraPage struct {
	Era, Timeline string
	Colour        template.CSS
	DurationMs    int64
	Lanes         []laneView
	Members       []memberLane
	FaultBoxes    []boxView
	Legend        []legendItem
	Marks         []markView
	Columns       []string // "totals", then each event
	Rows          []figRow // figures × (totals, events)
	Events        []figures.Event
	Faults        []figures.FaultWindow
	Warnings      []string
}

type laneView struct {
	Era, Topic, Partition, FinalOwner, Label string
	Height                                   template.CSS
	Segs                                     []boxView
	Busy                                     []boxView
	Marks                                    []boxView
	MaxLag                                   int
	LagPath                                  string
}

type memberLane struct {
	Era, Member string
	Colour      template.CSS
	Delivers    int
	Spans       []boxView
	TickPath    string
}

type boxView struct {
	Class, Owner, Title, State string
	AtMs, FromMs, ToMs         int64
	Delivers                   int // member spans: the member's deliveries within [FromMs, ToMs)
	Style                      template.CSS
}

type legendItem struct {
	Member string
	Style  template.CSS
}

type tickView struct {
	Label string
	AtMs  int64
	Style template.CSS
}

type markView struct {
	Kind, Text string
	AtMs       int64
}

const (
	rowPx = 14
	svgW  = 1000 // the inline SVGs' user units across the axis
	lagH  = 16
)

// colour gives member i of n a stable, distinct colour.
func colour(i int) string {
	palette := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
		"#ff9da7", "#9c755f", "#bab0ac"}
	if i < len(palette) {
		return palette[i]
	}
	return fmt.Sprintf("hsl(%d,60%%,55%%)", (i*137)%360) // golden angle: neighbours stay apart
}

// partitionLabel names a lane by its partition number (with the topic when the era has several).
func partitionLabel(t figures.TopicPartition, topics int) string {
	if topics > 1 {
		return fmt.Sprintf("%s p%d", t.Topic(), t.Partition())
	}
	return fmt.Sprintf("partition %d", t.Partition())
}

func eraView(er EraReport, res figures.Result, tr *figures.Trace, axisMs int64) eraPage {
	p := eraPage{Era: er.Era, Timeline: er.Timeline, Events: res.Events, Faults: res.Faults, Warnings: res.Warnings,
		Colour: template.CSS("border-left-color:" + EraColour(er.Era, 0))}
	p.DurationMs = tr.LastTs - tr.FirstTs
	pct := func(ts int64) float64 { return float64(ts-tr.FirstTs) * 100 / float64(axisMs) }
	box := func(from, to int64) string {
		l, wd := pct(from), pct(to)-pct(from)
		if wd < 0.15 {
			wd = 0.15 // keep instants visible
		}
		return fmt.Sprintf("left:%.3f%%;width:%.3f%%", l, wd)
	}
	col := func(ts int64) int { return int(float64(ts-tr.FirstTs) * svgW / float64(axisMs)) }
	colours := map[string]string{}
	for i, m := range tr.Members {
		colours[m] = colour(i)
		p.Legend = append(p.Legend, legendItem{Member: m, Style: template.CSS("background:" + colour(i))})
	}
	var marks []boxView
	for _, m := range tr.Marks {
		kind := "trigger"
		if m.Kind == timeline.Fault {
			kind = "fault"
		}
		at := m.Ts - tr.FirstTs
		p.Marks = append(p.Marks, markView{Kind: kind, Text: m.Text, AtMs: at})
		marks = append(marks, boxView{Class: "mark " + kind, AtMs: at, Title: fmt.Sprintf("%s %s at %d ms", kind, m.Text, at),
			Style: template.CSS(fmt.Sprintf("left:%.3f%%", pct(m.Ts)))})
	}
	var busy []boxView
	for _, b := range tr.Busy {
		if b.End == b.Start {
			continue // a member that joined and was assigned in the same ms: nothing to see
		}
		busy = append(busy, boxView{Class: "rebalance", Title: fmt.Sprintf("rebalance %d–%d ms", b.Start-tr.FirstTs, b.End-tr.FirstTs),
			Style: template.CSS(box(b.Start, b.End))})
	}
	for _, f := range res.Faults {
		p.FaultBoxes = append(p.FaultBoxes, boxView{Class: "fault-window", FromMs: f.StartMs, ToMs: f.EndMs,
			Title: fmt.Sprintf("%s %s from %d ms to %d ms", f.Action, f.Target, f.StartMs, f.EndMs),
			Style: template.CSS(box(tr.FirstTs+f.StartMs, tr.FirstTs+f.EndMs))})
	}
	topics := map[string]bool{}
	for _, t := range tr.Parts {
		topics[t.Topic()] = true
	}
	for _, t := range tr.Parts {
		lane := laneView{Era: er.Era, Topic: t.Topic(), Partition: strconv.Itoa(int(t.Partition())),
			FinalOwner: res.FinalOwners[t.String()], Label: partitionLabel(t, len(topics)), Busy: busy, Marks: marks}
		// Stack concurrent owners: each segment takes the lowest row free at its start.
		segs := append([]figures.Segment(nil), tr.Segments[t]...)
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].Start < segs[j].Start })
		var rowEnds []int64
		for _, s := range segs {
			row := -1
			for i, e := range rowEnds {
				if e <= s.Start {
					row = i
					break
				}
			}
			if row < 0 {
				row = len(rowEnds)
				rowEnds = append(rowEnds, 0)
			}
			rowEnds[row] = s.End
			if s.Open {
				rowEnds[row] = tr.LastTs + 1
			}
			until := "end"
			if !s.Open {
				until = fmt.Sprintf("%d ms", s.End-tr.FirstTs)
			}
			lane.Segs = append(lane.Segs, boxView{Class: "seg", Owner: s.Member,
				Title: fmt.Sprintf("%s owns %s from %d ms to %s", s.Member, t, s.Start-tr.FirstTs, until),
				Style: template.CSS(fmt.Sprintf("%s;top:%dpx;height:%dpx;background:%s",
					box(s.Start, s.End), row*rowPx, rowPx-2, colours[s.Member]))})
		}
		rows := len(rowEnds)
		if rows == 0 {
			rows = 1
		}
		lane.Height = template.CSS(fmt.Sprintf("height:%dpx", rows*rowPx))
		lane.MaxLag, lane.LagPath = lagPath(tr.Lag[t], col, col(tr.LastTs))
		p.Lanes = append(p.Lanes, lane)
	}
	for i, m := range tr.Members {
		ml := memberLane{Era: er.Era, Member: m, Colour: template.CSS("background:" + colour(i)), Delivers: len(tr.Delivers[m])}
		ds := tr.Delivers[m] // in ts order: the records were replayed sorted
		for _, s := range tr.MemberSpans[m] {
			end := s.End
			if end == tr.LastTs {
				end++ // the timeline's last ms belongs to the span that runs to the end
			}
			n := sort.Search(len(ds), func(i int) bool { return ds[i] >= end }) - sort.Search(len(ds), func(i int) bool { return ds[i] >= s.Start })
			ml.Spans = append(ml.Spans, boxView{Class: "ms " + string(s.State), State: string(s.State),
				FromMs: s.Start - tr.FirstTs, ToMs: s.End - tr.FirstTs, Delivers: n,
				Title: fmt.Sprintf("%s %s from %d ms to %d ms: %d deliveries", m, s.State, s.Start-tr.FirstTs, s.End-tr.FirstTs, n),
				Style: template.CSS(box(s.Start, s.End))})
		}
		ml.TickPath = tickPath(tr.Delivers[m], col)
		p.Members = append(p.Members, ml)
	}
	p.Columns = []string{"totals"}
	for _, ev := range res.Events {
		p.Columns = append(p.Columns, fmt.Sprintf("%s @%d ms", ev.Trigger, ev.AtMs))
	}
	for _, name := range figures.FigureNames {
		row := figRow{Name: name, Cells: []figCell{cell(er.Era, res.Totals, res.NotApplicable, name)}}
		for _, ev := range res.Events {
			row.Cells = append(row.Cells, cell(er.Era, ev.Figures, res.NotApplicable, name))
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// lagPath draws a partition's lag (a step function, the max per pixel column) as an SVG path over
// columns [0, last], scaled to its own maximum; max is that maximum (0: a flat line at the bottom).
func lagPath(pts []figures.LagPoint, col func(int64) int, last int) (maxLag int, path string) {
	if last < 0 {
		last = 0
	}
	vals := make([]int, last+1)
	for i, pt := range pts {
		from, to := col(pt.Ts), last
		if i+1 < len(pts) {
			to = col(pts[i+1].Ts)
		}
		for c := max(from, 0); c <= to && c <= last; c++ {
			vals[c] = max(vals[c], pt.Pending)
		}
		maxLag = max(maxLag, pt.Pending)
	}
	y := func(v int) float64 {
		if maxLag == 0 {
			return lagH - 0.5
		}
		return lagH - 0.5 - float64(v)*(lagH-1)/float64(maxLag)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "M0,%.1f", y(vals[0]))
	for c := 1; c <= last; c++ {
		if vals[c] != vals[c-1] {
			fmt.Fprintf(&b, "H%dV%.1f", c, y(vals[c]))
		}
	}
	fmt.Fprintf(&b, "H%d", last+1)
	return maxLag, b.String()
}

// tickPath draws one vertical tick per pixel column with deliveries, its height growing with the log of
// their count.
func tickPath(ts []int64, col func(int64) int) string {
	counts := map[int]int{}
	var cols []int
	for _, t := range ts {
		c := col(t)
		if counts[c] == 0 {
			cols = append(cols, c)
		}
		counts[c]++
	}
	var b strings.Builder
	for _, c := range cols {
		h := min(2+3*math.Log2(float64(counts[c])), rowPx-2)
		fmt.Fprintf(&b, "M%d.5,%dv-%.1f", c, rowPx, h)
	}
	return b.String()
}

var pageTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rebalancelab: {{.Scenario}}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #999; text-align: right; }
ul.summary li { margin: .3em 0; max-width: 70em; }
tr.rel-no td { color: #b00; }
.timeline { margin: .5em 0 1em 0; }
.axis-row { display: flex; position: sticky; top: 0; background: #fff; z-index: 2; }
.axis-row .label, .lane .label, .lag-lane .label, .member-lane .label, .fault-lane .label { width: 10em; flex: none; font-family: monospace; font-size: 12px; overflow: hidden; white-space: nowrap; }
.axis { position: relative; flex: 1; height: 1.4em; border-bottom: 1px solid #888; }
.tick { position: absolute; bottom: 0; font-size: 11px; color: #555; border-left: 1px solid #888; padding-left: 2px; white-space: nowrap; }
.era-lanes { border-left: 4px solid #888; padding-left: 4px; margin: .6em 0; }
.era-head { font-weight: bold; margin: .3em 0; }
.lane, .lag-lane, .member-lane, .fault-lane { display: flex; align-items: flex-start; }
.lane { border-top: 1px solid #eee; }
.track { position: relative; flex: 1; }
.lag-lane .track svg, .member-lane .track svg { position: absolute; left: 0; top: 0; width: 100%; }
.lag-lane .label { color: #666; }
.seg { position: absolute; border-radius: 2px; opacity: .9; }
.rebalance { position: absolute; top: 0; bottom: 0; background: repeating-linear-gradient(45deg, #ddd, #ddd 3px, #f4f4f4 3px, #f4f4f4 6px); }
.mark { position: absolute; top: 0; bottom: 0; width: 0; }
.mark.fault { border-left: 2px solid #d00; }
.mark.trigger { border-left: 2px dashed #333; }
.fault-window { position: absolute; top: 2px; height: 10px; background: #f4a0a0; border: 1px solid #d00; }
.ms { position: absolute; top: 0; height: 14px; }
.ms.consuming { background: #cfe8c9; }
.ms.rebalancing { background: #f7d36b; }
.ms.paused { background: #e15759; }
.ms.joining { background: repeating-linear-gradient(45deg, #ccc, #ccc 3px, #f4f4f4 3px, #f4f4f4 6px); }
.ms.idle { background: #f1f1f1; }
.swatch { display: inline-block; width: 1em; height: 1em; vertical-align: middle; margin: 0 .3em 0 1em; }
.plot svg { max-width: 100%; height: auto; }
.verdict-row { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.verdict-row .verdict { flex: 1 1 32em; margin: 0; padding-left: 1.2em; }
.verdict-row .plot { flex: 1 1 1150px; margin: 0; }
.warn { color: #a60; }
</style>
</head>
<body>
<h1>{{.Scenario}}</h1>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>seed {{.Seed}}{{range .Params}} · {{.}}{{end}}{{range .VersionList}} · {{.}}{{end}}</p>

{{if or .PlotViews .Verdict}}<section id="sweep">
<h2>The sweep{{if .Verdict}}: its verdict{{end}}</h2>
<div class="verdict-row">
{{if .Verdict}}<ul class="verdict" id="verdict">
{{range .Verdict}}<li>{{.}}</li>
{{end}}</ul>{{end}}
{{range .PlotViews}}<figure class="plot"><figcaption>{{.Title}}{{if .File}} (<a href="{{.File}}">{{.File}}</a>){{end}}</figcaption>
{{.SVG}}
</figure>
{{end}}</div>
{{if .Rankings}}<details id="verdict-rankings"><summary>Every cell ranked, and each figure's growth</summary><ul>
{{range .Rankings}}<li>{{.}}</li>
{{end}}</ul></details>{{end}}
</section>{{end}}

<h2 id="showed">What the run showed</h2>
<ul class="summary" id="summary">
{{range .Summary}}<li>{{.}}</li>
{{end}}</ul>
{{if .Relations}}<table id="relations"><tr><th>era</th><th>relation</th><th>seen</th><th></th></tr>
{{range .Relations}}<tr class="{{if eq .Status "did not hold"}}rel-no{{else}}rel-ok{{end}}" data-era="{{.Era}}" data-status="{{.Status}}"><td>{{.Era}}</td><td>{{.Text}}</td><td>{{.Got}}</td><td>{{.Status}}</td></tr>
{{end}}</table>{{end}}

{{with .Cooperative}}<section id="cooperative-rounds">
<h2>Why cooperative costs more here: two rounds</h2>
<ul>{{range .Costs}}<li class="cost">{{.}}</li>{{end}}</ul>
{{range .Why}}<p>{{.}}</p>
{{end}}</section>{{end}}

<h2>Figures</h2>
<p>Totals leave the group's formation out (until it was first stable or the first trigger); duplicates, lost and the invariants cover the whole run. Every figure is defined in one place: the figure table of rebalancelab's design document, <code>docs/design.md</code>, section &ldquo;Scenarios, timeline and figures&rdquo;.</p>
<table id="figures">
<tr><th>figure</th>{{range .Results}}<th>{{.Era}}</th>{{end}}</tr>
{{range .Table}}{{$fig := .Name}}<tr><th>{{.Label}}</th>{{range .Cells}}<td class="{{if eq .Value "n/a"}}na{{else}}num{{end}}" data-era="{{.Era}}" data-figure="{{$fig}}" data-value="{{.Value}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>


<h2 id="timelines">Every era on one time axis</h2>
<p>x: ms since the era's first record, the same scale for every era. Per partition: who owned it (member view; colour per member, stacked when several claimed it),
hatched where some member was rebalancing or joining, red line: fault, dashed: trigger; under it the partition's lag (records produced and not yet delivered; the number is its peak).
Per member: <span class="swatch ms consuming" style="position:static"></span>consuming <span class="swatch ms rebalancing" style="position:static"></span>rebalancing while it holds partitions (the ticks show whether it still delivered; each span's tooltip counts its deliveries)
<span class="swatch ms paused" style="position:static"></span>paused (held partitions when its rebalance began, holds none now: the stop-the-world)
<span class="swatch ms joining" style="position:static"></span>joining <span class="swatch ms idle" style="position:static"></span>idle; ticks: its deliveries. Red boxes: fault windows.</p>
<div class="timeline" id="timeline" data-axis-ms="{{.AxisMs}}">
<div class="axis-row"><span class="label"></span><div class="axis" data-axis-ms="{{.AxisMs}}">{{range .Ticks}}<span class="tick" data-ms="{{.AtMs}}" style="{{.Style}}">{{.Label}}</span>{{end}}</div></div>
{{range .Eras}}<div class="era-lanes" data-era="{{.Era}}" data-span-ms="{{.DurationMs}}" style="{{.Colour}}">
<div class="era-head">{{.Era}} · {{.DurationMs}} ms{{if .Timeline}} · {{.Timeline}}{{end}}</div>
{{range .Lanes}}<div class="lane" data-era="{{.Era}}" data-topic="{{.Topic}}" data-partition="{{.Partition}}" data-final-owner="{{.FinalOwner}}">
<span class="label">{{.Label}}</span><div class="track" style="{{.Height}}">{{range .Busy}}<div class="{{.Class}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}{{range .Segs}}<div class="{{.Class}}" data-owner="{{.Owner}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}{{range .Marks}}<div class="{{.Class}}" data-at-ms="{{.AtMs}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}</div>
</div>
<div class="lag-lane" data-era="{{.Era}}" data-topic="{{.Topic}}" data-partition="{{.Partition}}" data-max-lag="{{.MaxLag}}"><span class="label">lag {{.MaxLag}}</span><div class="track" style="height:16px"><svg viewBox="0 0 1000 16" preserveAspectRatio="none" height="16"><path d="{{.LagPath}}" fill="none" stroke="#555" vector-effect="non-scaling-stroke"/></svg></div></div>
{{end}}{{if .FaultBoxes}}<div class="fault-lane" data-era="{{.Era}}"><span class="label">faults</span><div class="track" style="height:14px">{{range .FaultBoxes}}<div class="{{.Class}}" data-from-ms="{{.FromMs}}" data-to-ms="{{.ToMs}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}</div></div>
{{end}}{{range .Members}}<div class="member-lane" data-era="{{.Era}}" data-member="{{.Member}}" data-delivers="{{.Delivers}}"><span class="label"><span class="swatch" style="{{.Colour}};margin-left:0"></span>{{.Member}}</span><div class="track" style="height:14px">{{range .Spans}}<div class="{{.Class}}" data-state="{{.State}}" data-from-ms="{{.FromMs}}" data-to-ms="{{.ToMs}}" data-delivers="{{.Delivers}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}<svg viewBox="0 0 1000 14" preserveAspectRatio="none" height="14"><path d="{{.TickPath}}" stroke="#222" vector-effect="non-scaling-stroke"/></svg></div></div>
{{end}}</div>
{{end}}</div>

{{range .Eras}}
<section class="era" id="era-{{.Era}}" data-era="{{.Era}}">
<h2>Era {{.Era}}</h2>
<p>{{if .Timeline}}timeline {{.Timeline}} · {{end}}{{.DurationMs}} ms</p>
<p class="legend">{{range .Legend}}<span class="swatch" style="{{.Style}}"></span>{{.Member}}{{end}}</p>
{{if .Marks}}<table class="marks"><tr><th>at ms</th><th>kind</th><th>what</th></tr>
{{range .Marks}}<tr><td class="num">{{.AtMs}}</td><td>{{.Kind}}</td><td>{{.Text}}</td></tr>
{{end}}</table>{{end}}
{{if .Faults}}<table class="faults"><tr><th>fault</th><th>target</th><th>from ms</th><th>to ms</th><th>lasted ms</th></tr>
{{range .Faults}}<tr><td>{{.Action}}</td><td>{{.Target}}</td><td class="num">{{.StartMs}}</td><td class="num">{{.EndMs}}{{if .Open}} (still in force){{end}}</td><td class="num">{{.DurationMs}}</td></tr>
{{end}}</table>{{end}}
{{if .Events}}<table class="events"><tr><th>trigger</th><th>at ms</th><th>end ms</th><th>window ended by</th></tr>
{{range .Events}}<tr><td>{{.Trigger}}</td><td class="num">{{.AtMs}}</td><td class="num">{{.EndMs}}</td><td>{{.End}}</td></tr>
{{end}}</table>{{end}}
<table class="era-figures" data-era="{{.Era}}">
<tr><th>figure</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Name}}</th>{{range .Cells}}<td class="{{if eq .Value "n/a"}}na{{else}}num{{end}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>
{{range .Warnings}}<p class="warn">warning: {{.}}</p>
{{end}}</section>
{{end}}
</body>
</html>
`))

// writeReport writes dir/index.html (RenderHTML of the run, with plots) and the timelines next to it.
func (r *RunResult) writeReport(dir string, plots []Plot) error {
	return r.writeReportVerdict(dir, plots, nil, nil)
}

// writeReportVerdict is writeReport with a sweep's verdict at the top of the page (Report.Verdict and
// VerdictRankings).
func (r *RunResult) writeReportVerdict(dir string, plots []Plot, verdict, rankings []string) error {
	if err := r.WriteTimelines(dir); err != nil {
		return err
	}
	if r.Streams != nil {
		return r.Streams.WriteReport(dir, r)
	}
	rep := Report{Scenario: r.Scenario, Description: r.Description, Seed: r.Seed, Params: r.ParamsMap(),
		Versions: r.Versions, Plots: plots, Verdict: verdict, VerdictRankings: rankings}
	for _, e := range r.Eras {
		if e.Applies {
			rep.Eras = append(rep.Eras, EraReport{Era: e.Era, Records: e.Records, Options: e.Options, Timeline: e.Timeline,
				Relations: e.Relations, Errors: e.Errors})
		}
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	if err := RenderHTML(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SweepPlotFile is the sweep plot's name in a sweep's report directory.
const SweepPlotFile = "sweep.svg"

// WriteReport writes a sweep's report to dir: SweepPlotFile (WriteSVG), and index.html, the page of
// the largest size's last completed run (RenderHTML) with the sweep plot embedded, its timelines
// next to it. Errors: no size completed a run; the file system's.
func (s *SweepResult) WriteReport(dir string) error {
	var last *RunResult
	for _, z := range s.Sizes {
		if len(z.Runs) > 0 {
			last = z.Runs[len(z.Runs)-1]
		}
	}
	if last == nil {
		return fmt.Errorf("sweep report: no run completed")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var svg bytes.Buffer
	if err := s.WriteSVG(&svg); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, SweepPlotFile), svg.Bytes(), 0o644); err != nil {
		return err
	}
	title := fmt.Sprintf("The sweep: the %q event's figures against N, every era (medians, min–max bars); the timelines below are the run at N=%d",
		s.Trigger, last.Params.Consumers)
	v := s.Verdict()
	var head []string
	if len(v.Lines) > 0 {
		head = append([]string{v.Lines[0]}, v.Conclusions...)
	}
	return last.writeReportVerdict(dir, []Plot{{Title: title, File: SweepPlotFile, SVG: svg.Bytes()}}, head, v.Rankings)
}
