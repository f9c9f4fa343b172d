package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// ReadSweep reads a sweep's JSON (SweepResult.WriteJSON, such as the recorded docs/figures/*-sweep.json)
// back into a SweepResult holding what the verdict (Verdict, FigureCells) and the models (ModelCells)
// read: per run its size, partitions and script, and per era whether it applied, its not-applicable
// figures, its events' figures and its end owners. Runs of one size are consecutive in the JSON.
// Errors: the reader's, or JSON that does not decode.
func ReadSweep(r io.Reader) (*SweepResult, error) {
	var doc struct {
		Scenario string `json:"scenario"`
		Trigger  string `json:"trigger"`
		Runs     []struct {
			Params struct {
				Consumers  int `json:"consumers"`
				Partitions int `json:"partitions"`
			} `json:"params"`
			Script []spec.Step `json:"script"`
			Eras   []struct {
				Era           string            `json:"era"`
				Applies       bool              `json:"applies"`
				Events        []figures.Event   `json:"events"`
				EndOwners     map[string]string `json:"end_owners"`
				NotApplicable []string          `json:"not_applicable"`
			} `json:"eras"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading a sweep's JSON: %w", err)
	}
	s := &SweepResult{Scenario: doc.Scenario, Trigger: doc.Trigger}
	for _, run := range doc.Runs {
		rr := &RunResult{Scenario: doc.Scenario, Script: run.Script,
			Params: spec.Params{Consumers: run.Params.Consumers, Partitions: run.Params.Partitions}}
		for _, e := range run.Eras {
			rr.Eras = append(rr.Eras, &EraRun{Era: e.Era, Applies: e.Applies, EndOwners: e.EndOwners,
				Result: figures.Result{Era: e.Era, NotApplicable: e.NotApplicable, Events: e.Events}})
		}
		if n := len(s.Sizes); n == 0 || s.Sizes[n-1].N != run.Params.Consumers {
			s.Sizes = append(s.Sizes, &SweepSize{N: run.Params.Consumers})
		}
		z := s.Sizes[len(s.Sizes)-1]
		z.Runs = append(z.Runs, rr)
	}
	return s, nil
}
