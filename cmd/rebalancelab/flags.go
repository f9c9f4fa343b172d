package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// parseConfigs turns repeated `--<flag> key=value` into properties. A value without '=' or with an
// empty key, and a key given twice, are errors naming the flag (a second value would silently win).
func parseConfigs(flag string, kvs []string) (map[string]string, error) {
	props := map[string]string{}
	first := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, kv)
		}
		if prev, dup := first[k]; dup {
			return nil, fmt.Errorf("--%s %s: %s is already given (--%s %s); give each key once", flag, kv, k, flag, prev)
		}
		first[k] = kv
		props[k] = v
	}
	return props, nil
}

// addExternalFlags adds --bootstrap and --keep (an existing cluster instead of a lab).
func addExternalFlags(cmd *cobra.Command, bootstrap *string, keep *bool) {
	cmd.Flags().StringVar(bootstrap, "bootstrap", "", "an existing Kafka cluster (host:port,...) instead of a lab: nothing is started; topics and groups rebalancelab.<run id>.* are removed afterwards")
	cmd.Flags().BoolVar(keep, "keep", false, "with --bootstrap: leave the run's topics, groups and /consumers znodes on the cluster")
}

// checkExternalFlags refuses flag combinations an existing cluster cannot take.
func checkExternalFlags(cmd *cobra.Command, bootstrap string, keep bool) error {
	switch {
	case bootstrap == "" && keep:
		return fmt.Errorf("--keep: only with --bootstrap (a lab's topics and groups go with the lab)")
	case bootstrap != "" && cmd.Flags().Changed("broker"):
		return fmt.Errorf("--broker: the lab's broker implementation; with --bootstrap the cluster's brokers run")
	}
	return nil
}
