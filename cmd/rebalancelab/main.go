// Command rebalancelab runs Kafka's two eras of consumer-group management on one broker against a
// real ZooKeeper, and compares them. The subcommands are DESIGN.md's stable CLI contract; each lives
// in its own file and registers itself on rootCmd in an init function.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

var logLevel string

var rootCmd = &cobra.Command{
	Use:           "rebalancelab",
	Short:         "Kafka consumer-group rebalancing, ZooKeeper era vs group coordinator, on a real ZooKeeper",
	Version:       version,
	SilenceUsage:  true,
	SilenceErrors: true,
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
		lvl, err := logrus.ParseLevel(logLevel)
		if err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		logrus.SetLevel(lvl)
		logrus.SetOutput(os.Stderr)
		return nil
	},
}

func init() {
	rootCmd.PersistentFlags().StringVar(&logLevel, "log-level", "info", "logrus level: debug, info, warn, error")
}

func main() {
	// Ctrl-C / SIGTERM cancel the command's context; commands clean up (ZooKeeper, brokers, temp dirs)
	// and return. A second signal kills the process the default way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := rootCmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "rebalancelab:", err)
		os.Exit(1)
	}
}
