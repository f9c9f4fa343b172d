package broker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// createTopicWithConfigs creates a one-partition topic with configs and returns the response's topic.
func createTopicWithConfigs(t *testing.T, c *wire.Conn, topic string, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.CreateTopicsResponse](t, c, req, 7).Topics[0]
}

// oneRecordBatch is a v2 batch holding one record with a value of n bytes.
func oneRecordBatch(n int) []byte {
	now := time.Now().UnixMilli()
	rec := recordbatch.AppendRecord(nil, recordbatch.Record{Value: make([]byte, n)})
	return recordbatch.AppendBatch(nil, recordbatch.Header{BaseTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1}, rec)
}

func produceOne(t *testing.T, c *wire.Conn, topic string, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.ProduceResponse](t, c, req, 9).Topics[0].Partitions[0]
}

func listOffset(t *testing.T, c *wire.Conn, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := request[*kmsg.ListOffsetsResponse](t, c, req, 7).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s %d: %v", topic, ts, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

func describeTopic(t *testing.T, c *wire.Conn, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, r)
	req.IncludeSynonyms = true
	res := request[*kmsg.DescribeConfigsResponse](t, c, req, 4).Resources[0]
	if res.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs %s: %v", topic, kerr.ErrorForCode(res.ErrorCode))
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range res.Configs {
		out[e.Name] = e
	}
	return out
}

// describeConfigsPy prints, for the topic argv[2], every config as "name value source" lines, read with
// kafka-python's KafkaAdminClient.describe_configs (DescribeConfigs v1 without synonyms).
const describeConfigsPy = `
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], client_id="py-admin", request_timeout_ms=20000)
resp = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, sys.argv[2])])
for r in resp:
    for (err, msg, rtype, rname, entries) in r.resources:
        if err != 0:
            raise SystemExit("error %d %s" % (err, msg))
        for e in entries:
            print(e[0], e[1], e[3])
a.close()
`

// TestTopicConfigsThroughKafkaPython: a topic created with cleanup.policy=compact and max.message.bytes
// is read back by kafka-python's admin client with those values from the topic (source 1,
// DYNAMIC_TOPIC_CONFIG) and the rest as the broker's defaults (source 5, DEFAULT_CONFIG) or its
// server.properties (source 4, STATIC_BROKER_CONFIG); the znode is Kafka's; the CreateTopics v5+
// answer lists the same configs.
func TestTopicConfigsThroughKafkaPython(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.KafkaPython)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"log.retention.ms": "3600000"})
	c := dial(t, tb.addr())
	rt := createTopicWithConfigs(t, c, "compacted", map[string]string{"cleanup.policy": "compact", "max.message.bytes": "2000"})
	if rt.ErrorCode != 0 {
		t.Fatalf("create: %v %v", kerr.ErrorForCode(rt.ErrorCode), rt.ErrorMessage)
	}
	created := map[string]string{}
	for _, cfg := range rt.Configs {
		created[cfg.Name] = fmt.Sprintf("%s %d", *cfg.Value, cfg.Source)
	}
	for name, want := range map[string]string{"cleanup.policy": "compact 1", "max.message.bytes": "2000 1", "retention.ms": "3600000 4", "segment.bytes": "1073741824 5"} {
		if created[name] != want {
			t.Errorf("CreateTopics config %s = %q, want %q", name, created[name], want)
		}
	}
	if len(rt.Configs) != 36 {
		t.Errorf("CreateTopics answered %d configs, want LogConfig's 36", len(rt.Configs))
	}
	data, _ := getZ(t, zkClient(t, z.Connect()), "/config/topics/compacted")
	var node struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &node); err != nil || node.Version != 1 || len(node.Config) != 2 || node.Config["cleanup.policy"] != "compact" || node.Config["max.message.bytes"] != "2000" {
		t.Fatalf("/config/topics/compacted = %s, want {\"version\":1,\"config\":{\"cleanup.policy\":\"compact\",\"max.message.bytes\":\"2000\"}}", data)
	}

	out := kafkaPython(t, describeConfigsPy, tb.addr(), "compacted")
	got := map[string]string{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 3 {
			got[f[0]] = f[1] + " " + f[2]
		}
	}
	for name, want := range map[string]string{
		"cleanup.policy":      "compact 1",
		"max.message.bytes":   "2000 1",
		"retention.ms":        "3600000 4",
		"min.insync.replicas": "1 5",
		"delete.retention.ms": "86400000 5",
		"segment.ms":          "604800000 5",
	} {
		if got[name] != want {
			t.Errorf("kafka-python describe_configs %s = %q, want %q", name, got[name], want)
		}
	}
	if len(lines) != 36 {
		t.Errorf("kafka-python saw %d configs, want 36:\n%s", len(lines), out)
	}
}

