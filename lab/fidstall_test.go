package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

// FID-STALL-TIME: a scripted fault lasts what the script says, on every link kind.
//
// Each link kind carries its own traffic while the fault is in force, the traffic of the members that
// use it: a ZooKeeper session (whose client gives up on the stalled connection and redials, and whose
// server expires the session and closes its side, leaving connections with bytes held in both
// directions) on the ZooKeeper link, and wire connections to the broker that time out and redial on the
// coordinator and fetch links. The fault's actual extent is measured from the outside, by bytes: a
// probe request sent through the link just after the fault started is answered when the fault ends
// (stall, latency), or the link refuses connections from the cut until the heal. Each is held to
// |actual − scripted| ≤ max(100 ms, 2% of the fault's length).

// fidFaultLen is the scripted length of every fault: past the ZooKeeper link's session timeout
// (fidZKSession), so the server expires the session and closes its connection during the stall.
const (
	fidFaultLen  = 3 * time.Second
	fidZKSession = time.Second
	fidLatency   = 300 * time.Millisecond
)

func fidTolerance(length time.Duration) time.Duration {
	return max(100*time.Millisecond, length/50)
}

// fidProbe sends one request on a new connection from dial and returns a function that waits for its
// answer (up to wait), closes the connection and returns when the answer's first byte arrived.
type fidProbe func(t *testing.T, dial func() (net.Conn, error)) (await func(wait time.Duration) time.Time)

func probeConn(t *testing.T, dial func() (net.Conn, error)) net.Conn {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatalf("probe dial: %v", err)
	}
	return c
}

// ruokProbe: ZooKeeper's four-letter ruok, answered imok (then the server closes the connection).
func ruokProbe(t *testing.T, dial func() (net.Conn, error)) func(time.Duration) time.Time {
	t.Helper()
	c := probeConn(t, dial)
	if _, err := c.Write([]byte("ruok")); err != nil {
		t.Fatalf("probe write: %v", err)
	}
	return func(wait time.Duration) time.Time {
		t.Helper()
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(wait))
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "imok" {
			t.Fatalf("probe: read %q, %v; want imok", b, err)
		}
		return time.Now()
	}
}

// apiVersionsProbe: a Kafka ApiVersions v0 request, answered by the broker with error code 0.
func apiVersionsProbe(t *testing.T, dial func() (net.Conn, error)) func(time.Duration) time.Time {
	t.Helper()
	c := probeConn(t, dial)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("probe")).AppendRequest(nil, req, 7)); err != nil {
		t.Fatalf("probe write: %v", err)
	}
	return func(wait time.Duration) time.Time {
		t.Helper()
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(wait))
		size := make([]byte, 4)
		if _, err := io.ReadFull(c, size); err != nil {
			t.Fatalf("probe: read the answer's size: %v", err)
		}
		at := time.Now()
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			t.Fatalf("probe: read the answer: %v", err)
		}
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		if len(body) < 4 || body[3] != 7 {
			t.Fatalf("probe: answer to correlation id %v, want 7", body[:min(4, len(body))])
		}
		if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("probe: ApiVersions answer %v, error code %d", err, resp.ErrorCode)
		}
		return at
	}
}

// fidLink is one link kind under test: its upstream, its probe and the traffic its members make.
type fidLink struct {
	link     Link
	upstream string
	probe    fidProbe
	traffic  func(ctx context.Context, t *testing.T, links *MemberLinks, l Link)
}

// zkTraffic keeps a ZooKeeper session busy through the link (an exists every 50 ms, as the zk-era
// members' offset commits do) until ctx ends.
func zkTraffic(servers []string) func(context.Context, *testing.T, *MemberLinks, Link) {
	return func(ctx context.Context, t *testing.T, links *MemberLinks, _ Link) {
		c, _, err := zk.Connect(servers, fidZKSession, zk.WithDialer(links.ZKDialer()), zk.WithLogInfo(false), zk.WithLogger(zklog.Discard))
		if err != nil {
			t.Errorf("zk.Connect: %v", err)
			return
		}
		defer c.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _, _ = c.Exists("/")
			}
		}
	}
}

