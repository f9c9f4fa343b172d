package lab

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

// ruokVia sends ruok over conn and reads the answer with a read deadline.
func ruokVia(conn net.Conn, wait time.Duration) (string, error) {
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return "", err
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(conn)
	return string(b), err
}

// TestStallExpiresZooKeeperSession: a stall on one member's ZooKeeper link, longer than its
// negotiated session timeout, makes the server expire that session: another client sees the
// member's ephemeral node deleted, and the member learns of the expiry once the link heals.
func TestStallExpiresZooKeeperSession(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	links := NewMemberLinks("m1")
	defer links.Close()

	const sessionTimeout = time.Second // within [2, 20] × tickTime (200 ms), so not clamped
	m1, events, err := zk.Connect(z.Servers(), sessionTimeout, zk.WithDialer(links.ZKDialer()), zk.WithLogInfo(false), zk.WithLogger(zklog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	testutil.WaitFor(t, 10*time.Second, "m1's session", func() bool { return m1.State() == zk.StateHasSession })
	if p := links.Proxy(LinkZooKeeper, z.Nodes()[0].Addr()); p == nil {
		t.Fatal("no proxy created for m1's ZooKeeper link")
	}
	if _, err := m1.Create("/m1", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	other := zkConnect(t, z.Servers(), 4*time.Second, nil)
	exists, st, watch, err := other.ExistsW("/m1")
	if err != nil || !exists {
		t.Fatalf("ExistsW /m1 = %v, %v", exists, err)
	}
	if st.EphemeralOwner != m1.SessionID() {
		t.Fatalf("ephemeral owner 0x%x, m1 session 0x%x", st.EphemeralOwner, m1.SessionID())
	}
	// The server's own view of the watch: wchp lists /m1 watched by the other session.
	out, err := z.FourLetter(context.Background(), 0, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	if got := ParseWatchesByPath(out)["/m1"]; len(got) != 1 || got[0] != other.SessionID() {
		t.Fatalf("wchp /m1 = %v, want [0x%x]\n%s", got, other.SessionID(), out)
	}

	stalledAt := time.Now()
	if err := links.Stall(LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDeleted || ev.Path != "/m1" {
			t.Fatalf("watch event %+v, want NodeDeleted /m1", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("m1's ephemeral node still there 15 s after stalling its link")
	}
	t.Logf("session expired %v after the stall (session timeout %v)", time.Since(stalledAt), sessionTimeout)
	if exists, _, err := other.Exists("/m1"); err != nil || exists {
		t.Fatalf("Exists /m1 after expiry = %v, %v", exists, err)
	}

	if err := links.Heal(LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				return
			}
		case <-deadline:
			t.Fatal("m1 never saw StateExpired after the link healed")
		}
	}
}

func TestProxyStallCutHealLatency(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	p, err := NewProxy("t", z.Nodes()[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	// Healthy: ruok through the proxy.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ruokVia(c, 5*time.Second); err != nil || got != "imok" {
		t.Fatalf("ruok via proxy = %q, %v", got, err)
	}
	c.Close()

	// Stall: bytes accepted, nothing delivered, the connection stays open.
	if err := p.Stall(); err != nil {
		t.Fatal(err)
	}
	c, err = net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial a stalled proxy: %v", err)
	}
	got, err := ruokVia(c, 700*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) || got != "" {
		t.Fatalf("ruok via stalled proxy = %q, %v; want nothing and a read timeout (not a close)", got, err)
	}
	// Heal: the bytes held during the stall are delivered on the same connection — the "ruok" sent
	// while stalled reaches the server now and its answer comes back — and new connections work.
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if late, err := io.ReadAll(c); err != nil || string(late) != "imok" {
		t.Fatalf("stalled connection after Heal: read %q, %v; want the held ruok answered: imok", late, err)
	}
	c.Close()
	if got, err := FourLetter(context.Background(), p.Addr(), "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok after Heal = %q, %v", got, err)
	}

	// Cut: open connections closed, new ones refused; Heal listens again on the same address.
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := p.Cut(); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := open.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection after Cut: read %d, %v; want closed", n, err)
	}
	if _, err := net.Dial("tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a cut proxy: %v, want connection refused", err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if got, err := FourLetter(context.Background(), p.Addr(), "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok after healing a cut = %q, %v", got, err)
	}

	// Latency: a round trip takes at least the injected delay.
	const lat = 300 * time.Millisecond
	if err := p.Latency(lat); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got, err := FourLetter(context.Background(), p.Addr(), "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok with latency = %q, %v", got, err)
	}
	if el := time.Since(start); el < lat {
		t.Fatalf("round trip with %v latency took %v", lat, el)
	}
	// A new latency replaces the old one.
	if err := p.Latency(2 * lat); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := FourLetter(context.Background(), p.Addr(), "ruok"); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 2*lat {
		t.Fatalf("round trip with %v latency took %v", 2*lat, el)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stall(); !errors.Is(err, ErrProxyClosed) {
		t.Fatalf("Stall after Close: %v", err)
	}
}

// TestMemberLinksApplyToLaterProxies: a fault set on a link before any dial applies to the proxy the
// first dial creates; links and members are independent; Heal restores the link.
func TestMemberLinksApplyToLaterProxies(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	up := z.Nodes()[0].Addr()
	m1, m2 := NewMemberLinks("m1"), NewMemberLinks("m2")
	defer m1.Close()
	defer m2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := m1.Cut(LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	if err := m1.Stall(LinkFetch); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Dialer(LinkCoordinator)(ctx, "tcp", up); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("m1 coordinator dial on a cut link: %v, want connection refused", err)
	}
	c, err := m1.Dialer(LinkFetch)(ctx, "tcp", up)
	if err != nil {
		t.Fatalf("m1 fetch dial on a stalled link: %v", err)
	}
	if got, err := ruokVia(c, 700*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) || got != "" {
		t.Fatalf("m1 fetch link stalled: got %q, %v", got, err)
	}
	c.Close()
	// m1's ZooKeeper link and m2's links are untouched.
	for name, d := range map[string]func() (net.Conn, error){
		"m1 zookeeper":   func() (net.Conn, error) { return m1.ZKDialer()("tcp", up, 5*time.Second) },
		"m2 coordinator": func() (net.Conn, error) { return m2.Dialer(LinkCoordinator)(ctx, "tcp", up) },
		"m2 fetch":       func() (net.Conn, error) { return m2.Dialer(LinkFetch)(ctx, "tcp", up) },
	} {
		c, err := d()
		if err != nil {
			t.Fatalf("%s: dial: %v", name, err)
		}
		if got, err := ruokVia(c, 5*time.Second); err != nil || got != "imok" {
			t.Fatalf("%s: ruok = %q, %v", name, got, err)
		}
		c.Close()
	}
	// One proxy per (link, upstream), reused by later dials.
	p1 := m1.Proxy(LinkFetch, up)
	if _, err := m1.Dialer(LinkFetch)(ctx, "tcp", up); err != nil {
		t.Fatal(err)
	}
	if p1 == nil || m1.Proxy(LinkFetch, up) != p1 || m1.Proxy(LinkFetch, up) == m2.Proxy(LinkFetch, up) {
		t.Fatal("proxies not kept per member and (link, upstream)")
	}

	for _, l := range []Link{LinkCoordinator, LinkFetch} {
		if err := m1.Heal(l); err != nil {
			t.Fatal(err)
		}
		c, err := m1.Dialer(l)(ctx, "tcp", up)
		if err != nil {
			t.Fatalf("%s after Heal: %v", l, err)
		}
		if got, err := ruokVia(c, 5*time.Second); err != nil || got != "imok" {
			t.Fatalf("%s after Heal: ruok = %q, %v", l, got, err)
		}
		c.Close()
	}
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Dialer(LinkFetch)(ctx, "tcp", up); !errors.Is(err, ErrProxyClosed) {
		t.Fatalf("dial after Close: %v", err)
	}
}

// TestMemberLinksForProxiesOnlyFaultedLinks: links made by NewMemberLinksFor proxy only the links
// named: the others connect straight to the upstream (the connection's remote address is the
// ZooKeeper node's own, and no proxy exists), a fault on them is refused naming the link, and their
// dialer fails with ErrProxyClosed after Close, like a proxied one.
func TestMemberLinksForProxiesOnlyFaultedLinks(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t, 1)
	up := z.Nodes()[0].Addr()
	m := NewMemberLinksFor("lean", LinkCoordinator)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, l := range []Link{LinkFetch, LinkZooKeeper} {
		if m.Proxied(l) {
			t.Fatalf("%s proxied, want direct", l)
		}
		c, err := m.Dialer(l)(ctx, "tcp", up)
		if err != nil {
			t.Fatalf("%s: dial: %v", l, err)
		}
		if c.RemoteAddr().String() != up {
			t.Fatalf("%s: connected to %s, want the upstream %s itself", l, c.RemoteAddr(), up)
		}
		if got, err := ruokVia(c, 5*time.Second); err != nil || got != "imok" {
			t.Fatalf("%s: ruok = %q, %v", l, got, err)
		}
		c.Close()
		if p := m.Proxy(l, up); p != nil {
			t.Fatalf("%s: a proxy was created for a direct link", l)
		}
		if err := m.Stall(l); err == nil || !strings.Contains(err.Error(), "link "+string(l)+" dials directly") {
			t.Fatalf("Stall(%s) on a direct link: %v, want an error naming the link", l, err)
		}
	}
	if !m.Proxied(LinkCoordinator) {
		t.Fatal("coordinator link not proxied")
	}
	if err := m.Cut(LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Dialer(LinkCoordinator)(ctx, "tcp", up); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("coordinator dial on a cut link: %v, want connection refused", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Dialer(LinkFetch)(ctx, "tcp", up); !errors.Is(err, ErrProxyClosed) {
		t.Fatalf("direct dial after Close: %v, want ErrProxyClosed", err)
	}
}
