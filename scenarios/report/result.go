package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// RunResult is one scenario run over one or more eras, as the runner fills it (scenarios.RunResult is
// this type) and the writers read it (what a writer sets, such as EraRun.Timeline, the runner sees).
type RunResult struct {
	Scenario      string
	Description   string
	Seed          int64
	Params        spec.Params
	Timing        spec.Timing
	KafkaDefaults bool
	ZKConfig      map[string]string // Options.ZKConfig: the zk members' extra 0.8.2 properties
	Broker        string            // the broker implementation: "rebalancelab" or "kafka" (lab.Broker*), or BrokerExternal
	Cluster       string            // BrokerExternal: the cluster's bootstrap addresses
	MembersAs     string            // MembersAsGoroutines or MembersAsProcesses
	Members       string            // whose consumers: MembersRebalancelab, MembersKafka or MembersMixed
	RunID         string            // the run's id (an existing cluster's names carry it)
	Versions      map[string]string // "rebalancelab", "zookeeper", and "kafka" on a Kafka broker
	Script        []spec.Step
	Eras          []*EraRun
	// Hosts: the test hosts of a run with Params.Hosts (hosts.go), with each one's clock offset as
	// measured at the start; HostCapabilities what the kernel offered (netem or not).
	Hosts            []HostInfo
	HostCapabilities *HostCapabilities
	Notes            []string // what the run did differently from what was asked, and why
	// Interrupted: the run was cancelled (Ctrl-C) before it ended; it does not pass (Failures says
	// which eras did not finish: EraRun.Interrupted, EraRun.NotRun).
	Interrupted bool
	// Streams is what a Streams scenario measured (the Streams driver's *streams.Result), which writes
	// its own table, files and page (StreamsOutput); nil for the consumer eras'.
	Streams StreamsOutput
}

// StreamsOutput is a Streams scenario's own output (package scenarios/streams' *Result, whose types
// the Streams catalogue's relations read): the run's table, files and page are its, not the consumer
// eras' figures; it is the result JSON's "streams" (marshalled as itself).
type StreamsOutput interface {
	// WriteTable writes the events' figures, the lanes, the totals and r's relations and verdict.
	WriteTable(w io.Writer, r *RunResult) error
	// WriteFiles writes its files (the instances' lines, the group's transitions) to dir, which
	// exists, and names them in itself.
	WriteFiles(dir string) error
	// WriteReport writes dir/index.html for r.
	WriteReport(dir string, r *RunResult) error
	// JSONParams are the result JSON's params it sets: threads_per_instance, records, members_as.
	JSONParams() map[string]any
}

// EraRun is one era of a run (scenarios.EraRun is an alias of it; the catalogue's relations read it
// through their timeline helpers, scenarios/catalog's eras.go).
type EraRun struct {
	Era     string
	Applies bool
	Reason  string // why the scenario does not apply to this era (Applies false)
	// NotRun: the era applies but never started (the run was interrupted or failed before it): it has
	// no figures and the table shows none. Interrupted: the era started but the run was cancelled
	// before it ended: its figures are what was measured until then.
	NotRun      bool
	Interrupted bool
	Group       string // group.id
	Topic       string

	// Records is the merged timeline (by ts_ms) up to the shutdown trigger: the scenario proper, which
	// the figures, the relations and the HTML page cover. ShutdownRecords are the rest: the members'
	// final graceful stop (their last commits, revocations, LeaveGroups), kept in the timeline file.
	Records         []timeline.Record
	ShutdownRecords []timeline.Record
	Options         figures.FigureOptions
	Result          figures.Result
	// EndOwners is Result.FinalOwners as it stood when the script ended (before the members were
	// stopped at the end of the run, which leaves every partition unowned).
	EndOwners map[string]string
	// Drained: every produced record was delivered before the members were stopped.
	Drained  bool
	Timeline string // timeline file name (in the report/output dir), "" when not written
	Extra    map[string]int64
	// Durability: the side producers' checks of a durability scenario (DurabilitySpec).
	Durability   []ProducerCheck
	ZKCrosscheck *ZKCrosscheck
	Relations    []RelationResult
	// Errors: what the run could not do (a member that could not start, a fault that could not be
	// injected, a broker step that failed, a member that gave up unexpectedly); any fails the run.
	Errors []string
	// GaveUp: the members that gave up as the scenario expects (Scenario.GivesUp), with why.
	GaveUp []string
	// Processes: with members as processes, how each member process ended, in the order they did.
	Processes []MemberProcess
}

