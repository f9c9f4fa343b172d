package streams

// The output of a Streams scenario: the table, the files beside the JSON (the instances' lines and the
// coordinator's generations), and an HTML page with the observer's lanes.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// A Streams run's files (Result.WriteFiles), in the report or output directory.
const (
	AppEventsFile = "streams-app.jsonl"   // every line the instances printed (AppEvent), with "instance"
	GroupLogFile  = "streams-group.jsonl" // the observer's groupview.Generation of every transition
)

// WriteTable writes the events' figures, the lanes, the totals and r's relations and verdict
// (report.StreamsOutput).
func (s *Result) WriteTable(w io.Writer, r *report.RunResult) error {
	fmt.Fprintf(w, "%s (seed %d, %d instances x %d stream threads, %d partitions per input, broker %s, Kafka Streams %s as processes)\n",
		r.Scenario, r.Seed, r.Params.Consumers, s.Threads, r.Params.Partitions, r.BrokerName(), r.Versions["kafka-streams"])
	if !s.Observed {
		fmt.Fprintf(w, "broker %s: no group observer; the events' group figures (time_to_stable_ms, rebalances, generations, tasks_moved) and the stable generations are not measured (0 and none below)\n", r.Broker)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "event\ttime_to_stable_ms\trebalances\tgenerations\ttasks_moved\trecords_reprocessed\t")
	for _, ev := range s.Events {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", ev.Trigger, ev.TimeToStableMs, ev.Rebalances, ev.Generations, ev.TasksMoved, ev.RecordsReprocessed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ev := range s.Events {
		if len(ev.Moves) > 0 {
			fmt.Fprintf(w, "moves at %s: %s\n", ev.Trigger, strings.Join(ev.Moves, "; "))
		}
	}
	fmt.Fprintln(w, "stable generations (the coordinator's view: each stream thread's consumer and its active tasks):")
	var t0 int64
	if len(s.Events) > 0 {
		t0 = s.Events[0].AtMs
	}
	for _, l := range s.Lanes {
		fmt.Fprintf(w, "  gen %-3d +%6d ms  %s\n", l.Generation, l.TsMs-t0, l.Summary())
	}
	t := s.Totals
	fmt.Fprintf(w, "records: in %d, out %d, distinct out %d, duplicates %d, lost %d; processed %d, re-processed %d; rebalances %d\n",
		t.RecordsIn, t.RecordsOut, t.DistinctOut, t.Duplicates, t.Lost, t.RecordsProcessed, t.RecordsReprocessed, t.Rebalances)
	for _, e := range r.Eras {
		report.WriteRelations(w, e.Era, e.Relations)
		for _, msg := range e.Errors {
			fmt.Fprintf(w, "%s: error: %s\n", e.Era, msg)
		}
	}
	fmt.Fprintln(w, r.Verdict())
	return nil
}

// WriteFiles writes streams-app.jsonl and streams-group.jsonl to dir and names them in s
// (report.StreamsOutput).
func (s *Result) WriteFiles(dir string) error {
	write := func(name string, n int, item func(i int) any) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		enc := json.NewEncoder(bw)
		for i := 0; i < n; i++ {
			if err := enc.Encode(item(i)); err != nil {
				f.Close()
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := write(AppEventsFile, len(s.App), func(i int) any { return s.App[i] }); err != nil {
		return err
	}
	if err := write(GroupLogFile, len(s.Generations), func(i int) any { return s.Generations[i] }); err != nil {
		return err
	}
	s.AppFile, s.ObserverLog = AppEventsFile, GroupLogFile
	return nil
}

// WriteReport writes dir/index.html: the relations, the events and the observer's lanes (a row
// per stable generation, a column per stream thread, its tasks in the cell).
//
// (report.StreamsOutput.)
func (s *Result) WriteReport(dir string, r *report.RunResult) error {
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", e(r.Scenario))
	b.WriteString("<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}" +
		".ok{color:#070}.fail{color:#b00}td.t{background:#eef}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1><p>%s</p>\n", e(r.Scenario), e(r.Description))
	var tbl strings.Builder
	if err := s.WriteTable(&tbl, r); err != nil {
		return err
	}
	b.WriteString("<h2>Relations</h2><ul>\n")
	for _, era := range r.Eras {
		for _, rel := range era.Relations {
			cls, mark := "ok", "ok"
			switch {
			case rel.Skipped:
				cls, mark = "skip", "skipped (not measured)"
			case !rel.OK:
				cls, mark = "fail", "FAIL"
			}
			fmt.Fprintf(&b, "<li class=\"%s\">%s %s: %s</li>\n", cls, mark, e(rel.Relation), e(rel.Got))
		}
		for _, msg := range era.Errors {
			fmt.Fprintf(&b, "<li class=\"fail\">error: %s</li>\n", e(msg))
		}
	}
	fmt.Fprintf(&b, "</ul><p class=\"%s\">%s</p>\n", map[bool]string{true: "ok", false: "fail"}[r.Passed()], e(r.Verdict()))
	b.WriteString("\n<h2>Events</h2><pre>" + e(tbl.String()) + "</pre>\n")
	// Lanes: one column per thread that ever held a task.
	var threads []string
	seen := map[string]bool{}
	for _, l := range s.Lanes {
		for _, m := range l.Members {
			if !seen[m.Thread] {
				seen[m.Thread] = true
				threads = append(threads, m.Thread)
			}
		}
	}
	b.WriteString("<h2>Stable generations (the group observer)</h2><table><tr><th>generation</th><th>ms</th>")
	for _, th := range threads {
		fmt.Fprintf(&b, "<th>%s</th>", e(th))
	}
	b.WriteString("</tr>\n")
	var t0 int64
	if len(s.Events) > 0 {
		t0 = s.Events[0].AtMs
	}
	for _, l := range s.Lanes {
		fmt.Fprintf(&b, "<tr><td>%d</td><td>%d</td>", l.Generation, l.TsMs-t0)
		cells := map[string]string{}
		for _, m := range l.Members {
			cells[m.Thread] = strings.Join(m.Tasks, " ")
			if cells[m.Thread] == "" {
				cells[m.Thread] = "(none)"
			}
		}
		for _, th := range threads {
			if c, ok := cells[th]; ok {
				fmt.Fprintf(&b, "<td class=\"t\">%s</td>", e(c))
			} else {
				b.WriteString("<td></td>")
			}
		}
		b.WriteString("</tr>\n")
	}
	fmt.Fprintf(&b, "</table><p>Files: <a href=\"%s\">%s</a> (the instances' lines), <a href=\"%s\">%s</a> (every group transition, decoded).</p></body></html>\n",
		AppEventsFile, AppEventsFile, GroupLogFile, GroupLogFile)
	return os.WriteFile(filepath.Join(dir, "index.html"), []byte(b.String()), 0o644)
}

// JSONParams are the result JSON's params of a Streams run: threads_per_instance, records (acknowledged
// to the inputs) and members_as (always processes) (report.StreamsOutput).
func (s *Result) JSONParams() map[string]any {
	return map[string]any{"threads_per_instance": s.Threads, "records": s.Totals.RecordsIn, "members_as": spec.MembersAsProcesses}
}

// Result is the report's Streams output.
var _ report.StreamsOutput = (*Result)(nil)