// TestTopicMaxMessageBytes: a batch larger than the topic's max.message.bytes is refused with
// MESSAGE_TOO_LARGE while the broker's message.max.bytes (1048588) would take it, and the same batch
// goes to a topic without the override; min.insync.replicas 2 with one replica takes acks=-1, as
// Kafka 3.9's Partition.effectiveMinIsr caps min.insync.replicas at the replication factor.
func TestTopicMaxMessageBytes(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, tb.addr())
	for topic, cfg := range map[string]map[string]string{"small": {"max.message.bytes": "2000"}, "plain": nil, "isr2": {"min.insync.replicas": "2"}} {
		if rt := createTopicWithConfigs(t, c, topic, cfg); rt.ErrorCode != 0 {
			t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	waitLeader(t, c, "small", "plain", "isr2")
	big := oneRecordBatch(3000)
	if got := produceOne(t, c, "small", -1, big); got.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("%d-byte batch to max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", len(big), kerr.ErrorForCode(got.ErrorCode))
	}
	if got := produceOne(t, c, "small", -1, oneRecordBatch(100)); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("small batch: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	if got := produceOne(t, c, "plain", -1, big); got.ErrorCode != 0 {
		t.Fatalf("%d-byte batch to a topic on message.max.bytes=1048588: %v", len(big), kerr.ErrorForCode(got.ErrorCode))
	}
	if got := produceOne(t, c, "isr2", -1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("acks=-1 with min.insync.replicas=2 and one replica: %v at %d, want offset 0 (effective min ISR 1)", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	if got := produceOne(t, c, "isr2", 1, oneRecordBatch(10)); got.ErrorCode != 0 || got.BaseOffset != 1 {
		t.Fatalf("acks=1 with min.insync.replicas=2: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

// waitLeader waits until Metadata names a leader for partition 0 of every topic.
func waitLeader(t *testing.T, c *wire.Conn, topics ...string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, "topics have leaders", func() bool {
		m := metadata(t, c, topics...)
		for _, mt := range m.Topics {
			if mt.ErrorCode != 0 || len(mt.Partitions) == 0 || mt.Partitions[0].ErrorCode != 0 {
				return false
			}
		}
		return len(m.Topics) == len(topics)
	})
}

// TestInvalidTopicConfigs: unknown names and bad values are refused with INVALID_CONFIG and the message
// Kafka 3.9's LogConfig / ConfigDef gives, in CreateTopics and, prefixed with the resource, in
// IncrementalAlterConfigs.
func TestInvalidTopicConfigs(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, tb.addr())
	cases := []struct{ key, value, msg string }{
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
		{"retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"max.message.bytes", "3000000000", "Invalid value 3000000000 for configuration max.message.bytes: Not a number of type INT"},
		{"cleanup.policy", "compact,bogus", "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"segment.bytes", "13", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"},
		{"preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
		{"compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
	}
	for i, tc := range cases {
		rt := createTopicWithConfigs(t, c, fmt.Sprintf("bad%d", i), map[string]string{tc.key: tc.value})
		if rt.ErrorCode != kerr.InvalidConfig.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != tc.msg {
			t.Errorf("CreateTopics %s=%s: %v %q, want INVALID_CONFIG %q", tc.key, tc.value, kerr.ErrorForCode(rt.ErrorCode), deref(rt.ErrorMessage), tc.msg)
		}
		if len(rt.Configs) != 0 || rt.NumPartitions != -1 {
			t.Errorf("CreateTopics %s=%s failed but answered %d configs, %d partitions (want none, -1)", tc.key, tc.value, len(rt.Configs), rt.NumPartitions)
		}
	}
	if rt := createTopicWithConfigs(t, c, "good", nil); rt.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(rt.ErrorCode))
	}
	for _, tc := range cases {
		code, msg := alterTopic(t, c, "good", tc.key, tc.value)
		want := "Invalid config value for resource ConfigResource(type=TOPIC, name='good'): " + tc.msg
		if strings.HasPrefix(tc.msg, "Unknown topic config name") {
			want = tc.msg // an InvalidConfigurationException, not a ConfigException: no prefix
		}
		if code != kerr.InvalidConfig.Code || msg != want {
			t.Errorf("IncrementalAlterConfigs %s=%s: %v %q, want INVALID_CONFIG %q", tc.key, tc.value, kerr.ErrorForCode(code), msg, want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func alterTopic(t *testing.T, c *wire.Conn, topic, key, value string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	res := request[*kmsg.IncrementalAlterConfigsResponse](t, c, req, 1).Resources[0]
	return res.ErrorCode, deref(res.ErrorMessage)
}

// TestIncrementalAlterConfigsRetentionLive: retention.ms set by IncrementalAlterConfigs on a running
// topic reaches the partition's log through /config/changes and deletes its old segments at the next
// retention pass, without a restart; DescribeConfigs then shows it from the topic.
func TestIncrementalAlterConfigsRetentionLive(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, map[string]string{"log.retention.check.interval.ms": "50"})
	c := dial(t, tb.addr())
	if rt := createTopicWithConfigs(t, c, "ret", map[string]string{"segment.bytes": "300"}); rt.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(rt.ErrorCode))
	}
	waitLeader(t, c, "ret")
	for i := 0; i < 5; i++ { // one batch per segment
		if got := produceOne(t, c, "ret", -1, oneRecordBatch(150)); got.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(got.ErrorCode))
		}
	}
	if got := listOffset(t, c, "ret", -2); got != 0 {
		t.Fatalf("earliest offset %d before the change, want 0 (retention.ms 7 days)", got)
	}
	if code, msg := alterTopic(t, c, "ret", "retention.ms", "1"); code != 0 {
		t.Fatalf("IncrementalAlterConfigs retention.ms=1: %v %s", kerr.ErrorForCode(code), msg)
	}
	// Every segment is past retention.ms=1, the active one too: as Kafka's deletableSegments and
	// deleteSegments, all five go after a new, empty segment is rolled at the log end offset 5.
	testutil.WaitFor(t, 10*time.Second, "every segment deleted by retention.ms=1", func() bool { return listOffset(t, c, "ret", -2) == 5 })
	e := describeTopic(t, c, "ret")["retention.ms"]
	if deref(e.Value) != "1" || e.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms described as %s from source %d, want 1 from DYNAMIC_TOPIC_CONFIG", deref(e.Value), e.Source)
	}
	children, _, err := zkClient(t, z.Connect()).Children("/config/changes")
	if err != nil || len(children) != 1 || !strings.HasPrefix(children[0], "config_change_") {
		t.Fatalf("/config/changes children %v (%v), want one config_change_ node", children, err)
	}
}

// TestDeleteRecordsMovesLogStart: DeleteRecords moves the log start offset (the low watermark it
// answers), ListOffsets earliest answers it, a fetch below it gets OFFSET_OUT_OF_RANGE, and it survives
// a broker restart (log-start-offset-checkpoint); an offset above the high watermark is
// OFFSET_OUT_OF_RANGE.
func TestDeleteRecordsMovesLogStart(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, tb.addr())
	createTopic(t, tb.addr(), "dr", 1)
	waitLeader(t, c, "dr")
	for i := 0; i < 10; i++ {
		if got := produceOne(t, c, "dr", -1, oneRecordBatch(10)); got.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(got.ErrorCode))
		}
	}
	deleteRecords := func(c *wire.Conn, off int64) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "dr"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return request[*kmsg.DeleteRecordsResponse](t, c, req, 2).Topics[0].Partitions[0]
	}
	if got := deleteRecords(c, 11); got.ErrorCode != kerr.OffsetOutOfRange.Code || got.LowWatermark != -1 {
		t.Fatalf("DeleteRecords above the high watermark: %v low %d, want OFFSET_OUT_OF_RANGE -1", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	if got := deleteRecords(c, 6); got.ErrorCode != 0 || got.LowWatermark != 6 {
		t.Fatalf("DeleteRecords 6: %v low watermark %d, want 6", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	fetchCode := func(c *wire.Conn, off int64) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.ReplicaID = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "dr"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = off, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return request[*kmsg.FetchResponse](t, c, req, 12).Topics[0].Partitions[0].ErrorCode
	}
	check := func(c *wire.Conn, when string) {
		if got := listOffset(t, c, "dr", -2); got != 6 {
			t.Fatalf("%s: ListOffsets earliest %d, want 6", when, got)
		}
		if code := fetchCode(c, 5); code != kerr.OffsetOutOfRange.Code {
			t.Fatalf("%s: fetch at 5 below the log start 6: %v, want OFFSET_OUT_OF_RANGE", when, kerr.ErrorForCode(code))
		}
		if code := fetchCode(c, 6); code != 0 {
			t.Fatalf("%s: fetch at 6: %v", when, kerr.ErrorForCode(code))
		}
	}
	check(c, "after DeleteRecords")
	tb.stop()
	tb.start()
	c = dial(t, tb.addr())
	waitLeader(t, c, "dr")
	check(c, "after a restart")
}

func incrementalAlter(t *testing.T, c *wire.Conn, typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, cfgs
	req.Resources = append(req.Resources, r)
	res := request[*kmsg.IncrementalAlterConfigsResponse](t, c, req, 1).Resources[0]
	return res.ErrorCode, deref(res.ErrorMessage)
}

func op(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, o, kmsg.StringPtr(value)
	return c
}

// TestDynamicConfigs: list APPEND and SUBTRACT on a topic's cleanup.policy, APPEND refused on a
// non-list key; a dynamic cluster-default message.max.bytes lowers the limit of a topic without an
// override live and is described with its synonyms (DYNAMIC_DEFAULT_BROKER_CONFIG over
// DEFAULT_CONFIG); broker keys 3.9 cannot change at run time and another broker's id are refused with
// INVALID_REQUEST and Kafka's messages.
func TestDynamicConfigs(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	c := dial(t, tb.addr())
	if rt := createTopicWithConfigs(t, c, "dyn", nil); rt.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(rt.ErrorCode))
	}
	waitLeader(t, c, "dyn")
	topic := kmsg.ConfigResourceTypeTopic
	if code, msg := incrementalAlter(t, c, topic, "dyn", op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact")); code != 0 {
		t.Fatalf("APPEND compact: %v %s", kerr.ErrorForCode(code), msg)
	}
	if v := deref(describeTopic(t, c, "dyn")["cleanup.policy"].Value); v != "delete,compact" {
		t.Fatalf("cleanup.policy after APPEND compact = %q, want delete,compact", v)
	}
	if code, msg := incrementalAlter(t, c, topic, "dyn", op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, "delete")); code != 0 {
		t.Fatalf("SUBTRACT delete: %v %s", kerr.ErrorForCode(code), msg)
	}
	if v := deref(describeTopic(t, c, "dyn")["cleanup.policy"].Value); v != "compact" {
		t.Fatalf("cleanup.policy after SUBTRACT delete = %q, want compact", v)
	}
	if code, msg := incrementalAlter(t, c, topic, "dyn", op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, "5")); code != kerr.InvalidConfig.Code || msg != "Config value append is not allowed for config key: retention.ms" {
		t.Fatalf("APPEND on a LONG: %v %q", kerr.ErrorForCode(code), msg)
	}

	broker := kmsg.ConfigResourceTypeBroker
	if code, msg := incrementalAlter(t, c, broker, "1", op("log.retention.hours", kmsg.IncrementalAlterConfigOpSet, "1")); code != kerr.InvalidRequest.Code || msg != "Cannot update these configs dynamically: Set(log.retention.hours)" {
		t.Fatalf("dynamic log.retention.hours: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := incrementalAlter(t, c, broker, "2", op("message.max.bytes", kmsg.IncrementalAlterConfigOpSet, "1500")); code != kerr.InvalidRequest.Code || msg != "Unexpected broker id, expected 1, but received 2" {
		t.Fatalf("another broker's id: %v %q", kerr.ErrorForCode(code), msg)
	}
	big := oneRecordBatch(3000) // keyless
	// cleanup.policy=compact applies live (the brokers read the change notification): the compacted
	// topic refuses a keyless record (LogValidator.validateKey); back to delete for the size checks.
	testutil.WaitFor(t, 10*time.Second, "cleanup.policy=compact applied", func() bool {
		return produceOne(t, c, "dyn", 1, big).ErrorCode == kerr.InvalidRecord.Code
	})
	if code, msg := incrementalAlter(t, c, topic, "dyn", op("cleanup.policy", kmsg.IncrementalAlterConfigOpSet, "delete")); code != 0 {
		t.Fatalf("SET cleanup.policy=delete: %v %s", kerr.ErrorForCode(code), msg)
	}
	testutil.WaitFor(t, 10*time.Second, "cleanup.policy=delete applied", func() bool {
		return produceOne(t, c, "dyn", 1, big).ErrorCode != kerr.InvalidRecord.Code
	})
	if got := produceOne(t, c, "dyn", 1, big); got.ErrorCode != 0 {
		t.Fatalf("%d bytes before the change: %v", len(big), kerr.ErrorForCode(got.ErrorCode))
	}
	if code, msg := incrementalAlter(t, c, broker, "", op("message.max.bytes", kmsg.IncrementalAlterConfigOpSet, "1500")); code != 0 {
		t.Fatalf("cluster default message.max.bytes: %v %s", kerr.ErrorForCode(code), msg)
	}
	testutil.WaitFor(t, 10*time.Second, "the dynamic message.max.bytes applied", func() bool {
		return produceOne(t, c, "dyn", 1, big).ErrorCode == kerr.MessageTooLarge.Code
	})
	e := describeTopic(t, c, "dyn")["max.message.bytes"]
	var syn []string
	for _, s := range e.ConfigSynonyms {
		syn = append(syn, fmt.Sprintf("%s=%s/%d", s.Name, deref(s.Value), s.Source))
	}
	if deref(e.Value) != "1500" || e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || strings.Join(syn, " ") != "message.max.bytes=1500/3 message.max.bytes=1048588/5" {
		t.Fatalf("max.message.bytes described as %s source %d synonyms %v", deref(e.Value), e.Source, syn)
	}
	data, _ := getZ(t, zkClient(t, z.Connect()), "/config/brokers/<default>")
	if string(data) != `{"version":1,"config":{"message.max.bytes":"1500"}}` { // as Kafka's Json.encodeAsBytes writes it
		t.Fatalf("/config/brokers/<default> = %s", data)
	}
}
