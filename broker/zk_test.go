package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// Fixtures: znodes as Kafka 0.8.2's ZkUtils writes them (registerBrokerInZk, replicaAssignmentZkData,
// leaderAndIsrZkData, controllerZkData; values from a real 0.8.2 cluster, key order as Scala's Json.encode
// happens to emit it). The broker's znodes must parse to the same keys with the same JSON types.
const (
	fixtureBroker     = `{"jmx_port":-1,"timestamp":"1418226044568","host":"broker1.example.com","version":1,"port":9092}`
	fixtureTopic      = `{"version":1,"partitions":{"1":[2],"0":[1]}}`
	fixtureState      = `{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}`
	fixtureController = `{"version":1,"brokerid":1,"timestamp":"1418226044627"}`
)

// jsonShape maps each key to its JSON type (recursively for objects; arrays by element type).
func jsonShape(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", data, err)
	}
	shape := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			shape[prefix] = "object"
			for k, e := range x {
				walk(prefix+"."+k, e)
			}
		case []any:
			shape[prefix] = "array"
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		case float64:
			shape[prefix] = "number"
		case string:
			shape[prefix] = "string"
		case bool:
			shape[prefix] = "bool"
		case nil:
			shape[prefix] = "null"
		}
	}
	for k, v := range m {
		walk(k, v)
	}
	return shape
}

// stripPartitionKeys replaces the partition-id keys of a topic znode shape by "*", so that topics with
// different partition counts compare.
func stripPartitionKeys(shape map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range shape {
		if len(k) > len("partitions.") && k[:len("partitions.")] == "partitions." {
			rest := k[len("partitions."):]
			i := 0
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				i++
			}
			k = "partitions.*" + rest[i:]
		}
		out[k] = v
	}
	return out
}

func getZ(t *testing.T, c *zk.Conn, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, st, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data, st
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	c := dial(t, addr)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.CreateTopicsResponse](t, c, req, 7)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: %v %v", topic, kerr.ErrorForCode(code), resp.Topics[0].ErrorMessage)
	}
}

