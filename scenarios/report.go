package scenarios

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// EraReport is one era's input to RenderHTML: its merged timeline and the options its figures use.
type EraReport struct {
	Era      string
	Records  []timeline.Record
	Options  FigureOptions
	Timeline string // the timeline file's name, shown in the page; may be ""
}

// Report is one scenario run, as RenderHTML draws it.
type Report struct {
	Scenario string
	Seed     int64
	Params   map[string]any
	Versions map[string]string
	Eras     []EraReport
}

// RenderHTML writes one self-contained HTML page (inline CSS, no scripts, no external assets) for a run:
// a side-by-side figure table of every era, then per era a partition-ownership timeline and its figures
// per event. The figures are Compute's for each era's records and options, so they equal the result JSON's.
//
// Ownership timeline: one lane per known partition, an element
// `<div class="lane" data-era="E" data-topic="T" data-partition="P" data-final-owner="O">` where O is
// Result.FinalOwners["T-P"] (one member, "" for none, comma-joined when several still claim it). Inside a
// lane: `div.seg[data-owner]` per ownership interval (member view, coloured per member; concurrent owners on
// stacked rows), `div.rebalance` where some live member was rebalancing or joining, `div.mark.fault` and
// `div.mark.trigger` at faults and triggers. Figure cells carry `data-era`, `data-figure` and `data-value`
// (the integer, or "n/a").
//
// Errors: the writer's.
func RenderHTML(w io.Writer, rep Report) error {
	page := htmlPage{Report: rep}
	for _, er := range rep.Eras {
		res, tr := compute(er.Records, er.Era, er.Options)
		page.Results = append(page.Results, res)
		page.Eras = append(page.Eras, eraView(er, res, tr))
	}
	page.Table = figureTable(page.Results)
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

// RenderTable writes the eras' total figures side by side as an aligned text table: one row per figure
// (FigureNames order), one column per result. A not-applicable figure shows "n/a"; a time_to_stable_ms of
// NeverStable shows "never". Errors: the writer's.
func RenderTable(w io.Writer, results ...Result) error {
	lines := [][]string{{"figure"}}
	for _, r := range results {
		lines[0] = append(lines[0], r.Era)
	}
	for _, row := range figureTable(results) {
		line := []string{row.Name}
		for _, c := range row.Cells {
			line = append(line, c.Text)
		}
		lines = append(lines, line)
	}
	widths := make([]int, len(lines[0]))
	for _, line := range lines {
		for i, c := range line {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, line := range lines {
		fmt.Fprintf(&b, "%-*s", widths[0], line[0]) // names left, numbers right
		for i, c := range line[1:] {
			fmt.Fprintf(&b, "  %*s", widths[i+1], c)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type figRow struct {
	Name  string
	Cells []figCell
}

type figCell struct {
	Era   string
	Text  string // for people: "n/a", "never" or the integer
	Value string // for machines: "n/a" or the integer
}

func cell(era string, f Figures, na []string, name string) figCell {
	for _, n := range na {
		if n == name {
			return figCell{Era: era, Text: "n/a", Value: "n/a"}
		}
	}
	v, _ := f.Get(name)
	c := figCell{Era: era, Text: strconv.FormatInt(v, 10), Value: strconv.FormatInt(v, 10)}
	if name == FigTimeToStableMs && v == NeverStable {
		c.Text = "never"
	}
	return c
}

func figureTable(results []Result) []figRow {
	var rows []figRow
	for _, name := range FigureNames {
		row := figRow{Name: name}
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
	Results     []Result
	Table       []figRow
	Params      []string
	VersionList []string
	Eras        []eraPage
}

type eraPage struct {
	Era, Timeline string
	DurationMs    int64
	Lanes         []laneView
	Legend        []legendItem
	Ticks         []tickView
	Marks         []markView
	Columns       []string // "totals", then each event
	Rows          []figRow // figures × (totals, events)
	Events        []Event
	Faults        []FaultWindow
	Warnings      []string
}

type laneView struct {
	Era, Topic, Partition, FinalOwner, Label string
	Height                                   template.CSS
	Segs                                     []boxView
	Busy                                     []boxView
	Marks                                    []boxView
}

type boxView struct {
	Class, Owner, Title string
	Style               template.CSS
}

type legendItem struct {
	Member string
	Style  template.CSS
}

type tickView struct {
	Label string
	Style template.CSS
}

type markView struct {
	Kind, Text string
	AtMs       int64
}

const rowPx = 14

// colour gives member i of n a stable, distinct colour.
func colour(i int) string {
	palette := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
		"#ff9da7", "#9c755f", "#bab0ac"}
	if i < len(palette) {
		return palette[i]
	}
	return fmt.Sprintf("hsl(%d,60%%,55%%)", (i*137)%360) // golden angle: neighbours stay apart
}

func eraView(er EraReport, res Result, tr *trace) eraPage {
	p := eraPage{Era: er.Era, Timeline: er.Timeline, Events: res.Events, Faults: res.Faults, Warnings: res.Warnings}
	span := tr.lastTs - tr.firstTs
	p.DurationMs = span
	if span <= 0 {
		span = 1
	}
	pct := func(ts int64) float64 { return float64(ts-tr.firstTs) * 100 / float64(span) }
	box := func(from, to int64) string {
		l, wd := pct(from), pct(to)-pct(from)
		if wd < 0.15 {
			wd = 0.15 // keep instants visible
		}
		return fmt.Sprintf("left:%.3f%%;width:%.3f%%", l, wd)
	}
	colours := map[string]string{}
	for i, m := range tr.members {
		colours[m] = colour(i)
		p.Legend = append(p.Legend, legendItem{Member: m, Style: template.CSS("background:" + colour(i))})
	}
	for i := 0; i <= 4; i++ {
		at := tr.firstTs + span*int64(i)/4
		p.Ticks = append(p.Ticks, tickView{Label: fmt.Sprintf("%.2f s", float64(at-tr.firstTs)/1000),
			Style: template.CSS(fmt.Sprintf("left:%.3f%%", pct(at)))})
	}
	var marks []boxView
	for _, m := range tr.marks {
		kind := "trigger"
		if m.kind == timeline.Fault {
			kind = "fault"
		}
		p.Marks = append(p.Marks, markView{Kind: kind, Text: m.text, AtMs: m.ts - tr.firstTs})
		marks = append(marks, boxView{Class: "mark " + kind, Title: fmt.Sprintf("%s %s at %d ms", kind, m.text, m.ts-tr.firstTs),
			Style: template.CSS(fmt.Sprintf("left:%.3f%%", pct(m.ts)))})
	}
	var busy []boxView
	for _, b := range tr.busy {
		if b.end == b.start {
			continue // a member that joined and was assigned in the same ms: nothing to see
		}
		busy = append(busy, boxView{Class: "rebalance", Title: fmt.Sprintf("rebalance %d–%d ms", b.start-tr.firstTs, b.end-tr.firstTs),
			Style: template.CSS(box(b.start, b.end))})
	}
	for _, t := range tr.parts {
		lane := laneView{Era: er.Era, Topic: t.topic, Partition: strconv.Itoa(int(t.part)),
			FinalOwner: res.FinalOwners[t.String()], Label: t.String(), Busy: busy, Marks: marks}
		// Stack concurrent owners: each segment takes the lowest row free at its start.
		segs := append([]segment(nil), tr.segments[t]...)
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].start < segs[j].start })
		var rowEnds []int64
		for _, s := range segs {
			row := -1
			for i, e := range rowEnds {
				if e <= s.start {
					row = i
					break
				}
			}
			if row < 0 {
				row = len(rowEnds)
				rowEnds = append(rowEnds, 0)
			}
			rowEnds[row] = s.end
			if s.open {
				rowEnds[row] = tr.lastTs + 1
			}
			until := "end"
			if !s.open {
				until = fmt.Sprintf("%d ms", s.end-tr.firstTs)
			}
			lane.Segs = append(lane.Segs, boxView{Class: "seg", Owner: s.member,
				Title: fmt.Sprintf("%s owns %s from %d ms to %s", s.member, t, s.start-tr.firstTs, until),
				Style: template.CSS(fmt.Sprintf("%s;top:%dpx;height:%dpx;background:%s",
					box(s.start, s.end), row*rowPx, rowPx-2, colours[s.member]))})
		}
		rows := len(rowEnds)
		if rows == 0 {
			rows = 1
		}
		lane.Height = template.CSS(fmt.Sprintf("height:%dpx", rows*rowPx))
		p.Lanes = append(p.Lanes, lane)
	}
	p.Columns = []string{"totals"}
	for _, ev := range res.Events {
		p.Columns = append(p.Columns, fmt.Sprintf("%s @%d ms", ev.Trigger, ev.AtMs))
	}
	for _, name := range FigureNames {
		row := figRow{Name: name, Cells: []figCell{cell(er.Era, res.Totals, res.NotApplicable, name)}}
		for _, ev := range res.Events {
			row.Cells = append(row.Cells, cell(er.Era, ev.Figures, res.NotApplicable, name))
		}
		p.Rows = append(p.Rows, row)
	}
	return p
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
.timeline { margin: .5em 0 1em 0; }
.axis, .track { position: relative; margin-left: 7em; }
.axis { height: 1.4em; border-bottom: 1px solid #888; }
.tick { position: absolute; bottom: 0; font-size: 11px; color: #555; border-left: 1px solid #888; padding-left: 2px; }
.lane { display: flex; align-items: flex-start; border-bottom: 1px solid #eee; }
.lane .label { width: 7em; flex: none; font-family: monospace; }
.lane .track { flex: 1; margin-left: 0; }
.seg { position: absolute; border-radius: 2px; opacity: .9; }
.rebalance { position: absolute; top: 0; bottom: 0; background: repeating-linear-gradient(45deg, #ddd, #ddd 3px, #f4f4f4 3px, #f4f4f4 6px); }
.mark { position: absolute; top: 0; bottom: 0; width: 0; }
.mark.fault { border-left: 2px solid #d00; }
.mark.trigger { border-left: 2px dashed #333; }
.legend span.swatch { display: inline-block; width: 1em; height: 1em; vertical-align: middle; margin: 0 .3em 0 1em; }
.warn { color: #a60; }
</style>
</head>
<body>
<h1>{{.Scenario}}</h1>
<p>seed {{.Seed}}{{range .Params}} · {{.}}{{end}}{{range .VersionList}} · {{.}}{{end}}</p>

<h2>Figures (whole run)</h2>
<table id="figures">
<tr><th>figure</th>{{range .Results}}<th>{{.Era}}</th>{{end}}</tr>
{{range .Table}}{{$fig := .Name}}<tr><th>{{.Name}}</th>{{range .Cells}}<td class="{{if eq .Value "n/a"}}na{{else}}num{{end}}" data-era="{{.Era}}" data-figure="{{$fig}}" data-value="{{.Value}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>

{{range .Eras}}
<section class="era" id="era-{{.Era}}" data-era="{{.Era}}">
<h2>Era {{.Era}}</h2>
<p>{{if .Timeline}}timeline {{.Timeline}} · {{end}}{{.DurationMs}} ms · ownership per partition (member view), hatched: a rebalance running, red: fault, dashed: trigger</p>
<p class="legend">{{range .Legend}}<span class="swatch" style="{{.Style}}"></span>{{.Member}}{{end}}</p>
<div class="timeline" data-era="{{.Era}}">
<div class="axis">{{range .Ticks}}<span class="tick" style="{{.Style}}">{{.Label}}</span>{{end}}</div>
{{range .Lanes}}<div class="lane" data-era="{{.Era}}" data-topic="{{.Topic}}" data-partition="{{.Partition}}" data-final-owner="{{.FinalOwner}}">
<span class="label">{{.Label}}</span><div class="track" style="{{.Height}}">{{range .Busy}}<div class="{{.Class}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}{{range .Segs}}<div class="{{.Class}}" data-owner="{{.Owner}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}{{range .Marks}}<div class="{{.Class}}" style="{{.Style}}" title="{{.Title}}"></div>{{end}}</div>
</div>
{{end}}</div>
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
