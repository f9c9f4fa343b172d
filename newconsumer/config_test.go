package newconsumer

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Kafka 3.9's ConsumerConfig defaults.
func TestDefaults(t *testing.T) {
	c := DefaultConfig()
	ms := time.Millisecond
	got := []any{c.SessionTimeout, c.HeartbeatInterval, c.MaxPollInterval, c.MaxPollRecords, c.Assignors,
		c.EnableAutoCommit, c.AutoCommitInterval, c.AutoOffsetReset, c.FetchMinBytes, c.FetchMaxWait, c.FetchMaxBytes,
		c.MaxPartitionFetchBytes, c.IsolationLevel, c.RequestTimeout, c.RetryBackoff, c.RetryBackoffMax,
		c.MetadataMaxAge, c.DefaultAPITimeout, c.GroupInstanceID}
	want := []any{45000 * ms, 3000 * ms, 300000 * ms, 500, []string{"range", "cooperative-sticky"},
		true, 5000 * ms, "latest", int32(1), 500 * ms, int32(52428800),
		int32(1048576), "read_uncommitted", 30000 * ms, 100 * ms, 1000 * ms,
		300000 * ms, 60000 * ms, ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults\n got %v\nwant %v", got, want)
	}
}

func TestFromProperties(t *testing.T) {
	c, err := FromProperties(map[string]string{
		"group.id": "g", "bootstrap.servers": "127.0.0.1:9092, 127.0.0.1:9093", "session.timeout.ms": "2000",
		"heartbeat.interval.ms": "500", "partition.assignment.strategy": "cooperative-sticky",
		"enable.auto.commit": "false", "auto.offset.reset": "earliest", "group.instance.id": "i-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.GroupID != "g" || !reflect.DeepEqual(c.BootstrapServers, []string{"127.0.0.1:9092", "127.0.0.1:9093"}) ||
		c.SessionTimeout != 2*time.Second || c.HeartbeatInterval != 500*time.Millisecond || c.EnableAutoCommit ||
		c.AutoOffsetReset != "earliest" || c.GroupInstanceID != "i-1" || !reflect.DeepEqual(c.Assignors, []string{"cooperative-sticky"}) {
		t.Fatalf("config %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"fetch.max.wait": "1"}, "unknown consumer config fetch.max.wait"},
		{map[string]string{"session.timeout.ms": "abc"}, "Invalid value abc for configuration session.timeout.ms"},
		{map[string]string{"heartbeat.interval.ms": "45000"}, "heartbeat.interval.ms (45000) must be positive and lower than session.timeout.ms (45000)"},
		{map[string]string{"enable.auto.commit": "yes"}, "enable.auto.commit=\"yes\""},
		{map[string]string{"auto.offset.reset": "smallest"}, "auto.offset.reset=\"smallest\""},
		{map[string]string{"partition.assignment.strategy": "range,fancy"}, "unknown partition.assignment.strategy \"fancy\""},
		{map[string]string{"partition.assignment.strategy": " "}, "partition.assignment.strategy is empty"},
		{map[string]string{"group.protocol": "consumer"}, "KIP-848"},
		{map[string]string{"max.poll.records": "0"}, "Invalid value 0 for configuration max.poll.records"},
		{map[string]string{"group.instance.id": "a b"}, "group.instance.id=\"a b\""},
	} {
		_, err := FromProperties(bad.props)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want it to contain %q", bad.props, err, bad.want)
		}
	}
	c = DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "group.id is required") {
		t.Fatalf("Validate without group.id: %v", err)
	}
	c.GroupID = "g"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "bootstrap.servers is required") {
		t.Fatalf("Validate without bootstrap.servers: %v", err)
	}
	if _, err := New(c); err == nil {
		t.Fatal("New accepted a config without bootstrap.servers")
	}
}

func TestListenerFuncsLostDefaultsToRevoked(t *testing.T) {
	var got []string
	l := ListenerFuncs{Revoked: func(ps []TopicPartition) { got = append(got, "revoked") }}
	l.OnPartitionsLost(nil)
	l.OnPartitionsAssigned(nil)
	l2 := ListenerFuncs{Revoked: func([]TopicPartition) { got = append(got, "revoked") }, Lost: func([]TopicPartition) { got = append(got, "lost") }}
	l2.OnPartitionsLost(nil)
	if !reflect.DeepEqual(got, []string{"revoked", "lost"}) {
		t.Fatalf("calls %v", got)
	}
}

// Every numeric 3.9 consumer key is read as its ConfigDef type (INT or LONG) and checked against its
// validator (atLeast(0), atLeast(1), or none), with one message naming the key, the type and the
// allowed range; a value past the type (3000000000 for an INT) is refused, not wrapped.
func TestCLIBadInputNewConsumerConfigRanges(t *testing.T) {
	const maxInt, maxLong = "2147483647", "9223372036854775807"
	for _, c := range []struct {
		key, typ, bits, lo, hi string // lo "": no validator (the type's own range)
	}{
		{"session.timeout.ms", "INT", "32", "", maxInt}, {"heartbeat.interval.ms", "INT", "32", "", maxInt},
		{"max.poll.interval.ms", "INT", "32", "1", maxInt}, {"max.poll.records", "INT", "32", "1", maxInt},
		{"auto.commit.interval.ms", "INT", "32", "0", maxInt}, {"fetch.min.bytes", "INT", "32", "0", maxInt},
		{"fetch.max.wait.ms", "INT", "32", "0", maxInt}, {"fetch.max.bytes", "INT", "32", "0", maxInt},
		{"max.partition.fetch.bytes", "INT", "32", "0", maxInt}, {"request.timeout.ms", "INT", "32", "0", maxInt},
		{"default.api.timeout.ms", "INT", "32", "0", maxInt}, {"retry.backoff.ms", "LONG", "64", "0", maxLong},
		{"retry.backoff.max.ms", "LONG", "64", "0", maxLong}, {"metadata.max.age.ms", "LONG", "64", "0", maxLong},
	} {
		lo := c.lo
		if lo == "" {
			lo = "-2147483648"
		}
		over := "3000000000"
		if c.typ == "LONG" {
			over = "9223372036854775808"
		}
		_, err := FromProperties(map[string]string{c.key: over})
		want := fmt.Sprintf("newconsumer: Invalid value %s for configuration %s: not a number of type %s (%s-bit signed integer); allowed range [%s, %s]", over, c.key, c.typ, c.bits, lo, c.hi)
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v\nwant %s", c.key, over, err, want)
		}
		if c.lo == "" {
			continue
		}
		below := map[string]string{"0": "-1", "1": "0"}[c.lo]
		_, err = FromProperties(map[string]string{c.key: below})
		want = fmt.Sprintf("newconsumer: Invalid value %s for configuration %s: type %s, allowed range [%s, %s]", below, c.key, c.typ, c.lo, c.hi)
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v\nwant %s", c.key, below, err, want)
		}
	}
	// A LONG of milliseconds beyond what a time.Duration holds saturates at its largest, never wraps.
	cfg, err := FromProperties(map[string]string{"metadata.max.age.ms": "9223372036854775807"})
	if err != nil || cfg.MetadataMaxAge != time.Duration(1<<63-1) {
		t.Errorf("metadata.max.age.ms=Long.MAX_VALUE: %v, %v; want the largest duration", cfg.MetadataMaxAge, err)
	}
}
