package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios/connect"
)

// runConnect is `scenario run connect-workers`: connect.Run once per protocol, each run's
// table on stdout, the runs as a JSON list in jsonFile; an error when a run did not pass (a relation
// did not hold, or it recorded an error: connect.Result.Passed).
func runConnect(cmd *cobra.Command, protocols []string, jsonFile string) error {
	var runs []*connect.Result
	passed := true
	for _, p := range protocols {
		o := connect.Options{Protocol: p, Progress: cmd.ErrOrStderr(), Log: logrus.NewEntry(logrus.StandardLogger())}
		if logrus.GetLevel() >= logrus.DebugLevel {
			o.LabLog = logrus.NewEntry(logrus.StandardLogger())
		}
		res, err := connect.Run(cmd.Context(), o)
		if res != nil {
			if werr := res.WriteTable(cmd.OutOrStdout()); werr != nil {
				return werr
			}
			runs = append(runs, res)
		}
		if err != nil {
			return fmt.Errorf("scenario %s (%s): %w", connect.Scenario, p, err)
		}
		passed = passed && res.Passed()
	}
	if jsonFile != "" {
		b, err := json.MarshalIndent(map[string]any{"scenario": connect.Scenario, "runs": runs}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if !passed {
		return fmt.Errorf("scenario %s failed: a relation did not hold or the run recorded an error (FAIL and error lines above)", connect.Scenario)
	}
	return nil
}
