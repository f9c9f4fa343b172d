package benchmark

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A throughput line with spreads and settings shows each median with its min-max, the ratios, the
// parameters of its windows and every target's settings; one without them (written before they were
// recorded) shows medians alone and says the settings and load were not recorded.
func TestHistoryTableThroughput(t *testing.T) {
	e := HistoryEntry{Bench: "throughput", Time: time.Date(2026, 12, 7, 13, 0, 5, 123, time.UTC), Commit: "abc1234",
		Machine: Machine{CPUs: 2, CPUModel: "cpu", Kernel: "k", GOOS: "linux", GOARCH: "amd64", Go: "go1"},
		Peers:   map[string]string{"kafka": "3.9.2"},
		Params:  map[string]any{"sizes": []any{1024.0}, "window_s": 3.0, "warmup_s": 3.0, "runs": 5.0, "partitions": 6.0, "replication_factor": 1.0},
		Medians: map[string]float64{
			"1024/rebalancelab/produce_mb_per_s": 200, "1024/rebalancelab/produce_records_per_s": 195312,
			"1024/rebalancelab/fetch_mb_per_s": 800, "1024/rebalancelab/fetch_records_per_s": 781250,
			"1024/kafka/produce_mb_per_s": 100, "1024/kafka/produce_records_per_s": 97656,
			"1024/kafka/fetch_mb_per_s": 400, "1024/kafka/fetch_records_per_s": 390625,
		},
		Spreads:    map[string]Spread{"1024/rebalancelab/produce_mb_per_s": {Median: 200, Min: 150, Max: 250}},
		Settings:   map[string]string{"kafka": "heap -Xmx512m -Xms128m [-Xmx1G -Xms1G], num.io.threads=2 [8]"},
		Conditions: map[string]string{"loadavg_before": "3.00 2.00 1.00"},
	}
	var b strings.Builder
	if err := HistoryTable(&b, e); err != nil {
		t.Fatal(err)
	}
	want := "`rebalancelab bench table --at 2026-12-07T13:00:05Z` (benchmark/history.jsonl: `bench throughput` at 2026-12-07T13:00:05Z, commit abc1234):\n\n" +
		"| record bytes | target | produce MB/s (min-max) | produce rec/s | fetch MB/s (min-max) | fetch rec/s |\n" +
		"|---|---|---|---|---|---|\n" +
		"| 1024 | rebalancelab | 200.0 (150-250) | 195312 | 800.0 | 781250 |\n" +
		"| 1024 | kafka | 100.0 | 97656 | 400.0 | 390625 |\n" +
		"| 1024 | rebalancelab/kafka | 2.00x | 2.00x | 2.00x | 2.00x |\n\n" +
		"Medians (min-max) of 5 windows of 3 s per target, produce then fetch, after 3 s of warm-up per target; record sizes 1024, 6 partitions, replication factor 1; ratios of medians (above 1: rebalancelab is faster).\n\n" +
		"- machine: 2 CPUs (cpu), linux/amd64, kernel k, go1\n" +
		"- load average (1, 5, 15 min): loadavg_before 3.00 2.00 1.00\n" +
		"- versions: kafka 3.9.2\n" +
		"- settings of kafka: heap -Xmx512m -Xms128m [-Xmx1G -Xms1G], num.io.threads=2 [8]\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	e.Spreads, e.Settings, e.Conditions = nil, nil, nil
	b.Reset()
	if err := HistoryTable(&b, e); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| 1024 | rebalancelab | 200.0 | 195312 |", "- load average: not recorded in this line\n", "- settings of the targets: not recorded in this line\n"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("no %q in:\n%s", s, b.String())
		}
	}
}

// A go-test line shows Kafka's time and the ratio against it only for a benchmark that recorded
// Kafka's warm-up; the others lose those columns, and the table says so.
func TestHistoryTableGoTestDropsColdKafka(t *testing.T) {
	e := HistoryEntry{Bench: "go-test", Time: time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC), Commit: "c",
		Params: map[string]any{"runs": map[string]any{"CoordinatorRebalance/members=10": 3.0}},
		Medians: map[string]float64{
			"CoordinatorRebalance/members=10 ms-kafka-wire/op":                   10,
			"CoordinatorRebalance/members=10 ms-rebalancelab-wire/op":            1,
			"CoordinatorRebalance/members=10 x-rebalancelab-wire-vs-kafka-wire":  0.1,
			"CoordinatorRebalance/members=100 ms-kafka-wire/op":                  12,
			"CoordinatorRebalance/members=100 ms-rebalancelab-wire/op":           6,
			"CoordinatorRebalance/members=100 x-rebalancelab-wire-vs-kafka-wire": 0.5,
			"CoordinatorRebalance/members=100 kafka-warmup-rebalances":           220,
		}}
	var b strings.Builder
	if err := HistoryTable(&b, e); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{
		"| CoordinatorRebalance | runs | ms-rebalancelab-wire/op | kafka-warmup-rebalances | ms-kafka-wire/op | x-rebalancelab-wire-vs-kafka-wire |",
		"| members=10 | 3 | 1 | n/a | n/a | n/a |",
		"| members=100 | not recorded | 6 | 220 | 12 | 0.500 |",
		"Left out (no Kafka warm-up recorded, so Kafka's JVM was timed cold): Kafka's time and the ratio against it in CoordinatorRebalance/members=10.",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in:\n%s", s, out)
		}
	}
}

