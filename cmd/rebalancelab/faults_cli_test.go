package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// TestCLIFaultThatFailsFailsTheRun: `scenario run storm --steps FILE` with storm's own steps and then
// a crash of m2 twice — the second finds m2 already gone, a fault that cannot be injected. Storm's
// own relations hold (the group converged, every partition is owned once), yet the binary exits 1
// naming the error; the table prints it and ends with result: FAIL; the JSON says passed false with
// the error and the fault relation (the second crash left no crash record) as its failures.
func TestCLIFaultThatFailsFailsTheRun(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := testutil.Binary(t)
	dir := t.TempDir()
	steps := []spec.Step{
		{Action: spec.ActTrigger, Name: "storm"},
		{Action: spec.ActStart, Member: "m1"}, {Action: spec.ActStart, Member: "m2"},
		{Action: spec.ActSettle, QuietMs: 1200, TimeoutMs: 45000},
		{Action: spec.ActCrash, Member: "m2"},
		{Action: spec.ActSettle, QuietMs: 1200, TimeoutMs: 45000},
		{Action: spec.ActCrash, Member: "m2"},
	}
	script := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(script, spec.FormatScript(steps), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "result.json")
	r := runCLI(t, bin, "", 4*time.Minute, "scenario", "run", "storm", "--era", "classic", "--consumers", "2", "--partitions", "2",
		"--steps", script, "--json", out)
	t.Logf("exit %d\nstdout:\n%s", r.code, r.stdout)
	const wantErr = "classic: error: crash m2: not running"
	if r.code != 1 {
		t.Fatalf("exit status %d, want 1\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "scenario storm failed: "+wantErr) {
		t.Errorf("stderr does not name the error %q:\n%s", wantErr, r.stderr)
	}
	if !strings.Contains(r.stdout, wantErr+"\n") || !strings.Contains(r.stdout, "result: FAIL (relations: ") ||
		!strings.Contains(r.stdout, " 1 failed, 0 skipped (not measured); errors: 1)") {
		t.Errorf("the table does not print the error and the verdict")
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Passed        bool     `json:"passed"`
		Failures      []string `json:"failures"`
		RelationsHold bool     `json:"relations_hold"`
		Counts        struct {
			Held, Failed, Skipped int
		} `json:"relation_counts"`
		Script []spec.Step `json:"script"`
		Eras   []struct {
			Errors    []string                `json:"errors"`
			Relations []report.RelationResult `json:"relations"`
		} `json:"eras"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	wantRel := "classic: FAIL " + catalog.FaultRelationText + ": 1 of 2 fault steps left no fault record: crash m2"
	if doc.Passed || doc.RelationsHold || len(doc.Failures) != 2 || doc.Failures[0] != wantErr || doc.Failures[1] != wantRel {
		t.Errorf("passed %v, relations_hold %v, failures %q; want false, false, [%q %q]", doc.Passed, doc.RelationsHold, doc.Failures, wantErr, wantRel)
	}
	if doc.Counts.Failed != 1 || doc.Counts.Held == 0 || len(doc.Script) != len(steps) {
		t.Errorf("relation counts %+v, script of %d steps; want 1 failed (the fault relation), some held, the %d steps given", doc.Counts, len(doc.Script), len(steps))
	}
	if len(doc.Eras) != 1 || len(doc.Eras[0].Errors) != 1 || doc.Eras[0].Errors[0] != "crash m2: not running" {
		t.Fatalf("eras %+v", doc.Eras)
	}
	found := false
	for _, rel := range doc.Eras[0].Relations {
		if rel.Relation == catalog.FaultRelationText {
			found = true
			if rel.OK || rel.Got != "1 of 2 fault steps left no fault record: crash m2" {
				t.Errorf("fault relation ok=%v %q", rel.OK, rel.Got)
			}
		}
	}
	if !found {
		t.Error("no fault relation in the JSON")
	}
}

// TestReadStepsBadInput: --steps's file is refused, naming the line, when a line is no step, has a
// field no step has, or names no action; an empty file has no step.
func TestReadStepsBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"{\"action\":\"crash\",\"member\":\"m1\"}\nnot json\n": "line 2: invalid character",
		"{\"action\":\"crash\",\"membr\":\"m1\"}\n":            `line 1: json: unknown field "membr"`,
		"\n{\"member\":\"m1\"}\n":                              "line 2: no action",
		"\n\n":                                                 "no step",
		"{\"action\":\"explode\",\"member\":\"m1\"}\n":         `line 1: unknown action "explode" (actions: broker-kill, broker-start,`,
		"# a scenario file\nname: x\n":                         "line 1: invalid character '#' looking for beginning of value (this looks like a scenario file: run it with --script FILE",
	} {
		_, err := readSteps(strings.NewReader(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
	steps, err := readSteps(strings.NewReader("{\"delay_ms\":5,\"action\":\"zk-stop\",\"node\":1}\n"))
	if err != nil || len(steps) != 1 || steps[0] != (spec.Step{DelayMs: 5, Action: spec.ActZKStop, Node: 1}) {
		t.Errorf("steps %+v, %v", steps, err)
	}
}

// TestParseBrokerConfig: --broker-config (scenario run and bench storm) takes KEY=VALUE settings, the
// value may hold '=' and be empty; a setting without '=' or with no key is refused, naming it.
func TestParseBrokerConfig(t *testing.T) {
	got, err := parseBrokerConfig([]string{"zookeeper.session.timeout.ms=18000", "a=b=c", "empty="})
	want := map[string]string{"zookeeper.session.timeout.ms": "18000", "a": "b=c", "empty": ""}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("parseBrokerConfig: %v, %v; want %v", got, err, want)
	}
	if got, err := parseBrokerConfig(nil); got != nil || err != nil {
		t.Errorf("no settings: %v, %v; want nil, nil", got, err)
	}
	for _, bad := range []string{"no-equals", "=value"} {
		if _, err := parseBrokerConfig([]string{bad}); err == nil || !strings.Contains(err.Error(), `--broker-config "`+bad+`"`) {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}
