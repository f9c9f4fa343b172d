package scenarios

// Each scenario runs for real at small N (a real ZooKeeper, an in-process broker, real consumers) and
// must show its relations (catalog.go) on every era; no exact timing is asserted.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/timeline"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// toxiproxy v2.5.0: when a proxied connection's destination closes while a chunk is in flight,
		// ToxicLink.write returns without draining its input, and the no-op toxic stub before it
		// stays blocked on its channel send for good (link.go / toxics/noop.go). Not ours to fix;
		// reported to the lab's owner. Nothing else may leak.
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
	)
}

// testEras are the eras the scenario tests run (REBALANCELAB_ERAS overrides, e.g. "zk").
func testEras() []string {
	if v := os.Getenv("REBALANCELAB_ERAS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"all"}
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.FatalLevel)
	return logrus.NewEntry(l)
}

// runScenario runs name on this project's broker and fails the test unless every era ran and every
// relation held.
func runScenario(t *testing.T, name string, p Params) *RunResult {
	t.Helper()
	return runScenarioOn(t, "", name, p)
}

// runScenarioOn is runScenario on the given broker implementation (lab.Broker*; "" the default).
func runScenarioOn(t *testing.T, broker, name string, p Params) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	// REBALANCELAB_REPORT=DIR keeps each scenario's report (DIR/<scenario>) for a look afterwards.
	var report string
	if dir := os.Getenv("REBALANCELAB_REPORT"); dir != "" {
		report = filepath.Join(dir, name)
	}
	res, err := Run(ctx, Options{Scenario: name, Eras: testEras(), Params: p, Version: "test",
		Log: quietLog(), LabLog: quietLog(), Progress: &progress, ReportDir: report, Broker: broker})
	if err != nil {
		t.Fatalf("%s: %v\nprogress:\n%s", name, err, progress.String())
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table)
	t.Logf("%s\n%s", name, table.String())
	for _, e := range res.Eras {
		if !e.Applies {
			t.Errorf("%s: era %s did not run: %s", name, e.Era, e.Reason)
			continue
		}
		if len(e.Relations) == 0 {
			t.Errorf("%s/%s: no relation checked", name, e.Era)
		}
		for _, rel := range e.Relations {
			if rel.Skipped {
				// Only cross-era relations skip, when the other era did not run.
				if len(res.Eras) > 1 {
					t.Errorf("%s/%s: %s skipped: %s", name, e.Era, rel.Relation, rel.Got)
				}
				continue
			}
			if !rel.OK {
				t.Errorf("%s/%s: relation %q does not hold: %s", name, e.Era, rel.Relation, rel.Got)
			}
		}
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
	return res
}

func TestHerdEffect(t *testing.T) {
	res := runScenario(t, "herd-effect", Params{Consumers: 2, Partitions: 4, Seed: 1})
	// The JSON has DESIGN.md's shape and the run's script.
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenario string            `json:"scenario"`
		Seed     int64             `json:"seed"`
		Params   map[string]any    `json:"params"`
		Versions map[string]string `json:"versions"`
		Script   []Step            `json:"script"`
		Eras     []struct {
			Era    string `json:"era"`
			Totals map[string]int64
			Events []struct {
				Trigger string           `json:"trigger"`
				AtMs    int64            `json:"at_ms"`
				Figures map[string]int64 `json:"figures"`
			} `json:"events"`
			NotApplicable []string `json:"not_applicable"`
			Timeline      string   `json:"timeline"`
		} `json:"eras"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scenario != "herd-effect" || doc.Seed != 1 || doc.Params["consumers"] != float64(2) || doc.Params["partitions"] != float64(4) {
		t.Errorf("json head: %+v", doc)
	}
	if doc.Versions["zookeeper"] != "3.8.0" || doc.Versions["rebalancelab"] != "test" {
		t.Errorf("versions %v", doc.Versions)
	}
	if !bytes.Equal(FormatScript(doc.Script), FormatScript(res.Script)) {
		t.Errorf("script in JSON differs")
	}
	for _, e := range doc.Eras {
		if len(e.Totals) != len(FigureNames) {
			t.Errorf("%s: totals has %d figures, want %d", e.Era, len(e.Totals), len(FigureNames))
		}
		var triggers []string
		for _, ev := range e.Events {
			triggers = append(triggers, ev.Trigger)
		}
		if strings.Join(triggers, ",") != "join,leave" {
			t.Errorf("%s: events %v, want join,leave", e.Era, triggers)
		}
		if len(e.NotApplicable) == 0 {
			t.Errorf("%s: no not_applicable list", e.Era)
		}
	}
	// Every member record carries the era and a scenario member name; the producer acked P partitions.
	for _, e := range res.Eras {
		parts := map[int32]bool{}
		for _, r := range e.Records {
			if r.Era != e.Era {
				t.Fatalf("%s: record of era %q", e.Era, r.Era)
			}
			if r.Kind == timeline.Produce {
				parts[*r.Partition] = true
			}
		}
		if len(parts) != 4 {
			t.Errorf("%s: produced to %d partitions, want 4", e.Era, len(parts))
		}
		if !e.Drained {
			t.Errorf("%s: not drained", e.Era)
		}
		if len(e.ShutdownRecords) == 0 || e.ShutdownRecords[0].Name != scriptEndTrigger {
			t.Errorf("%s: shutdown records do not start with the shutdown trigger", e.Era)
		}
	}
}

func TestConsumerCrash(t *testing.T) {
	runScenario(t, "consumer-crash", Params{Consumers: 2, Partitions: 2, Seed: 1})
}

func TestSplitBrainZombie(t *testing.T) {
	runScenario(t, "split-brain-zombie", Params{Consumers: 2, Partitions: 2, Seed: 1})
}

func TestSplitBrainDivergentViews(t *testing.T) {
	runScenario(t, "split-brain-divergent-views", Params{Consumers: 3, Partitions: 6, Seed: 1})
}

func TestRollingRestart(t *testing.T) {
	runScenario(t, "rolling-restart", Params{Consumers: 2, Partitions: 4, Seed: 1})
}

func TestZKQuorumLoss(t *testing.T) {
	runScenario(t, "zk-quorum-loss", Params{Consumers: 2, Partitions: 2, Seed: 1})
}

func TestStorm(t *testing.T) {
	runScenario(t, "storm", Params{Consumers: 4, Partitions: 8, Seed: 1})
}

// TestReportDir: --report writes index.html and a timeline per era that reads back to the records.
func TestReportDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Scenario: "storm", Eras: []string{"zk"}, Params: Params{Consumers: 2, Partitions: 2},
		ReportDir: dir, Log: quietLog(), LabLog: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Eras[0]
	if e.Timeline != "timeline-zk.jsonl" {
		t.Fatalf("timeline name %q", e.Timeline)
	}
	f, err := os.Open(filepath.Join(dir, e.Timeline))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := timeline.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(e.Records)+len(e.ShutdownRecords) {
		t.Fatalf("file has %d records, run %d+%d", len(recs), len(e.Records), len(e.ShutdownRecords))
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`data-era="zk"`)) || !bytes.Contains(page, []byte("storm")) {
		t.Fatal("index.html lacks the era or the scenario")
	}
}

// TestCancel: a cancelled context stops the run promptly and cleans up (goleak checks the rest).
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var progress syncBuffer
	go func() {
		for !strings.Contains(progress.String(), "step 2/") {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := Run(ctx, Options{Scenario: "herd-effect", Eras: []string{"zk"}, Params: Params{Consumers: 2, Partitions: 2},
		Log: quietLog(), LabLog: quietLog(), Progress: &progress})
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("cancelled run took %v", d)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
