package zkconsumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Split brain after a session expiry (architecture, kept): A's ZooKeeper link stalls, its session
// expires on the server, B takes A's partition — while A's fetchers, on their own link, keep
// delivering it. Both deliver the same message. When A's link heals, A learns of the expiry,
// resets, re-registers and rebalances (its fetchers stop only then), and the group settles.
func TestSessionExpirySplitBrain(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	a := newAdmin(t, z.Connect())
	links := lab.NewMemberLinks("A")
	t.Cleanup(func() { links.Close() })
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}

	mA := newMemberWith(t, z.Connect(), "g", "c1", props, func(c *Config) { c.ZKDialer = links.ZKDialer() })
	sA := drain(allStreams(createStreams(t, mA, map[string]int{"t": 1}))...)
	mB := newMember(t, z.Connect(), "g", "c2", props)
	sB := drain(allStreams(createStreams(t, mB, map[string]int{"t": 1}))...)
	testutil.WaitFor(t, 20*time.Second, "A owns 0, B owns 1", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && mA.rebalanceIdle() && mB.rebalanceIdle()
	})
	produce(t, cl, "t", 0, "x0")
	testutil.WaitFor(t, 10*time.Second, "A delivers x0", func() bool { return sA.len() == 1 })

	stalledAt := len(mA.rec.Records())
	if err := links.Stall(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "B owning both after A's session expired", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c2-0", 1: "g_c2-0"}) && mB.rebalanceIdle()
	})
	// B starts partition 0 from the beginning (nothing committed): x0 again.
	testutil.WaitFor(t, 10*time.Second, "B delivers x0", func() bool { return sB.len() == 1 })
	produce(t, cl, "t", 0, "x1")
	testutil.WaitFor(t, 10*time.Second, "x1 at both", func() bool { return sA.len() == 2 && sB.len() == 2 })
	if got, want := sA.got(), msgs("t", 0, 0, "x0", "x1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("A delivered %v, want %v", got, want)
	}
	if got, want := sB.got(), msgs("t", 0, 0, "x0", "x1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("B delivered %v, want %v", got, want)
	}
	if n := mA.count(stalledAt, timeline.Revoked, nil) + mA.count(stalledAt, timeline.RebalanceBegin, nil); n != 0 {
		t.Fatalf("A recorded %d rebalances/revocations while cut off from ZooKeeper", n)
	}

	mark := len(mA.rec.Records())
	if err := links.Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "the group settled again", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c2-0"}) && mA.rebalanceIdle() && mB.rebalanceIdle()
	})
	// A: the expiry, then a rebalance whose first act is to stop its fetchers (revoked t:[0]).
	var kinds []string
	for _, r := range mA.rec.Records()[mark:] {
		switch r.Kind {
		case timeline.Error, timeline.RebalanceBegin, timeline.Revoked:
			kinds = append(kinds, string(r.Kind)+":"+r.Text+ownedString(r.Partitions))
		}
	}
	if len(kinds) < 3 || kinds[0] != "error:zookeeper session expired" || kinds[1] != "rebalance_begin:" || kinds[2] != "revoked:t:[0]" {
		t.Fatalf("A's records after the heal = %v, want error (session expired), rebalance_begin, revoked t:[0], ...", kinds)
	}
	produce(t, cl, "t", 0, "x2")
	produce(t, cl, "t", 1, "y0")
	testutil.WaitFor(t, 10*time.Second, "x2 at A, y0 at B", func() bool {
		return contains(sA.got(), "t/0@2=x2") && contains(sB.got(), "t/1@0=y0")
	})
	// B's settled rebalance stopped its fetcher of partition 0 (x2 was produced after it): B now
	// fetches partition 1 alone, so it cannot deliver x2.
	if got, want := mB.fetchPlaces(), map[string]string{"t/1": "broker 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("B fetches %v after settling, want %v", got, want)
	}
	if contains(sB.got(), "t/0@2=x2") {
		t.Fatalf("B still delivers partition 0 after settling: %v", sB.got())
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Crash with the member's ZooKeeper link cut: no commit, no closeSession reaches the server, so
// the registration and owner znodes stay until the session expires (zookeeper.session.timeout.ms).
func TestCrashLeavesZnodesUntilExpiry(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	links := lab.NewMemberLinks("A")
	t.Cleanup(func() { links.Close() })
	m := newMemberWith(t, z.Connect(), "g", "c1", nil, func(c *Config) { c.ZKDialer = links.ZKDialer() })
	createStreams(t, m, map[string]int{"t": 1})
	if err := links.Cut(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	crashed := time.Now()
	if ok, _, err := a.conn.Exists("/consumers/g/ids/g_c1"); !ok || err != nil {
		t.Fatalf("registration gone right after the crash (%v, %v)", ok, err)
	}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) {
		t.Fatalf("owners right after the crash = %v", got)
	}
	testutil.WaitFor(t, 20*time.Second, "the session to expire", func() bool {
		ok, _, _ := a.conn.Exists("/consumers/g/ids/g_c1")
		return !ok && len(a.owners("g", "t")) == 0
	})
	if d := time.Since(crashed); d < time.Second {
		t.Fatalf("znodes went after %v: the session was closed, not expired", d)
	}
	if n := m.count(0, timeline.Commit, nil); n != 0 {
		t.Fatalf("%d commit records after a crash", n)
	}
}

// FID-ZK-SESSION: the connector survives session re-creation and connection blips.

// sessionDialer wraps a member's go-zookeeper dialer. It reads the ConnectResponse the server sends
// on each connection (the session id and password the client learns, as ZooKeeper's Java client
// keeps them for getSessionId/getSessionPasswd), so that a test can expire the session the
// standard way (expireSession), and counts the dials that failed (a cut link refuses them).
// While expireSession works, the member's new dials wait (dials): a client that dials again at
// once would re-attach to the session the expiring connection has just taken over, before that
// connection closes it.
type sessionDialer struct {
	dial  zk.Dialer
	dials sync.RWMutex // held for writing by expireSession

	mu        sync.Mutex
	passwords map[int64][]byte // session id → password
	failed    []time.Time      // when each failed dial returned
}

func newSessionDialer(dial zk.Dialer) *sessionDialer {
	if dial == nil {
		dial = net.DialTimeout
	}
	return &sessionDialer{dial: dial, passwords: map[int64][]byte{}}
}

func (d *sessionDialer) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.dials.RLock()
	d.dials.RUnlock()
	conn, err := d.dial(network, addr, timeout)
	if err != nil {
		d.mu.Lock()
		d.failed = append(d.failed, time.Now())
		d.mu.Unlock()
		return nil, err
	}
	return &sniffConn{Conn: conn, d: d}, nil
}

