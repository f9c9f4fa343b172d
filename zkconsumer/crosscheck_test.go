package zkconsumer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Cross-checks of the connector's own account (its timeline) against the ZooKeeper server's:
// four-letter words (wchp, cons, mntr) and Debian's zkCli.sh.

// consEntry is one session's line of `cons`: packets received on its connection and the session
// timeout the server negotiated.
type consEntry struct {
	recved    int64
	timeoutMs int64
}

var consLine = regexp.MustCompile(`recved=(\d+),.*sid=0x([0-9a-f]+),.*to=(\d+),`)

// parseCons maps session id → entry; lines without a session (the `cons` connection itself) are left out.
func parseCons(out string) map[int64]consEntry {
	m := map[int64]consEntry{}
	for _, line := range strings.Split(out, "\n") {
		sm := consLine.FindStringSubmatch(line)
		if sm == nil {
			continue
		}
		recved, _ := strconv.ParseInt(sm[1], 10, 64)
		sid, _ := strconv.ParseUint(sm[2], 16, 64)
		to, _ := strconv.ParseInt(sm[3], 10, 64)
		m[int64(sid)] = consEntry{recved, to}
	}
	return m
}

// pingInterval is go-zookeeper's (v1.0.4 setTimeouts): recvTimeout = timeout*2/3, ping every
// recvTimeout/2, from a time.Ticker in the send loop whatever else is sent.
func pingInterval(timeoutMs int64) time.Duration {
	return time.Duration(timeoutMs) * time.Millisecond * 2 / 3 / 2
}

// maxTicks is the most ticks a ticker of period p delivers in any window of length w.
func maxTicks(w, p time.Duration) int64 { return int64(w/p) + 1 }

