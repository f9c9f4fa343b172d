package main

import (
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
)

// memberFlags are `rebalancelab member`'s flags, as given; options converts them.
type memberFlags struct {
	era, name, topic string
	configs, routes  []string // --config k=v, --route LINK:UPSTREAM=PROXY (repeatable)
}

// options converts the flags into the member's options; Out, In and Log are left to the caller.
// Errors: a --config that is no key=value or gives a key twice; a --route lab.ParseRoute refuses.
func (f *memberFlags) options() (members.MemberOptions, error) {
	props, err := parseConfigs("config", f.configs)
	if err != nil {
		return members.MemberOptions{}, err
	}
	var rs []lab.Route
	for _, s := range f.routes {
		r, err := lab.ParseRoute(s)
		if err != nil {
			return members.MemberOptions{}, err
		}
		rs = append(rs, r)
	}
	return members.MemberOptions{Era: f.era, Name: f.name, Topic: f.topic, Props: props, Routes: rs}, nil
}

// newMemberCmd builds `rebalancelab member`: one member of a scenario run as a process (scenario run
// --members-as processes). Internal: the runner builds its command line; its protocol is
// scenarios/members/process.go's.
func newMemberCmd() *cobra.Command {
	var f memberFlags
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
			o, err := f.options()
			if err != nil {
				return err
			}
			o.Out, o.In = os.Stdout, os.Stdin
			o.Log = logrus.WithFields(logrus.Fields{"era": f.era, "member": f.name})
			logrus.SetFormatter(&logrus.JSONFormatter{})
			return members.RunMember(cmd.Context(), o)
		},
	}
	fs := member.Flags()
	fs.StringVar(&f.era, "era", "", "the member's era: zk, classic, cooperative or static")
	fs.StringVar(&f.name, "name", "", "the scenario's member name (m1, ...): the timeline's member field")
	fs.StringVar(&f.topic, "topic", "", "the topic it subscribes to")
	fs.StringArrayVar(&f.configs, "config", nil, "consumer property key=value (repeatable): the era's properties as the runner built them")
	fs.StringArrayVar(&f.routes, "route", nil, "LINK:UPSTREAM=PROXY: dial PROXY instead of UPSTREAM on link zookeeper, coordinator or fetch (repeatable)")
	for _, n := range []string{"era", "name", "topic"} {
		_ = member.MarkFlagRequired(n)
	}
	return member
}