// Passed reports whether the run earned its result: no era recorded an error (a fault that could not
// be injected, a member that could not start, a broker step that failed...) and every relation that
// was checked held. Skipped relations (not measured) count neither way; Failures says why a run failed.
func (r *RunResult) Passed() bool { return len(r.Failures()) == 0 }

// noneApplies says why nothing was measured when no era the run was asked for applies to its scenario
// ("no requested era applies: zk: <reason>; ..."): such a run checked no relation and does not pass.
// "" when an era applies (or the run has none, as a result being built).
func (r *RunResult) noneApplies() string {
	if len(r.Eras) == 0 {
		return ""
	}
	var why []string
	for _, e := range r.Eras {
		if e.Applies {
			return ""
		}
		why = append(why, e.Era+": "+e.Reason)
	}
	return "no requested era applies: " + strings.Join(why, "; ")
}

// interrupted says how far an interrupted run got ("interrupted: zk did not finish, classic did not
// run"); "" when it was not interrupted (RunResult.Interrupted false).
func (r *RunResult) interrupted() string {
	if !r.Interrupted {
		return ""
	}
	var parts []string
	for _, e := range r.Eras {
		switch {
		case !e.Applies:
		case e.NotRun:
			parts = append(parts, e.Era+" did not run")
		case e.Interrupted:
			parts = append(parts, e.Era+" did not finish")
		}
	}
	if len(parts) == 0 {
		return "interrupted"
	}
	return "interrupted: " + strings.Join(parts, ", ")
}

// Failures lists why the run failed, era by era: that it was interrupted ("interrupted: <era> did not
// finish, <era> did not run"), that no requested era applies (noneApplies), each error it recorded
// ("<era>: error: <msg>") and each relation that does not hold ("<era>: FAIL <relation>: <got>");
// none when it passed.
func (r *RunResult) Failures() []string {
	var out []string
	if why := r.interrupted(); why != "" {
		out = append(out, why)
	}
	if why := r.noneApplies(); why != "" {
		out = append(out, why)
	}
	for _, e := range r.Eras {
		for _, msg := range e.Errors {
			out = append(out, fmt.Sprintf("%s: error: %s", e.Era, msg))
		}
		for _, rel := range e.Relations {
			if !rel.OK && !rel.Skipped {
				out = append(out, fmt.Sprintf("%s: FAIL %s: %s", e.Era, rel.Relation, rel.Got))
			}
		}
	}
	return out
}

