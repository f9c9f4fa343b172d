package zkconsumer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Helpers for the tests that run on a whole lab (lab.Start: a real ZooKeeper and the project's
// broker, in process) and on per-member fault links (lab.MemberLinks).

// startLab starts a lab with one ZooKeeper server and the given number of brokers (ids 1..n).
func startLab(t *testing.T, brokers int) *lab.Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Brokers: brokers, Log: testLog()})
	if err != nil {
		t.Fatalf("starting the lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// labClient is a franz-go client on the lab's brokers (manual partitioning, acks=all).
func labClient(t *testing.T, l *lab.Lab) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(l.Bootstrap(), ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// onBroker1 is a replica assignment of n partitions, all on broker 1.
func onBroker1(n int) [][]int32 {
	out := make([][]int32, n)
	for i := range out {
		out[i] = []int32{1}
	}
	return out
}

// highWatermarks asks the brokers (ListOffsets, timestamp -1 = latest) for the high watermark of
// each of topic's partitions 0..n-1 — the broker's word, not the consumer's.
func highWatermarks(t *testing.T, cl *kgo.Client, topic string, n int) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := 0; p < n; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p), -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	out := map[int32]int64{}
	for _, tt := range resp.Topics {
		for _, p := range tt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("ListOffsets %s/%d: %v", tt.Topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	if len(out) != n {
		t.Fatalf("ListOffsets answered %d partitions of %s, want %d", len(out), topic, n)
	}
	return out
}

// offsets reads /consumers/<group>/offsets/<topic>/<p> for p in 0..n-1 (-1: absent); a value that
// is not a plain decimal fails the test.
func (a *admin) offsets(group, topic string, n int) map[int32]int64 {
	a.t.Helper()
	out := map[int32]int64{}
	for p := 0; p < n; p++ {
		path := fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, topic, p)
		data, _, err := a.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			out[int32(p)] = -1
			continue
		}
		if err != nil {
			a.t.Fatal(err)
		}
		var v int64
		if _, err := fmt.Sscanf(string(data), "%d", &v); err != nil || fmt.Sprint(v) != string(data) {
			a.t.Fatalf("%s = %q: not a decimal offset", path, data)
		}
		out[int32(p)] = v
	}
	return out
}

// ephemeralOwner is the session that owns path (0 for a persistent node); ok=false when absent.
func (a *admin) ephemeralOwner(path string) (int64, bool) {
	a.t.Helper()
	_, st, err := a.conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, false
	}
	if err != nil {
		a.t.Fatal(err)
	}
	return st.EphemeralOwner, true
}

// linkedMember starts a connector whose ZooKeeper session and broker connections go through its own
// fault proxies (lab.MemberLinks: LinkZooKeeper and LinkFetch), as the scenario runner wires them.
func linkedMember(t *testing.T, connect, group, id string, props map[string]string) (*member, *lab.MemberLinks) {
	t.Helper()
	links := lab.NewMemberLinks(id)
	t.Cleanup(func() { links.Close() })
	m := newMemberWith(t, connect, group, id, props, func(c *Config) {
		c.ZKDialer = links.ZKDialer()
		c.BrokerDialer = links.Dialer(lab.LinkFetch)
	})
	return m, links
}

// settle waits until the owner znodes of topic are exactly want and every member's last rebalance
// ended with a successful attempt.
func settle(t *testing.T, d time.Duration, a *admin, group, topic string, want map[int32]string, ms ...*member) {
	t.Helper()
	testutil.WaitFor(t, d, fmt.Sprintf("owners of %s = %v", topic, want), func() bool {
		for _, m := range ms {
			if !m.rebalanceIdle() {
				return false
			}
		}
		return reflect.DeepEqual(a.owners(group, topic), want)
	})
}

// delivered reports whether m recorded a deliver of topic/partition@offset (the record is written
// once the application has the message and the consumed offset has moved past it).
func (m *member) delivered(topic string, partition int32, offset int64) bool {
	return m.count(0, timeline.Deliver, func(r timeline.Record) bool {
		return r.Topic == topic && *r.Partition == partition && *r.Offset == offset
	}) > 0
}

// produced is one acknowledged record: where the broker put it and its value.
type produced struct {
	partition int32
	offset    int64
	value     string
}

// produceEach produces one record "<prefix>-<p>" to each partition 0..n-1 and returns them.
func produceEach(t *testing.T, cl *kgo.Client, topic string, n int, prefix string) []produced {
	t.Helper()
	var out []produced
	for p := int32(0); p < int32(n); p++ {
		v := fmt.Sprintf("%s-%d", prefix, p)
		out = append(out, produced{p, produce(t, cl, topic, p, v)[0], v})
	}
	return out
}
