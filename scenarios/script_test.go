package scenarios

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestScriptSameSeedSameBytes: every scenario's scripted events are byte-identical for the same seed
// (built twice, independently), for the lab's and Kafka's timing.
func TestScriptSameSeedSameBytes(t *testing.T) {
	for _, sc := range catalog.Catalog() {
		for _, timing := range []spec.Timing{spec.LabTiming(), spec.KafkaTiming()} {
			for _, seed := range []int64{0, 1, 42, -7} {
				p := spec.Params{Seed: seed}
				a, err := sc.ScriptFor(p, timing)
				if err != nil {
					t.Fatalf("%s: %v", sc.Name, err)
				}
				b, err := sc.ScriptFor(p, timing)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(spec.FormatScript(a), spec.FormatScript(b)) {
					t.Fatalf("%s seed %d: two builds differ:\n%s\n---\n%s", sc.Name, seed, spec.FormatScript(a), spec.FormatScript(b))
				}
				if len(a) == 0 {
					t.Fatalf("%s: empty script", sc.Name)
				}
			}
		}
	}
}

// TestScriptGolden pins herd-effect's script for seed 1 (N=3): the random choice (who leaves) comes
// from PCG, whose sequence Go's math/rand/v2 fixes, so these bytes hold on every platform.
func TestScriptGolden(t *testing.T) {
	sc, err := catalog.Lookup("herd-effect")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := sc.ScriptFor(spec.Params{Consumers: 3, Partitions: 6, Seed: 1}, spec.LabTiming())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.String())
	}
	leaver := steps[len(steps)-2].Member
	want := []string{"start m1", "start m2", "start m3", "settle", "trigger join", "start m4", "settle",
		"trigger leave", "stop " + leaver, "settle"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("script = %q, want %q", got, want)
	}
	// The leaver is drawn among the 4 members; record which one seed 1 gives, to catch a change of
	// the generator or of the order of draws.
	if leaver != "m4" {
		t.Fatalf("seed 1 leaver = %s, want m4", leaver)
	}
	line := string(spec.FormatScript(steps[:2]))
	if line != `{"delay_ms":0,"action":"start","member":"m1"}`+"\n"+`{"delay_ms":50,"action":"start","member":"m2"}`+"\n" {
		t.Fatalf("FormatScript = %q", line)
	}
}

// TestScriptSeedMatters: scenarios with random choices give different scripts for different seeds
// (over 20 seeds, at least two distinct scripts), and the choices stay in range.
func TestScriptSeedMatters(t *testing.T) {
	for _, name := range []string{"herd-effect", "consumer-crash", "split-brain-zombie", "split-brain-divergent-views", "rolling-restart", "zk-quorum-loss"} {
		sc, err := catalog.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[string]bool{}
		for seed := int64(0); seed < 20; seed++ {
			steps, err := sc.ScriptFor(spec.Params{Consumers: 4, Partitions: 8, Seed: seed}, spec.LabTiming())
			if err != nil {
				t.Fatal(err)
			}
			distinct[string(spec.FormatScript(steps))] = true
			checkScript(t, name, steps, 4)
		}
		if len(distinct) < 2 {
			t.Errorf("%s: 20 seeds gave %d distinct script(s)", name, len(distinct))
		}
	}
}

// checkScript: members are started before they are stopped, crashed or faulted; zk nodes in 0..2;
// every trigger name unique; a settle ends the script.
func checkScript(t *testing.T, name string, steps []spec.Step, n int) {
	t.Helper()
	running := map[string]bool{}
	triggers := map[string]bool{}
	for i, s := range steps {
		switch s.Action {
		case spec.ActStart:
			if running[s.Member] {
				t.Fatalf("%s step %d: %s started twice", name, i, s.Member)
			}
			running[s.Member] = true
		case spec.ActStop, spec.ActCrash:
			if !running[s.Member] {
				t.Fatalf("%s step %d: %s of a member not running (%s)", name, i, s.Action, s.Member)
			}
			running[s.Member] = false
		case spec.ActStall, spec.ActLatency, spec.ActHeal, spec.ActCut:
			if !running[s.Member] {
				t.Fatalf("%s step %d: fault on a member not running (%s)", name, i, s.Member)
			}
			if s.Link != catalog.CoordinationLink && s.Link != string(timeline.LinkFetch) && s.Link != string(timeline.LinkZooKeeper) && s.Link != string(timeline.LinkCoordinator) {
				t.Fatalf("%s step %d: link %q", name, i, s.Link)
			}
		case spec.ActZKStop, spec.ActZKStart:
			if s.Node < 0 || s.Node > 2 {
				t.Fatalf("%s step %d: node %d", name, i, s.Node)
			}
		case spec.ActTrigger:
			if triggers[s.Name] {
				t.Fatalf("%s step %d: trigger %s twice", name, i, s.Name)
			}
			triggers[s.Name] = true
		}
	}
	if steps[len(steps)-1].Action != spec.ActSettle {
		t.Fatalf("%s: last step %s, want settle", name, steps[len(steps)-1])
	}
}

