package main

import (
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

// `rebalancelab member-pool`: many members of a scenario in one process (scenario run and bench storm
// --members-per-process K). Internal: the runner builds its command line and drives it; its protocol
// is scenarios/pool.go's.
func init() {
	var era, topic string
	pool := &cobra.Command{
		Use:    "member-pool --era E --topic T",
		Short:  "Many scenario members in one process (internal: started by --members-per-process)",
		Hidden: true,
		Long: `Runs zkconsumer (--era zk) or newconsumer (classic, cooperative, static) members as the runner's JSON
commands on stdin start, stop and kill them ({"cmd":"start","member":"m5","props":{...}}), writing
their timeline records and control lines to stdout as JSON lines and logs to stderr as logrus JSON.
SIGTERM or the end of stdin stops every member still running gracefully, then it exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logrus.SetFormatter(&logrus.JSONFormatter{})
			return scenarios.RunMemberPool(cmd.Context(), scenarios.PoolOptions{Era: era, Topic: topic,
				Out: os.Stdout, In: os.Stdin, Log: logrus.WithField("era", era)})
		},
	}
	f := pool.Flags()
	f.StringVar(&era, "era", "", "the members' era: zk, classic, cooperative or static")
	f.StringVar(&topic, "topic", "", "the topic they subscribe to")
	for _, n := range []string{"era", "topic"} {
		_ = pool.MarkFlagRequired(n)
	}
	rootCmd.AddCommand(pool)
}
