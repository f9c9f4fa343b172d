package lab

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

func testLog(t *testing.T) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l).WithField("test", t.Name())
}

func startZK(t *testing.T, nodes int) *ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	z, err := StartZooKeeper(ctx, ZKOptions{Nodes: nodes, Log: testLog(t)})
	if err != nil {
		t.Fatalf("StartZooKeeper(%d nodes): %v", nodes, err)
	}
	t.Cleanup(func() {
		if err := z.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return z
}

// zkConnect opens a go-zookeeper session and waits until it has a session id.
// dial nil = go-zookeeper's default dialer.
func zkConnect(t *testing.T, servers []string, timeout time.Duration, dial zk.Dialer) *zk.Conn {
	t.Helper()
	if dial == nil {
		dial = net.DialTimeout
	}
	c, _, err := zk.Connect(servers, timeout, zk.WithLogInfo(false), zk.WithLogger(zklog.Discard), zk.WithDialer(dial))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", servers, err)
	}
	t.Cleanup(c.Close)
	testutil.WaitFor(t, 20*time.Second, "a ZooKeeper session", func() bool { return c.State() == zk.StateHasSession })
	return c
}
