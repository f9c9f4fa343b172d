package broker

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestConfigFromPropertiesDefaults(t *testing.T) {
	c, err := ConfigFromProperties(map[string]string{"broker.id": "3", "zookeeper.connect": "127.0.0.1:2181"})
	if err != nil {
		t.Fatal(err)
	}
	// Kafka 3.9's KafkaConfig defaults.
	checks := []struct {
		key       string
		got, want int64
	}{
		{"broker.id", int64(c.BrokerID), 3},
		{"zookeeper.session.timeout.ms", c.ZooKeeperSessionTimeoutMs, 18000},
		{"num.partitions", int64(c.NumPartitions), 1},
		{"default.replication.factor", int64(c.DefaultReplicationFactor), 1},
		{"socket.request.max.bytes", int64(c.SocketRequestMaxBytes), 104857600},
		{"message.max.bytes", int64(c.MessageMaxBytes), 1048588},
		{"log.segment.bytes", c.LogSegmentBytes, 1073741824},
		{"log.roll.ms", c.LogRollMs, 168 * 3600 * 1000},
		{"log.retention.bytes", c.LogRetentionBytes, -1},
		{"log.retention.ms", c.LogRetentionMs, 168 * 3600 * 1000},
		{"log.flush.interval.messages", c.LogFlushIntervalMessages, math.MaxInt64},
		{"group.min.session.timeout.ms", int64(c.GroupMinSessionTimeoutMs), 6000},
		{"group.max.session.timeout.ms", int64(c.GroupMaxSessionTimeoutMs), 1800000},
		{"group.initial.rebalance.delay.ms", int64(c.GroupInitialRebalanceDelayMs), 3000},
		{"offsets.topic.num.partitions", int64(c.OffsetsTopicNumPartitions), 50},
		{"offsets.topic.replication.factor", int64(c.OffsetsTopicReplicationFactor), 3},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %d, want Kafka's default %d", ch.key, ch.got, ch.want)
		}
	}
	if !c.AutoCreateTopicsEnable || !c.DeleteTopicEnable || c.Listeners != "PLAINTEXT://:9092" || c.LogDirs != "/tmp/kafka-logs" {
		t.Errorf("defaults: %+v", c)
	}
}

func TestConfigFromPropertiesPrecedenceAndErrors(t *testing.T) {
	base := map[string]string{"zookeeper.connect": "127.0.0.1:2181"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// log.retention.ms wins over .minutes and .hours, whatever the map order.
	c, err := ConfigFromProperties(with("log.retention.hours", "1", "log.retention.minutes", "2", "log.retention.ms", "3"))
	if err != nil || c.LogRetentionMs != 3 {
		t.Fatalf("retention precedence: %d, %v", c.LogRetentionMs, err)
	}
	c, err = ConfigFromProperties(with("log.retention.hours", "2"))
	if err != nil || c.LogRetentionMs != 2*3600*1000 {
		t.Fatalf("log.retention.hours: %d, %v", c.LogRetentionMs, err)
	}
	c, err = ConfigFromProperties(with("log.dir", "/a", "log.dirs", "/b"))
	if err != nil || c.LogDirs != "/b" {
		t.Fatalf("log.dirs over log.dir: %q, %v", c.LogDirs, err)
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{with("no.such.key", "1"), `unknown key "no.such.key"`},
		{with("num.partitions", "many"), "Invalid value many for configuration num.partitions: not a number of type INT"},
		{with("num.partitions", "0"), "Invalid value 0 for configuration num.partitions: type INT, allowed range [1, 2147483647]"},
		{with("auto.create.topics.enable", "yes"), "auto.create.topics.enable: not a boolean"},
		{with("listeners", "SSL://:9093"), "listeners"},
		{with("broker.id", "-1"), "broker.id -1"},
		{map[string]string{}, "zookeeper.connect is required"},
		{with("group.min.session.timeout.ms", "10", "group.max.session.timeout.ms", "5"), "group.min.session.timeout.ms 10 is above"},
	} {
		_, err := ConfigFromProperties(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.props, err, tc.want)
		}
	}
}

