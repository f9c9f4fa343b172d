// Command rebalancelab runs Kafka's two eras of consumer-group management on one broker against a
// real ZooKeeper, and compares them. The subcommands are docs/design.md's stable CLI contract. Each
// command family lives in its own file and is built by a constructor (newScenarioRunCmd, ...): its
// flags bound to the fields of a flags struct of its own, which one method converts into the
// library's options. newRootCmd assembles the tree; nothing is registered in init functions and no
// flag lives in a package-level variable, so that every tree built is independent of the others.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newRootCmd builds the whole command tree: the root with its persistent --log-level and every
// command family's constructor. Each call builds a new tree with flags of its own.
func newRootCmd() *cobra.Command {
	var logLevel string
	root := &cobra.Command{
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
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "logrus level: debug, info, warn, error")
	root.AddCommand(
		newBenchCmd(),
		newBrokerCmd(),
		newClockCmd(),
		newConsumerCmd(),
		newGenDocsCmd(),
		newLabCmd(),
		newMemberCmd(),
		newMemberPoolCmd(),
		newProduceCmd(),
		newScenarioCmd(),
		newTopicCmd(),
		newZKConsumerCmd(),
	)
	return root
}

// errInterrupted is wrapped by a command's error when SIGINT/SIGTERM ended it; main exits 130
// (128 + SIGINT, the shell's convention) instead of 1.
var errInterrupted = errors.New("interrupted")

// exitInterrupted is the exit status after a signal: 128 + SIGINT, the shell's convention.
const exitInterrupted = 130

func main() {
	// The first SIGINT/SIGTERM cancels the command's context: commands clean up (brokers, ZooKeeper
	// JVMs, temp dirs) and return. Signals stay caught during the clean-up: GNU timeout, for one, sends
	// its signal to the child and then to the process group, two at once; only a third forces the exit.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go handleSignals(sigs, cancel, os.Stderr, func() { os.Exit(exitInterrupted) })
	err := newRootCmd().ExecuteContext(ctx)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "rebalancelab:", err)
	if errors.Is(err, errInterrupted) || (ctx.Err() != nil && errors.Is(err, context.Canceled)) {
		os.Exit(exitInterrupted)
	}
	os.Exit(1)
}

// handleSignals turns the signals received on sigs into: 1st, cancel (clean up and return); 2nd, a
// reminder; 3rd, force() (exit without cleaning up). It returns when sigs is closed or after force.
func handleSignals(sigs <-chan os.Signal, cancel context.CancelFunc, w io.Writer, force func()) {
	n := 0
	for sig := range sigs {
		n++
		switch n {
		case 1:
			fmt.Fprintf(w, "rebalancelab: %v: cleaning up; press Ctrl-C twice more to force\n", sig)
			cancel()
		case 2:
			fmt.Fprintf(w, "rebalancelab: %v: still cleaning up; press Ctrl-C once more to force\n", sig)
		default:
			fmt.Fprintf(w, "rebalancelab: %v: forced exit without cleaning up (ZooKeeper JVMs are killed with this process; temp dirs may remain)\n", sig)
			force()
			return
		}
	}
}