// TestScriptShapes: each scenario's script does what its description says.
func TestScriptShapes(t *testing.T) {
	count := func(steps []spec.Step, a spec.Action) int {
		n := 0
		for _, s := range steps {
			if s.Action == a {
				n++
			}
		}
		return n
	}
	get := func(name string, n int) []spec.Step {
		sc, err := catalog.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := sc.ScriptFor(spec.Params{Consumers: n, Partitions: 8, Seed: 3}, spec.LabTiming())
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}
	if s := get("consumer-crash", 2); count(s, spec.ActCrash) != 1 || count(s, spec.ActStart) != 2 {
		t.Errorf("consumer-crash: %d crashes, %d starts", count(s, spec.ActCrash), count(s, spec.ActStart))
	}
	z := get("split-brain-zombie", 2)
	var stall, heal spec.Step
	for _, s := range z {
		switch s.Action {
		case spec.ActStall:
			stall = s
		case spec.ActHeal:
			heal = s
		}
	}
	if stall.Link != catalog.CoordinationLink || heal.Member != stall.Member || heal.DelayMs <= spec.LabTiming().MaxSessionMs() {
		t.Errorf("split-brain-zombie: stall %+v heal %+v: want the coordination link healed after more than a session", stall, heal)
	}
	rr := get("rolling-restart", 4)
	if count(rr, spec.ActStop) != 4 || count(rr, spec.ActStart) != 8 || count(rr, spec.ActTrigger) != 8 {
		t.Errorf("rolling-restart: %d stops, %d starts, %d triggers", count(rr, spec.ActStop), count(rr, spec.ActStart), count(rr, spec.ActTrigger))
	}
	// Each restarted member stays down half the session timeout (the rejoin trigger waits it out).
	for i, s := range rr {
		if s.Action == spec.ActStop && (rr[i+1].Action != spec.ActTrigger || rr[i+1].DelayMs != spec.LabTiming().SessionTimeoutMs/2) {
			t.Errorf("rolling-restart: after %s comes %+v, want the rejoin trigger %d ms later", s, rr[i+1], spec.LabTiming().SessionTimeoutMs/2)
		}
	}
	q := get("zk-quorum-loss", 3)
	if count(q, spec.ActZKStop) != 2 || count(q, spec.ActZKStart) != 2 {
		t.Errorf("zk-quorum-loss: %d stops, %d starts", count(q, spec.ActZKStop), count(q, spec.ActZKStart))
	}
	for _, s := range q {
		if s.Action == spec.ActZKStart && s.DelayMs > 0 && s.DelayMs <= spec.LabTiming().ZKSessionTimeoutMs {
			t.Errorf("zk-quorum-loss: outage %d ms not longer than the session", s.DelayMs)
		}
	}
	if s := get("storm", 5); count(s, spec.ActStart) != 5 || s[0].Action != spec.ActTrigger {
		t.Errorf("storm: %v", s)
	}
	d := get("split-brain-divergent-views", 4)
	if count(d, spec.ActLatency) != 2 || count(d, spec.ActHeal) < 1 {
		t.Errorf("divergent views: %d latencies, %d heals", count(d, spec.ActLatency), count(d, spec.ActHeal))
	}
}

func TestParamsAndLookup(t *testing.T) {
	if _, err := catalog.Lookup("nope"); err == nil || !strings.Contains(err.Error(), "herd-effect") {
		t.Fatalf("catalog.Lookup(nope) = %v, want an error listing the scenarios", err)
	}
	sc, _ := catalog.Lookup("consumer-crash")
	if _, err := sc.ScriptFor(spec.Params{Consumers: 1}, spec.LabTiming()); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Fatalf("1 consumer: %v", err)
	}
	if _, err := sc.ScriptFor(spec.Params{Partitions: -1}, spec.LabTiming()); err == nil {
		t.Fatal("negative partitions accepted")
	}
	for _, s := range catalog.Catalog() {
		if s.Description == "" || strings.Contains(s.Description, "\n") {
			t.Errorf("%s: description %q is not one line", s.Name, s.Description)
		}
	}
	eras, err := ResolveEras([]string{"all"})
	if err != nil || strings.Join(eras, ",") != "zk,classic,cooperative,static" {
		t.Fatalf("all = %v, %v", eras, err)
	}
	if eras, err := ResolveEras([]string{"static,zk", "zk"}); err != nil || strings.Join(eras, ",") != "static,zk" {
		t.Fatalf("static,zk = %v, %v", eras, err)
	}
	if _, err := ResolveEras([]string{"kip848"}); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Fatalf("kip848: %v", err)
	}
	if _, err := ResolveEras([]string{"eager"}); err == nil {
		t.Fatal("unknown era accepted")
	}
}
