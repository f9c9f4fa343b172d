package benchmark

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
)

// The performance tables (docs/reference/performance.md) are generated from benchmark/history.jsonl, never pasted: each sits in a
// block
//
//	<!-- BEGIN BENCH TABLE 2026-12-04T19:24:07Z -->
//	...
//	<!-- END BENCH TABLE -->
//
// whose key names one history line by its time to the second (UTC, RFC 3339), and whose body is
// HistoryTable of that line: what `rebalancelab bench table --at KEY` prints, and what
// `rebalancelab bench table --readme docs/reference/performance.md` (`make bench-tables`) writes into every block.

// BenchTableRE matches one generated block: the key (group 1) and the body (group 2).
var BenchTableRE = regexp.MustCompile(`(?s)<!-- BEGIN BENCH TABLE ([0-9TZ:-]+) -->\n(.*?)<!-- END BENCH TABLE -->`)

// HistoryKey is the key of a history line in the performance page's blocks: its time to the second, UTC.
func HistoryKey(e HistoryEntry) string { return e.Time.UTC().Format(time.RFC3339)[:19] + "Z" }

// FindHistory returns the one history line whose HistoryKey is key. Errors: none or several.
func FindHistory(entries []HistoryEntry, key string) (HistoryEntry, error) {
	var found []HistoryEntry
	for _, e := range entries {
		if HistoryKey(e) == key {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return HistoryEntry{}, fmt.Errorf("benchmark history: no line at %s", key)
	default:
		return HistoryEntry{}, fmt.Errorf("benchmark history: %d lines at %s", len(found), key)
	}
}

// HistoryTable writes e's tables as Markdown, the command that regenerates them first and the
// conditions of the run after them (WriteConditions): a "throughput" line as WriteThroughputTable
// does, a "go-test" line as WriteGoBenchTables does (benchmarks and units sorted by name, since the
// line keeps no order). Figures recorded without their spread show the median alone. A ratio against
// Kafka from `go test` benchmarks is shown only where the line records Kafka's warm-up
// (kafka-warmup-rebalances): without it the JVM was timed cold, and Kafka's own time is left out too.
// Errors: a bench this does not tabulate.
func HistoryTable(w io.Writer, e HistoryEntry) error {
	key := HistoryKey(e)
	fmt.Fprintf(w, "`rebalancelab bench table --at %s` (benchmark/history.jsonl: `bench %s` at %s, commit %s):\n\n",
		key, e.Bench, key, e.Commit)
	conditions := e.Conditions
	switch e.Bench {
	case "throughput":
		if err := WriteThroughputTable(w, throughputFromHistory(e), true); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s\n", throughputParams(e))
	case "go-test":
		sums, dropped := goBenchFromHistory(e)
		if err := WriteGoBenchTables(w, sums, true); err != nil {
			return err
		}
		fmt.Fprintln(w, "\nmedian (min-max of the runs) ±x%: the 95% confidence interval of the median (benchstat's); x-A-vs-B units are A/B per run (below 1: A is faster); a median alone: the line keeps no spread")
		if len(dropped) > 0 {
			fmt.Fprintf(w, "Left out (no Kafka warm-up recorded, so Kafka's JVM was timed cold): %s.\n", strings.Join(dropped, ", "))
		}
	case "storm":
		if len(e.Result) == 0 {
			return fmt.Errorf("benchmark history: the storm line at %s keeps no result", key)
		}
		var r StormResult
		if err := json.Unmarshal(e.Result, &r); err != nil {
			return fmt.Errorf("benchmark history: the storm line at %s: %w", key, err)
		}
		if err := r.WriteTable(w, true); err != nil {
			return err
		}
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(e.Params)) {
			if k != "cases" && k != "resources" {
				ps = append(ps, fmt.Sprintf("%s %v", k, e.Params[k]))
			}
		}
		fmt.Fprintf(w, "\nParams: %s.\n", strings.Join(ps, "; "))
	default:
		return fmt.Errorf("benchmark history: no table for bench %q", e.Bench)
	}
	fmt.Fprintln(w)
	return WriteConditions(w, true, e.Machine, e.Peers, e.Settings, conditions)
}