// brokerTraffic keeps a wire connection to addr busy through link l (an ApiVersions every 50 ms,
// each with a 500 ms timeout that closes the connection, then a redial) until ctx ends.
func brokerTraffic(addr string) func(context.Context, *testing.T, *MemberLinks, Link) {
	return func(ctx context.Context, t *testing.T, links *MemberLinks, l Link) {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var conn *wire.Conn
		defer func() {
			if conn != nil {
				conn.Close()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			if conn == nil {
				c, err := wire.Dial(rctx, links.Dialer(l), addr, "traffic")
				if err != nil {
					cancel()
					continue
				}
				conn = c
			}
			if _, err := conn.Request(rctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
				conn.Close()
				conn = nil
			}
			cancel()
		}
	}
}

func TestFIDStallTimeEveryActionEveryLink(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := startLab(t, Options{Brokers: 1})
	zkAddr, brokerAddr := l.ZooKeeper().Nodes()[0].Addr(), l.Brokers()[0].Addr()
	kinds := []fidLink{
		{LinkZooKeeper, zkAddr, ruokProbe, zkTraffic([]string{zkAddr})},
		{LinkCoordinator, brokerAddr, apiVersionsProbe, brokerTraffic(brokerAddr)},
		{LinkFetch, brokerAddr, apiVersionsProbe, brokerTraffic(brokerAddr)},
	}
	for _, k := range kinds {
		for _, action := range []string{FaultStall, FaultCut, FaultLatency} {
			t.Run(fmt.Sprintf("%s/%s", k.link, action), func(t *testing.T) {
				fidFault(t, k, action)
			})
		}
	}
}

// fidFault scripts one fault of fidFaultLen on a fresh member's link k while k's traffic runs, and
// checks its extent as seen by bytes.
func fidFault(t *testing.T, k fidLink, action string) {
	links := NewMemberLinks("m-" + action)
	defer links.Close()
	var evMu sync.Mutex
	var events []FaultEvent
	links.OnFault(func(ev FaultEvent) {
		evMu.Lock()
		events = append(events, ev)
		evMu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func() (net.Conn, error) { return links.Dialer(k.link)(ctx, "tcp", k.upstream) }
	tctx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		k.traffic(tctx, t, links, k.link)
	}()
	defer func() { stopTraffic(); wg.Wait() }()
	// The link carries the traffic before the fault: its proxy exists and answers.
	testutil.WaitFor(t, 20*time.Second, "the traffic's proxy", func() bool { return links.Proxy(k.link, k.upstream) != nil })
	k.probe(t, dial)(10 * time.Second)

	tol := fidTolerance(fidFaultLen)
	// asked is the fault's length as the test asked for it: from its call to the Heal call. On a loaded
	// machine the test's own timer may fire late; that lag is the caller's, not the link's, so each
	// length the link achieved is compared with what was asked (the lag is logged).
	var t0 time.Time
	var asked time.Duration
	scriptedEnd := func(t0 time.Time) {
		<-time.After(time.Until(t0.Add(fidFaultLen)))
		asked = time.Since(t0)
		if lag := asked - fidFaultLen; lag > tol {
			t.Logf("the test's timer fired %v late (a loaded machine); measuring against %v", lag, asked)
		}
	}
	// The links' own account (what the runner records): one begin at the scripted start, one end at
	// the scripted end, both within the tolerance.
	defer func() {
		evMu.Lock()
		defer evMu.Unlock()
		if len(events) != 2 || events[0].Fault != action || !events[0].Begin || events[1].Fault != action || events[1].Begin ||
			events[0].Link != k.link || events[1].Link != k.link {
			t.Fatalf("fault events %+v; want %s begin, %s end on %s", events, action, action, k.link)
		}
		if d := events[0].At.Sub(t0).Abs(); d > tol {
			t.Errorf("%s reported in force %v after the script's start (> %v)", action, d, tol)
		}
		if d := (events[1].At.Sub(events[0].At) - asked).Abs(); d > tol {
			t.Errorf("%s reported lasting %v; asked %v (|Δ| %v > %v)", action, events[1].At.Sub(events[0].At), asked, d, tol)
		}
	}()
	switch action {
	case FaultStall:
		t0 = time.Now()
		if err := links.Stall(k.link); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		await := k.probe(t, dial)
		scriptedEnd(t0)
		healCalled := time.Now()
		if err := links.Heal(k.link); err != nil {
			t.Fatal(err)
		}
		healed := time.Now()
		answered := await(30 * time.Second)
		held := answered.Sub(sent)
		want := t0.Add(asked).Sub(sent)
		t.Logf("stall: probe sent %v after the stall, held %v (scripted %v); Heal took %v", sent.Sub(t0), held, want, healed.Sub(healCalled))
		if d := (held - want).Abs(); d > tol {
			t.Errorf("stall held the probe's bytes %v; scripted %v (|Δ| %v > %v)", held, want, d, tol)
		}
	case FaultLatency:
		t0 = time.Now()
		if err := links.Latency(k.link, fidLatency); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		first := k.probe(t, dial)(10 * time.Second)
		if rtt := first.Sub(sent); rtt < fidLatency || rtt > fidLatency+tol {
			t.Errorf("a round trip under %v latency took %v", fidLatency, rtt)
		}
		// A probe sent half a latency before the scripted end is answered at the end: the heal
		// releases the delayed bytes.
		<-time.After(time.Until(t0.Add(fidFaultLen - fidLatency/2)))
		await := k.probe(t, dial)
		scriptedEnd(t0)
		if err := links.Heal(k.link); err != nil {
			t.Fatal(err)
		}
		last := await(30 * time.Second)
		began := first.Add(-fidLatency)
		lasted := last.Sub(began)
		t.Logf("latency: in force from %v to %v after the script's start", began.Sub(t0), last.Sub(t0))
		if d := (lasted - asked).Abs(); d > tol {
			t.Errorf("latency lasted %v; asked %v (|Δ| %v > %v)", lasted, asked, d, tol)
		}
	case FaultCut:
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t0 = time.Now()
		if err := links.Cut(k.link); err != nil {
			t.Fatal(err)
		}
		// The open connection is closed and new ones are refused from now on.
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("open connection after Cut: read %d, %v; want closed", n, err)
		}
		if _, err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial a cut link: %v, want connection refused", err)
		}
		began := time.Now()
		scriptedEnd(t0)
		if err := links.Heal(k.link); err != nil {
			t.Fatal(err)
		}
		var ended time.Time
		testutil.WaitFor(t, 30*time.Second, "the healed link to answer", func() bool {
			nc, err := dial()
			if err != nil {
				return false
			}
			nc.Close()
			k.probe(t, dial)(10 * time.Second)
			ended = time.Now()
			return true
		})
		lasted := ended.Sub(began)
		t.Logf("cut: refusing from %v to %v after the script's start", began.Sub(t0), ended.Sub(t0))
		if d := (lasted - asked).Abs(); d > tol {
			t.Errorf("cut lasted %v; asked %v (|Δ| %v > %v)", lasted, asked, d, tol)
		}
	}
}
