package broker_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// groupStub stands in for the coordinator: it answers FindCoordinator with this broker and records
// what the broker passed it.
type groupStub struct {
	b     *broker.Broker
	mu    sync.Mutex
	infos []broker.RequestInfo
}

func (g *groupStub) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ri, _ := broker.RequestInfoFrom(ctx)
	g.mu.Lock()
	g.infos = append(g.infos, ri)
	g.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.NodeID, resp.Port = g.b.ID(), 1
		resp.Host = "stub"
		return resp, nil
	case *kmsg.HeartbeatRequest:
		panic("heartbeat handler bug")
	}
	return nil, errors.New("not handled by the stub")
}

func (g *groupStub) GroupAPIVersions() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{{ApiKey: 10, MinVersion: 0, MaxVersion: 2}, {ApiKey: 12, MinVersion: 0, MaxVersion: 4}, {ApiKey: 3, MinVersion: 0, MaxVersion: 99}}
}

// TestGroupHandlerRouting: group APIs reach the GroupHandler with the request's client id, are advertised
// with the handler's versions only once it is set, and a panicking handler closes only that connection.
func TestGroupHandlerRouting(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, tb.addr())
	keys := func() map[int16][2]int16 {
		r := request[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest(), 0)
		m := map[int16][2]int16{}
		for _, k := range r.ApiKeys {
			m[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return m
	}
	want := map[int16][2]int16{0: {0, 11}, 1: {0, 12}, 23: {0, 4}, 2: {0, 9}, 3: {0, 12}, 18: {0, 4}, 19: {0, 7}, 20: {0, 6}, 21: {0, 2}, 22: {0, 5}, 32: {0, 4}, 33: {0, 2}, 37: {0, 3}, 44: {0, 1}, 56: {0, 1}, 60: {0, 1}, 7: {1, 3}, 4: {0, 7}, 5: {0, 4}, 6: {0, 8}, 68: {0, 0}, 69: {0, 0}}
	// Every broker starts with its group coordinator: Kafka 3.9's classic group API ranges.
	withCoordinator := maps.Clone(want)
	for k, r := range map[int16][2]int16{8: {0, 9}, 9: {0, 9}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 42: {0, 2}, 47: {0, 0}} {
		withCoordinator[k] = r
	}
	if got := keys(); !reflect.DeepEqual(got, withCoordinator) {
		t.Fatalf("ApiVersions with the broker's coordinator: %v, want %v", got, withCoordinator)
	}
	stub := &groupStub{b: tb.b}
	tb.b.SetGroupHandler(stub)
	want[10], want[12] = [2]int16{0, 2}, [2]int16{0, 4} // key 3 in the stub's list is not a group API: ignored
	if got := keys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ApiVersions with the stub: %v, want %v", got, want)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	resp := request[*kmsg.FindCoordinatorResponse](t, c, fc, 2)
	if resp.NodeID != 1 || resp.Host != "stub" || resp.Port != 1 {
		t.Fatalf("FindCoordinator through the stub: %+v", resp)
	}
	stub.mu.Lock()
	if len(stub.infos) != 1 || stub.infos[0].ClientID != "broker-test" || stub.infos[0].ClientHost != "127.0.0.1" || stub.infos[0].BrokerID != 1 {
		t.Fatalf("request info: %+v", stub.infos)
	}
	stub.mu.Unlock()
	if got := counterValue(t, tb.b, "kafka_server_requests_total", map[string]string{"api": "FindCoordinator", "error": "NONE"}); got != 1 {
		t.Fatalf("FindCoordinator requests metric %v", got)
	}
	// FindCoordinator v3 is above what the stub declared: the connection is closed.
	bad := rawConn(t, tb.addr())
	bad.Write(frameOf(fc, 3, 1))
	if !closedByBroker(bad, 5*time.Second) {
		t.Fatal("FindCoordinator v3: connection not closed")
	}
	// A panic in the handler closes that connection; the broker and other connections live on.
	hc := dial(t, tb.addr())
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := hc.Request(ctx, hb); err == nil {
		t.Fatal("heartbeat with a panicking handler answered")
	}
	if got := counterValue(t, tb.b, "kafka_network_connections_closed_total", map[string]string{"reason": "handler_error"}); got != 1 {
		t.Fatalf("handler_error closes: %v", got)
	}
	if m := metadata(t, c); len(m.Brokers) != 1 {
		t.Fatalf("metadata after the panic: %+v", m)
	}
	tb.b.SetGroupHandler(nil)
	delete(want, 10)
	delete(want, 12)
	if got := keys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ApiVersions after removing the handler: %v", got)
	}
}