// password is the password of session id; false when no ConnectResponse carried it.
func (d *sessionDialer) password(id int64) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pw, ok := d.passwords[id]
	return pw, ok
}

// failedSince counts the dials that failed after at.
func (d *sessionDialer) failedSince(at time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, f := range d.failed {
		if f.After(at) {
			n++
		}
	}
	return n
}

// sniffConn parses the first frame the server sends: ConnectResponse {int32 protocolVersion,
// int32 timeOut, int64 sessionId, buffer passwd} (length-prefixed, big-endian).
type sniffConn struct {
	net.Conn
	d    *sessionDialer
	buf  []byte
	done bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 && len(c.buf) >= 4+int(binary.BigEndian.Uint32(c.buf)) {
			c.done = true
			body := c.buf[4:]
			if len(body) >= 20 {
				id := int64(binary.BigEndian.Uint64(body[8:16]))
				pl := int(int32(binary.BigEndian.Uint32(body[16:20])))
				if id != 0 && pl >= 0 && len(body) >= 20+pl {
					c.d.mu.Lock()
					c.d.passwords[id] = append([]byte(nil), body[20:20+pl]...)
					c.d.mu.Unlock()
				}
			}
			c.buf = nil
		}
	}
	return n, err
}

// expireSession expires session id the standard way (Kafka's and Curator's test utilities): a
// second connection attaches to the session with its id and password (ConnectRequest), then closes
// it (closeSession, opcode -11). The server deletes the session's ephemeral nodes and drops its
// connection; its client, reconnecting, is told the session expired and opens a new one. The
// password comes from d (the session's client dialled through it); the client's dials through d
// wait until the session is closed.
func expireSession(server string, d *sessionDialer, id int64) error {
	d.dials.Lock()
	defer d.dials.Unlock()
	passwd, ok := d.password(id)
	if !ok {
		return fmt.Errorf("expiring session %#x: no ConnectResponse seen for it", id)
	}
	conn, err := net.DialTimeout("tcp", server, 10*time.Second)
	if err != nil {
		return fmt.Errorf("expiring session %#x: %w", id, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	readFrame := func() ([]byte, error) {
		var n [4]byte
		if _, err := io.ReadFull(conn, n[:]); err != nil {
			return nil, err
		}
		body := make([]byte, binary.BigEndian.Uint32(n[:]))
		_, err := io.ReadFull(conn, body)
		return body, err
	}
	// ConnectRequest: protocolVersion 0, lastZxidSeen 0, timeOut, sessionId, passwd, readOnly false.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 2000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if _, err := conn.Write(frame(req)); err != nil {
		return fmt.Errorf("expiring session %#x: %w", id, err)
	}
	resp, err := readFrame()
	if err != nil {
		return fmt.Errorf("expiring session %#x: %w", id, err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != id {
		return fmt.Errorf("expiring session %#x: the server did not attach us to it (ConnectResponse %x)", id, resp)
	}
	// closeSession: RequestHeader {xid 1, type -11}; the reply header's err must be 0.
	closeReq := binary.BigEndian.AppendUint32(nil, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(0xFFFFFFF5)) // -11
	if _, err := conn.Write(frame(closeReq)); err != nil {
		return fmt.Errorf("expiring session %#x: %w", id, err)
	}
	reply, err := readFrame()
	if err != nil {
		return fmt.Errorf("expiring session %#x: %w", id, err)
	}
	if len(reply) < 16 || binary.BigEndian.Uint32(reply[12:16]) != 0 {
		return fmt.Errorf("expiring session %#x: closeSession answered %x", id, reply)
	}
	return nil
}

// expire expires m's current session and waits until m has a new one; it returns the new id.
func expire(t *testing.T, z *lab.ZooKeeper, d *sessionDialer, m *member) int64 {
	t.Helper()
	old := m.SessionID()
	if err := expireSession(z.Servers()[0], d, old); err != nil {
		t.Fatal(err)
	}
	var now int64
	testutil.WaitFor(t, 20*time.Second, fmt.Sprintf("a new session after %#x", old), func() bool {
		now = m.SessionID()
		return now != 0 && now != old
	})
	return now
}

// slowListener is a rebalance listener that, once hold is called, keeps the rebalance goroutine
// in its next BeforeStartingFetchers call (after the attempt's last ZooKeeper request) until
// release is called.
type slowListener struct {
	mu      sync.Mutex
	held    chan struct{} // closed once a call is being held
	release chan struct{} // nil: calls return at once
}

func (l *slowListener) hold() (held <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.release = make(chan struct{}), make(chan struct{})
	return l.held
}

func (l *slowListener) releaseAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release != nil {
		close(l.release)
		l.release = nil
	}
}

func (l *slowListener) BeforeReleasingPartitions(map[string][]int32) {}

func (l *slowListener) BeforeStartingFetchers(string, map[string]map[int32]string) {
	l.mu.Lock()
	release := l.release
	if release != nil && l.held != nil {
		close(l.held)
		l.held = nil
	}
	l.mu.Unlock()
	if release != nil {
		<-release
	}
}

// hookSink passes records to a Collector and calls hook (in the emitting goroutine) on each.
type hookSink struct {
	*timeline.Collector
	hook func(timeline.Record)
}

func (s hookSink) Emit(r timeline.Record) {
	s.Collector.Emit(r)
	s.hook(r)
}

const sessionExpiredText = "zookeeper session expired"

func isSessionExpired(r timeline.Record) bool { return r.Text == sessionExpiredText }

// isExistsBackoff: the error record of a registration back-off (the ids node exists, owned by
// another session).
func isExistsBackoff(r timeline.Record) bool {
	return strings.HasPrefix(r.Text, "registration node exists")
}

// fetching is the set of partitions m's fetcher manager serves (with or without a leader).
func fetching(m *member) []TopicPartition {
	m.fetcher.mu.Lock()
	defer m.fetcher.mu.Unlock()
	var out []TopicPartition
	for tp := range m.fetcher.infos {
		out = append(out, tp)
	}
	sortTopicPartitions(out)
	return out
}

// ownedBy lists the partitions of topic whose owner znode names one of consumer's threads.
func ownedBy(owners map[int32]string, topic, consumer string) []TopicPartition {
	var out []TopicPartition
	for p, o := range owners {
		if strings.HasPrefix(o, consumer+"-") {
			out = append(out, TopicPartition{topic, p})
		}
	}
	sortTopicPartitions(out)
	return out
}

// fetchingOwnersDiff says how the members' fetchers or registries (Owned) differ from the owner
// znodes of topic ("" when each member fetches and owns exactly the partitions naming it).
func fetchingOwnersDiff(a *admin, group, topic string, ms ...*member) string {
	owners := a.owners(group, topic)
	for _, m := range ms {
		want := ownedBy(owners, topic, m.ConsumerID())
		if got := fetching(m); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("%s fetches %v; its owner znodes say %v (owners %v)", m.ConsumerID(), got, want, owners)
		}
		if got, want := ownedString(m.Owned()), ownedString(partitionsByTopic(want)); got != want {
			return fmt.Sprintf("%s owns %q; its owner znodes say %q", m.ConsumerID(), got, want)
		}
	}
	return ""
}

// waitFetchingOwners waits until each member fetches exactly the partitions whose owner znodes
// name it (fetchingOwnersDiff), reporting the last difference on timeout.
func waitFetchingOwners(t *testing.T, a *admin, group, topic string, ms ...*member) {
	t.Helper()
	last := ""
	defer func() {
		if t.Failed() && last != "" {
			t.Log(last)
		}
	}()
	testutil.WaitFor(t, 20*time.Second, "fetchers = owner znodes", func() bool {
		last = fetchingOwnersDiff(a, group, topic, ms...)
		return last == ""
	})
}

// Three session expiries within 2 s while a slow rebalance listener holds the rebalance goroutine.
// c1's zookeeper.connect names the one server three times, so that go-zookeeper dials again at once
// after an expiry (it waits a second only once it has tried every address it was given: one for
// the reconnection that learns of the expiry, one for the new session) and a new session follows
// each expiry within milliseconds. The first expiry makes the connector
// re-register (session 1) and rebalance; the listener holds that rebalance after its last
// ZooKeeper request. Sessions 1 and 2 are expired in turn while it is held, and their successors'
// events wait behind it. Once let go, it handles session 2's event in session 3, and then session
// 3's own event: an event for a session already handled, which must do nothing (0.8.2 registered
// again there, met its own node, and backed off forever: KAFKA-1387). Afterwards: one ids node for
// the consumer, owned by its current session, no back-off, two re-registrations (sessions 1 and
// 3), the group stable with each connector fetching exactly its owner znodes, and the connector
// still answering the group (c2 leaves: c1 takes everything).
func TestFIDZKSessionExpiriesDuringSlowRebalance(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}, {1}, {1}})
	a := newAdmin(t, z.Connect())
	props := map[string]string{"auto.offset.reset": "smallest", "auto.commit.enable": "false"}
	dialer := newSessionDialer(nil)
	slow := &slowListener{}
	c1 := newMemberWith(t, strings.Repeat(z.Connect()+",", 2)+z.Connect(), "g", "c1", props, func(c *Config) {
		c.ZKDialer, c.Listener = dialer.Dial, slow
	})
	t.Cleanup(slow.releaseAll) // before c1's Shutdown (cleanups run last first)
	drain(allStreams(createStreams(t, c1, map[string]int{"t": 1}))...)
	c2 := newMember(t, z.Connect(), "g", "c2", props)
	drain(allStreams(createStreams(t, c2, map[string]int{"t": 1}))...)
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}, c1, c2)

	mark := len(c1.rec.Records())
	held := slow.hold()
	first := time.Now()
	expire(t, z, dialer, c1) // session 1
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("c1's rebalance after the first expiry never reached the listener")
	}
	expire(t, z, dialer, c1) // session 2
	third := time.Now()
	s3 := expire(t, z, dialer, c1)
	span := third.Sub(first)
	if span > 2*time.Second {
		t.Fatalf("the three expiries spanned %v, want at most 2 s", span)
	}
	t.Logf("three expiries within %v", span.Round(time.Millisecond))
	slow.releaseAll()

	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}
	testutil.WaitFor(t, 40*time.Second, "the group settled on the third session", func() bool {
		owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c1")
		return c1.SessionID() == s3 && ok && owner == s3 && c1.rebalanceIdle() && c2.rebalanceIdle() &&
			reflect.DeepEqual(a.owners("g", "t"), want)
	})
	if kids, _, err := a.conn.Children("/consumers/g/ids"); err != nil || !reflect.DeepEqual(sorted(kids), []string{"g_c1", "g_c2"}) {
		t.Fatalf("ids = %v (%v), want exactly g_c1 and g_c2", kids, err)
	}
	for _, p := range []string{"0", "1"} {
		if owner, _ := a.ephemeralOwner("/consumers/g/owners/t/" + p); owner != s3 {
			t.Fatalf("owner znode of partition %s belongs to session %#x, want c1's current session %#x", p, owner, s3)
		}
	}
	if n := c1.count(mark, timeline.Error, isExistsBackoff); n != 0 {
		t.Fatalf("c1 backed off %d times on an existing ids node, want 0 (every old session's node was gone)", n)
	}
	if n := c1.count(mark, timeline.Error, isSessionExpired); n != 2 {
		t.Fatalf("c1 re-registered %d times, want 2 (session 1, then session 3 for session 2's event; session 3's own event is a session already handled)", n)
	}
	waitFetchingOwners(t, a, "g", "t", c1, c2)
	for _, r := range produceEach(t, cl, "t", 4, "after") {
		m := []*member{c1, c1, c2, c2}[r.partition]
		testutil.WaitFor(t, 20*time.Second, fmt.Sprintf("%s delivers %s", m.ConsumerID(), r.value), func() bool { return m.delivered("t", r.partition, r.offset) })
	}

	c2.Shutdown()
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c1-0"}, c1)
	waitFetchingOwners(t, a, "g", "t", c1)
}

