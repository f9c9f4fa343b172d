package zkconsumer

import (
	"reflect"
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
		{base("rebalance.max.retries", "0"), "rebalance.max.retries=0"},
		{base("auto.offset.reset", "earliest"), "auto.offset.reset"},
		{base("partition.assignment.strategy", "sticky"), "partition.assignment.strategy"},
		{base("offsets.storage", "kafka"), "offsets.storage"},
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