// Every numeric server.properties key is read as Kafka 3.9's ConfigDef type (INT, LONG, SHORT) and
// checked against its validator (or the broker's own lower bound where it needs one), with one message
// naming the key, the type and the allowed range. zookeeper.session.timeout.ms is an INT in Kafka:
// 3000000000 is refused, not taken as a 35-day session.
func TestCLIBadInputBrokerConfigRanges(t *testing.T) {
	over := map[string]string{"SHORT": "32768", "INT": "3000000000", "LONG": "9223372036854775808"}
	bits := map[string]string{"SHORT": "16", "INT": "32", "LONG": "64"}
	for _, c := range []struct {
		key, typ string
		lo, hi   int64
	}{
		{"broker.id", "INT", -1, math.MaxInt32},
		{"zookeeper.session.timeout.ms", "INT", 1, math.MaxInt32},
		{"zookeeper.connection.timeout.ms", "INT", 1, math.MaxInt32},
		{"num.partitions", "INT", 1, math.MaxInt32},
		{"default.replication.factor", "INT", 1, math.MaxInt16},
		{"socket.request.max.bytes", "INT", 1, math.MaxInt32},
		{"connections.max.idle.ms", "LONG", 1, math.MaxInt64},
		{"message.max.bytes", "INT", 0, math.MaxInt32},
		{"fetch.max.bytes", "INT", 1024, math.MaxInt32},
		{"log.segment.bytes", "INT", 14, math.MaxInt32},
		{"log.roll.hours", "INT", 1, math.MaxInt32},
		{"log.roll.ms", "LONG", 1, math.MaxInt64},
		{"log.retention.bytes", "LONG", -1, math.MaxInt64},
		{"log.retention.hours", "INT", -1, math.MaxInt32},
		{"log.retention.minutes", "INT", -1, math.MaxInt32},
		{"log.retention.ms", "LONG", -1, math.MaxInt64},
		{"log.retention.check.interval.ms", "LONG", 1, math.MaxInt64},
		{"log.flush.interval.messages", "LONG", 1, math.MaxInt64},
		{"log.index.interval.bytes", "INT", 0, math.MaxInt32},
		{"group.min.session.timeout.ms", "INT", 0, math.MaxInt32},
		{"group.max.session.timeout.ms", "INT", 0, math.MaxInt32},
		{"group.initial.rebalance.delay.ms", "INT", 0, math.MaxInt32},
		{"group.max.size", "INT", 1, math.MaxInt32},
		{"offsets.topic.num.partitions", "INT", 1, math.MaxInt32},
		{"offsets.topic.replication.factor", "SHORT", 1, math.MaxInt16},
		{"offsets.topic.segment.bytes", "INT", 1, math.MaxInt32},
		{"offsets.retention.minutes", "INT", 1, math.MaxInt32},
		{"offsets.retention.check.interval.ms", "LONG", 1, math.MaxInt64},
		{"offsets.commit.timeout.ms", "INT", 1, math.MaxInt32},
		{"offsets.load.buffer.size", "INT", 1, math.MaxInt32},
		{"offset.metadata.max.bytes", "INT", 0, math.MaxInt32},
	} {
		props := func(v string) map[string]string {
			return map[string]string{"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", c.key: v}
		}
		v := over[c.typ]
		if c.hi == math.MaxInt16 && c.typ == "INT" {
			v = "32768"
		}
		_, err := ConfigFromProperties(props(v))
		want := fmt.Sprintf("broker config: Invalid value %s for configuration %s: not a number of type %s (%s-bit signed integer); allowed range [%d, %d]", v, c.key, c.typ, bits[c.typ], c.lo, c.hi)
		if v == "32768" && c.typ == "INT" {
			want = fmt.Sprintf("broker config: Invalid value %s for configuration %s: type INT, allowed range [%d, %d]", v, c.key, c.lo, c.hi)
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v\nwant %s", c.key, v, err, want)
		}
		below := fmt.Sprint(c.lo - 1)
		_, err = ConfigFromProperties(props(below))
		want = fmt.Sprintf("broker config: Invalid value %s for configuration %s: type %s, allowed range [%d, %d]", below, c.key, c.typ, c.lo, c.hi)
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v\nwant %s", c.key, below, err, want)
		}
	}
}
