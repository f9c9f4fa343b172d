package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestCoordinatorMetrics: the group coordinator's gauges and counters on the broker's registry, as
// Kafka 3.9's GroupMetadataManager NumGroups<State> / NumOffsets and group-coordinator-metrics
// group-completed-rebalance-count / offset-commit-count. A franz-go member joins "mg" alone: one
// Stable group, exactly one completed rebalance; it commits two partitions: two offsets stored and
// held; it leaves: the group is Empty and still holds both offsets, the rebalance count unchanged.
func TestCoordinatorMetrics(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	zk := startZK(t)
	tb := startBroker(t, zk.Connect(), 1, nil)
	interopCreateTopic(t, tb.addr(), "mt", 2)
	groups := func(state string) float64 {
		return gaugeValue(t, tb.b, "kafka_coordinator_group_groups", map[string]string{"state": state})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.ConsumerGroup("mg"), kgo.ConsumeTopics("mt"),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	testutil.WaitFor(t, 30*time.Second, "group mg Stable", func() bool { return groups("Stable") == 1 })
	if got := counterValue(t, tb.b, "kafka_coordinator_group_completed_rebalances_total", nil); got != 1 {
		t.Fatalf("completed rebalances %v, want 1", got)
	}
	if got := gaugeValue(t, tb.b, "kafka_coordinator_group_num_groups", nil); got != 1 {
		t.Fatalf("num_groups %v, want 1", got)
	}
	for _, s := range []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Dead"} {
		if got := groups(s); got != 0 {
			t.Fatalf("groups{state=%s} %v, want 0", s, got)
		}
	}
	err = nil
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"mt": {0: {Epoch: -1, Offset: 0}, 1: {Epoch: -1, Offset: 0}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, e error) { err = e })
	if err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, tb.b, "kafka_coordinator_group_offset_commits_total", nil); got != 2 {
		t.Fatalf("offset commits %v, want 2", got)
	}
	if got := gaugeValue(t, tb.b, "kafka_coordinator_group_num_offsets", nil); got != 2 {
		t.Fatalf("num_offsets %v, want 2", got)
	}
	cl.Close() // LeaveGroup
	<-done
	testutil.WaitFor(t, 10*time.Second, "group mg Empty", func() bool { return groups("Empty") == 1 && groups("Stable") == 0 })
	if got := counterValue(t, tb.b, "kafka_coordinator_group_completed_rebalances_total", nil); got != 1 {
		t.Fatalf("completed rebalances after the leave %v, want 1", got)
	}
	if got := gaugeValue(t, tb.b, "kafka_coordinator_group_num_offsets", nil); got != 2 {
		t.Fatalf("num_offsets after the leave %v, want 2", got)
	}
}
