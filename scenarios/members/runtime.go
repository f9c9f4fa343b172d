package members

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Runtime is one incarnation of a scenario member as the runner drives it: its consumer, wherever it
// runs (package doc). A restart of the member is a new Runtime.
type Runtime interface {
	// Run creates the client, subscribes and consumes until the member is stopped or ctx ends (a
	// member in another process is then killed); an error means the application gave up (a zk
	// connector's initial rebalance failed, a fatal group error, a process that exited on its own).
	Run(ctx context.Context) error
	// Stop stops the member and blocks until it has: graceful (zk Shutdown: commit, close the
	// session; newconsumer Close: commit, LeaveGroup unless static; a process's SIGTERM) or not (zk
	// Crash, newconsumer Kill, a process's SIGKILL: nothing more is said).
	Stop(graceful bool)
	// ZKSession is the member's current ZooKeeper session id, 0 if none (coordinator eras, ended, or a
	// process that did not answer within 3 s).
	ZKSession() int64
	// OwnProcess says how the member crashes: true, it is a process of its own, and Stop(false) is its
	// kill -9 (the kernel closes its connections; what it wrote before has been read when Stop
	// returns); false, the caller first cuts every link of the member at its proxies, so that no
	// goodbye reaches the cluster, then calls Stop(false).
	OwnProcess() bool
}

// Member is what every runtime is told of the member it runs.
type Member struct {
	Era   string
	Name  string // the scenario's member name (m1, m2, ...)
	Topic string
	// Props are the era's consumer properties (Props), the group and the member's identity included.
	Props map[string]string
	// Rec gets the member's records; its Sink is the runner's gate. A member in another process writes
	// records that already name it: they go to Rec.Sink as they were written.
	Rec *timeline.Recorder
	Log *logrus.Entry
}

// MemberProcess is how one member process (or pool, or JVM) ended: report.MemberProcess.
type MemberProcess = report.MemberProcess

// Every runtime of the package doc.
var (
	_ Runtime = (*zkMember)(nil)
	_ Runtime = (*coordMember)(nil)
	_ Runtime = (*kgoMember)(nil)
	_ Runtime = (*procConsumer)(nil)
	_ Runtime = (*poolMember)(nil)
	_ Runtime = (*vcConsumer)(nil)
	_ Runtime = (*ocConsumer)(nil)
)
