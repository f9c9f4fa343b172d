package main

import (
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var benchCmd = &cobra.Command{Use: "bench", Short: "Benchmarks, each beside a peer measured in the same run"}

func init() {
	rootCmd.AddCommand(benchCmd)
}

func createTopic(cmd *cobra.Command, bootstrap, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(cmd.Context(), partitions, 1, nil, topic)
	if err != nil {
		return err
	}
	return resp.Err
}
