package lab

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

func modes(t *testing.T, z *ZooKeeper) []string {
	t.Helper()
	var ms []string
	for i := range z.Nodes() {
		out, err := z.FourLetter(context.Background(), i, "srvr")
		if err != nil {
			ms = append(ms, "down")
			continue
		}
		ms = append(ms, ParseSrvrMode(out))
	}
	return ms
}

// TestEnsemble: 3 servers all serve; kill -9 of the leader leaves two that keep serving writes;
// with two stopped there is no quorum (a write does not succeed); restarting them brings writes back.
func TestEnsemble(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 3)
	ms := modes(t, z)
	leader := -1
	for i, m := range ms {
		switch m {
		case "leader":
			if leader >= 0 {
				t.Fatalf("two leaders: %v", ms)
			}
			leader = i
		case "follower":
		default:
			t.Fatalf("node %d mode %q, want leader/follower (all: %v)", i+1, m, ms)
		}
	}
	if leader < 0 {
		t.Fatalf("no leader: %v", ms)
	}

	// Every node serves: a write through one is read through each (after sync).
	all := zkConnect(t, z.Servers(), 4*time.Second, nil)
	if _, err := all.Create("/ens", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create /ens: %v", err)
	}
	for _, n := range z.Nodes() {
		c := zkConnect(t, []string{n.Addr()}, 4*time.Second, nil)
		if _, err := c.Sync("/ens"); err != nil {
			t.Fatalf("node %d: sync: %v", n.ID(), err)
		}
		data, _, err := c.Get("/ens")
		if err != nil || string(data) != "v1" {
			t.Fatalf("node %d: Get /ens = %q, %v", n.ID(), data, err)
		}
		c.Close()
	}

	// kill -9 the leader: the other two elect a new one and take writes.
	victim := z.Nodes()[leader]
	pid := victim.PID()
	if err := victim.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if victim.Running() || processAlive(pid) {
		t.Fatalf("node %d still running after Kill (pid %d)", victim.ID(), pid)
	}
	testutil.WaitFor(t, 30*time.Second, "a write after the leader's kill -9", func() bool {
		_, err := all.Set("/ens", []byte("v2"), -1)
		return err == nil
	})
	survivors := 0
	for i, m := range modes(t, z) {
		if i == leader {
			if m != "down" {
				t.Fatalf("killed node answers srvr: %q", m)
			}
			continue
		}
		if m == "leader" || m == "follower" {
			survivors++
		}
	}
	if survivors != 2 {
		t.Fatalf("survivors serving = %d, want 2 (%v)", survivors, modes(t, z))
	}

	// Stop a second node: one of three left, no quorum.
	second := z.Nodes()[(leader+1)%3]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := second.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	last := z.Nodes()[(leader+2)%3]
	testutil.WaitFor(t, 20*time.Second, "the last node to stop serving", func() bool {
		out, err := FourLetter(ctx, last.Addr(), "srvr")
		return err == nil && ParseSrvrMode(out) == ""
	})
	lone, _, err := zk.Connect([]string{last.Addr()}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zklog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := lone.Create("/no-quorum", nil, 0, zk.WorldACL(zk.PermAll))
		res <- err
	}()
	select {
	case err = <-res:
		t.Logf("write without quorum failed: %v", err)
	case <-time.After(3 * time.Second):
		t.Log("write without quorum did not complete in 3s")
		lone.Close() // fails the pending request
		err = <-res
	}
	lone.Close()
	if err == nil {
		t.Fatal("a write succeeded with 1 of 3 servers running")
	}

	// Restart both: quorum is back, writes work, and every node serves again.
	if err := victim.Start(ctx); err != nil {
		t.Fatalf("Start node %d: %v", victim.ID(), err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatalf("Start node %d: %v", second.ID(), err)
	}
	if victim.Addr() != z.Nodes()[leader].Addr() || victim.PID() == pid {
		t.Fatalf("restarted node: addr %s, pid %d (old %d)", victim.Addr(), victim.PID(), pid)
	}
	after := zkConnect(t, z.Servers(), 4*time.Second, nil)
	testutil.WaitFor(t, 30*time.Second, "a write after the restart", func() bool {
		_, err := after.Create("/after-restart", []byte("ok"), 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	})
	for i, m := range modes(t, z) {
		if m != "leader" && m != "follower" {
			t.Fatalf("node %d mode %q after restart", i+1, m)
		}
	}
	// The data written before the faults survived on the restarted nodes (same data dirs).
	for _, n := range []*ZKNode{victim, second} {
		c := zkConnect(t, []string{n.Addr()}, 4*time.Second, nil)
		if _, err := c.Sync("/ens"); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get("/ens")
		if err != nil || string(data) != "v2" {
			t.Fatalf("node %d after restart: /ens = %q, %v; want v2", n.ID(), data, err)
		}
		c.Close()
	}
	if _, err := after.Create("/no-quorum", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create /no-quorum after restart: %v (the write without quorum must not have landed)", err)
	}
}
