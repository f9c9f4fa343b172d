package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
)

// addBrokerFlag adds --broker (the broker implementation the lab runs: lab.BrokerImplementations)
// to cmd, checked before cmd runs.
func addBrokerFlag(cmd *cobra.Command, impl *string) {
	cmd.Flags().StringVar(impl, "broker", lab.BrokerRebalancelab,
		"broker implementation: rebalancelab (this project's) or kafka (real Kafka 3.9 in ZooKeeper mode, from make deps)")
	checkBrokerFlag(cmd, impl, false)
}

// addBrokerListFlag is addBrokerFlag accepting a comma-separated list of distinct implementations
// (run on each in turn).
func addBrokerListFlag(cmd *cobra.Command, impl *string) {
	cmd.Flags().StringVar(impl, "broker", lab.BrokerRebalancelab,
		"broker implementation(s): rebalancelab, kafka (real Kafka 3.9 in ZooKeeper mode, from make deps), or both comma-separated to compare")
	checkBrokerFlag(cmd, impl, true)
}

func checkBrokerFlag(cmd *cobra.Command, impl *string, list bool) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		names := []string{*impl}
		if list {
			names = strings.Split(*impl, ",")
		}
		seen := map[string]bool{}
		for _, n := range names {
			if !slices.Contains(lab.BrokerImplementations, n) || seen[n] {
				return fmt.Errorf("--broker %q: want one of %s%s", *impl, strings.Join(lab.BrokerImplementations, ", "),
					map[bool]string{true: ", or several of them comma-separated, each once", false: ""}[list])
			}
			seen[n] = true
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
