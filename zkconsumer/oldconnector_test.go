package zkconsumer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// The mixed group of issue 16: the real Kafka 0.8.2.2 ZookeeperConsumerConnector (a JVM from
// interop/kafka-0.8.2, lab.StartOldConsumer) and zkconsumer in one group on one ZooKeeper, on the
// project's broker (the old connector fetches with Fetch v0, asks Metadata v0 and ListOffsets v0).
// Both write and read 0.8.2's znodes, so they must agree on every owner znode.

// mixedMember is one member of the mixed group, of either kind.
type mixedMember struct {
	name    string // consumer.id
	threads int
	old     *lab.OldConsumer // the real connector, or
	zk      *member          // zkconsumer
}

func (m *mixedMember) kind() string {
	if m.old != nil {
		return "kafka-0.8.2.2"
	}
	return "zkconsumer"
}

// threadIDs are the member's consumer thread ids, <group>_<consumer.id>-<i>.
func (m *mixedMember) threadIDs(group string) []string {
	var out []string
	for i := 0; i < m.threads; i++ {
		out = append(out, fmt.Sprintf("%s_%s-%d", group, m.name, i))
	}
	return out
}

// idle: the member's last rebalance attempt succeeded. For the real connector, its last attempt (the
// events since its last rebalance_begin) ended with no claim conflict and no failure.
func (m *mixedMember) idle() bool {
	if m.zk != nil {
		return m.zk.rebalanceIdle()
	}
	ev := m.old.Events()
	last := -1
	for i, e := range ev {
		if e.Event == "rebalance_begin" {
			last = i
		}
	}
	if last < 0 {
		return false
	}
	ended := false
	for _, e := range ev[last:] {
		switch e.Event {
		case "rebalance_end":
			ended = true
		case "claim_conflict", "rebalance_failed":
			return false
		}
	}
	return ended
}