// A 1 s cut of c1's ZooKeeper link — shorter than its session timeout, so the session survives —
// made as c1 starts re-registering after an expiry (its registration request goes behind the cut,
// and fails for want of a connection). The request is sent again once the link is back
// (ZkClient.retryUntilConnected): the ids node comes back, owned by the session, and the group
// includes c1 again. (0.8.2's connector here, without the retry, gave up the registration: no ids
// node for good, and each later rebalance failed reading its own registration.)
func TestFIDZKSessionCutDuringReregistration(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 4)
	links := lab.NewMemberLinks("c1")
	t.Cleanup(func() { links.Close() })
	dialer := newSessionDialer(links.ZKDialer())
	var (
		armed        atomic.Bool
		cutMu        sync.Mutex
		cutAt        time.Time
		sessionAtCut int64
		cutErr       error
		c1           *member
	)
	// zookeeper.session.timeout.ms 6000 (Kafka's default): go-zookeeper dials a lone server once a
	// second, so the link is back within about 2 s of the cut, well within the session.
	c1 = newMemberWith(t, z.Connect(), "g", "c1", conflictProps(map[string]string{"zookeeper.session.timeout.ms": "6000"}), func(c *Config) {
		c.ZKDialer = dialer.Dial
		c.Recorder.Sink = hookSink{c.Recorder.Sink.(*timeline.Collector), func(r timeline.Record) {
			if r.Kind == timeline.Error && isSessionExpired(r) && armed.CompareAndSwap(true, false) {
				cutMu.Lock()
				defer cutMu.Unlock()
				cutErr, cutAt, sessionAtCut = links.Cut(lab.LinkZooKeeper), time.Now(), c1.SessionID()
			}
		}}
	})
	createStreams(t, c1, map[string]int{"t": 1})
	c2 := newMember(t, z.Connect(), "g", "c2", conflictProps(nil))
	createStreams(t, c2, map[string]int{"t": 1})
	want := map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}
	settle(t, 30*time.Second, a, "g", "t", want, c1, c2)

	mark := len(c1.rec.Records())
	armed.Store(true)
	s1 := expire(t, z, dialer, c1)
	var cut time.Time
	testutil.WaitFor(t, 20*time.Second, "the cut as c1 re-registers", func() bool {
		cutMu.Lock()
		defer cutMu.Unlock()
		cut = cutAt
		return !cut.IsZero()
	})
	if cutErr != nil {
		t.Fatal(cutErr)
	}
	if sessionAtCut != s1 {
		t.Fatalf("c1 re-registered in session %#x, want the new session %#x", sessionAtCut, s1)
	}
	// 1 s, and until a dial was refused (go-zookeeper fails the requests queued in the meantime
	// with ErrNoServer then), so that the re-registration request has failed behind the cut.
	testutil.WaitFor(t, 20*time.Second, "1 s of cut and a refused dial", func() bool {
		return time.Since(cut) >= time.Second && dialer.failedSince(cut) >= 1
	})
	if err := links.Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	settle(t, 30*time.Second, a, "g", "t", want, c1, c2)
	if s := c1.SessionID(); s != s1 {
		t.Fatalf("c1's session is %#x after the cut, want %#x (the cut is shorter than the session timeout)", s, s1)
	}
	if owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c1"); !ok || owner != s1 {
		t.Fatalf("/consumers/g/ids/g_c1 owner %#x (present %v), want c1's session %#x", owner, ok, s1)
	}
	if n := c1.count(mark, timeline.Error, isSessionExpired); n != 1 {
		t.Fatalf("c1 re-registered %d times, want 1 (the reconnection after the cut keeps the session)", n)
	}
	if n := c1.count(mark, timeline.Error, isExistsBackoff); n != 0 {
		t.Fatalf("c1 backed off %d times on an existing ids node, want 0", n)
	}
	if got := ownedString(c1.Owned()); got != "t:[0 1]" {
		t.Fatalf("c1 owns %s", got)
	}
}

