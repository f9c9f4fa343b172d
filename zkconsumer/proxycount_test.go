package zkconsumer

import (
	"context"
	"maps"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestZKCountingProxyMatchesTimeline: a zkconsumer whose ZooKeeper session goes through
// lab.ZKCountingProxy (as the scenarios' real 0.8.2.2 members' do) counts, through the proxy, the
// same ZooKeeper requests and notifications as its own timeline records: reads and writes per path
// (zk_op), watch notifications per path and type (zk_watch). The server agrees: `cons` counts, on the
// session's connection, the proxy's requests (pings included) plus the connect request, and every
// path `wchc` lists as watched by the session was read through the proxy.
func TestZKCountingProxyMatchesTimeline(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 4)
	proxy, err := lab.StartZKCountingProxy(z.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	var mu sync.Mutex
	seen := map[string]int{} // "read /path", "write /path", "watch NodeChildrenChanged /path"
	proxy.OnEvent = func(ev lab.ZKProxyEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case lab.ZKProxyRead, lab.ZKProxyWrite:
			seen[ev.Kind+" "+ev.Path]++
		case lab.ZKProxyWatch:
			seen["watch "+ev.Op+" "+ev.Path]++
		}
	}
	props := map[string]string{"auto.commit.enable": "false"}
	m1 := newMember(t, proxy.Addr, "g", "m1", props)
	createStreams(t, m1, map[string]int{"t": 1})
	// Two joins and a leave: m1 is notified, re-reads and rebalances each time.
	m2 := newMember(t, z.Connect(), "g", "m2", props)
	createStreams(t, m2, map[string]int{"t": 1})
	m3 := newMember(t, z.Connect(), "g", "m3", props)
	createStreams(t, m3, map[string]int{"t": 1})
	m2.Shutdown()
	idle := func() bool { return m1.rebalanceIdle() && m3.rebalanceIdle() }
	testutil.WaitFor(t, 20*time.Second, "the group settled", idle)

	// The timeline and the proxy agree once m1 is idle with nothing in flight: a notification the
	// proxy has passed on is recorded only when the watcher handles it, and a re-read may be on its way
	// through the proxy before the timeline records its answer. An idle group is not a silent
	// connector either: the leader finder re-reads /brokers/ids every refresh.leader.backoff.ms while
	// the fake broker 0 refuses connections. So wait (bounded) for a moment with nothing in flight,
	// where every path and the proxy's op totals (taken in that same moment) agree with the timeline;
	// a count that never agrees is the failure, reported per path.
	var tl zkTally
	var proxyReads, proxyWrites, proxyWatches int
	agreed := testutil.Await(context.Background(), 20*time.Second, "m1's timeline and the proxy to agree on every path and in total with the group idle", func() bool {
		if !idle() {
			return false
		}
		mu.Lock()
		tl = tallyZK(m1.rec.Records(), seen)
		proxyReads, proxyWrites, proxyWatches = proxy.Reads(), proxy.Writes(), proxy.Watches()
		mu.Unlock()
		return len(tl.diff()) == 0 && proxyReads == tl.reads && proxyWrites == tl.writes && proxyWatches == tl.watches && idle()
	})
	fromTimeline, proxySeen, reads, writes, watches := tl.timeline, tl.proxy, tl.reads, tl.writes, tl.watches
	if agreed != nil {
		for _, k := range tl.diff() {
			t.Errorf("%s: timeline %d, proxy %d", k, fromTimeline[k], proxySeen[k])
		}
		t.Errorf("proxy reads %d writes %d watches %d; timeline %d %d %d", proxyReads, proxyWrites, proxyWatches, reads, writes, watches)
		t.Fatal(agreed)
	}
	if reads == 0 || writes == 0 || watches < 2 {
		t.Errorf("timeline %d reads, %d writes, %d notifications (want reads and writes > 0, >= 2 notifications)", reads, writes, watches)
	}
	t.Logf("m1 through the proxy: %d reads, %d writes, %d notifications; ops %v", reads, writes, watches, proxy.Ops())

	// The server's side: cons (packets received on the session's connection) and wchc (its watches).
	sid := proxy.SessionID()
	if sid == 0 || sid != m1.SessionID() {
		t.Fatalf("proxy saw session %#x, the connector has %#x", sid, m1.SessionID())
	}
	total := func() int {
		n := 0
		for _, v := range proxy.Ops() {
			n += v
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok bool
	for try := 0; try < 5 && !ok; try++ {
		before := total()
		out, err := lab.FourLetter(ctx, z.Servers()[0], "cons")
		after := total()
		if err != nil {
			t.Fatal(err)
		}
		got, found := parseCons(out)[sid]
		if !found {
			t.Fatalf("cons lists no session %#x:\n%s", sid, out)
		}
		// The connect request is a packet the server counts and the proxy does not (no header).
		ok = int64(before+1) <= got.recved && got.recved <= int64(after+1)
		t.Logf("cons recved %d; proxy requests %d..%d (+1 connect)", got.recved, before, after)
	}
	if !ok {
		t.Errorf("cons' packet count of the session never matched the proxy's requests + 1")
	}
	out, err := lab.FourLetter(ctx, z.Servers()[0], "wchc")
	if err != nil {
		t.Fatal(err)
	}
	watched := lab.ParseWatchesBySession(out)[sid]
	if len(watched) == 0 {
		t.Fatalf("wchc lists no watch of session %#x:\n%s", sid, out)
	}
	for _, p := range watched {
		if proxySeen["read "+p] == 0 {
			t.Errorf("wchc: session watches %s, which it never read through the proxy", p)
		}
	}
	t.Logf("wchc: session %#x watches %v", sid, watched)
}

func union(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// zkTally is a connector's ZooKeeper traffic counted two ways, keyed "read /path", "write /path" and
// "watch <type> /path": from its timeline (zk_op, zk_watch records) and from the counting proxy.
type zkTally struct {
	timeline, proxy        map[string]int
	reads, writes, watches int // the timeline's totals
}

// tallyZK counts recs and copies the proxy's per-path counts (the caller holds their lock).
func tallyZK(recs []timeline.Record, proxySeen map[string]int) zkTally {
	t := zkTally{timeline: map[string]int{}, proxy: maps.Clone(proxySeen)}
	for _, r := range recs {
		switch r.Kind {
		case timeline.ZKOp:
			t.timeline[r.Op+" "+r.Path]++
			if r.Op == "read" {
				t.reads++
			} else {
				t.writes++
			}
		case timeline.ZKWatch:
			t.timeline["watch "+r.Type+" "+r.Path]++
			t.watches++
		}
	}
	return t
}

// diff lists, sorted, the keys whose two counts differ.
func (t zkTally) diff() []string {
	var out []string
	for k := range union(t.timeline, t.proxy) {
		if t.timeline[k] != t.proxy[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