// holds is what the member itself says it holds: zkconsumer's fetchers (partition → "broker 1"), the
// real connector's claims of its last attempt ("<thread> successfully owned partition p").
func (m *mixedMember) holds(topic string) []int32 {
	var out []int32
	if m.zk != nil {
		for tp := range m.zk.fetchPlaces() {
			var p int32
			if _, err := fmt.Sscanf(tp, topic+"/%d", &p); err == nil {
				out = append(out, p)
			}
		}
	} else {
		ev := m.old.Events()
		last := 0
		for i, e := range ev {
			if e.Event == "rebalance_begin" {
				last = i
			}
		}
		for _, e := range ev[last:] {
			if e.Event == "owned" && e.Topic == topic {
				out = append(out, e.Partition)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// conflicts counts the member's failed rebalance attempts (owner-znode claims that found another
// thread's node, the only cause here).
func (m *mixedMember) conflicts() int {
	n := 0
	if m.zk != nil {
		for _, r := range m.zk.rec.Records() {
			if r.Kind == timeline.RebalanceEnd && !*r.OK {
				n++
			}
		}
		return n
	}
	failed := map[string]bool{}
	begins := 0
	for _, e := range m.old.Events() {
		switch e.Event {
		case "rebalance_begin":
			begins++
		case "claim_conflict", "rebalance_failed":
			failed[fmt.Sprint(begins)] = true
		}
	}
	return len(failed)
}

// rangeOwners is 0.8.2's RangeAssignor over the thread ids (sorted as strings) for partitions 0..n-1.
func rangeOwners(threads []string, n int) map[int32]string {
	ts := append([]string(nil), threads...)
	sort.Strings(ts)
	out := map[int32]string{}
	per, extra := n/len(ts), n%len(ts)
	for i, th := range ts {
		start := per*i + min(i, extra)
		cnt := per
		if i < extra {
			cnt++
		}
		for p := start; p < start+cnt; p++ {
			out[int32(p)] = th
		}
	}
	return out
}

// registrations reads /consumers/<g>/ids/*: consumer id → its registration's subscription.
func (a *admin) registrations(group string) map[string]map[string]int {
	a.t.Helper()
	dir := fmt.Sprintf("/consumers/%s/ids", group)
	kids, _, err := a.conn.Children(dir)
	if err != nil {
		a.t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, k := range kids {
		data, _, err := a.conn.Get(dir + "/" + k)
		if err != nil {
			continue // gone between the list and the read
		}
		var reg struct {
			Version      int            `json:"version"`
			Subscription map[string]int `json:"subscription"`
			Pattern      string         `json:"pattern"`
		}
		if err := json.Unmarshal(data, &reg); err != nil || reg.Version != 1 || reg.Pattern != "static" {
			a.t.Fatalf("%s/%s = %s: not 0.8.2's registration (%v)", dir, k, data, err)
		}
		out[k] = reg.Subscription
	}
	return out
}

// TestMixedGroupRealOldConnector: real 0.8.2.2 connectors × 2 and zkconsumers × 2 (2 threads each) in
// one group on 8 partitions of the project's broker: a join and a graceful leave of each kind, and
// after each change the owner znodes, the registrations, what each member holds and who delivers a
// batch produced then all agree (every owner znode names one registered consumer thread, range's
// owner over the live threads; each member holds and delivers exactly the partitions the znodes give
// its threads). A producer runs throughout; every record it produced is delivered (lost == 0), and
// every rebalance settles (claim conflicts are retried, never given up).
func TestMixedGroupRealOldConnector(t *testing.T) { mixedGroup(t, lab.Options{Brokers: 1}) }

// TestMixedGroupRealOldConnectorOnKafka is the same on a real Kafka 3.9 broker (ZooKeeper mode), which
// still serves the old connector's Fetch v0, Metadata v0 and ListOffsets v0.
func TestMixedGroupRealOldConnectorOnKafka(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.OldConnector)
	mixedGroup(t, lab.Options{Brokers: 1, Broker: lab.BrokerKafka})
}

func mixedGroup(t *testing.T, opts lab.Options) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.OldConnector) // and Kafka when opts.Broker is BrokerKafka (its test says so first)
	cp, err := lab.FindOldConsumerClasspath()
	if err != nil {
		t.Fatalf("the real 0.8.2.2 connector: %v", err)
	}
	const (
		parts = 8
		topic = "t"
		group = "mixed"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	opts.Log = testLog()
	l, err := lab.Start(ctx, opts)
	cancel()
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	cl := labClient(t, l)
	createTopicAssigned(t, cl, topic, onBroker1(parts))
	a := newAdmin(t, l.ZKConnect())
	// The same timings for both kinds; auto-commit on (0.8.2's default): every rebalance and every
	// graceful leave commits to /consumers/<g>/offsets before releasing.
	props := map[string]string{
		"auto.offset.reset":               "smallest",
		"zookeeper.session.timeout.ms":    "4000",
		"zookeeper.connection.timeout.ms": "10000",
		"rebalance.backoff.ms":            "300",
		"rebalance.max.retries":           "10",
	}

	var mu sync.Mutex
	delivered := map[[2]int64][]string{} // (partition, offset) → members that delivered it
	record := func(name string, p int32, off int64) {
		mu.Lock()
		delivered[[2]int64{int64(p), off}] = append(delivered[[2]int64{int64(p), off}], name)
		mu.Unlock()
	}
	oldSeen := map[string]int{} // the old members' events already copied into delivered
	pullOld := func(ms []*mixedMember) {
		for _, m := range ms {
			if m.old == nil {
				continue
			}
			ev := m.old.Events()
			for _, e := range ev[oldSeen[m.name]:] {
				if e.Event == "delivered" && e.Topic == topic {
					record(m.name, e.Partition, e.Offset)
				}
			}
			oldSeen[m.name] = len(ev)
		}
	}

	// m1old's ZooKeeper session goes through a proxy that counts its requests by op code and the
	// watch notifications it gets (issue 16's deliverable 2, first step).
	zkProxy, err := lab.StartZKCountingProxy(l.ZKConnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zkProxy.Close() })

	var all []*mixedMember
	startOld := func(name string) *mixedMember {
		connect := l.ZKConnect()
		if name == "m1old" {
			connect = zkProxy.Addr
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		o, err := lab.StartOldConsumer(ctx, lab.OldConsumerOptions{
			ZooKeeper: connect, Group: group, Topic: topic, Streams: 2, ConsumerID: name,
			Config: props, Classpath: cp, LogPath: t.TempDir() + "/" + name + ".log", Log: testLog(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Kill)
		if want := group + "_" + name; o.ConsumerID != want {
			t.Fatalf("the 0.8.2.2 connector calls itself %q, want %q", o.ConsumerID, want)
		}
		m := &mixedMember{name: name, threads: 2, old: o}
		all = append(all, m)
		return m
	}
	startZKC := func(name string) *mixedMember {
		zm := newMember(t, l.ZKConnect(), group, name, props)
		for _, s := range allStreams(createStreams(t, zm, map[string]int{topic: 2})) {
			go func() {
				for msg := range s {
					record(name, msg.Partition, msg.Offset)
				}
			}()
		}
		m := &mixedMember{name: name, threads: 2, zk: zm}
		all = append(all, m)
		return m
	}

	// A producer runs through every change: a record per partition every 50 ms.
	var pmu sync.Mutex
	var sent [][2]int64
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var recs []*kgo.Record
			for p := int32(0); p < parts; p++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("bg%d-%d", p, i))})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			res := cl.ProduceSync(ctx, recs...)
			cancel()
			pmu.Lock()
			for _, r := range res {
				if r.Err == nil {
					sent = append(sent, [2]int64{int64(r.Record.Partition), r.Record.Offset})
				}
			}
			pmu.Unlock()
		}
	}()

	// check waits until the group is stable over live, then checks that znodes, registrations, holdings
	// and a batch's deliveries agree.
	step := 0
	check := func(what string, live ...*mixedMember) {
		t.Helper()
		step++
		var threads []string
		owner := map[string]*mixedMember{}
		for _, m := range live {
			for _, th := range m.threadIDs(group) {
				threads = append(threads, th)
				owner[th] = m
			}
		}
		want := rangeOwners(threads, parts)
		began := time.Now()
		testutil.WaitFor(t, 60*time.Second, fmt.Sprintf("%s: owners = %v, every member idle", what, want), func() bool {
			for _, m := range live {
				if !m.idle() {
					return false
				}
			}
			return reflect.DeepEqual(a.owners(group, topic), want)
		})
		settled := time.Since(began)
		// Every owner znode names a thread of a registered member (and its registration counts it).
		regs := a.registrations(group)
		if len(regs) != len(live) {
			t.Fatalf("%s: %d registrations %v, want %d", what, len(regs), regs, len(live))
		}
		for p, th := range a.owners(group, topic) {
			m := owner[th]
			if m == nil {
				t.Fatalf("%s: /consumers/%s/owners/%s/%d = %q names no live consumer thread", what, group, topic, p, th)
			}
			if regs[group+"_"+m.name][topic] != m.threads {
				t.Fatalf("%s: the registration of %s_%s is %v, want %s:%d", what, group, m.name, regs[group+"_"+m.name], topic, m.threads)
			}
		}
		// Each member holds (fetches / claimed) exactly the partitions the znodes give its threads.
		mine := map[string][]int32{}
		for p := int32(0); p < parts; p++ {
			mine[owner[want[p]].name] = append(mine[owner[want[p]].name], p)
		}
		testutil.WaitFor(t, 20*time.Second, what+": every member holds its partitions", func() bool {
			for _, m := range live {
				if !reflect.DeepEqual(m.holds(topic), mine[m.name]) {
					return false
				}
			}
			return true
		})
		// A batch produced now is delivered by the owner's member, and by nobody else.
		batch := map[[2]int64]string{}
		for p := int32(0); p < parts; p++ {
			for _, off := range produce(t, cl, topic, p, fmt.Sprintf("step%d-a", step), fmt.Sprintf("step%d-b", step)) {
				batch[[2]int64{int64(p), off}] = owner[want[p]].name
			}
		}
		testutil.WaitFor(t, 30*time.Second, what+": the batch delivered", func() bool {
			pullOld(all)
			mu.Lock()
			defer mu.Unlock()
			for k := range batch {
				if len(delivered[k]) == 0 {
					return false
				}
			}
			return true
		})
		// The barrier: a marker produced to each partition after the batch, delivered by its owner.
		// Every member holds only its own partitions (checked above), each partition delivers in
		// offset order, so once the markers are in, the batch's deliveries are all in too.
		markers := map[[2]int64]string{}
		for p := int32(0); p < parts; p++ {
			for _, off := range produce(t, cl, topic, p, fmt.Sprintf("step%d-marker", step)) {
				markers[[2]int64{int64(p), off}] = owner[want[p]].name
			}
		}
		testutil.WaitFor(t, 30*time.Second, what+": the markers delivered by their owners", func() bool {
			pullOld(all)
			mu.Lock()
			defer mu.Unlock()
			for k, name := range markers {
				if got := delivered[k]; len(got) == 0 || got[0] != name {
					return false
				}
			}
			return true
		})
		pullOld(all)
		mu.Lock()
		for k, name := range batch {
			if got := delivered[k]; len(got) != 1 || got[0] != name {
				mu.Unlock()
				t.Fatalf("%s: %d@%d delivered by %v, want %s alone (owner %s)", what, k[0], k[1], got, name, want[int32(k[0])])
			}
		}
		mu.Unlock()
		var desc []string
		for _, m := range live {
			desc = append(desc, fmt.Sprintf("%s(%s)=%v", m.name, m.kind(), mine[m.name]))
		}
		t.Logf("%s: settled in %v; owners and deliveries agree: %s", what, settled.Round(time.Millisecond), strings.Join(desc, " "))
	}

	m1 := startOld("m1old")
	m2 := startZKC("m2zk")
	check("start", m1, m2)
	m3 := startOld("m3old")
	check("join of a 0.8.2.2 connector", m1, m2, m3)
	m4 := startZKC("m4zk")
	check("join of a zkconsumer", m1, m2, m3, m4)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := m1.old.Stop(stopCtx); err != nil {
		t.Fatalf("stopping m1old: %v", err)
	}
	cancel()
	// Through its life (its start, two joins, its graceful leave) m1old read the group, claimed owner
	// znodes, was woken by watches and closed its session.
	ops := zkProxy.Ops()
	t.Logf("m1old's ZooKeeper requests by op code %v, watch notifications %d", ops, zkProxy.Watches())
	if ops["getChildren"]+ops["getChildren2"] == 0 || ops["getData"] == 0 || ops["create"] < 4 || ops["closeSession"] != 1 || zkProxy.Watches() < 2 {
		t.Errorf("m1old's ZooKeeper requests %v and %d watch notifications: want children and data reads, its owner claims (≥ 4 creates), one closeSession and a watch per join (≥ 2)", ops, zkProxy.Watches())
	}
	check("leave of a 0.8.2.2 connector", m2, m3, m4)
	m2.zk.Shutdown()
	check("leave of a zkconsumer", m3, m4)

	close(stop)
	pwg.Wait()
	pmu.Lock()
	produced := append([][2]int64(nil), sent...)
	pmu.Unlock()
	lost := func() (n int, first [2]int64) {
		pullOld(all)
		mu.Lock()
		defer mu.Unlock()
		for _, k := range produced {
			if len(delivered[k]) == 0 {
				if n == 0 {
					first = k
				}
				n++
			}
		}
		return n, first
	}
	testutil.WaitFor(t, 30*time.Second, "every record the producer wrote delivered", func() bool {
		n, _ := lost()
		return n == 0
	})
	mu.Lock()
	dups := 0
	for _, who := range delivered {
		dups += len(who) - 1
	}
	mu.Unlock()
	var conf []string
	for _, m := range all {
		conf = append(conf, fmt.Sprintf("%s=%d", m.name, m.conflicts()))
		if m.zk != nil && m.zk.givenUp() != 0 {
			t.Errorf("%s gave up %d rebalances", m.name, m.zk.givenUp())
		}
		if m.old != nil {
			for _, e := range m.old.Events() {
				if e.Event == "log" && e.Level == "ERROR" {
					t.Errorf("%s logged an error: %s", m.name, e.Message)
				}
			}
		}
	}
	t.Logf("the producer wrote %d records, lost 0, duplicates %d; failed rebalance attempts (claim conflicts): %s",
		len(produced), dups, strings.Join(conf, " "))
}
