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
// split between them) into README's Markdown table with the machine and peers above it, appends one
// history line with the medians, and exits non-zero, appending nothing, on output without benchmarks.
func TestBenchReport(t *testing.T) {
	bin := testutil.Binary(t)
	dir := t.TempDir()
	head := "goos: linux\ngoarch: amd64\npkg: github.com/rebalancelab/rebalancelab/benchmark\ncpu: Test CPU\n"
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
		"| members=10 | 6 | 11.5 (9.0-14.0) ±", "| 2 |"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	data, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Bench   string             `json:"bench"`
		Medians map[string]float64 `json:"medians"`
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &e) != nil ||
		e.Bench != "go-test" || e.Medians["CoordinatorRebalance/members=10 ms-rebalancelab-wire/op"] != 11.5 {
		t.Fatalf("history %s", data)
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
