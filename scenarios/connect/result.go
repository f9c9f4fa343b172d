package connect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// Holding is one worker's connectors and tasks in one generation.
type Holding struct {
	Worker     string   `json:"worker"`
	Connectors []string `json:"connectors"`
	Tasks      []string `json:"tasks"`
	DelayMs    int32    `json:"delay_ms,omitempty"` // the assignment's scheduled delay
}

// Generation is a Stable generation of the Connect group as the coordinator saw it, with what
// each worker holds: for the eager protocol its assignment; for sessioned, whose assignments are
// incremental, what it held before less what is revoked plus what is assigned.
type Generation struct {
	TsMs       int64     `json:"ts_ms"`
	Generation int32     `json:"generation"`
	Protocol   string    `json:"protocol"`
	Workers    []Holding `json:"workers"`
	Phase      string    `json:"phase"` // the layout or step it belongs to
}

// Result is a run of connect-workers.
type Result struct {
	Protocol    string       `json:"protocol"`
	DelayMs     int          `json:"scheduled_rebalance_max_delay_ms"`
	Generations []Generation `json:"generations"`
	// Layouts: the generation each layout settled in.
	Layouts []Generation `json:"layouts"`
	// InternalTopics: the cleanup.policy of each of Connect's internal topics (DescribeConfigs).
	InternalTopics map[string]string `json:"internal_topics"`
	Killed         string            `json:"killed"`
	KilledAtMs     int64             `json:"killed_at_ms"`
	KilledTasks    []string          `json:"killed_tasks"` // its connectors and tasks when killed
	// DepartureSeenMs: the first generation without the killed worker, after KilledAtMs; its delay as
	// the leader set it; ReassignedMs: the generation in which the killed worker's tasks were held again.
	DepartureSeenMs int64 `json:"departure_seen_ms"`
	DepartureDelay  int32 `json:"departure_delay_ms"`
	ReassignedMs    int64 `json:"reassigned_ms"`
	// TaskDowntimeMs: per worker, the sum over the tasks it ran when the worker was killed of the time
	// from the kill (or the task's stop on that worker, when later) to the task's next start.
	TaskDowntimeMs map[string]int64 `json:"task_downtime_ms"`
	// TasksStopped: per surviving worker, how many of its tasks stopped after the kill.
	TasksStopped map[string]int `json:"tasks_stopped"`
	// Rebalances: generations from the kill until the group was stable with every task held.
	Rebalances int `json:"rebalances"`
	// End to end: distinct source records acknowledged, distinct of them the sink consumed, the ones
	// missing, and the records consumed more than once.
	Produced   int64                   `json:"produced"`
	Consumed   int64                   `json:"consumed"`
	Missing    int64                   `json:"missing"`
	Duplicates int64                   `json:"duplicates"`
	Relations  []report.RelationResult `json:"relations"`
	// Errors: what the run could not do and went on without (the worker to kill had already exited);
	// any fails it (Passed).
	Errors   []string `json:"errors,omitempty"`
	Versions map[string]string
}

// Passed reports whether the run earned its result: it recorded no error (Errors: the kill -9 that
// found its worker already gone...) and every relation checked held (skipped ones count neither way),
// and some were checked.
func (r *Result) Passed() bool {
	if len(r.Errors) > 0 {
		return false
	}
	var c report.RelationCounts
	c.Add(r.Relations)
	return c.Failed == 0 && c.Held > 0
}

