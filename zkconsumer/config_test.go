package zkconsumer

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestFromPropertiesDefaults(t *testing.T) {
	c, err := FromProperties(map[string]string{"group.id": "g", "zookeeper.connect": "127.0.0.1:2181"})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig("g", "127.0.0.1:2181")
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.ZooKeeperSessionTimeoutMs != 6000 || c.ZooKeeperConnectionTimeoutMs != 6000 || c.ZooKeeperSyncTimeMs != 2000 ||
		c.RebalanceMaxRetries != 4 || c.RebalanceBackoffMs != 2000 || !c.AutoCommitEnable || c.AutoCommitIntervalMs != 60000 ||
		c.AutoOffsetReset != "largest" || c.FetchMessageMaxBytes != 1048576 || c.FetchWaitMaxMs != 100 || c.FetchMinBytes != 1 ||
		c.QueuedMaxMessageChunks != 2 || c.PartitionAssignmentStrategy != "range" || !c.ExcludeInternalTopics {
		t.Fatalf("not Kafka 0.8.2's defaults: %+v", c)
	}
}

// rebalance.backoff.ms defaults to zookeeper.sync.time.ms (ConsumerConfig.scala).
func TestFromPropertiesBackoffFollowsSyncTime(t *testing.T) {
	c, err := FromProperties(map[string]string{"group.id": "g", "zookeeper.connect": "h:1", "zookeeper.sync.time.ms": "700"})
	if err != nil || c.RebalanceBackoffMs != 700 {
		t.Fatalf("backoff = %d, %v; want 700", c.RebalanceBackoffMs, err)
	}
	c, err = FromProperties(map[string]string{"group.id": "g", "zookeeper.connect": "h:1", "zookeeper.sync.time.ms": "700", "rebalance.backoff.ms": "50"})
	if err != nil || c.RebalanceBackoffMs != 50 {
		t.Fatalf("backoff = %d, %v; want 50", c.RebalanceBackoffMs, err)
	}
}

func TestFromPropertiesValues(t *testing.T) {
	c, err := FromProperties(map[string]string{
		"group.id": "g", "zookeeper.connect": "h:1", "consumer.id": "c1", "auto.commit.enable": "false",
		"auto.offset.reset": "smallest", "partition.assignment.strategy": "roundrobin", "rebalance.max.retries": "7",
		"fetch.message.max.bytes": "100", "exclude.internal.topics": "false", "offsets.storage": "zookeeper",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.ConsumerID != "c1" || c.AutoCommitEnable || c.AutoOffsetReset != "smallest" || c.PartitionAssignmentStrategy != "roundrobin" ||
		c.RebalanceMaxRetries != 7 || c.FetchMessageMaxBytes != 100 || c.ExcludeInternalTopics {
		t.Fatalf("values not applied: %+v", c)
	}
}

func TestFromPropertiesErrors(t *testing.T) {
	base := func(k, v string) map[string]string {
		return map[string]string{"group.id": "g", "zookeeper.connect": "h:1", k: v}
	}
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{base("no.such.key", "1"), `unknown consumer property "no.such.key"`},
		{base("rebalance.max.retries", "x"), "rebalance.max.retries"},
		{base("rebalance.max.retries", "0"), "Invalid value 0 for configuration rebalance.max.retries"},
		{base("auto.offset.reset", "earliest"), "auto.offset.reset"},
		{base("partition.assignment.strategy", "sticky"), "partition.assignment.strategy"},
		{base("offsets.storage", "cassandra"), `offsets.storage="cassandra": want "zookeeper" or "kafka"`},
		{base("auto.commit.enable", "maybe"), "auto.commit.enable"},
		{base("fetch.message.max.bytes", "99999999999"), "fetch.message.max.bytes"},
		{base("group.id", "a/b"), "group.id"},
		{base("zookeeper.connect", ""), "zookeeper.connect"},
		{base("zookeeper.connect", "h:1/chroot/"), "chroot"},
		{base("zookeeper.connect", "/chroot"), "zookeeper.connect"},
		{base("consumer.id", "x/y"), "consumer.id"},
	} {
		_, err := FromProperties(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromProperties(%v) = %v, want an error naming %q", c.props, err, c.want)
		}
	}
}

// Every numeric 0.8.2 consumer key is read as Kafka reads it (VerifiableProperties.getInt: a Java
// int) and checked against its range, with one message naming the key, the type and the range: a
// value past int32 (zookeeper.session.timeout.ms=3000000000 used to be taken and overflowed into a
// negative timeout) and a value below the range are both refused by FromProperties.
func TestCLIBadInputZKConsumerConfigRanges(t *testing.T) {
	for _, c := range []struct {
		key string
		lo  int64 // the range's lower end; the upper is int32's
	}{
		{"zookeeper.session.timeout.ms", 1}, {"zookeeper.connection.timeout.ms", 1}, {"zookeeper.sync.time.ms", 0},
		{"rebalance.max.retries", 1}, {"rebalance.backoff.ms", 0}, {"auto.commit.interval.ms", 1},
		{"fetch.message.max.bytes", 1}, {"fetch.wait.max.ms", 0}, {"fetch.min.bytes", 0},
		{"queued.max.message.chunks", 1}, {"refresh.leader.backoff.ms", 0}, {"socket.timeout.ms", 1},
		{"offsets.channel.backoff.ms", 0}, {"offsets.channel.socket.timeout.ms", 1}, {"offsets.commit.max.retries", 0},
	} {
		props := func(v string) map[string]string {
			return map[string]string{"group.id": "g", "zookeeper.connect": "h:1", c.key: v}
		}
		_, err := FromProperties(props("3000000000"))
		want := fmt.Sprintf("zkconsumer: Invalid value 3000000000 for configuration %s: not a number of type INT (32-bit signed integer); allowed range [%d, 2147483647]", c.key, c.lo)
		if err == nil || err.Error() != want {
			t.Errorf("%s=3000000000: error %v\nwant %s", c.key, err, want)
		}
		below := strconv.FormatInt(c.lo-1, 10)
		_, err = FromProperties(props(below))
		want = fmt.Sprintf("zkconsumer: Invalid value %s for configuration %s: type INT, allowed range [%d, 2147483647]", below, c.key, c.lo)
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v\nwant %s", c.key, below, err, want)
		}
		if _, err := FromProperties(props("2147483647")); err != nil && strings.Contains(err.Error(), "Invalid value") {
			t.Errorf("%s=2147483647 (int32's largest) refused: %v", c.key, err)
		}
	}
	// A Config built in code is checked against the same ranges by Validate (New calls it).
	cfg := DefaultConfig("g", "h:1")
	cfg.ZooKeeperSessionTimeoutMs = 3000000000
	want := "zkconsumer: Invalid value 3000000000 for configuration zookeeper.session.timeout.ms: type INT, allowed range [1, 2147483647]"
	if err := cfg.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate: %v\nwant %s", err, want)
	}
}
