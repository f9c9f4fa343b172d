package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestBenchReport: `bench report` turns `go test -bench` output (two files: runs of one benchmark
// split between them) into README's Markdown table with the machine and peers above it and the
// targets' settings and load the benchmark printed below it, appends one history line with the medians,
// spreads, runs, settings and load, and exits non-zero, appending nothing, on output without
// benchmarks. `bench table --at` prints that line's table again from the history.
func TestBenchReport(t *testing.T) {
	bin := testutil.Binary(t)
	dir := t.TempDir()
	head := "kafka-settings: heap -Xmx512m -Xms128m [-Xmx1G -Xms1G], num.io.threads=2 [8]\nkfake-settings: 1 broker(s), in memory\nloadavg: 4.00 3.00 2.00\n" +
		"goos: linux\ngoarch: amd64\npkg: github.com/rebalancelab/rebalancelab/benchmark\ncpu: Test CPU\n"
	runs := []string{"10.0", "12.0", "11.0", "13.0", "9.0", "14.0"}
	var a, b strings.Builder
	a.WriteString(head)
	b.WriteString(head)
	for i, ms := range runs {
		line := "BenchmarkCoordinatorRebalance/members=10-2  3  1000000 ns/op  " + ms + " ms-rebalancelab-wire/op  2.0 x-rebalancelab-wire-vs-kfake-wire\n"
		if i < 3 {
			a.WriteString(line)
		} else {
			b.WriteString(line)
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/rebalancelab/rebalancelab/benchmark\t9.1s\n")
	fa, fb := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	if err := os.WriteFile(fa, []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fb, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(dir, "history.jsonl")
	r := runCLI(t, bin, "", time.Minute, "bench", "report", "--markdown", "--history", history, fa, fb)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"peers: kgo v", "| CoordinatorRebalance | runs | ms-rebalancelab-wire/op | x-rebalancelab-wire-vs-kfake-wire |",
		"| members=10 | 6 | 11.5 (9.0-14.0) ±", "| 2 |",
		"- settings of kafka: heap -Xmx512m -Xms128m [-Xmx1G -Xms1G], num.io.threads=2 [8]\n- settings of kfake: 1 broker(s), in memory\n",
		"- load average (1, 5, 15 min): loadavg 4.00 3.00 2.00\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	data, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Bench    string                        `json:"bench"`
		Time     time.Time                     `json:"time"`
		Medians  map[string]float64            `json:"medians"`
		Spreads  map[string]map[string]float64 `json:"spreads"`
		Settings map[string]string             `json:"settings"`
		Params   struct {
			Runs map[string]int `json:"runs"`
		} `json:"params"`
	}
	const key = "CoordinatorRebalance/members=10 ms-rebalancelab-wire/op"
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &e) != nil ||
		e.Bench != "go-test" || e.Medians[key] != 11.5 || e.Spreads[key]["min"] != 9 || e.Spreads[key]["max"] != 14 ||
		e.Params.Runs["CoordinatorRebalance/members=10"] != 6 || e.Settings["kfake"] != "1 broker(s), in memory" {
		t.Fatalf("history %s", data)
	}
	at := e.Time.UTC().Format("2006-01-02T15:04:05Z")
	r = runCLI(t, bin, "", time.Minute, "bench", "table", "--history", history, "--at", at)
	if r.code != 0 || !strings.Contains(r.stdout, "`rebalancelab bench table --at "+at+"`") ||
		!strings.Contains(r.stdout, "| members=10 | 6 | 11.5 (9.0-14.0) ±") || !strings.Contains(r.stdout, "- settings of kafka: heap -Xmx512m") {
		t.Fatalf("bench table --at %s: exit %d\nstdout:\n%s\nstderr:\n%s", at, r.code, r.stdout, r.stderr)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("x\n<!-- BEGIN BENCH TABLE "+at+" -->\nold\n<!-- END BENCH TABLE -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, bin, "", time.Minute, "bench", "table", "--history", history, "--readme", readme)
	if filled, _ := os.ReadFile(readme); r.code != 0 || strings.Contains(string(filled), "old") || !strings.Contains(string(filled), "| members=10 | 6 |") {
		t.Fatalf("bench table --readme: exit %d, stderr %s, file:\n%s", r.code, r.stderr, filled)
	}
	r = runCLI(t, bin, "", time.Minute, "bench", "table", "--history", history, "--at", "2000-01-01T00:00:00Z")
	if r.code == 0 || !strings.Contains(r.stderr, "no line at 2000-01-01T00:00:00Z") {
		t.Fatalf("bench table --at an unknown time: exit %d, stderr %q", r.code, r.stderr)
	}

	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("PASS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, bin, "", time.Minute, "bench", "report", "--history", history, empty)
	if r.code == 0 || !strings.Contains(r.stderr, "no benchmark results") {
		t.Fatalf("no benchmarks: exit %d, stderr %q; want an error naming it", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(history); string(after) != string(data) {
		t.Fatal("a failed report appended to the history")
	}
}
