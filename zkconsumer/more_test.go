package zkconsumer

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// zookeeper.connect with a chroot (Kafka's host:port/chroot): every znode lives below it, the
// timeline names the paths as Kafka does, watches work.
func TestChroot(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.mkdirs("/lab")
	root := &admin{t, a.conn}
	root.create("/lab/brokers/ids/0", []byte(`{"version":1,"host":"127.0.0.1","port":1,"jmx_port":-1,"timestamp":"1"}`), zk.FlagEphemeral)
	root.create("/lab/brokers/topics/t", topicJSON(2), 0)
	m1 := newMember(t, z.Connect()+"/lab", "g", "c1", nil)
	createStreams(t, m1, map[string]int{"t": 1})
	m2 := newMember(t, z.Connect()+"/lab", "g", "c2", nil)
	createStreams(t, m2, map[string]int{"t": 1})
	testutil.WaitFor(t, 20*time.Second, "split below the chroot", func() bool {
		kids, _, err := a.conn.Children("/lab/consumers/g/owners/t")
		return err == nil && len(kids) == 2 && m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	for p, want := range map[string]string{"0": "g_c1-0", "1": "g_c2-0"} {
		data, _, err := a.conn.Get("/lab/consumers/g/owners/t/" + p)
		if err != nil || string(data) != want {
			t.Fatalf("/lab/consumers/g/owners/t/%s = %q, %v; want %s", p, data, err, want)
		}
	}
	if ok, _, _ := a.conn.Exists("/consumers"); ok {
		t.Fatal("/consumers exists outside the chroot")
	}
	for _, r := range m1.rec.Records() {
		if r.Kind == timeline.ZKOp && strings.HasPrefix(r.Path, "/lab") {
			t.Fatalf("zk_op path %s carries the chroot", r.Path)
		}
	}
	if n := m1.count(0, timeline.ZKWatch, func(r timeline.Record) bool { return r.Path == "/consumers/g/ids" }); n != 1 {
		t.Fatalf("c1 saw %d notifications on /consumers/g/ids, want 1", n)
	}
}

// ZK-ROUNDROBIN-EMPTY with a broker: the wildcard connector starts on a cluster without topics,
// a topic created later is assigned whole and its messages are delivered on the shared streams.
func TestZKRoundRobinEmptyDelivery(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	a := newAdmin(t, z.Connect())
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"partition.assignment.strategy": "roundrobin", "auto.offset.reset": "smallest"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	streams, err := m.CreateMessageStreamsByFilter(ctx, Whitelist("x.*"), 2)
	if err != nil {
		t.Fatalf("initial rebalance with no topics: %v", err)
	}
	s := drain(streams...)
	if len(m.Owned()) != 0 {
		t.Fatalf("owns %v", m.Owned())
	}
	createTopicAssigned(t, cl, "xa", [][]int32{{1}, {1}, {1}})
	createTopicAssigned(t, cl, "other", [][]int32{{1}})
	testutil.WaitFor(t, 20*time.Second, "xa assigned", func() bool {
		return len(a.owners("g", "xa")) == 3 && m.rebalanceIdle()
	})
	// Round-robin over 2 threads in hash order of "[xa,0]" < "[xa,1]" < "[xa,2]".
	if got := a.owners("g", "xa"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-1", 2: "g_c1-0"}) {
		t.Fatalf("owners %v", got)
	}
	if got := a.owners("g", "other"); len(got) != 0 {
		t.Fatalf("non-matching topic owned: %v", got)
	}
	for p := int32(0); p < 3; p++ {
		waitLeader(t, cl, "xa", p, 1)
		produce(t, cl, "xa", p, "v")
	}
	produce(t, cl, "other", 0, "no")
	testutil.WaitFor(t, 20*time.Second, "3 messages", func() bool { return s.len() >= 3 })
	// A barrier after each xa partition's record: whatever else of xa was going to come has come by
	// its barrier, and "other" has no owner (above), so nothing fetches it.
	bars := []string{barrier(t, cl, s, "xa", 0), barrier(t, cl, s, "xa", 1), barrier(t, cl, s, "xa", 2)}
	if got := s.got(); !reflect.DeepEqual(got, sorted([]string{"xa/0@0=v", "xa/1@0=v", "xa/2@0=v"}, bars)) {
		t.Fatalf("delivered %v", got)
	}
}

// ZK-BROKER-VANISHES with a broker: a second broker's registration vanishes between the list and
// the read; the connector treats it as gone and consumes from the live one.
func TestZKBrokerVanishesDelivery(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b := startBroker(t, z.Connect(), 1)
	cl := newClient(t, b)
	createTopicAssigned(t, cl, "t", [][]int32{{1}, {1}})
	produce(t, cl, "t", 0, "a0")
	produce(t, cl, "t", 1, "b0")
	a := newAdmin(t, z.Connect())
	a.fakeBroker(2)
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"auto.offset.reset": "smallest"})
	var once sync.Once
	m.zk.testHookAfterOp = func(op, path string) {
		if op == "read" && path == brokerIdsPath {
			once.Do(func() {
				if err := a.conn.Delete(brokerIdsPath+"/2", -1); err != nil {
					t.Errorf("deleting broker 2: %v", err)
				}
			})
		}
	}
	s := drain(allStreams(createStreams(t, m, map[string]int{"t": 1}))...)
	if n := m.count(0, timeline.RebalanceEnd, func(r timeline.Record) bool { return *r.OK && r.Attempt == 1 }); n != 1 {
		t.Fatalf("rebalance_end{ok, attempt 1} = %d, want 1", n)
	}
	testutil.WaitFor(t, 20*time.Second, "2 messages", func() bool { return s.len() >= 2 })
	if got := s.got(); !reflect.DeepEqual(got, []string{"t/0@0=a0", "t/1@0=b0"}) {
		t.Fatalf("delivered %v", got)
	}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) {
		t.Fatalf("owners %v", got)
	}
}
