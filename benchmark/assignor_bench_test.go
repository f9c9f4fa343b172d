package benchmark

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
)

// Shape of the assignor benchmarks (issue #6): 10,000 members, 10 topics × 1,000 partitions, every
// member subscribed to every topic.
const (
	assignMembers    = 10_000
	assignTopics     = 10
	assignPartitions = 1_000 // per topic
	assignLeaver     = 5_000 // index of the member that leaves in the "leave" case
)

// BenchmarkAssignor measures the group leader's assignment step, ours beside franz-go's balancer of
// the same name, in the same b.N loop, on the same JoinGroup response.
//
// Shape: assignMembers members ("member-00000".."member-09999", dynamic, no rack) × assignTopics
// topics × assignPartitions partitions, every member subscribed to every topic. Member metadata is
// what a Kafka 3.9 Java consumer sends (assignor.EncodeSubscription: ConsumerMemberMetadata v3,
// user data from the assignor's own UserData). Cases:
//   - fresh: no member owned anything (generation -1, no user data beyond the assignor's default).
//   - leave: the group was balanced at generation 1, member i owning partition i of the 10,000
//     (topic-(i/1000), i%1000), and member 5,000 left: 9,999 members join. Eager assignors (range,
//     roundrobin, sticky) report no owned partitions, as Java revokes before joining; sticky carries
//     its previous partition in StickyMemberMetadata user data; cooperative-sticky reports it as
//     owned partitions with generation 1.
//
// One operation per side is the leader's whole step, input JoinGroup members → SyncGroup
// assignments:
//   - rebalancelab: decode every member's metadata (assignor.DecodeSubscription), Assign, encode
//     one ConsumerMemberAssignment per member (assignor.EncodeAssignment) — the steps of
//     newconsumer's leaderAssignment.
//   - kgo: GroupBalancer.MemberBalancer(members) (decodes the metadata), BalanceOrError(topics)
//     (kgo's ConsumerBalancer panics on plain Balance; kgo's client calls BalanceOrError), and
//     IntoSyncAssignment() (encodes).
//
// Members are passed sorted by member id, as kgo's client sorts them before balancing (the sort
// is not timed). Before timing, both results are checked once: every partition assigned exactly
// once, to a known member (the benchmark fails otherwise); whether the two assignments are
// identical is logged. Metrics: ms-rebalancelab/op, ms-kgo/op, x-rebalancelab-vs-kgo (ours/kgo,
// below 1: ours faster). Each side starts from a collected heap (runtime.GC outside the timer).
func BenchmarkAssignor(b *testing.B) {
	topics, partitionsPerTopic := topicsOf(assignTopics, assignPartitions)
	for _, c := range []struct {
		ours assignor.Assignor
		peer kgo.GroupBalancer
	}{
		{assignor.Range{}, kgo.RangeBalancer()},
		{assignor.RoundRobin{}, kgo.RoundRobinBalancer()},
		{assignor.Sticky{}, kgo.StickyBalancer()},
		{assignor.CooperativeSticky{}, kgo.CooperativeStickyBalancer()},
	} {
		if c.ours.Name() != c.peer.ProtocolName() {
			b.Fatalf("assignor %s paired with kgo balancer %s", c.ours.Name(), c.peer.ProtocolName())
		}
		for _, leave := range []bool{false, true} {
			name := c.ours.Name() + "/fresh"
			if leave {
				name = c.ours.Name() + "/leave"
			}
			members := assignorMembers(c.ours, topics, leave)
			checked := false
			b.Run(name, func(b *testing.B) {
				if !checked { // once, outside the timer; b.Run may call this function more than once
					ours, peer, err := checkBothAssignors(c.ours, c.peer, members, partitionsPerTopic)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("%s: %d members, %d partitions: both valid; identical assignment: %v",
						name, len(members), assignTopics*assignPartitions, sameAssignment(ours, peer))
					checked = true
				}
				s := newSideBySide(
					side{"rebalancelab", nil, func() error {
						_, err := oursLeaderAssignment(c.ours, members, partitionsPerTopic)
						return err
					}},
					side{"kgo", nil, func() error {
						_, err := kgoLeaderAssignment(c.peer, members, partitionsPerTopic)
						return err
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

// assignorMembers builds the JoinGroup response members of the benchmark's group for a (see
// BenchmarkAssignor for the two cases), sorted by member id.
func assignorMembers(a assignor.Assignor, topics []string, leave bool) []kmsg.JoinGroupResponseMember {
	var members []kmsg.JoinGroupResponseMember
	cooperative := a.Name() == assignor.CooperativeStickyName
	for i := 0; i < assignMembers; i++ {
		if leave && i == assignLeaver {
			continue
		}
		s := assignor.Subscription{Topics: topics, Generation: assignor.DefaultGeneration, UserData: a.UserData(nil)}
		if leave {
			owned := []assignor.TopicPartition{{Topic: topics[i/assignPartitions], Partition: int32(i % assignPartitions)}}
			s.Generation = 1
			s.UserData = a.UserData(&assignor.Previous{Partitions: owned, Generation: 1})
			if cooperative {
				s.OwnedPartitions = owned
			}
		}
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID = fmt.Sprintf("member-%05d", i)
		m.ProtocolMetadata = assignor.EncodeSubscription(s)
		members = append(members, m)
	}
	return members
}

// oursLeaderAssignment is the leader's step with our assignor: the same calls as newconsumer's
// (unexported) leaderAssignment.
func oursLeaderAssignment(a assignor.Assignor, members []kmsg.JoinGroupResponseMember, partitionsPerTopic map[string]int32) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	subs := make([]assignor.Subscription, 0, len(members))
	for _, m := range members {
		instance := ""
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		s, err := assignor.DecodeSubscription(m.MemberID, instance, m.ProtocolMetadata)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	plan := a.Assign(partitionsPerTopic, subs)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(members))
	for _, m := range members {
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{
			MemberID:         m.MemberID,
			MemberAssignment: assignor.EncodeAssignment(plan[m.MemberID], nil),
		})
	}
	return out, nil
}

// kgoLeaderAssignment is the leader's step with a franz-go balancer, as kgo's groupConsumer.balanceGroup
// runs it once the partition counts are known.
func kgoLeaderAssignment(bal kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, partitionsPerTopic map[string]int32) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	mb, _, err := bal.MemberBalancer(members)
	if err != nil {
		return nil, err
	}
	var into kgo.IntoSyncAssignment
	if mbe, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
		if into, err = mbe.BalanceOrError(partitionsPerTopic); err != nil {
			return nil, err
		}
	} else {
		into = mb.Balance(partitionsPerTopic)
	}
	return into.IntoSyncAssignment(), nil
}

// checkBothAssignors runs each side once and checks its result (checkSyncAssignment).
func checkBothAssignors(ours assignor.Assignor, peer kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, partitionsPerTopic map[string]int32) (o, p map[string][]assignor.TopicPartition, err error) {
	known := make(map[string]bool, len(members))
	for _, m := range members {
		known[m.MemberID] = true
	}
	os, err := oursLeaderAssignment(ours, members, partitionsPerTopic)
	if err != nil {
		return nil, nil, fmt.Errorf("rebalancelab %s: %w", ours.Name(), err)
	}
	if o, err = checkSyncAssignment(os, known, partitionsPerTopic); err != nil {
		return nil, nil, fmt.Errorf("rebalancelab %s: %w", ours.Name(), err)
	}
	ps, err := kgoLeaderAssignment(peer, members, partitionsPerTopic)
	if err != nil {
		return nil, nil, fmt.Errorf("kgo %s: %w", peer.ProtocolName(), err)
	}
	if p, err = checkSyncAssignment(ps, known, partitionsPerTopic); err != nil {
		return nil, nil, fmt.Errorf("kgo %s: %w", peer.ProtocolName(), err)
	}
	return o, p, nil
}