// WriteConditions writes what every ratio is read with: the machine, its load average, the peers'
// versions and every target's settings (Kafka's heap and threads beside its defaults), one line each
// (Markdown: a list). Settings or load missing (history lines older than their recording) are said
// to be not recorded.
func WriteConditions(w io.Writer, markdown bool, m Machine, peers, settings, conditions map[string]string) error {
	var lines []string
	lines = append(lines, fmt.Sprintf("machine: %d CPUs (%s), %s/%s, kernel %s, %s", m.CPUs, m.CPUModel, m.GOOS, m.GOARCH, m.Kernel, m.Go))
	if len(conditions) == 0 {
		lines = append(lines, "load average: not recorded in this line")
	} else {
		var cs []string
		for _, k := range slices.Sorted(maps.Keys(conditions)) {
			cs = append(cs, k+" "+conditions[k])
		}
		lines = append(lines, "load average (1, 5, 15 min): "+strings.Join(cs, "; "))
	}
	var vs []string
	for _, k := range slices.Sorted(maps.Keys(peers)) {
		vs = append(vs, k+" "+peers[k])
	}
	lines = append(lines, "versions: "+strings.Join(vs, ", "))
	if len(settings) == 0 {
		lines = append(lines, "settings of the targets: not recorded in this line")
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		lines = append(lines, "settings of "+k+": "+settings[k])
	}
	for _, l := range lines {
		if markdown {
			l = "- " + l
		}
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// throughputParams is one sentence of a throughput line's parameters.
func throughputParams(e HistoryEntry) string {
	p := e.Params
	num := func(k string) string {
		switch v := p[k].(type) {
		case nil:
		case []any:
			var vs []string
			for _, x := range v {
				vs = append(vs, fmt.Sprint(x))
			}
			return strings.Join(vs, ", ")
		default:
			return fmt.Sprint(v)
		}
		return "?"
	}
	if _, ok := p["window_s"]; ok {
		return fmt.Sprintf("Medians (min-max) of %s windows of %s s per target, produce then fetch, after %s s of warm-up per target; "+
			"record sizes %s, %s partitions, replication factor %s; ratios of medians (above 1: rebalancelab is faster).",
			num("runs"), num("window_s"), num("warmup_s"), num("sizes"), num("partitions"), num("replication_factor"))
	}
	return fmt.Sprintf("Medians of %s runs of %s MB per target after %s discarded run(s); record sizes %s, %s partitions, "+
		"replication factor %s; ratios of medians (above 1: rebalancelab is faster). These runs were fixed amounts of data, "+
		"not timed windows: a fetch run of 30 MB lasted tens of milliseconds and its timing included the consumer's start-up.",
		num("runs"), num("megabytes_per_run"), num("warmup_runs"), num("sizes"), num("partitions"), num("replication_factor"))
}

// throughputFromHistory rebuilds the summary of a throughput line from its medians ("<size>/<target>/
// <figure>") and spreads, sizes in the order of params "sizes", targets rebalancelab, kafka, kfake,
// then any other by name.
func throughputFromHistory(e HistoryEntry) []ThroughputSummary {
	type key struct {
		size   int
		target string
	}
	byKey := map[key]*ThroughputSummary{}
	for k, v := range e.Medians {
		parts := strings.SplitN(k, "/", 3)
		if len(parts) != 3 {
			continue
		}
		size, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		kk := key{size, parts[1]}
		s := byKey[kk]
		if s == nil {
			s = &ThroughputSummary{Target: parts[1], RecordBytes: size}
			byKey[kk] = s
		}
		sp, ok := e.Spreads[k]
		if !ok {
			sp = Spread{Median: v, Min: v, Max: v}
		}
		switch parts[2] {
		case "produce_mb_per_s":
			s.ProduceMBps = sp
		case "produce_records_per_s":
			s.ProduceRecordsPerS = sp
		case "fetch_mb_per_s":
			s.FetchMBps = sp
		case "fetch_records_per_s":
			s.FetchRecordsPerS = sp
		}
	}
	sizeRank := map[int]int{}
	if sizes, ok := e.Params["sizes"].([]any); ok {
		for i, s := range sizes {
			if f, ok := s.(float64); ok {
				sizeRank[int(f)] = i
			}
		}
	}
	targetRank := func(t string) int {
		switch t {
		case OursTarget:
			return 0
		case "kafka":
			return 1
		case "kfake":
			return 2
		}
		return 3
	}
	out := make([]ThroughputSummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RecordBytes != b.RecordBytes {
			ra, oka := sizeRank[a.RecordBytes]
			rb, okb := sizeRank[b.RecordBytes]
			if oka && okb {
				return ra < rb
			}
			return a.RecordBytes > b.RecordBytes
		}
		if targetRank(a.Target) != targetRank(b.Target) {
			return targetRank(a.Target) < targetRank(b.Target)
		}
		return a.Target < b.Target
	})
	return out
}

// goBenchFromHistory rebuilds the summaries of a go-test line from its medians ("<name> <unit>"),
// spreads and runs (params "runs": name → count; 0 where not recorded), leaving out units naming
// kafka-wire for benchmarks without kafka-warmup-rebalances; dropped lists what was left out.
func goBenchFromHistory(e HistoryEntry) (sums []GoBenchSummary, dropped []string) {
	byName := map[string]*GoBenchSummary{}
	runs, _ := e.Params["runs"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(e.Medians)) {
		name, unit, ok := strings.Cut(k, " ")
		if !ok {
			continue
		}
		s := byName[name]
		if s == nil {
			s = &GoBenchSummary{Name: name}
			if r, ok := runs[name].(float64); ok {
				s.Runs = int(r)
			}
			byName[name] = s
		}
		v := e.Medians[k]
		m := MetricStats{Unit: unit, Median: v, Min: v, Max: v, Lo: math.Inf(-1), Hi: math.Inf(1)}
		if sp, ok := e.Spreads[k]; ok {
			m.Min, m.Max = sp.Min, sp.Max
			if sp.Lo != 0 || sp.Hi != 0 {
				m.Lo, m.Hi = sp.Lo, sp.Hi
			}
		}
		s.Metrics = append(s.Metrics, m)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		s := byName[name]
		if _, warmed := e.Medians[name+" kafka-warmup-rebalances"]; !warmed {
			before := len(s.Metrics)
			s.Metrics = slices.DeleteFunc(s.Metrics, func(m MetricStats) bool { return strings.Contains(m.Unit, "kafka-wire") })
			if len(s.Metrics) < before {
				dropped = append(dropped, name)
			}
		}
		sums = append(sums, *s)
	}
	if len(dropped) > 0 {
		dropped = []string{fmt.Sprintf("Kafka's time and the ratio against it in %s", strings.Join(dropped, ", "))}
	}
	return sums, dropped
}

// RefillBenchTables returns readme with every BENCH TABLE block's body replaced by HistoryTable of its
// line. Errors: a block whose key names no single line, or a line HistoryTable cannot tabulate.
func RefillBenchTables(readme string, entries []HistoryEntry) (string, error) {
	var ferr error
	out := BenchTableRE.ReplaceAllStringFunc(readme, func(block string) string {
		m := BenchTableRE.FindStringSubmatch(block)
		e, err := FindHistory(entries, m[1])
		if err == nil {
			var b strings.Builder
			if err = HistoryTable(&b, e); err == nil {
				return "<!-- BEGIN BENCH TABLE " + m[1] + " -->\n" + b.String() + "<!-- END BENCH TABLE -->"
			}
		}
		if ferr == nil {
			ferr = err
		}
		return block
	})
	return out, ferr
}

// StormHistoryEntry is a storm run's history line: its result whole (Result), each cell's time to
// stable as the medians ("<era>/<N>/<case>/time_to_stable_ms"; one run, so the value itself), the kgo
// client's version as the peer's, and conditions (the load average). Errors: the result's encoding.
func StormHistoryEntry(r *StormResult, commit string, conditions map[string]string) (HistoryEntry, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return HistoryEntry{}, err
	}
	med := map[string]float64{}
	for _, c := range r.Cells {
		if v := c.Figures[figures.FigTimeToStableMs]; v != nil {
			med[fmt.Sprintf("%s/%d/%s/time_to_stable_ms", c.Era, c.N, c.Case)] = float64(*v)
		}
	}
	bc := fmt.Sprint(r.Params["broker_config"])
	if bc == "map[]" || bc == "<nil>" {
		bc = "none"
	}
	settings := map[string]string{
		"broker": fmt.Sprintf("%v, %v broker(s), Kafka's own defaults: %v, --broker-config %s; members' and broker's timings in the params",
			r.Params["broker"], r.Params["brokers"], r.Params["kafka_defaults"], bc),
		"kgo": "group consumers from the same consumer configs as newconsumer's members (members.KgoOptions: the era's balancer, " +
			"session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms), one group beside ours on the same broker, dialling it directly",
	}
	return HistoryEntry{Bench: "storm", Time: time.Now().UTC(), Commit: commit, Machine: ThisMachine(),
		Peers: map[string]string{"kgo (franz-go)": ModuleVersion("github.com/twmb/franz-go")}, Params: r.Params,
		Medians: med, Settings: settings, Conditions: conditions, Result: raw}, nil
}
