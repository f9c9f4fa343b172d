package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/scenarios/members"
)

// memberPoolFlags are `rebalancelab member-pool`'s flags, as given; options converts them.
type memberPoolFlags struct {
	era, topic, listen, client string
}

// options checks which of its two modes the flags ask for. With --listen (a member host serving
// runners on other machines) it returns no pool options and member host true; else a runner's own
// pool's options (Out, In and Log are left to the caller). Errors: --listen with --era, --topic or
// --client (each runner names its own); neither --listen nor both --era and --topic.
func (f *memberPoolFlags) options() (o members.PoolOptions, memberHost bool, err error) {
	if f.listen != "" {
		if f.era != "" || f.topic != "" || f.client != "" {
			return o, false, fmt.Errorf("--listen: each runner names its era and topic; --era, --topic and --client are for a runner's own pool")
		}
		return o, true, nil
	}
	if f.era == "" || f.topic == "" {
		return o, false, fmt.Errorf("member-pool: give --era and --topic (a runner's pool) or --listen HOST:PORT (a member host)")
	}
	return members.PoolOptions{Era: f.era, Topic: f.topic, Client: f.client}, false, nil
}

// newMemberPoolCmd builds `rebalancelab member-pool`: many members of a scenario in one process: a
// runner's own pool (scenario run and bench storm --members-per-process K: the runner builds its
// command line and drives it over stdin and stdout, scenarios/members/pool.go) or, with --listen, a member
// host that runners on other machines reach over TCP (scenario run --member-hosts, scenarios/members/agent.go).
func newMemberPoolCmd() *cobra.Command {
	var f memberPoolFlags
	pool := &cobra.Command{
		Use:   "member-pool (--era E --topic T | --listen HOST:PORT)",
		Short: "Many scenario members in one process: a runner's pool, or a member host serving runners on other machines (--listen)",
		Long: `Runs zkconsumer (--era zk) or newconsumer (classic, cooperative, static) members as the runner's JSON
commands start, stop and kill them ({"cmd":"start","member":"m5","props":{...}}), writing their timeline
records and control lines as JSON lines. With --client kgo the members are franz-go kgo group consumers
(bench storm's peer), configured by Kafka consumer configs in props, writing no timeline; a kill of one
is its Close, as franz-go has no close that leaves the group unsaid.

With --era and --topic (started by the runner, --members-per-process): commands on stdin, records on
stdout, logs to stderr as logrus JSON; SIGTERM or the end of stdin stops every member still running
gracefully, then it exits 0.

With --listen HOST:PORT: a member host for runners on other machines (scenario run --member-hosts). It
prints {"listen":"HOST:PORT"} on stdout once it listens, then serves every TCP connection: a pool after a
hello line naming the era and topic, or a clock probe (lines "t", each answered with this machine's Unix
time in ns). A runner closing its connection stops that pool's members gracefully. Ctrl-C or SIGTERM
stops every pool's members and exits 0. The members dial the brokers and ZooKeeper the runner names:
those must be reachable from this machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, memberHost, err := f.options()
			if err != nil {
				return err
			}
			if memberHost {
				ln, err := net.Listen("tcp", f.listen)
				if err != nil {
					return fmt.Errorf("--listen %s: %w", f.listen, err)
				}
				b, _ := json.Marshal(map[string]string{"listen": ln.Addr().String()})
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				err = members.ServeMemberPools(cmd.Context(), ln, logrus.WithField("listen", ln.Addr().String()))
				if cmd.Context().Err() != nil {
					return nil // Ctrl-C or SIGTERM: the pools' members stopped gracefully
				}
				return err
			}
			logrus.SetFormatter(&logrus.JSONFormatter{})
			o.Out, o.In, o.Log = os.Stdout, os.Stdin, logrus.WithField("era", f.era)
			return members.RunMemberPool(cmd.Context(), o)
		},
	}
	fs := pool.Flags()
	fs.StringVar(&f.era, "era", "", "the members' era: zk, classic, cooperative or static")
	fs.StringVar(&f.topic, "topic", "", "the topic they subscribe to")
	fs.StringVar(&f.client, "client", "", "kgo: run franz-go kgo group consumers instead of the era's (bench storm's peer; props are Kafka consumer configs: bootstrap.servers, group.id, client.id, partition.assignment.strategy, session.timeout.ms, ...); they write no timeline")
	fs.StringVar(&f.listen, "listen", "", "serve runners on other machines at HOST:PORT (a member host; port 0: any free port)")
	return pool
}
