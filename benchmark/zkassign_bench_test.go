// DORMANT: the go tool ignores files whose name starts with "_". This benchmark needs an export
// that zkconsumer does not have yet, zkconsumer.Assign(strategy, consumerID string,
// threads map[string][]ThreadID, partitions map[string][]int32) (map[TopicPartition]ThreadID, error),
// a thin wrapper over the unexported assignRange/assignRoundRobin (see the benchmark engineer's
// report). Once it exists, rename this file to zkassign_bench_test.go.

package benchmark

import (
	"fmt"
	"testing"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/rebalancelab/rebalancelab/zkconsumer"
)

// Shape of the ZooKeeper-era assignment benchmarks: 10 topics × 1,000 partitions (P = 10,000).
const (
	zkAssignTopics     = 10
	zkAssignPartitions = 1_000 // per topic
)

// zkAssignThreads are the group sizes measured (consumer threads).
var zkAssignThreads = []int{10, 100, 1_000, 10_000}

// BenchmarkZKAssignment measures the zk rebalance's assignment step (zkconsumer.Assign: 0.8.2.2's
// RangeAssignor / RoundRobinAssignor over the group as read from ZooKeeper), beside newconsumer's
// assignor of the same name on the equivalent input (same arithmetic, different era), in the same
// b.N loop.
//
// Shape: N consumers (N = 10, 100, 1,000, 10,000), each with one consumer thread, all subscribed
// to zkAssignTopics topics × zkAssignPartitions partitions (P = 10,000). Consumer ids are 0.8's
// "<group>_<host>-<unix ms>-<8 hex>", thread ids "<consumerId>-0"; the coordinator-era members
// carry the thread id strings as member ids, so both eras sort the participants alike.
//   - zkconsumer: Assign(strategy, first consumer's id, every topic's thread ids (unsorted),
//     every topic's partition ids): sorts the threads per topic (Java String order), then range
//     (consecutive runs per topic) or roundrobin (partitions ordered by the Java hashCode of
//     "[topic,partition]", dealt over the sorted threads); the result is the global assignment.
//   - newconsumer: assignor.Range / assignor.RoundRobin Assign(partition counts, N decoded
//     subscriptions) (Kafka 3.9's RangeAssignor / RoundRobinAssignor).
//
// Before timing, each result is checked once: every partition assigned exactly once (both
// strategies), and for range the two eras' assignments are identical (same arithmetic); the
// benchmark fails otherwise. For roundrobin the eras order partitions differently (hash code vs
// topic, partition); whether they agree is logged. Metrics: ms-zkconsumer/op, ms-newconsumer/op,
// x-zkconsumer-vs-newconsumer (zk/new; below 1: the zk era's step is faster).
func BenchmarkZKAssignment(b *testing.B) {
	topics, partitionsPerTopic := topicsOf(zkAssignTopics, zkAssignPartitions)
	partitionIDs := make(map[string][]int32, len(topics))
	for _, t := range topics {
		for p := int32(0); p < zkAssignPartitions; p++ {
			partitionIDs[t] = append(partitionIDs[t], p)
		}
	}
	for _, c := range []struct {
		zk  string
		neu assignor.Assignor
	}{
		{zkconsumer.StrategyRange, assignor.Range{}},
		{zkconsumer.StrategyRoundRobin, assignor.RoundRobin{}},
	} {
		for _, n := range zkAssignThreads {
			threads, subs := zkAssignInput(n, topics)
			me := threads[topics[0]][0].Consumer
			checked := false
			b.Run(fmt.Sprintf("%s/threads=%d", c.zk, n), func(b *testing.B) {
				if !checked { // once, outside the timer; b.Run may call this function more than once
					same, err := checkZKAssignment(c.zk, c.neu, me, threads, partitionIDs, subs, partitionsPerTopic)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("%s, %d threads × %d partitions: both valid; identical assignment: %v", c.zk, n, zkAssignTopics*zkAssignPartitions, same)
					checked = true
				}
				s := newSideBySide(
					side{"zkconsumer", nil, func() error {
						_, err := zkconsumer.Assign(c.zk, me, threads, partitionIDs)
						return err
					}},
					side{"newconsumer", nil, func() error {
						c.neu.Assign(partitionsPerTopic, subs)
						return nil
					}},
				)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s.iteration(b, i)
				}
				s.report(b, [2]int{0, 1})
			})
		}
	}
}

// zkAssignInput builds n consumers with one thread each, subscribed to topics: the zk era's thread
// ids per topic (in registration order, i.e. unsorted: reversed here) and the coordinator era's
// subscriptions with the thread id strings as member ids.
func zkAssignInput(n int, topics []string) (map[string][]zkconsumer.ThreadID, []assignor.Subscription) {
	ids := make([]zkconsumer.ThreadID, n)
	subs := make([]assignor.Subscription, n)
	for i := 0; i < n; i++ {
		ids[n-1-i] = zkconsumer.ThreadID{Consumer: fmt.Sprintf("bench_host-1700000000000-%08x", i), Thread: 0}
	}
	for i, id := range ids {
		subs[i] = assignor.Subscription{MemberID: id.String(), Topics: topics, Generation: assignor.DefaultGeneration}
	}
	threads := make(map[string][]zkconsumer.ThreadID, len(topics))
	for _, t := range topics {
		threads[t] = append([]zkconsumer.ThreadID(nil), ids...)
	}
	return threads, subs
}

// checkZKAssignment runs both eras once, checks both cover every partition exactly once, and
// reports whether they are identical; for range a difference is an error.
func checkZKAssignment(strategy string, neu assignor.Assignor, me string, threads map[string][]zkconsumer.ThreadID, partitionIDs map[string][]int32, subs []assignor.Subscription, partitionsPerTopic map[string]int32) (bool, error) {
	zk, err := zkconsumer.Assign(strategy, me, threads, partitionIDs)
	if err != nil {
		return false, fmt.Errorf("zkconsumer %s: %w", strategy, err)
	}
	zkByThread := map[string][]assignor.TopicPartition{}
	for tp, t := range zk {
		zkByThread[t.String()] = append(zkByThread[t.String()], assignor.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
	}
	if err := checkCoverage(zkByThread, partitionsPerTopic); err != nil {
		return false, fmt.Errorf("zkconsumer %s: %w", strategy, err)
	}
	nc := neu.Assign(partitionsPerTopic, subs)
	if err := checkCoverage(nc, partitionsPerTopic); err != nil {
		return false, fmt.Errorf("newconsumer %s: %w", neu.Name(), err)
	}
	same := sameAssignment(zkByThread, nc)
	if strategy == zkconsumer.StrategyRange && !same {
		return false, fmt.Errorf("range: zkconsumer and newconsumer assign differently on the same input")
	}
	return same, nil
}