type state struct {
	Version         int     `json:"version"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ControllerEpoch int32   `json:"controller_epoch"`
	ISR             []int32 `json:"isr"`
}

func readState(t *testing.T, c *zk.Conn, topic string, p int32) state {
	t.Helper()
	data, _ := getZ(t, c, fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p))
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestZNodeLayout082: every znode the broker writes has exactly the keys and JSON types of Kafka
// 0.8.2's, with the values this cluster implies; /brokers/ids/<id> is gone as soon as the broker closes.
func TestZNodeLayout082(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	before := time.Now().UnixMilli()
	tb := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, tb.addr(), "layout", 2)
	zc := zkClient(t, z.Connect())

	host, port := "127.0.0.1", 0
	fmt.Sscanf(tb.addr()[len("127.0.0.1:"):], "%d", &port)

	// /brokers/ids/1: ephemeral, owned by the broker's session.
	data, st := getZ(t, zc, "/brokers/ids/1")
	if got, want := jsonShape(t, data), jsonShape(t, []byte(fixtureBroker)); !reflect.DeepEqual(got, want) {
		t.Fatalf("/brokers/ids/1 shape %v, want 0.8.2's %v (%s)", got, want, data)
	}
	var bz struct {
		Version   int    `json:"version"`
		Host      string `json:"host"`
		Port      int    `json:"port"`
		JMXPort   int    `json:"jmx_port"`
		Timestamp string `json:"timestamp"`
	}
	json.Unmarshal(data, &bz)
	ts, err := strconv.ParseInt(bz.Timestamp, 10, 64)
	if bz.Version != 1 || bz.Host != host || bz.Port != port || bz.JMXPort != -1 || err != nil || ts < before || ts > time.Now().UnixMilli() {
		t.Fatalf("/brokers/ids/1 = %s", data)
	}
	if st.EphemeralOwner == 0 {
		t.Fatal("/brokers/ids/1 is not ephemeral")
	}

	// /brokers/topics/layout: persistent, partition -> replicas (round-robin: both on broker 1).
	data, st = getZ(t, zc, "/brokers/topics/layout")
	if got, want := stripPartitionKeys(jsonShape(t, data)), stripPartitionKeys(jsonShape(t, []byte(fixtureTopic))); !reflect.DeepEqual(got, want) {
		t.Fatalf("topic shape %v, want 0.8.2's %v (%s)", got, want, data)
	}
	var tz struct {
		Version    int                `json:"version"`
		Partitions map[string][]int32 `json:"partitions"`
	}
	json.Unmarshal(data, &tz)
	if tz.Version != 1 || !reflect.DeepEqual(tz.Partitions, map[string][]int32{"0": {1}, "1": {1}}) || st.EphemeralOwner != 0 {
		t.Fatalf("/brokers/topics/layout = %s (ephemeral owner %d)", data, st.EphemeralOwner)
	}

	// Partition states.
	for p := int32(0); p < 2; p++ {
		path := fmt.Sprintf("/brokers/topics/layout/partitions/%d/state", p)
		data, st = getZ(t, zc, path)
		if got, want := jsonShape(t, data), jsonShape(t, []byte(fixtureState)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s shape %v, want 0.8.2's %v (%s)", path, got, want, data)
		}
		if s := readState(t, zc, "layout", p); !reflect.DeepEqual(s, state{Version: 1, Leader: 1, LeaderEpoch: 0, ControllerEpoch: 1, ISR: []int32{1}}) || st.EphemeralOwner != 0 {
			t.Fatalf("%s = %s", path, data)
		}
	}

	// /controller (ephemeral) and /controller_epoch (persistent, a bare integer).
	data, st = getZ(t, zc, "/controller")
	if got, want := jsonShape(t, data), jsonShape(t, []byte(fixtureController)); !reflect.DeepEqual(got, want) {
		t.Fatalf("/controller shape %v, want 0.8.2's %v (%s)", got, want, data)
	}
	var cz struct {
		Version   int    `json:"version"`
		BrokerID  int32  `json:"brokerid"`
		Timestamp string `json:"timestamp"`
	}
	json.Unmarshal(data, &cz)
	if _, err := strconv.ParseInt(cz.Timestamp, 10, 64); cz.Version != 1 || cz.BrokerID != 1 || err != nil || st.EphemeralOwner == 0 {
		t.Fatalf("/controller = %s", data)
	}
	data, st = getZ(t, zc, "/controller_epoch")
	if string(data) != "1" || st.EphemeralOwner != 0 {
		t.Fatalf("/controller_epoch = %q", data)
	}

	// Close: the session ends, the ephemeral nodes vanish at once (not after the session timeout).
	tb.stop()
	for _, p := range []string{"/brokers/ids/1", "/controller"} {
		if ok, _, err := zc.Exists(p); err != nil || ok {
			t.Fatalf("%s after Close: exists=%v err=%v", p, ok, err)
		}
	}
	if ok, _, _ := zc.Exists("/brokers/topics/layout/partitions/1/state"); !ok {
		t.Fatal("persistent state znode gone after Close")
	}
}

// TestLeaderGoesAndComesBack: two brokers share one ZooKeeper; partition p of a new topic is led by the
// p-th broker (round-robin). Closing the broker leading partition 1 makes the controller write leader -1
// (leader epoch + 1) and Metadata from the other broker answer LEADER_NOT_AVAILABLE for it; Produce for
// it there is NOT_LEADER_OR_FOLLOWER. When the broker restarts (same port and data dir) it leads
// again (epoch + 1) and serves the records written before.
func TestLeaderGoesAndComesBack(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil)
	b2 := startBroker(t, z.Connect(), 2, nil)
	zc := zkClient(t, z.Connect())
	createTopic(t, b2.addr(), "failover", 2)
	for p, want := range []int32{1, 2} {
		if s := readState(t, zc, "failover", int32(p)); s.Leader != want || s.LeaderEpoch != 0 {
			t.Fatalf("partition %d state %+v, want leader %d epoch 0", p, s, want)
		}
	}

	// Ten records to partition 1, through broker 2.
	prod, err := kgo.NewClient(kgo.SeedBrokers(b1.addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "failover", Partition: 1, Value: []byte(fmt.Sprintf("before-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	c1 := dial(t, b1.addr())
	b2.stop()
	testutil.WaitFor(t, 10*time.Second, "partition 1 leader -1", func() bool {
		s := readState(t, zc, "failover", 1)
		return s.Leader == -1
	})
	if s := readState(t, zc, "failover", 1); !reflect.DeepEqual(s, state{Version: 1, Leader: -1, LeaderEpoch: 1, ControllerEpoch: 1, ISR: []int32{2}}) {
		t.Fatalf("partition 1 after broker 2 closed: %+v", s)
	}
	if s := readState(t, zc, "failover", 0); s.Leader != 1 || s.LeaderEpoch != 0 {
		t.Fatalf("partition 0 changed: %+v", s)
	}
	testutil.WaitFor(t, 10*time.Second, "Metadata on broker 1 to show partition 1 leaderless", func() bool {
		m := metadata(t, c1, "failover")
		return len(m.Brokers) == 1 && m.Topics[0].Partitions[1].ErrorCode == kerr.LeaderNotAvailable.Code
	})
	m := metadata(t, c1, "failover")
	p0, p1 := m.Topics[0].Partitions[0], m.Topics[0].Partitions[1]
	if p1.Leader != -1 || p1.LeaderEpoch != 1 || !reflect.DeepEqual(p1.OfflineReplicas, []int32{2}) || p0.ErrorCode != 0 || p0.Leader != 1 {
		t.Fatalf("Metadata while broker 2 is down: p0 %+v p1 %+v", p0, p1)
	}
	// Produce for partition 1 sent to broker 1, which does not lead it (leadership is checked before the
	// records are looked at, as in ReplicaManager.appendToLocalLog).
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "failover", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: make([]byte, 70)}}}}
	if got := request[*kmsg.ProduceResponse](t, c1, pr, 9).Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a partition broker 1 does not lead: %v", kerr.ErrorForCode(got))
	}

	b2.start()
	testutil.WaitFor(t, 15*time.Second, "partition 1 led by broker 2 again", func() bool {
		return readState(t, zc, "failover", 1).Leader == 2
	})
	if s := readState(t, zc, "failover", 1); !reflect.DeepEqual(s, state{Version: 1, Leader: 2, LeaderEpoch: 2, ControllerEpoch: 1, ISR: []int32{2}}) {
		t.Fatalf("partition 1 after broker 2 returned: %+v", s)
	}
	testutil.WaitFor(t, 10*time.Second, "Metadata on broker 1 to show broker 2 leading partition 1", func() bool {
		p := metadata(t, c1, "failover").Topics[0].Partitions[1]
		return p.ErrorCode == 0 && p.Leader == 2 && p.LeaderEpoch == 2
	})
	// The restarted broker serves what it stored before.
	cons, err := kgo.NewClient(kgo.SeedBrokers(b1.addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"failover": {1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 10 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("before-%d", i) {
			t.Fatalf("record %d after restart: %q (all: %v)", i, v, got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("read %d records after restart, want 10", len(got))
	}
}

// TestControllerFailover: when the controller closes, the other broker creates /controller, bumps
// /controller_epoch to 2, and as the new controller sets the dead broker's partition leaderless.
func TestControllerFailover(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil)
	b2 := startBroker(t, z.Connect(), 2, nil)
	zc := zkClient(t, z.Connect())
	createTopic(t, b1.addr(), "ctl", 2)
	data, _ := getZ(t, zc, "/controller")
	var ctl struct {
		BrokerID int32 `json:"brokerid"`
	}
	json.Unmarshal(data, &ctl)
	if ctl.BrokerID != 1 {
		t.Fatalf("controller %d, want broker 1 (started first)", ctl.BrokerID)
	}
	b1.stop()
	testutil.WaitFor(t, 10*time.Second, "broker 2 to become controller", func() bool {
		data, _, err := zc.Get("/controller")
		if err != nil {
			return false
		}
		json.Unmarshal(data, &ctl)
		return ctl.BrokerID == 2
	})
	// The new controller writes /controller, then bumps /controller_epoch (0.8.2's
	// KafkaController.onControllerFailover order): wait for the second write.
	testutil.WaitFor(t, 10*time.Second, "/controller_epoch = 2", func() bool {
		data, _, err := zc.Get("/controller_epoch")
		return err == nil && string(data) == "2"
	})
	testutil.WaitFor(t, 10*time.Second, "partition 0 (broker 1's) leaderless", func() bool {
		return readState(t, zc, "ctl", 0).Leader == -1
	})
	if s := readState(t, zc, "ctl", 0); !reflect.DeepEqual(s, state{Version: 1, Leader: -1, LeaderEpoch: 1, ControllerEpoch: 2, ISR: []int32{1}}) {
		t.Fatalf("partition 0 state %+v", s)
	}
	c2 := dial(t, b2.addr())
	testutil.WaitFor(t, 10*time.Second, "Metadata controller id 2", func() bool { return metadata(t, c2).ControllerID == 2 })
}

// TestZooKeeperUnreachable: while the broker's link to ZooKeeper is cut (a TCP proxy refuses it) the
// broker keeps serving produce and fetch for the partitions it leads; ZooKeeper expires its session and
// deletes /brokers/ids/1; when the link heals the broker opens a new session and re-creates its
// ephemeral znodes (registration and /controller).
func TestZooKeeperUnreachable(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	proxy, err := lab.NewProxy("broker-zk", z.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	tb := startBroker(t, proxy.Addr(), 1, nil)
	createTopic(t, tb.addr(), "outage", 1)
	zc := zkClient(t, z.Connect())
	_, st := getZ(t, zc, "/brokers/ids/1")
	oldSession := st.EphemeralOwner

	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("outage"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if err := proxy.Cut(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 15*time.Second, "ZooKeeper to expire the broker's session", func() bool {
		ok, _, err := zc.Exists("/brokers/ids/1")
		return err == nil && !ok
	})
	// Still serving: produce and fetch during the outage.
	for i := 0; i < 5; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("during-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce during the ZooKeeper outage: %v", err)
		}
	}
	c := dial(t, tb.addr())
	f := kmsg.NewPtrFetchRequest()
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes, f.SessionEpoch = 100, 1, 1<<20, -1
	f.Topics = []kmsg.FetchRequestTopic{{Topic: "outage", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}}}}
	fr := request[*kmsg.FetchResponse](t, c, f, 11).Topics[0].Partitions[0]
	if fr.ErrorCode != 0 || fr.HighWatermark != 6 {
		t.Fatalf("fetch during the outage: %v hwm %d", kerr.ErrorForCode(fr.ErrorCode), fr.HighWatermark)
	}

	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "re-registration under a new session", func() bool {
		_, st, err := zc.Get("/brokers/ids/1")
		return err == nil && st.EphemeralOwner != oldSession
	})
	testutil.WaitFor(t, 10*time.Second, "/controller re-created", func() bool {
		ok, _, _ := zc.Exists("/controller")
		return ok
	})
	if s := readState(t, zc, "outage", 0); s.Leader != 1 {
		t.Fatalf("partition state after the outage: %+v", s)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the outage: %v", err)
	}
}

// TestRestartAfterCrashWaitsForOldRegistration: a broker that dies without closing its session (its link
// to ZooKeeper cut first, as with kill -9) leaves /brokers/ids/1 behind until ZooKeeper expires the
// session. Restarted at once, it waits for that node to go, then registers under its new session.
func TestRestartAfterCrashWaitsForOldRegistration(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	proxy, err := lab.NewProxy("broker-crash", z.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	tb := startBroker(t, proxy.Addr(), 1, nil)
	zc := zkClient(t, z.Connect())
	_, st := getZ(t, zc, "/brokers/ids/1")
	old := st.EphemeralOwner
	if err := proxy.Cut(); err != nil {
		t.Fatal(err)
	}
	tb.stop() // cannot reach ZooKeeper: the session and its ephemeral znodes outlive the broker
	if ok, _, _ := zc.Exists("/brokers/ids/1"); !ok {
		t.Fatal("/brokers/ids/1 vanished although the session was not closed")
	}
	tb.props["zookeeper.connect"] = z.Connect()
	tb.start() // fails the test unless registered when Start returns
	_, st = getZ(t, zc, "/brokers/ids/1")
	if st.EphemeralOwner == old {
		t.Fatalf("/brokers/ids/1 still owned by the dead session 0x%x", old)
	}
}

// TestChroot: zookeeper.connect with a chroot ("/kafka") puts every znode under it, as Kafka does.
func TestChroot(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect()+"/kafka/lab", 1, nil)
	createTopic(t, tb.addr(), "rooted", 1)
	zc := zkClient(t, z.Connect())
	for _, p := range []string{"/kafka/lab/brokers/ids/1", "/kafka/lab/controller", "/kafka/lab/controller_epoch", "/kafka/lab/brokers/topics/rooted/partitions/0/state"} {
		if ok, _, err := zc.Exists(p); err != nil || !ok {
			t.Fatalf("%s: exists=%v err=%v", p, ok, err)
		}
	}
	if ok, _, _ := zc.Exists("/brokers"); ok {
		t.Fatal("/brokers written outside the chroot")
	}
	if s := readStateAt(t, zc, "/kafka/lab", "rooted", 0); s.Leader != 1 {
		t.Fatalf("state under the chroot: %+v", s)
	}
}

func readStateAt(t *testing.T, c *zk.Conn, root, topic string, p int32) state {
	t.Helper()
	data, _ := getZ(t, c, fmt.Sprintf("%s/brokers/topics/%s/partitions/%d/state", root, topic, p))
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
