package zkconsumer

import (
	"fmt"
	"slices"
)

// Assign is one rebalance attempt's assignment step as a pure function, the decision every
// connector computes for itself (PartitionAssignor.assign, 0.8.2.2; the whole group's result, as
// 0.9 returns it). threads holds every member's consumer thread ids per topic, in any order (sorted
// here as ZkUtils.getConsumersPerTopic sorts them, as strings); partitions holds each topic's
// partition ids (sorted here numerically). consumerID is the connector deciding: its topics are the
// ones assigned. strategy is partition.assignment.strategy: StrategyRange or StrategyRoundRobin.
// Errors: an unknown strategy; ErrRoundRobinSubscriptions when roundrobin's members do not all
// subscribe to the same topics with the same thread count.
func Assign(strategy, consumerID string, threads map[string][]ThreadID, partitions map[string][]int32) (map[TopicPartition]ThreadID, error) {
	actx := assignmentContext{
		consumerID:         consumerID,
		myTopicThreadIDs:   map[string][]ThreadID{},
		consumersForTopic:  make(map[string][]ThreadID, len(threads)),
		partitionsForTopic: map[string][]int32{},
	}
	for t, ids := range threads {
		sorted := slices.Clone(ids)
		sortThreadIDs(sorted)
		actx.consumersForTopic[t] = sorted
		for _, id := range sorted {
			if id.Consumer == consumerID {
				actx.myTopicThreadIDs[t] = append(actx.myTopicThreadIDs[t], id)
			}
		}
	}
	for t := range actx.myTopicThreadIDs {
		ps := slices.Clone(partitions[t])
		slices.Sort(ps)
		actx.partitionsForTopic[t] = ps
	}
	switch strategy {
	case StrategyRange:
		return assignRange(actx)
	case StrategyRoundRobin:
		return assignRoundRobin(actx)
	}
	return nil, fmt.Errorf("zkconsumer: unknown partition.assignment.strategy %q (want %q or %q)", strategy, StrategyRange, StrategyRoundRobin)
}