// RefillBenchTables fills each block from its line and refuses a key naming no line.
func TestRefillBenchTables(t *testing.T) {
	e := HistoryEntry{Bench: "throughput", Time: time.Date(2026, 12, 7, 13, 0, 5, 0, time.UTC),
		Medians: map[string]float64{"100/kfake/produce_mb_per_s": 1}}
	in := "a\n<!-- BEGIN BENCH TABLE 2026-12-07T13:00:05Z -->\nstale\n<!-- END BENCH TABLE -->\nb\n"
	out, err := RefillBenchTables(in, []HistoryEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "a\n<!-- BEGIN BENCH TABLE 2026-12-07T13:00:05Z -->\n`rebalancelab bench table --at 2026-12-07T13:00:05Z`") ||
		!strings.HasSuffix(out, "<!-- END BENCH TABLE -->\nb\n") || strings.Contains(out, "stale") {
		t.Fatalf("refilled:\n%s", out)
	}
	if _, err := RefillBenchTables(strings.ReplaceAll(in, "13:00:05", "13:00:06"), []HistoryEntry{e}); err == nil ||
		!strings.Contains(err.Error(), "no line at 2026-12-07T13:00:06Z") {
		t.Fatalf("unknown key: error %v", err)
	}
	if _, err := RefillBenchTables(in, []HistoryEntry{e, e}); err == nil || !strings.Contains(err.Error(), "2 lines at") {
		t.Fatalf("two lines at one key: error %v", err)
	}
}

// docs/reference/performance.md's tables are what `rebalancelab bench table --readme docs/reference/performance.md` generates from
// benchmark/history.jsonl (make bench-tables), and the Performance section holds no other table:
// every table there sits in a BENCH TABLE block, or in a block marked as the pasted output of a bench
// that writes no history line (PASTED BENCH OUTPUT, which names its command and why).
func TestReadmeBenchTablesFromHistory(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "reference", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadHistory("history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	blocks := BenchTableRE.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/reference/performance.md has %d BENCH TABLE blocks; its throughput and hot-path tables belong in them", len(blocks))
	}
	filled, err := RefillBenchTables(string(readme), entries)
	if err != nil {
		t.Fatal(err)
	}
	if filled != string(readme) {
		got, want := BenchTableRE.FindAllString(string(readme), -1), BenchTableRE.FindAllString(filled, -1)
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("docs/reference/performance.md's block %d differs from what the history generates (run `make bench-tables`); it should be:\n%s", i, want[i])
			}
		}
	}
	// Tables of the Performance section outside the generated and the marked blocks.
	perf := string(readme)
	start := strings.Index(perf, "\n## Performance\n")
	if start < 0 {
		t.Fatal("docs/reference/performance.md has no ## Performance section")
	}
	perf = perf[start+1:]
	if end := strings.Index(perf[3:], "\n## "); end >= 0 {
		perf = perf[:end+3]
	}
	perf = BenchTableRE.ReplaceAllString(perf, "")
	perf = pastedRE.ReplaceAllString(perf, "")
	for i, line := range strings.Split(perf, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			t.Errorf("docs/reference/performance.md's Performance section has a table outside a BENCH TABLE or PASTED BENCH OUTPUT block (line %d of the section): %s", i+1, line)
			break
		}
	}
}

// A storm line keeps the run's result whole, and its table is the one the run printed.
func TestHistoryTableStorm(t *testing.T) {
	v := int64(2757)
	r := &StormResult{Params: map[string]any{"eras": []any{"classic"}}, Cells: []*StormCell{{Era: "classic", N: 1000, Case: "storm",
		Partitions: 1000, Figures: map[string]*int64{"time_to_stable_ms": &v}}}}
	e, err := StormHistoryEntry(r, "abc", map[string]string{"loadavg_before": "1.00 1.00 1.00"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Medians["classic/1000/storm/time_to_stable_ms"] != 2757 {
		t.Fatalf("medians %v", e.Medians)
	}
	var want, got strings.Builder
	if err := r.WriteTable(&want, true); err != nil {
		t.Fatal(err)
	}
	if err := HistoryTable(&got, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), want.String()) || !strings.Contains(got.String(), "- load average (1, 5, 15 min): loadavg_before 1.00 1.00 1.00\n") {
		t.Fatalf("storm table from the history:\n%s\nwant the run's table:\n%s", got.String(), want.String())
	}
	e.Result = nil
	if err := HistoryTable(&got, e); err == nil || !strings.Contains(err.Error(), "keeps no result") {
		t.Fatalf("a storm line without its result: error %v", err)
	}
}

// pastedRE matches a block of bench output kept as printed, for a bench that writes no history line.
var pastedRE = regexp.MustCompile(`(?s)<!-- BEGIN PASTED BENCH OUTPUT: [^\n]+ -->\n.*?<!-- END PASTED BENCH OUTPUT -->`)

// The warm-up's settle rule: the last two window medians within warmSettle of the earlier.
func TestSettledWindows(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		medians []time.Duration
		want    bool
	}{
		{ms(16), false},
		{ms(16, 5), false},
		{ms(16, 5, 1440), false},
		{ms(100, 110), true},
		{ms(100, 111), false},
		{ms(100, 90), true},
		{ms(100, 89), false},
	} {
		if got := settledWindows(c.medians); got != c.want {
			t.Errorf("settledWindows(%v) = %v, want %v", c.medians, got, c.want)
		}
	}
}
