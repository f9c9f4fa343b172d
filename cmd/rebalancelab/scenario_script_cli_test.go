package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
)

// TestCLIScenarioScriptRefusals: `scenario run` and `scenario show` refuse, before anything starts
// (exit 1, nothing on stdout), NAME with --script, neither, a file that cannot be read, a malformed file
// (its line and field) and --script with --steps; `scenario show --script` prints the example file's
// script.
func TestCLIScenarioScriptRefusals(t *testing.T) {
	bin := testutil.Binary(t)
	dir := t.TempDir()
	example := filepath.Join("..", "..", "scenarios", "examples", "two-crashes.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\ndescription: x\ndefaults: {consumers: 2, partitions: 2}\nsteps:\n  - start: m1\n  - explode: m1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	neverStarted := filepath.Join(dir, "never.yaml")
	if err := os.WriteFile(neverStarted, []byte("name: never\ndescription: x\ndefaults: {consumers: 2, partitions: 2}\nsteps:\n  - for: i\n    in: 1..N\n    do:\n      - start: m{i+5}\n  - settle\n  - crash: m9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trailing := filepath.Join(dir, "trailing.json")
	if err := os.WriteFile(trailing, []byte("{\"name\": \"t\", \"description\": \"x\",\n \"steps\": [\n  \"settle\",\n ],\n \"defaults\": {\"consumers\": 1, \"partitions\": 1}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", "herd-effect", "--script", example},
			`rebalancelab: scenario run: NAME "herd-effect" and --script ` + example + `: give one (a catalogue scenario by NAME, or a scenario file with --script)`},
		{[]string{"scenario", "show", "storm", "--script", example},
			`rebalancelab: scenario show: NAME "storm" and --script ` + example + `: give one (a catalogue scenario by NAME, or a scenario file with --script)`},
		{[]string{"scenario", "run"}, "rebalancelab: scenario run: give a scenario NAME (scenario list) or --script FILE"},
		{[]string{"scenario", "run", "--script", missing}, "rebalancelab: --script " + missing + ": cannot read it: no such file or directory"},
		{[]string{"scenario", "run", "--script", bad, "--era", "classic"},
			"rebalancelab: " + bad + `:6: field steps[1].explode: unknown action "explode" (actions: broker-kill, broker-start, broker-stop, crash, cut, heal, host-delay, host-down, host-loss, host-up, latency, partition, partition-heal, settle, stall, start, stop, trigger, zk-start, zk-stop, let, for)`},
		{[]string{"scenario", "run", "--script", example, "--steps", bad},
			"rebalancelab: --script " + example + " and --steps " + bad + ": a scenario file has its own steps; --steps replays steps on a catalogue scenario NAME"},
		{[]string{"scenario", "run", "--script", example, "--consumers", "2"},
			"rebalancelab: --script " + example + ": --consumers 2: two-crashes needs at least 3"},
		{[]string{"scenario", "run", "connect-workers", "--era", "bogus", "--steps", bad},
			"rebalancelab: connect-workers takes only --connect-protocol and --json (its workers, layouts and lab are its own): --era, --steps given"},
		{[]string{"scenario", "show", "--script", neverStarted},
			"rebalancelab: " + neverStarted + ":10: field steps[2].crash: m9 is not running here (never started)"},
		{[]string{"scenario", "show", "--script", trailing},
			"rebalancelab: " + trailing + ":4:2: JSON syntax: invalid character ']' looking for beginning of value"},
		{[]string{"scenario", "show", "connect-workers"},
			"rebalancelab: connect-workers is a driver scenario without a script: its phases are fixed in Go (the four worker layouts, then a worker killed with -9, once per Connect protocol); run it with `rebalancelab scenario run connect-workers [--connect-protocol sessioned,eager] [--json FILE]` or make connect-workers"},
		{[]string{"scenario", "run", "herd-join", "--era", ""},
			`rebalancelab: --era "": an empty era name: want zk, classic, cooperative, static, or all (comma-separated or repeated)`},
	}
	for _, c := range cases {
		r := runCLI(t, bin, "", time.Minute, c.args...)
		if r.code != 1 || strings.TrimSpace(r.stderr) != c.want || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n %s\nwant exit 1 and:\n %s", c.args, r.code, r.stdout, strings.TrimSpace(r.stderr), c.want)
		}
	}
	r := runCLI(t, bin, "", time.Minute, "scenario", "show", "--script", example, "--seed", "3")
	const want = `{"delay_ms":0,"action":"trigger","name":"crash-1"}
{"delay_ms":0,"action":"crash","member":"m2"}
`
	if r.code != 0 || !strings.Contains(r.stdout, want) || strings.Count(r.stdout, "\n") != 10 {
		t.Errorf("show --script: exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestCLIScenarioListJSON: scenario list --json lists every catalogue scenario ("driver": false) and
// then connect-workers, a driver scenario without a script ("driver": true), as scenario list does.
func TestCLIScenarioListJSON(t *testing.T) {
	bin := testutil.Binary(t)
	r := runCLI(t, bin, "", time.Minute, "scenario", "list", "--json")
	var entries []struct {
		Name   string `json:"name"`
		Driver bool   `json:"driver"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); r.code != 0 || err != nil {
		t.Fatalf("exit %d, %v; stderr: %s", r.code, err, r.stderr)
	}
	var names []string
	for i, e := range entries {
		names = append(names, e.Name)
		if e.Driver != (i == len(entries)-1) {
			t.Errorf("%s: driver %v", e.Name, e.Driver)
		}
	}
	want := append(slices.Collect(func(yield func(string) bool) {
		for _, s := range catalog.Catalog() {
			if !yield(s.Name) {
				return
			}
		}
	}), "connect-workers")
	if len(want) != 24 || !slices.Equal(names, want) {
		t.Errorf("names %q (%d), want %q (24)", names, len(names), want)
	}
	l := runCLI(t, bin, "", time.Minute, "scenario", "list")
	if lines := strings.Split(strings.TrimSpace(l.stdout), "\n"); len(lines) != 24 || !strings.HasPrefix(lines[23], "connect-workers ") {
		t.Errorf("scenario list: %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}
