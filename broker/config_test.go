package broker

import (
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
		{with("num.partitions", "many"), "num.partitions: not an int"},
		{with("num.partitions", "0"), "num.partitions: 0 is below the minimum 1"},
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