// An ids node of c1's name owned by another session (as an expired session's node that ZooKeeper
// has yet to delete, ZOOKEEPER-1740, or another process with the same consumer.id) makes c1's
// registration back off zookeeper.session.timeout.ms, recorded as an error; once the node is gone
// c1 registers and rebalances.
func TestFIDZKSessionRegistrationOwnedByAnotherSession(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	squatter := newAdmin(t, z.Connect())
	squatter.create("/consumers/g/ids/g_c1", []byte(`{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"0"}`), zk.FlagEphemeral)
	// A 6 s back-off: the squatter leaves well within the first.
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"zookeeper.session.timeout.ms": "6000"})
	done := make(chan error, 1)
	go func() {
		_, err := m.CreateMessageStreams(context.Background(), map[string]int{"t": 1})
		done <- err
	}()
	testutil.WaitFor(t, 20*time.Second, "a back-off", func() bool { return m.count(0, timeline.Error, isExistsBackoff) == 1 })
	r, _ := firstRecord(m, 0, func(r timeline.Record) bool { return r.Kind == timeline.Error && isExistsBackoff(r) })
	if want := fmt.Sprintf("registration node exists: /consumers/g/ids/g_c1 is owned by session %#x; backing off 6000 ms", squatter.conn.SessionID()); r.Text != want {
		t.Fatalf("back-off record %q, want %q", r.Text, want)
	}
	squatter.conn.Close()
	if err := <-done; err != nil {
		t.Fatalf("CreateMessageStreams: %v", err)
	}
	if owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c1"); !ok || owner != m.SessionID() {
		t.Fatalf("/consumers/g/ids/g_c1 owner %#x (present %v), want c1's session %#x", owner, ok, m.SessionID())
	}
	if n := m.count(0, timeline.Error, isExistsBackoff); n != 1 {
		t.Fatalf("%d back-offs, want 1", n)
	}
	settle(t, 20*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0"}, m)
}

