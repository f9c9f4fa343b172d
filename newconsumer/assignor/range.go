package assignor

import (
	"slices"
	"sort"
)

// Range is Kafka's RangeAssignor (3.9, clients/.../consumer/RangeAssignor.java): per topic, the
// members subscribed to it are sorted (static members by group.instance.id first, then dynamic ones
// by member id: AbstractPartitionAssignor.MemberInfo.compareTo) and get consecutive ranges of
// partitions; with P partitions and N members each gets P/N and the first P%N get one more.
//
// Rack-aware assignment (KIP-881) needs partition replica racks, which this model does not carry:
// it is what 3.9 does when brokers have no broker.rack, as in the lab.
type Range struct{}

func (Range) Name() string                            { return RangeName }
func (Range) SupportedProtocols() []RebalanceProtocol { return []RebalanceProtocol{Eager} }
func (Range) UserData(*Previous) []byte               { return nil }

// Assign implements Assignor. The member order (MemberInfo.compareTo) does not depend on the topic,
// so the members are sorted once and each topic takes its subscribers in that order; topics are dealt
// in Java string order, so every member's list comes out sorted (topic, then partition).
func (Range) Assign(partitionsPerTopic map[string]int32, subscriptions []Subscription) map[string][]TopicPartition {
	g := newGroup(partitionsPerTopic, subscriptions)
	out := g.emptyAssignment()
	sorted := slices.Clone(g.members)
	slices.SortFunc(sorted, compareMembers)
	// Members by topic, as indexes into sorted; each member's partitions are counted first, so that
	// its list is allocated once and the map is written once per member, not once per partition.
	byTopic := make(map[string][]int, len(g.partitions))
	for i, m := range sorted {
		for t := range g.topics[m.MemberID] {
			if g.partitions[t] > 0 {
				byTopic[t] = append(byTopic[t], i)
			}
		}
	}
	topics := g.sortedTopics()
	counts := make([]int, len(sorted))
	for _, topic := range topics {
		members := byTopic[topic]
		n := int(g.partitions[topic])
		per, extra := n/len(members), n%len(members)
		for k, i := range members {
			counts[i] += per
			if k < extra {
				counts[i]++
			}
		}
	}
	lists := make([][]TopicPartition, len(sorted))
	for i, c := range counts {
		lists[i] = make([]TopicPartition, 0, c)
	}
	for _, topic := range topics {
		members := byTopic[topic]
		n := int(g.partitions[topic])
		per, extra := n/len(members), n%len(members)
		p := int32(0)
		for k, i := range members {
			count := per
			if k < extra {
				count++
			}
			for ; count > 0; count-- {
				lists[i] = append(lists[i], TopicPartition{topic, p})
				p++
			}
		}
	}
	for i, m := range sorted {
		out[m.MemberID] = lists[i]
	}
	return out
}

// RoundRobin is Kafka's RoundRobinAssignor (3.9, clients/.../consumer/RoundRobinAssignor.java): all
// topic-partitions, topics sorted, are dealt one by one over the sorted members (MemberInfo order),
// skipping members not subscribed to the partition's topic.
type RoundRobin struct{}

func (RoundRobin) Name() string                            { return RoundRobinName }
func (RoundRobin) SupportedProtocols() []RebalanceProtocol { return []RebalanceProtocol{Eager} }
func (RoundRobin) UserData(*Previous) []byte               { return nil }

// Assign implements Assignor.
func (RoundRobin) Assign(partitionsPerTopic map[string]int32, subscriptions []Subscription) map[string][]TopicPartition {
	g := newGroup(partitionsPerTopic, subscriptions)
	out := g.emptyAssignment()
	if len(g.members) == 0 {
		return out
	}
	members := append([]*Subscription(nil), g.members...)
	sort.Slice(members, func(i, j int) bool { return compareMembers(members[i], members[j]) < 0 })
	next := 0 // the CircularIterator's position
	for _, topic := range g.sortedTopics() {
		for p := int32(0); p < g.partitions[topic]; p++ {
			// Some member subscribes to every topic in g.partitions, so this ends.
			for !g.topics[members[next].MemberID][topic] {
				next = (next + 1) % len(members)
			}
			id := members[next].MemberID
			out[id] = append(out[id], TopicPartition{topic, p})
			next = (next + 1) % len(members)
		}
	}
	return out
}
