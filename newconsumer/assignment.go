package newconsumer

import (
	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds the pure decisions of ConsumerCoordinator (3.9, clients/.../consumer/internals/
// ConsumerCoordinator.java) about partitions: what to give up before joining, what a received
// assignment adds and takes away, what to drop when leaving, and the leader's assignment.

// protocolType is ConsumerProtocol.PROTOCOL_TYPE.
const protocolType = "consumer"

// diff returns the partitions of a that are not in b, sorted.
func diff(a, b []TopicPartition) []TopicPartition {
	in := make(map[TopicPartition]bool, len(b))
	for _, tp := range b {
		in[tp] = true
	}
	out := []TopicPartition{}
	for _, tp := range a {
		if !in[tp] {
			out = append(out, tp)
			in[tp] = true // once
		}
	}
	assignor.SortPartitions(out)
	return out
}

// prepareDecision is onJoinPrepare's: give up revoke (listener: OnPartitionsRevoked) or, when the
// generation or member id was reset, lose everything (OnPartitionsLost); keep the rest.
type prepareDecision struct {
	revoke, lose, keep []TopicPartition
	callRevoked        bool // EAGER calls OnPartitionsRevoked even with nothing to revoke
}

// joinPrepare decides what the member gives up before a JoinGroup (ConsumerCoordinator.onJoinPrepare,
// after its auto-commit): a reset generation loses everything; EAGER revokes everything; COOPERATIVE
// revokes only the partitions of topics it no longer subscribes to.
func joinPrepare(protocol assignor.RebalanceProtocol, gen generation, owned []TopicPartition, subscribed map[string]bool) prepareDecision {
	sorted := diff(owned, nil)
	if gen.id == noGeneration.id || gen.memberID == "" {
		return prepareDecision{lose: sorted, keep: []TopicPartition{}}
	}
	if protocol == assignor.Eager {
		return prepareDecision{revoke: sorted, keep: []TopicPartition{}, callRevoked: true}
	}
	d := prepareDecision{revoke: []TopicPartition{}, keep: []TopicPartition{}}
	for _, tp := range sorted {
		if subscribed[tp.Topic] {
			d.keep = append(d.keep, tp)
		} else {
			d.revoke = append(d.revoke, tp)
		}
	}
	d.callRevoked = len(d.revoke) > 0
	return d
}

// completeDecision is onJoinComplete's.
type completeDecision struct {
	added   []TopicPartition // assigned - owned: OnPartitionsAssigned (always called)
	revoked []TopicPartition // COOPERATIVE: owned - assigned: OnPartitionsRevoked when non-empty
	rejoin  bool             // COOPERATIVE: something was revoked, so rebalance again (KIP-429)
}

// joinComplete decides what a received assignment changes (ConsumerCoordinator.onJoinComplete).
// Under EAGER the member owns nothing when joining, so nothing is revoked here.
func joinComplete(protocol assignor.RebalanceProtocol, owned, assigned []TopicPartition) completeDecision {
	d := completeDecision{added: diff(assigned, owned), revoked: []TopicPartition{}}
	if protocol == assignor.Cooperative {
		d.revoked = diff(owned, assigned)
		d.rejoin = len(d.revoked) > 0
	}
	return d
}

// matchesSubscription is SubscriptionState.checkAssignmentMatchedSubscription: every assigned
// partition is of a subscribed topic (else the subscription changed since joining: rejoin).
func matchesSubscription(assigned []TopicPartition, subscribed map[string]bool) bool {
	for _, tp := range assigned {
		if !subscribed[tp.Topic] {
			return false
		}
	}
	return true
}

// leavePrepare is onLeavePrepare's decision when the consumer closes: its partitions are lost if
// the generation was reset or a rebalance is running, else revoked.
func leavePrepare(m *membership, owned []TopicPartition) (revoke, lose []TopicPartition) {
	sorted := diff(owned, nil)
	if len(sorted) == 0 {
		return nil, nil
	}
	if m.gen.id == noGeneration.id || m.gen.memberID == "" || m.rebalanceInProgress() {
		return nil, sorted
	}
	return sorted, nil
}

// leaderAssignment is the leader's part of a rebalance (ConsumerCoordinator.onLeaderElected):
// decode every member's subscription, run the selected assignor on the topics' partition counts,
// and encode one assignment per member. A member whose metadata cannot be decoded gets an empty
// assignment and is reported in bad (Java would fail the leader's poll with SchemaException).
func leaderAssignment(a assignor.Assignor, members []kmsg.JoinGroupResponseMember, partitionsPerTopic map[string]int32) (assignments []kmsg.SyncGroupRequestGroupAssignment, plan map[string][]TopicPartition, bad []error) {
	subs := make([]assignor.Subscription, 0, len(members))
	var undecodable []string
	for _, m := range members {
		instance := ""
		if m.InstanceID != nil {
			instance = *m.InstanceID
		}
		s, err := assignor.DecodeSubscription(m.MemberID, instance, m.ProtocolMetadata)
		if err != nil {
			bad = append(bad, err)
			undecodable = append(undecodable, m.MemberID)
			continue
		}
		subs = append(subs, s)
	}
	plan = a.Assign(partitionsPerTopic, subs)
	for _, id := range undecodable {
		plan[id] = []TopicPartition{}
	}
	for _, m := range members {
		assignments = append(assignments, kmsg.SyncGroupRequestGroupAssignment{
			MemberID:         m.MemberID,
			MemberAssignment: assignor.EncodeAssignment(plan[m.MemberID], nil),
		})
	}
	return assignments, plan, bad
}

// subscribedTopics is the union of the members' subscriptions, for the leader's metadata request.
func subscribedTopics(members []kmsg.JoinGroupResponseMember) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range members {
		s, err := assignor.DecodeSubscription(m.MemberID, "", m.ProtocolMetadata)
		if err != nil {
			continue
		}
		for _, t := range s.Topics {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}