// A session expiry as a rebalance attempt starts claiming (right after its first request for the
// owner znode of partition 0): the claims wait for a session and, sent again, are made in the new
// session — before that session's event is handled. A rebalance attempt is one session's: the
// session having changed, the attempt fails and deletes what it claimed, so that no owner znode of
// the new session outlives the old session's decision (resetState forgets the partitions: a znode
// left there would name c1 for good, whatever the next assignment says). When the new session is
// handled no owner znode exists; c1 re-registers, rebalances, and owns the partitions in the new
// session.
func TestFIDZKSessionExpiryDuringClaims(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	dialer := newSessionDialer(nil)
	var (
		handledMu     sync.Mutex
		ownersHandled []string // the owner znodes of t when c1 began handling the new session
		handledErr    error
		handled       bool
	)
	m := newMemberWith(t, z.Connect(), "g", "c1", conflictProps(map[string]string{"rebalance.max.retries": "1"}), func(c *Config) {
		c.ZKDialer = dialer.Dial
		c.Recorder.Sink = hookSink{c.Recorder.Sink.(*timeline.Collector), func(r timeline.Record) {
			if r.Kind == timeline.Error && isSessionExpired(r) {
				handledMu.Lock()
				defer handledMu.Unlock()
				if !handled {
					handled = true
					ownersHandled, _, handledErr = a.conn.Children("/consumers/g/owners/t")
				}
			}
		}}
	})
	s0 := m.SessionID()
	var expired atomic.Bool
	expireErr := make(chan error, 1)
	m.zk.testHookAfterOp = func(op, path string) {
		if op == "write" && path == "/consumers/g/owners/t/0" && expired.CompareAndSwap(false, true) {
			expireErr <- expireSession(z.Servers()[0], dialer, s0)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := m.CreateMessageStreams(ctx, map[string]int{"t": 1})
	select {
	case err := <-expireErr:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the session was not expired during the claims")
	}
	settle(t, 30*time.Second, a, "g", "t", map[int32]string{0: "g_c1-0", 1: "g_c1-0"}, m)
	s1 := m.SessionID()
	if s1 == s0 || s1 == 0 {
		t.Fatalf("c1's session %#x, want a new one (was %#x)", s1, s0)
	}
	handledMu.Lock()
	got, gotErr, ok := ownersHandled, handledErr, handled
	handledMu.Unlock()
	if !ok || gotErr != nil {
		t.Fatalf("c1 handled the new session: %v (reading the owner znodes then: %v)", ok, gotErr)
	}
	if len(got) != 0 {
		t.Fatalf("owner znodes of t when c1 began handling the new session: %v, want none", got)
	}
	if !errors.Is(err, ErrRebalanceFailed) || !strings.Contains(err.Error(), "session changed") {
		t.Fatalf("CreateMessageStreams = %v, want ErrRebalanceFailed: the session changed during the attempt", err)
	}
	for _, p := range []string{"0", "1"} {
		if owner, _ := a.ephemeralOwner("/consumers/g/owners/t/" + p); owner != s1 {
			t.Fatalf("owner znode of partition %s belongs to session %#x, want %#x", p, owner, s1)
		}
	}
	if owner, ok := a.ephemeralOwner("/consumers/g/ids/g_c1"); !ok || owner != s1 {
		t.Fatalf("/consumers/g/ids/g_c1 owner %#x (present %v), want %#x", owner, ok, s1)
	}
	if n := m.count(0, timeline.Error, isSessionExpired); n != 1 {
		t.Fatalf("c1 re-registered %d times, want 1", n)
	}
}
