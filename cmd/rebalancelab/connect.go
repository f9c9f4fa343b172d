package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

// runConnect is `scenario run connect-workers`: scenarios.RunConnect once per protocol, each run's
// table on stdout, the runs as a JSON list in jsonFile; an error when a run did not pass (a relation
// did not hold, or it recorded an error: ConnectResult.Passed).
func runConnect(cmd *cobra.Command, protocols []string, jsonFile string) error {
	var runs []*scenarios.ConnectResult
	passed := true
	for _, p := range protocols {
		o := scenarios.ConnectOptions{Protocol: p, Progress: cmd.ErrOrStderr(), Log: logrus.NewEntry(logrus.StandardLogger())}
		if logrus.GetLevel() >= logrus.DebugLevel {
			o.LabLog = logrus.NewEntry(logrus.StandardLogger())
		}
		res, err := scenarios.RunConnect(cmd.Context(), o)
		if res != nil {
			if werr := res.WriteTable(cmd.OutOrStdout()); werr != nil {
				return werr
			}
			runs = append(runs, res)
		}
		if err != nil {
			return fmt.Errorf("scenario %s (%s): %w", scenarios.ConnectScenario, p, err)
		}
		passed = passed && res.Passed()
	}
	if jsonFile != "" {
		b, err := json.MarshalIndent(map[string]any{"scenario": scenarios.ConnectScenario, "runs": runs}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if !passed {
		return fmt.Errorf("scenario %s failed: a relation did not hold or the run recorded an error (FAIL and error lines above)", scenarios.ConnectScenario)
	}
	return nil
}
