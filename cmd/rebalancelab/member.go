package main

import (
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
)

// `rebalancelab member`: one member of a scenario run as a process (scenario run --members-as
// processes). Internal: the runner builds its command line; its protocol is scenarios/members/process.go's.
func init() {
	var (
		era, name, topic string
		configs, routes  []string
	)
	member := &cobra.Command{
		Use:    "member --era E --name N --topic T --config k=v ... [--route LINK:UPSTREAM=PROXY ...]",
		Short:  "One scenario member as a process (internal: started by scenario run --members-as processes)",
		Hidden: true,
		Long: `Runs one zkconsumer (--era zk) or newconsumer (classic, cooperative, static) member with the consumer
properties --config gives, writing its timeline records to stdout as JSON lines (one write each) and its
logs to stderr as logrus JSON. SIGTERM, a "stop" line on stdin or stdin's end stop it gracefully (zk
Shutdown; Close with LeaveGroup unless static) and it exits 0; SIGKILL is a crash. A "session" line on stdin
is answered on stdout with {"ctl":"session","session_id":N} (its ZooKeeper session, 0 if none). --route
sends a link's dials of UPSTREAM to the runner's fault proxy PROXY; other dials go direct.
Exit status 1 when the member cannot start or gives up (the error on stderr).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props, err := parseConfigs("config", configs)
			if err != nil {
				return err
			}
			var rs []lab.Route
			for _, s := range routes {
				r, err := lab.ParseRoute(s)
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
			logrus.SetFormatter(&logrus.JSONFormatter{})
			return members.RunMember(cmd.Context(), members.MemberOptions{Era: era, Name: name, Topic: topic,
				Props: props, Routes: rs, Out: os.Stdout, In: os.Stdin,
				Log: logrus.WithFields(logrus.Fields{"era": era, "member": name})})
		},
	}
	f := member.Flags()
	f.StringVar(&era, "era", "", "the member's era: zk, classic, cooperative or static")
	f.StringVar(&name, "name", "", "the scenario's member name (m1, ...): the timeline's member field")
	f.StringVar(&topic, "topic", "", "the topic it subscribes to")
	f.StringArrayVar(&configs, "config", nil, "consumer property key=value (repeatable): the era's properties as the runner built them")
	f.StringArrayVar(&routes, "route", nil, "LINK:UPSTREAM=PROXY: dial PROXY instead of UPSTREAM on link zookeeper, coordinator or fetch (repeatable)")
	for _, n := range []string{"era", "name", "topic"} {
		_ = member.MarkFlagRequired(n)
	}
	rootCmd.AddCommand(member)
}