// Herd effect, counted by the server. Five connectors are stable; ZooKeeper's `wchp` lists the
// five sessions on /consumers/g/ids (their exists() watch: 3.8's wchp shows data and exists
// watches). A sixth joins: all six run a rebalance, and the packets ZooKeeper received during the
// join (`mntr` zk_packets_received, and per session `cons` recved) are exactly the requests in the
// members' timelines, plus the newcomer's connect request, the four-letter words themselves, and
// the pings — which go-zookeeper sends every timeout/3 per connection (timeout as `cons` shows the
// server negotiated it), so that a connection sends at most ⌊W/(T/3)⌋+1 of them in a window of W,
// and at least ⌊W/(T/3)⌋-1 when it lived through the whole window.
func TestHerdEffectServerCounts(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 5) // 6 threads on 5 partitions: the join moves nothing, so no conflicts
	props := map[string]string{"auto.commit.enable": "false", "refresh.leader.backoff.ms": "600000"}
	var ms []*member
	for i := 1; i <= 5; i++ {
		m := newMember(t, z.Connect(), "g", fmt.Sprintf("c%d", i), props)
		createStreams(t, m, map[string]int{"t": 1})
		ms = append(ms, m)
	}
	// Quiet: no rebalance running and, after each member's last rebalance, its leader finder has made
	// its one round (it lists and reads /brokers/ids; the fake broker never answers and the next
	// round is 600 s away). Nothing then talks to ZooKeeper but the pings.
	quiet := func(m *member) bool {
		if !m.rebalanceIdle() {
			return false
		}
		if len(m.Owned()) == 0 {
			return true
		}
		recs := m.rec.Records()
		last := -1
		for i, r := range recs {
			if r.Kind == timeline.RebalanceEnd {
				last = i
			}
		}
		n := 0
		for _, r := range recs[last+1:] {
			if r.Kind == timeline.ZKOp && strings.HasPrefix(r.Path, brokerIdsPath) {
				n++
			}
		}
		return n == 2
	}
	five := map[int32]string{0: "g_c1-0", 1: "g_c2-0", 2: "g_c3-0", 3: "g_c4-0", 4: "g_c5-0"}
	testutil.WaitFor(t, 30*time.Second, "5 members quiet", func() bool {
		for _, m := range ms {
			if !quiet(m) {
				return false
			}
		}
		return reflect.DeepEqual(a.owners("g", "t"), five)
	})
	fourLetter := func(word string) string {
		out, err := z.FourLetter(context.Background(), 0, word)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	watchers := func() []int64 {
		s := lab.ParseWatchesByPath(fourLetter("wchp"))["/consumers/g/ids"]
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s
	}
	sessions := func() []int64 {
		var s []int64
		for _, m := range ms {
			s = append(s, m.SessionID())
		}
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s
	}
	if got, want := watchers(), sessions(); len(got) != 5 || !reflect.DeepEqual(got, want) {
		t.Fatalf("wchp: /consumers/g/ids watched by %x, want the 5 members' sessions %x", got, want)
	}
	adminSession := a.conn.SessionID()

	// The window: from mntr before the join to mntr after it, held open for 2.3 s (3.45 ping
	// intervals of a 2 s session) so that every connection pings a few times. Inside, nobody but the
	// members talks to ZooKeeper (the admin session only pings; the waits read the members' own
	// state). Times are taken around each four-letter word: the server counted its packets between.
	marks := make([]int, 5, 6)
	for i, m := range ms {
		marks[i] = len(m.rec.Records())
	}
	t0 := time.Now()
	mntr0 := lab.ParseMntr(fourLetter("mntr"))["zk_packets_received"]
	t1 := time.Now()
	cons0 := parseCons(fourLetter("cons"))
	t2 := time.Now()
	c6 := newMember(t, z.Connect(), "g", "c6", props)
	createStreams(t, c6, map[string]int{"t": 1})
	ms, marks = append(ms, c6), append(marks, 0)
	testutil.WaitFor(t, 30*time.Second, "all six rebalanced and quiet", func() bool {
		for i, m := range ms {
			if m.count(marks[i], timeline.RebalanceEnd, nil) != 1 || !quiet(m) {
				return false
			}
		}
		return true
	})
	joined := time.Since(t0)
	time.Sleep(time.Until(t0.Add(2300 * time.Millisecond))) // a measurement window, not a wait for a condition
	t3 := time.Now()
	cons1 := parseCons(fourLetter("cons"))
	t4 := time.Now()
	mntr1 := lab.ParseMntr(fourLetter("mntr"))["zk_packets_received"]
	t5 := time.Now()

	// The timeline: six members rebalanced once each, with these ZooKeeper requests.
	var ops, begins int64
	perMember := make([]int64, len(ms))
	for i, m := range ms {
		begins += int64(m.count(marks[i], timeline.RebalanceBegin, nil))
		perMember[i] = int64(m.count(marks[i], timeline.ZKOp, nil))
		ops += perMember[i]
	}
	if begins != 6 || ops != 129 { // 118 reads + 11 writes, itemised in TestHerdEffect
		t.Fatalf("join: %d rebalance_begin, %d ZooKeeper requests in the timelines; want 6 and 129", begins, ops)
	}

	// Pings of one connection with session timeout T (interval I = T/3) in a window the server saw:
	// at most ⌊outer/I⌋+1, and — for a connection that pinged through the whole window, its ticker
	// firing on schedule but a send possibly falling just past the end — at least ⌊inner/I⌋-1.
	bounds := func(timeoutMs int64, inner, outer time.Duration, throughout bool) (lo, hi int64) {
		i := pingInterval(timeoutMs)
		if throughout {
			lo = max(0, int64(inner/i)-1)
		}
		return lo, maxTicks(outer, i)
	}
	// Per session (cons): packets = the member's requests (+ the newcomer's connect request) + pings.
	var loTotal, hiTotal int64
	check := func(name string, sid, requests int64, throughout bool) {
		t.Helper()
		e1, ok := cons1[sid]
		if !ok {
			t.Fatalf("cons after the join has no session %x (%s)", sid, name)
		}
		got := e1.recved - cons0[sid].recved // a session not in cons0 (the newcomer's) counts from 0
		lo, hi := bounds(e1.timeoutMs, t3.Sub(t2), t4.Sub(t1), throughout)
		if pings := got - requests; pings < lo || pings > hi {
			t.Errorf("%s (session %x, timeout %d ms): server received %d packets, timeline has %d requests: %d pings, want %d..%d",
				name, sid, e1.timeoutMs, got, requests, pings, lo, hi)
		}
		lo, hi = bounds(e1.timeoutMs, t4.Sub(t1), t5.Sub(t0), throughout)
		loTotal, hiTotal = loTotal+lo, hiTotal+hi
	}
	for i, m := range ms {
		requests := perMember[i]
		if m == c6 {
			requests++ // its ConnectRequest (a packet, not a zk_op)
		}
		check(m.ConsumerID(), m.SessionID(), requests, m != c6)
	}
	check("admin", adminSession, 0, true)
	if len(cons1) != 7 {
		t.Fatalf("cons lists %d sessions, want 7 (6 members, the admin)", len(cons1))
	}
	// In total (mntr): the same requests, the connect, cons, cons and mntr itself (a four-letter
	// word counts as one packet received, before its answer is computed), and the pings.
	fixed := ops + 1 + 3
	if pings := mntr1 - mntr0 - fixed; pings < loTotal || pings > hiTotal {
		t.Fatalf("mntr: %d packets received in %v; timeline requests %d + connect 1 + four-letter words 3 = %d; leaves %d pings, want %d..%d",
			mntr1-mntr0, t5.Sub(t0), ops, fixed, pings, loTotal, hiTotal)
	}
	t.Logf("join settled in %v; window %v: %d packets received = %d requests + 4 + %d pings (bounds %d..%d)",
		joined, t5.Sub(t0), mntr1-mntr0, ops, mntr1-mntr0-fixed, loTotal, hiTotal)

	if got, want := a.owners("g", "t"), five; !reflect.DeepEqual(got, want) {
		t.Fatalf("owners after the join = %v, want %v", got, want)
	}
	if got, want := watchers(), sessions(); len(got) != 6 || !reflect.DeepEqual(got, want) {
		t.Fatalf("wchp after the join: /consumers/g/ids watched by %x, want the 6 members' sessions %x", got, want)
	}
}

