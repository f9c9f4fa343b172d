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
		"broker implementation: rebalancelab (this project's) or kafka (real Kafka 3.9 in ZooKeeper mode, from `make deps`)")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if !slices.Contains(lab.BrokerImplementations, *impl) {
			return fmt.Errorf("--broker %q: want one of %s", *impl, strings.Join(lab.BrokerImplementations, ", "))
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
