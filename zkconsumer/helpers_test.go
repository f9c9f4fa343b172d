package zkconsumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLog is quiet: fake brokers make the leader finder warn on every round.
func testLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(l)
}

// startZK starts a real standalone ZooKeeper for one test (lab.StartZooKeeper: Debian's server
// jar, tickTime 200 ms so 2 s sessions are not clamped).
func startZK(t *testing.T) *lab.ZooKeeper {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: testLog()})
	if err != nil {
		t.Fatalf("starting ZooKeeper: %v", err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// admin is a plain go-zookeeper session for setting up and inspecting znodes.
type admin struct {
	t    *testing.T
	conn *zk.Conn
}

func newAdmin(t *testing.T, connect string) *admin {
	t.Helper()
	conn, ev, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogger(zklog.New(testLog())))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatal("admin: no ZooKeeper session")
		}
	}
	t.Cleanup(conn.Close)
	return &admin{t, conn}
}

func (a *admin) mkdirs(path string) {
	a.t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur += "/" + part
		if _, err := a.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			a.t.Fatalf("create %s: %v", cur, err)
		}
	}
}

func (a *admin) create(path string, data []byte, flags int32) {
	a.t.Helper()
	a.mkdirs(path[:strings.LastIndex(path, "/")])
	if _, err := a.conn.Create(path, data, flags, zk.WorldACL(zk.PermAll)); err != nil {
		a.t.Fatalf("create %s: %v", path, err)
	}
}

// topicJSON is 0.8.2's /brokers/topics/<t>: {"version":1,"partitions":{"0":[0],...}}.
func topicJSON(partitions int) []byte {
	m := map[string][]int{}
	for p := 0; p < partitions; p++ {
		m[strconv.Itoa(p)] = []int{0}
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "partitions": m})
	return b
}

func (a *admin) createTopic(topic string, partitions int) {
	a.create(brokerTopicsPath+"/"+topic, topicJSON(partitions), 0)
}

// fakeBroker registers /brokers/ids/<id> (0.8.2's JSON) for a port where nobody listens: the
// rebalance sees a live cluster, the leader finder's Metadata request fails.
func (a *admin) fakeBroker(id int) {
	a.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	data := fmt.Sprintf(`{"version":1,"host":"127.0.0.1","port":%d,"jmx_port":-1,"timestamp":"%d"}`, port, time.Now().UnixMilli())
	a.create(fmt.Sprintf("%s/%d", brokerIdsPath, id), []byte(data), zk.FlagEphemeral)
}

// owners reads /consumers/<group>/owners/<topic>/*: partition → owner thread id.
func (a *admin) owners(group, topic string) map[int32]string {
	a.t.Helper()
	dir := fmt.Sprintf("/consumers/%s/owners/%s", group, topic)
	kids, _, err := a.conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return map[int32]string{}
	}
	if err != nil {
		a.t.Fatal(err)
	}
	out := map[int32]string{}
	for _, k := range kids {
		data, _, err := a.conn.Get(dir + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			a.t.Fatal(err)
		}
		p, _ := strconv.Atoi(k)
		out[int32(p)] = string(data)
	}
	return out
}

// member is a connector under test with its own timeline.
type member struct {
	*Connector
	rec *timeline.Collector
}

// newMember starts a connector with consumer.id id and the given extra properties (lab timing
// by default: 2 s sessions, 200 ms backoff, 10 attempts so that join storms settle).
func newMember(t *testing.T, connect, group, id string, props map[string]string) *member {
	t.Helper()
	return newMemberWith(t, connect, group, id, props, nil)
}

// newMemberWith is newMember with a last say on the config (dialers, listener).
func newMemberWith(t *testing.T, connect, group, id string, props map[string]string, edit func(*Config)) *member {
	t.Helper()
	p := map[string]string{
		"group.id": group, "zookeeper.connect": connect, "consumer.id": id,
		"zookeeper.session.timeout.ms": "2000", "rebalance.backoff.ms": "200", "rebalance.max.retries": "10",
	}
	for k, v := range props {
		p[k] = v
	}
	cfg, err := FromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	col := &timeline.Collector{}
	cfg.Recorder = &timeline.Recorder{Sink: col, Era: "zk", Member: id}
	cfg.Log = testLog()
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return &member{c, col}
}

// count counts m's records of kind from index from on that satisfy match (nil: all).
func (m *member) count(from int, kind timeline.Kind, match func(timeline.Record) bool) int {
	n := 0
	recs := m.rec.Records()
	for _, r := range recs[min(from, len(recs)):] {
		if r.Kind == kind && (match == nil || match(r)) {
			n++
		}
	}
	return n
}

func isRead(r timeline.Record) bool  { return r.Op == "read" }
func isWrite(r timeline.Record) bool { return r.Op == "write" }

// rebalanceIdle: the last rebalance (one rebalance_begin, then a rebalance_end per attempt) ended
// with a successful attempt.
func (m *member) rebalanceIdle() bool {
	open, lastOK := false, false
	for _, r := range m.rec.Records() {
		switch r.Kind {
		case timeline.RebalanceBegin:
			open, lastOK = true, false
		case timeline.RebalanceEnd:
			lastOK = *r.OK
			if lastOK {
				open = false
			}
		}
	}
	return !open && lastOK
}

// givenUp counts the rebalances whose last attempt failed (the rebalance_failures figure's rule):
// retried attempts that end in success do not count.
func (m *member) givenUp() int {
	n, inRebalance, lastOK := 0, false, true
	for _, r := range m.rec.Records() {
		switch r.Kind {
		case timeline.RebalanceBegin:
			if inRebalance && !lastOK {
				n++
			}
			inRebalance, lastOK = true, true
		case timeline.RebalanceEnd:
			lastOK = *r.OK
		}
	}
	if inRebalance && !lastOK {
		n++
	}
	return n
}

// consumed reports whether s holds n messages and m has recorded n deliveries. The iterator moves
// a partition's consumed offset and records the delivery just after the application took the
// message, so s can hold it a moment before: a commit, or a count of deliver records, after
// consumed sees all n.
func consumed(m *member, s *sink, n int) bool {
	return s.len() >= n && m.count(0, timeline.Deliver, nil) >= n
}

// fetchPlaces says where m's fetcher manager has each partition now ("t/0" → "broker 1" for a
// broker's fetcher, "no leader" for the leader finder): what m can deliver from next, a condition
// where a pause could only hope that something stopped (or never started) coming.
func (m *member) fetchPlaces() map[string]string {
	m.fetcher.mu.Lock()
	defer m.fetcher.mu.Unlock()
	out := map[string]string{}
	for tp := range m.fetcher.noLeader {
		out[fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)] = "no leader"
	}
	for id, f := range m.fetcher.fetchers {
		f.mu.Lock()
		for tp := range f.offsets {
			out[fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)] = fmt.Sprintf("broker %d", id)
		}
		f.mu.Unlock()
	}
	return out
}

func ownedString(m map[string][]int32) string {
	var topics []string
	for t := range m {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var b strings.Builder
	for _, t := range topics {
		fmt.Fprintf(&b, "%s:%v ", t, m[t])
	}
	return strings.TrimSpace(b.String())
}
