package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedSweep reads a sweep's JSON (SweepResult.WriteJSON) back into a SweepResult holding what the
// verdict reads: per run its size, and per era whether it applied, its not-applicable figures and its
// events' figures.
func recordedSweep(t *testing.T, path string) *SweepResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenario, Trigger string
		Runs              []struct {
			Params struct {
				Consumers int `json:"consumers"`
			} `json:"params"`
			Eras []struct {
				Era           string   `json:"era"`
				Applies       bool     `json:"applies"`
				NotApplicable []string `json:"not_applicable"`
				Events        []Event  `json:"events"`
			} `json:"eras"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := &SweepResult{Scenario: doc.Scenario, Trigger: doc.Trigger}
	for _, run := range doc.Runs {
		r := &RunResult{Scenario: doc.Scenario, Params: Params{Consumers: run.Params.Consumers}}
		for _, e := range run.Eras {
			r.Eras = append(r.Eras, &EraRun{Era: e.Era, Applies: e.Applies,
				Result: Result{Era: e.Era, NotApplicable: e.NotApplicable, Events: e.Events}})
		}
		if n := len(s.Sizes); n == 0 || s.Sizes[n-1].N != run.Params.Consumers {
			s.Sizes = append(s.Sizes, &SweepSize{N: run.Params.Consumers})
		}
		z := s.Sizes[len(s.Sizes)-1]
		z.Runs = append(z.Runs, r)
	}
	return s
}

func TestSweepVerdictRecordedDump(t *testing.T) {
	s := recordedSweep(t, filepath.Join("..", "docs", "figures", "ch4-herd-sweep.json"))
	t.Log("\n" + strings.Join(s.Verdict().Lines, "\n"))
}