// RelationCounts are a run's relations as checked: held, failed (did not hold) and skipped (could not
// be checked: not measured with these members or this broker, or the other era did not run).
type RelationCounts struct {
	Held    int `json:"held"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Counts tallies every era's relations (RelationCounts).
func (r *RunResult) Counts() RelationCounts {
	var c RelationCounts
	for _, e := range r.Eras {
		c.Add(e.Relations)
	}
	return c
}

// Add tallies rels into c.
func (c *RelationCounts) Add(rels []RelationResult) {
	for _, rel := range rels {
		switch {
		case rel.Skipped:
			c.Skipped++
		case rel.OK:
			c.Held++
		default:
			c.Failed++
		}
	}
}

// Verdict is the line a run's table ends with: "PASS" or "FAIL", the relation counts, and for a
// failure how many errors and failed relations. An interrupted run fails ("result: FAIL (interrupted:
// <how far it got>; relations: ...)"), as does one where no era applies ("result: FAIL (no requested
// era applies: ...)").
func (r *RunResult) Verdict() string {
	c := r.Counts()
	errs := 0
	for _, e := range r.Eras {
		errs += len(e.Errors)
	}
	if why := r.interrupted(); why != "" {
		return "result: FAIL (" + why + "; " + countsLine(c, errs) + ")"
	}
	if why := r.noneApplies(); why != "" {
		return "result: FAIL (" + why + ")"
	}
	return VerdictLine(c, errs)
}

// VerdictLine is the verdict line of relation counts c and errs errors (RunResult.Verdict's).
func VerdictLine(c RelationCounts, errs int) string {
	counts := countsLine(c, errs)
	if c.Failed > 0 || errs > 0 {
		return "result: FAIL (" + counts + ")"
	}
	return "result: PASS (" + counts + ")"
}

// countsLine is the verdict's counts: "relations: H held, F failed, S skipped (not measured); errors: E".
func countsLine(c RelationCounts, errs int) string {
	return fmt.Sprintf("relations: %d held, %d failed, %d skipped (not measured); errors: %d", c.Held, c.Failed, c.Skipped, errs)
}

// ---- output ----

// jsonRun is docs/design.md's result JSON, plus the script and the relations.
type jsonRun struct {
	Scenario    string            `json:"scenario"`
	Description string            `json:"description"`
	Seed        int64             `json:"seed"`
	RunID       string            `json:"run_id,omitempty"`
	Params      map[string]any    `json:"params"`
	Versions    map[string]string `json:"versions"`
	// Passed: no error and no failed relation (RunResult.Passed); Failures why not; RelationsHold:
	// no checked relation failed; Relations the counts (skipped ones apart).
	Passed        bool           `json:"passed"`
	Failures      []string       `json:"failures,omitempty"`
	Interrupted   bool           `json:"interrupted,omitempty"` // RunResult.Interrupted
	RelationsHold bool           `json:"relations_hold"`
	Relations     RelationCounts `json:"relation_counts"`
	Script        []spec.Step    `json:"script"`
	Eras          []jsonEra      `json:"eras"`
	// Hosts: the test hosts, each with its measured clock offset (RunResult.Hosts).
	Hosts            []HostInfo        `json:"hosts,omitempty"`
	HostCapabilities *HostCapabilities `json:"host_capabilities,omitempty"`
	Notes            []string          `json:"notes,omitempty"`
	Streams          StreamsOutput     `json:"streams,omitempty"`
}

type jsonEra struct {
	Era           string                `json:"era"`
	Applies       bool                  `json:"applies"`
	Reason        string                `json:"reason,omitempty"`
	NotRun        bool                  `json:"not_run,omitempty"`     // EraRun.NotRun: no figures
	Interrupted   bool                  `json:"interrupted,omitempty"` // EraRun.Interrupted
	Group         string                `json:"group,omitempty"`
	Topic         string                `json:"topic,omitempty"`
	Totals        *figures.Figures      `json:"totals,omitempty"`
	Events        []figures.Event       `json:"events"`
	Faults        []figures.FaultWindow `json:"faults,omitempty"`
	NotApplicable []string              `json:"not_applicable"`
	Timeline      string                `json:"timeline"`
	FiguresCover  string                `json:"figures_cover,omitempty"`
	EndOwners     map[string]string     `json:"end_owners,omitempty"`
	Drained       bool                  `json:"drained"`
	Extra         map[string]int64      `json:"extra,omitempty"`
	Durability    []ProducerCheck       `json:"durability,omitempty"`
	ZKCrosscheck  *ZKCrosscheck         `json:"zk_crosscheck,omitempty"`
	Relations     []RelationResult      `json:"relations"`
	Errors        []string              `json:"errors,omitempty"`
	GaveUp        []string              `json:"gave_up,omitempty"`
	Warnings      []string              `json:"warnings,omitempty"`
	Processes     []MemberProcess       `json:"processes,omitempty"`
}

// ParamsMap is the "params" object of the JSON and of the HTML page; "zk_config" only when given.
func (r *RunResult) ParamsMap() map[string]any {
	m := map[string]any{
		"consumers": r.Params.Consumers, "partitions": r.Params.Partitions, "kafka_defaults": r.KafkaDefaults,
		"broker":                       r.Broker,
		"zookeeper.session.timeout.ms": r.Timing.ZKSessionTimeoutMs, "rebalance.backoff.ms": r.Timing.RebalanceBackoffMs,
		"session.timeout.ms": r.Timing.SessionTimeoutMs, "heartbeat.interval.ms": r.Timing.HeartbeatIntervalMs,
		"produce_interval_ms": r.Timing.ProduceIntervalMs,
		"members_as":          r.MembersAs,
		"members":             r.Members,
	}
	if r.Cluster != "" {
		m["bootstrap"] = r.Cluster
	}
	if len(r.ZKConfig) > 0 {
		m["zk_config"] = r.ZKConfig
	}
	if r.Params.Hosts > 0 {
		m["hosts"] = r.Params.Hosts
	}
	return m
}

// WriteJSON writes the result JSON (docs/design.md's shape: scenario, seed, params, versions, eras with
// era, totals, events, not_applicable, timeline; plus the script, each era's relations, end owners,
// extra counters and the ZooKeeper cross-check).
func (r *RunResult) WriteJSON(w io.Writer) error {
	out := jsonRun{Scenario: r.Scenario, Description: r.Description, Seed: r.Seed, Params: r.ParamsMap(),
		Versions: r.Versions, Passed: r.Passed(), Failures: r.Failures(), Interrupted: r.Interrupted, RelationsHold: r.Counts().Failed == 0, Relations: r.Counts(), Script: r.Script, RunID: r.RunID,
		Hosts: r.Hosts, HostCapabilities: r.HostCapabilities, Notes: r.Notes, Streams: r.Streams}
	if r.Streams != nil {
		maps.Copy(out.Params, r.Streams.JSONParams())
	}
	for _, e := range r.Eras {
		je := jsonEra{Era: e.Era, Applies: e.Applies, Reason: e.Reason, NotRun: e.NotRun, Interrupted: e.Interrupted, Group: e.Group, Topic: e.Topic,
			Events: e.Result.Events, Faults: e.Result.Faults, NotApplicable: e.Result.NotApplicable, Timeline: e.Timeline,
			EndOwners: e.EndOwners, Drained: e.Drained, Extra: e.Extra, Durability: e.Durability, ZKCrosscheck: e.ZKCrosscheck,
			Relations: e.Relations, Errors: e.Errors, GaveUp: e.GaveUp, Warnings: e.Result.Warnings, Processes: e.Processes}
		if e.Measured() {
			je.FiguresCover = "the timeline up to the " + ScriptEndTrigger + " trigger; the members' final stop follows it in the timeline file"
			t := e.Result.Totals
			je.Totals = &t
		}
		if je.Events == nil {
			je.Events = []figures.Event{}
		}
		if je.NotApplicable == nil {
			je.NotApplicable = figures.NotApplicable(e.Era)
		}
		if je.Relations == nil {
			je.Relations = []RelationResult{}
		}
		out.Eras = append(out.Eras, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteTable writes the side-by-side figure table of the eras that ran (RenderTable), then each era's
// relations and the eras that do not apply.
func (r *RunResult) WriteTable(w io.Writer) error {
	if r.Streams != nil {
		return r.Streams.WriteTable(w, r)
	}
	var results []figures.Result
	for _, e := range r.Eras {
		if e.Measured() {
			results = append(results, e.Result)
		}
	}
	procs := ""
	if r.MembersAs == spec.MembersAsProcesses {
		procs = ", members as processes"
	}
	fmt.Fprintf(w, "%s (seed %d, %d consumers, %d partitions, broker %s%s)\n", r.Scenario, r.Seed, r.Params.Consumers, r.Params.Partitions, r.BrokerName(), procs)
	if len(results) > 0 {
		if err := RenderTable(w, results...); err != nil {
			return err
		}
	}
	r.writeHosts(w)
	for _, sb := range SplitBrains(results...) { // split_brain.go: none without a split brain
		fmt.Fprintln(w, sb.Line(r.timingName()))
	}
	for _, e := range r.Eras {
		switch {
		case !e.Applies:
			fmt.Fprintf(w, "%s: not applicable: %s\n", e.Era, e.Reason)
			continue
		case e.NotRun:
			fmt.Fprintf(w, "%s: not run: %s\n", e.Era, map[bool]string{true: "the run was interrupted before it", false: "the run stopped before it"}[r.Interrupted])
			continue
		case e.Interrupted && !e.Measured():
			fmt.Fprintf(w, "%s: interrupted before it measured anything\n", e.Era)
		case e.Interrupted:
			fmt.Fprintf(w, "%s: interrupted: its figures are what was measured until then\n", e.Era)
		}
		if len(e.Extra) > 0 {
			keys := make([]string, 0, len(e.Extra))
			for k := range e.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%d", k, e.Extra[k]))
			}
			fmt.Fprintf(w, "%s: %s\n", e.Era, strings.Join(parts, " "))
		}
		if c := e.ZKCrosscheck; c != nil {
			fmt.Fprintf(w, "%s: zk cross-check: %s\n", e.Era, c.Summary())
		}
		if spec.Era(e.Era).Static() && r.scriptStops() {
			fmt.Fprintf(w, "static: by design, a static member's graceful stop sends no LeaveGroup (KIP-345): its partitions wait "+
				"for its return or its session.timeout.ms (%d ms) before anyone else gets them, and the leave's time_to_stable_ms includes that wait\n",
				r.Timing.SessionTimeoutMs)
		}
		WriteRelations(w, e.Era, e.Relations)
		for _, msg := range e.GaveUp {
			fmt.Fprintf(w, "%s: as the scenario expects: %s\n", e.Era, msg)
		}
		for _, msg := range e.Errors {
			fmt.Fprintf(w, "%s: error: %s\n", e.Era, msg)
		}
	}
	fmt.Fprintln(w, r.Verdict())
	return nil
}

// Measured reports whether e has figures to show: it applies, it ran, and (when interrupted) it
// recorded something before the run was cancelled.
func (e *EraRun) Measured() bool {
	return e.Applies && !e.NotRun && (!e.Interrupted || len(e.Records) > 0)
}

// WriteRelations writes era's relations one a line: "ok  ", "FAIL" or "skip", the era padded to 12
// characters, then "<relation>: <got>" (the run's table and the Streams driver's).
func WriteRelations(w io.Writer, era string, rels []RelationResult) {
	for _, rel := range rels {
		mark := "ok  "
		switch {
		case rel.Skipped:
			mark = "skip"
		case !rel.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %-12s %s: %s\n", mark, era, rel.Relation, rel.Got)
	}
}

// scriptStops: the script stops a member gracefully (ActStop).
func (r *RunResult) scriptStops() bool {
	for _, st := range r.Script {
		if st.Action == spec.ActStop {
			return true
		}
	}
	return false
}

// ScriptEndTrigger is the trigger the runner emits when the script is over and the members have
// drained: the stop of every member that follows gets a window of its own, apart from the scenario's.
// The figures, the relations and the page cover the timeline up to it (EraRun.Records).
const ScriptEndTrigger = "shutdown"

// timelineName is an era's timeline file name.
func timelineName(era string) string { return "timeline-" + era + ".jsonl" }

// WriteTimelines writes each era's merged timeline to dir/timeline-<era>.jsonl and records the name.
func (r *RunResult) WriteTimelines(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if r.Streams != nil {
		return r.Streams.WriteFiles(dir)
	}
	for _, e := range r.Eras {
		if !e.Applies {
			continue
		}
		f, err := os.Create(filepath.Join(dir, timelineName(e.Era)))
		if err != nil {
			return err
		}
		w := timeline.NewWriter(f)
		for _, rec := range e.Records {
			w.Emit(rec)
		}
		for _, rec := range e.ShutdownRecords {
			w.Emit(rec)
		}
		err = w.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		e.Timeline = timelineName(e.Era)
	}
	return nil
}

// WriteReport writes dir/index.html (RenderHTML) and the timelines next to it.
func (r *RunResult) WriteReport(dir string) error { return r.writeReport(dir, nil) }

// BrokerName is the broker the run used, with its version on Kafka ("kafka 3.9.2").
func (r *RunResult) BrokerName() string {
	switch {
	case r.Broker == "":
		return "rebalancelab"
	case r.Versions["kafka"] != "":
		return r.Broker + " " + r.Versions["kafka"]
	case r.Broker == spec.BrokerExternal:
		return "external " + r.Cluster
	}
	return r.Broker
}

// writeHosts prints the test hosts and their clock offsets beside the figures.
func (r *RunResult) writeHosts(w io.Writer) {
	if len(r.Hosts) == 0 {
		return
	}
	kind := "test hosts (network namespaces"
	if r.Hosts[0].Namespace == "" {
		kind = "member hosts (member-pool --listen"
	}
	fmt.Fprintf(w, "%s; ts_ms are each host's clock, offsets measured at the start, host − runner):\n", kind)
	for _, h := range r.Hosts {
		fmt.Fprintf(w, "  %s %-15s clock offset %+.3f ms ± %.3f ms   %s\n", h.Name, h.Addr, h.Clock.OffsetMs, h.Clock.RTTMs/2, strings.Join(h.Runs, " "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// era returns the run's era called name, nil when it did not run.
func (r *RunResult) era(name string) *EraRun {
	for _, e := range r.Eras {
		if e.Era == name {
			return e
		}
	}
	return nil
}

// EventNamed returns the era's first event whose trigger is name.
func (e *EraRun) EventNamed(name string) (figures.Event, bool) {
	for _, ev := range e.Result.Events {
		if ev.Trigger == name {
			return ev, true
		}
	}
	return figures.Event{}, false
}