// TestOffsetsTopicForCoordinator: __consumer_offsets is created with offsets.topic.num.partitions as an
// internal topic; the leadership listener reports each partition; the coordinator's path (Append,
// PartitionLog) works while clients may not produce to it but may fetch it.
func TestOffsetsTopicForCoordinator(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"offsets.topic.num.partitions": "3"})
	var mu sync.Mutex
	led := map[int32]int32{}
	tb.b.SetLeadershipListener(func(topic string, p int32, leading bool, epoch int32) {
		if topic == broker.OffsetsTopic && leading {
			mu.Lock()
			led[p] = epoch
			mu.Unlock()
		}
	})
	if _, err := tb.b.PartitionLog(broker.OffsetsTopic, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("PartitionLog before creation: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tb.b.EnsureOffsetsTopic(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tb.b.EnsureOffsetsTopic(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	if n, ok := tb.b.Partitions(broker.OffsetsTopic); !ok || n != 3 {
		t.Fatalf("partitions %d %v", n, ok)
	}
	testutil.WaitFor(t, 5*time.Second, "leadership of 3 offsets partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(led) == 3
	})
	if node, err := tb.b.Leader(broker.OffsetsTopic, 2); err != nil || node.ID != 1 || node.Host != "127.0.0.1" {
		t.Fatalf("leader of partition 2: %+v %v", node, err)
	}
	if _, err := tb.b.Leader(broker.OffsetsTopic, 3); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("leader of partition 3: %v", err)
	}

	// A record batch produced by a real client elsewhere, appended through the coordinator's path.
	createTopic(t, tb.addr(), "src", 1)
	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic("src"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("offset-commit")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src, err := tb.b.PartitionLog("src", 0)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := src.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	base, err := tb.b.Append(broker.OffsetsTopic, 1, batch)
	if err != nil || base != 0 {
		t.Fatalf("Append: %d %v", base, err)
	}
	lg, err := tb.b.PartitionLog(broker.OffsetsTopic, 1)
	if err != nil || lg.HighWatermark() != 1 {
		t.Fatalf("PartitionLog: %v hwm", err)
	}

	c := dial(t, tb.addr())
	m := metadata(t, c, broker.OffsetsTopic)
	if !m.Topics[0].IsInternal || len(m.Topics[0].Partitions) != 3 {
		t.Fatalf("metadata of %s: %+v", broker.OffsetsTopic, m.Topics[0])
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = 1
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: broker.OffsetsTopic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: batch}}}}
	if got := request[*kmsg.ProduceResponse](t, c, pr, 9).Topics[0].Partitions[0].ErrorCode; got != kerr.InvalidTopicException.Code {
		t.Fatalf("client produce to %s: %v", broker.OffsetsTopic, kerr.ErrorForCode(got))
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{broker.OffsetsTopic: {1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	for len(got) == 0 && ctx.Err() == nil {
		got = append(got, cons.PollFetches(ctx).Records()...)
	}
	if len(got) != 1 || string(got[0].Value) != "offset-commit" || got[0].Offset != 0 {
		t.Fatalf("fetched from %s: %v", broker.OffsetsTopic, got)
	}
}

// TestTopicAdmin: Metadata auto-creation, CreateTopics errors, CreatePartitions (the topic znode grows and
// the new partitions continue the round-robin) and DeleteTopics (znodes and the log directory go).
func TestTopicAdmin(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"num.partitions": "2"})
	zc := zkClient(t, z.Connect())
	c := dial(t, tb.addr())

	// Auto-creation by Metadata v4+ only when the request allows it.
	mr := kmsg.NewPtrMetadataRequest()
	mr.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto")}}
	if got := request[*kmsg.MetadataResponse](t, c, mr, 9).Topics[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata without AllowAutoTopicCreation: %v", kerr.ErrorForCode(got))
	}
	mr.AllowAutoTopicCreation = true
	if got := request[*kmsg.MetadataResponse](t, c, mr, 9).Topics[0].ErrorCode; got != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-creating metadata: %v", kerr.ErrorForCode(got))
	}
	testutil.WaitFor(t, 10*time.Second, "auto-created topic with 2 led partitions", func() bool {
		m := metadata(t, c, "auto")
		return m.Topics[0].ErrorCode == 0 && len(m.Topics[0].Partitions) == 2 && m.Topics[0].Partitions[1].ErrorCode == 0
	})
	// Metadata v0 with no topics lists all of them.
	if m := request[*kmsg.MetadataResponse](t, c, kmsg.NewPtrMetadataRequest(), 0); len(m.Topics) != 1 || *m.Topics[0].Topic != "auto" {
		t.Fatalf("metadata v0 all topics: %+v", m.Topics)
	}

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
	}{{"auto", 1, 1}, {"x/y", 1, 1}, {"zero", 0, 1}, {"rf2", 1, 2}, {"dflt", -1, -1}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tc.name, tc.partitions, tc.rf
		ct.Topics = append(ct.Topics, rt)
	}
	cresp := request[*kmsg.CreateTopicsResponse](t, c, ct, 5)
	wantCodes := []int16{kerr.TopicAlreadyExists.Code, kerr.InvalidTopicException.Code, kerr.InvalidPartitions.Code, kerr.InvalidReplicationFactor.Code, 0}
	for i, rt := range cresp.Topics {
		if rt.ErrorCode != wantCodes[i] {
			t.Errorf("create %s: %v, want %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(wantCodes[i]))
		}
	}
	if d := cresp.Topics[4]; d.NumPartitions != 2 || d.ReplicationFactor != 1 {
		t.Fatalf("defaults resolved to %d partitions rf %d", d.NumPartitions, d.ReplicationFactor)
	}

	// Grow "auto" from 2 to 4 partitions.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 10000
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "auto", Count: 4}, {Topic: "missing", Count: 2}, {Topic: "dflt", Count: 1}}
	presp := request[*kmsg.CreatePartitionsResponse](t, c, cp, 3)
	if presp.Topics[0].ErrorCode != 0 || presp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || presp.Topics[2].ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("create partitions: %v %v %v", kerr.ErrorForCode(presp.Topics[0].ErrorCode), kerr.ErrorForCode(presp.Topics[1].ErrorCode), kerr.ErrorForCode(presp.Topics[2].ErrorCode))
	}
	data, _, err := zc.Get("/brokers/topics/auto")
	if err != nil || string(data) != `{"version":1,"partitions":{"0":[1],"1":[1],"2":[1],"3":[1]}}` {
		t.Fatalf("topic znode after adding partitions: %s %v", data, err)
	}
	if m := metadata(t, c, "auto"); len(m.Topics[0].Partitions) != 4 || m.Topics[0].Partitions[3].Leader != 1 {
		t.Fatalf("metadata after adding partitions: %+v", m.Topics[0])
	}

	// Delete "auto": znodes, then the log directories.
	dir := tb.props["log.dirs"]
	if _, err := os.Stat(filepath.Join(dir, "auto-3")); err != nil {
		t.Fatalf("log dir of auto-3: %v", err)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TimeoutMillis = 10000
	dt.TopicNames = []string{"auto", "missing"}
	dresp := request[*kmsg.DeleteTopicsResponse](t, c, dt, 5)
	if dresp.Topics[0].ErrorCode != 0 || dresp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %v %v", kerr.ErrorForCode(dresp.Topics[0].ErrorCode), kerr.ErrorForCode(dresp.Topics[1].ErrorCode))
	}
	if ok, _, _ := zc.Exists("/brokers/topics/auto"); ok {
		t.Fatal("/brokers/topics/auto still exists")
	}
	testutil.WaitFor(t, 5*time.Second, "log directories of the deleted topic removed", func() bool {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return reflect.DeepEqual(names, []string{"dflt-0", "dflt-1"})
	})
	if got := metadata(t, c, "auto").Topics[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata of the deleted topic: %v", kerr.ErrorForCode(got))
	}
	if _, _, err := zc.Get("/brokers/topics/dflt/partitions/1/state"); err != nil {
		t.Fatalf("other topic touched: %v", err)
	}
}