// checkRelations fills r.Relations.
func (r *Result) checkRelations() {
	add := func(text string, ok bool, got string) {
		r.Relations = append(r.Relations, report.RelationResult{Era: r.Protocol, Relation: text, OK: ok, Got: got})
	}
	compact := true
	for _, p := range r.InternalTopics {
		compact = compact && p == "compact"
	}
	add("Connect's 3 internal topics are created compacted (DescribeConfigs cleanup.policy)", compact && len(r.InternalTopics) == 3,
		fmt.Sprint(r.InternalTopics))
	for i, l := range r.Layouts {
		add(fmt.Sprintf("layout %d: the observer shows %d worker(s) holding both connectors and every task, evenly", i+1, len(l.Workers)),
			true, formatHoldings(l.Workers))
	}
	add("end to end: every record the source produced (acknowledged) is consumed by the sink", r.Missing == 0 && r.Produced > 0,
		fmt.Sprintf("produced %d, consumed %d, missing %d, duplicates %d", r.Produced, r.Consumed, r.Missing, r.Duplicates))
	moved := r.ReassignedMs - r.DepartureSeenMs
	tol := int64(1500)
	switch r.Protocol {
	case Sessioned:
		add(fmt.Sprintf("sessioned: the departure's generation holds the killed worker's tasks back for scheduled.rebalance.max.delay.ms (0 < delay <= %d)", r.DelayMs),
			r.DepartureDelay > 0 && int(r.DepartureDelay) <= r.DelayMs, fmt.Sprintf("delay %d ms", r.DepartureDelay))
		add(fmt.Sprintf("sessioned: the killed worker's tasks are reassigned after the delay (delay - 250 ms <= reassigned - departure seen <= delay + %d ms)", tol),
			moved >= int64(r.DepartureDelay)-250 && moved <= int64(r.DepartureDelay)+tol, fmt.Sprintf("%d ms after the departure was seen (%d ms after the kill)", moved, r.ReassignedMs-r.KilledAtMs))
		ok := true
		for w, n := range r.TasksStopped {
			ok = ok && (w == r.Killed || n == 0)
		}
		add("sessioned: no surviving worker stops a task", ok && len(r.TasksStopped) > 0, fmt.Sprint(r.TasksStopped))
	case Eager:
		ok := true
		for w, n := range r.TasksStopped {
			ok = ok && (w == r.Killed || n > 0)
		}
		add("eager: every surviving worker stops its tasks at the rebalance", ok && len(r.TasksStopped) > 0, fmt.Sprint(r.TasksStopped))
		add("eager: no scheduled delay (the killed worker's tasks move in the first rebalance after its session expires)",
			r.DepartureDelay == 0 && moved < int64(r.DelayMs), fmt.Sprintf("delay %d ms, reassigned %d ms after the departure was seen", r.DepartureDelay, moved))
	}
}

// WriteTable prints the run: each layout's and the post-kill generations' holdings, the
// figures and the relations.
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (connect.protocol=%s, scheduled.rebalance.max.delay.ms=%d)\n", Scenario, r.Protocol, r.DelayMs)
	for _, g := range r.Generations {
		fmt.Fprintf(&b, "  generation %3d  %-9s  %s\n      %s\n", g.Generation, g.Protocol, g.Phase, formatHoldings(g.Workers))
	}
	fmt.Fprintf(&b, "killed %s (-9) holding %s; departure seen +%d ms (delay %d ms), tasks held again +%d ms; rebalances %d\n",
		r.Killed, strings.Join(r.KilledTasks, " "), r.DepartureSeenMs-r.KilledAtMs, r.DepartureDelay, r.ReassignedMs-r.KilledAtMs, r.Rebalances)
	for _, wk := range slices.Sorted(maps.Keys(r.TaskDowntimeMs)) {
		fmt.Fprintf(&b, "  task downtime %s: %d ms (%d task(s) stopped)\n", wk, r.TaskDowntimeMs[wk], r.TasksStopped[wk])
	}
	fmt.Fprintf(&b, "records: produced %d, consumed %d, missing %d, duplicates %d\n", r.Produced, r.Consumed, r.Missing, r.Duplicates)
	var c report.RelationCounts
	c.Add(r.Relations)
	for _, rel := range r.Relations {
		mark := map[bool]string{true: "ok  ", false: "FAIL"}[rel.OK]
		if rel.Skipped {
			mark = "skip"
		}
		fmt.Fprintf(&b, "  %s  %s: %s\n", mark, rel.Relation, rel.Got)
	}
	for _, msg := range r.Errors {
		fmt.Fprintf(&b, "  error: %s\n", msg)
	}
	b.WriteString(report.VerdictLine(c, len(r.Errors)) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