// zkCliPath is Debian's ZooKeeper command-line client (package zookeeper).
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// zkCliGet runs `zkCli.sh -server ADDR get -s PATH` as a subprocess and returns the node's data as
// zkCli prints it (the line before the stat) and the stat's "key = value" lines.
func zkCliGet(t *testing.T, server, path string) (string, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", server, "get", "-s", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s -server %s get -s %s: %v\nstdout:\n%s\nstderr:\n%s", zkCliPath, server, path, err, stdout.String(), stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "cZxid = ") || i == 0 {
			continue
		}
		stat := map[string]string{}
		for _, l := range lines[i:] {
			if k, v, ok := strings.Cut(l, " = "); ok {
				stat[k] = v
			}
		}
		return lines[i-1], stat
	}
	t.Fatalf("zkCli get -s %s: no stat in its output:\n%s", path, stdout.String())
	return "", nil
}

// What Debian's zkCli.sh (ZooKeeper 3.8's own client, a JVM subprocess) shows is what 0.8.2 wrote:
// owner znodes hold the raw consumer thread id ("g_c1-1": its bytes, no quotes, no JSON) and are
// ephemeral nodes of the connector's session; offset znodes are persistent and hold the next
// offset to read in decimal; the registration is 0.8.2's JSON.
func TestZkCliShowsOwnersAndOffsets(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	if _, err := os.Stat(zkCliPath); err != nil {
		t.Fatalf("Debian's ZooKeeper client is needed (apt-get install zookeeper): %v", err)
	}
	l := startLab(t, 1)
	cl := labClient(t, l)
	createTopicAssigned(t, cl, "t", onBroker1(2))
	produce(t, cl, "t", 0, "a0", "a1", "a2")
	produce(t, cl, "t", 1, "b0", "b1")
	c := newMember(t, l.ZKConnect(), "g", "c1", map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"})
	drain(allStreams(createStreams(t, c, map[string]int{"t": 2}))...)
	testutil.WaitFor(t, 20*time.Second, "5 records delivered", func() bool {
		return c.delivered("t", 0, 2) && c.delivered("t", 1, 1)
	})
	if err := c.CommitOffsets(); err != nil {
		t.Fatal(err)
	}
	server := l.ZooKeeper().Nodes()[0].Addr()
	session := fmt.Sprintf("0x%x", uint64(c.SessionID()))

	for p, want := range map[int]string{0: "g_c1-0", 1: "g_c1-1"} { // range: thread 0 gets 0, thread 1 gets 1
		data, stat := zkCliGet(t, server, fmt.Sprintf("/consumers/g/owners/t/%d", p))
		if data != want || stat["dataLength"] != strconv.Itoa(len(want)) || stat["ephemeralOwner"] != session {
			t.Errorf("owners/t/%d: data %q, dataLength %s, ephemeralOwner %s; want %q, %d, %s (ephemeral of the connector's session)",
				p, data, stat["dataLength"], stat["ephemeralOwner"], want, len(want), session)
		}
	}
	for p, want := range map[int]string{0: "3", 1: "2"} {
		data, stat := zkCliGet(t, server, fmt.Sprintf("/consumers/g/offsets/t/%d", p))
		if data != want || stat["dataLength"] != strconv.Itoa(len(want)) || stat["ephemeralOwner"] != "0x0" {
			t.Errorf("offsets/t/%d: data %q, dataLength %s, ephemeralOwner %s; want %q, %d, 0x0 (persistent)",
				p, data, stat["dataLength"], stat["ephemeralOwner"], want, len(want))
		}
	}
	data, stat := zkCliGet(t, server, "/consumers/g/ids/g_c1")
	var reg map[string]any
	if err := json.Unmarshal([]byte(data), &reg); err != nil {
		t.Fatalf("ids/g_c1 = %q: %v", data, err)
	}
	ts, _ := reg["timestamp"].(string)
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil || len(reg) != 4 || reg["version"] != 1.0 || reg["pattern"] != "static" ||
		!reflect.DeepEqual(reg["subscription"], map[string]any{"t": 2.0}) || stat["ephemeralOwner"] != session {
		t.Fatalf("ids/g_c1 = %s (ephemeralOwner %s); want 0.8.2's {\"version\":1,\"subscription\":{\"t\":2},\"pattern\":\"static\",\"timestamp\":\"<ms>\"} of session %s",
			data, stat["ephemeralOwner"], session)
	}
}
