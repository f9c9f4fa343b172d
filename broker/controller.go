package broker

import (
	"fmt"
	"slices"
	"sort"
)

// This file holds the controller's decisions as pure functions (no ZooKeeper, no clock); zk.go reads the
// cluster from ZooKeeper, asks these functions what to write, and writes it.

// leaderAndISR is a partition's state znode (kafka.api.LeaderAndIsr + controller epoch).
type leaderAndISR struct {
	Leader          int32 // broker id, -1 = no leader
	LeaderEpoch     int32
	ControllerEpoch int32
	ISR             []int32
}

func (s leaderAndISR) equal(o leaderAndISR) bool {
	return s.Leader == o.Leader && s.LeaderEpoch == o.LeaderEpoch && s.ControllerEpoch == o.ControllerEpoch && slices.Equal(s.ISR, o.ISR)
}

// assignReplicas places partitions [first, first+n) with replication factor rf over the live brokers
// round-robin, as AdminUtils.assignReplicasToBrokers (Kafka 0.8.2) does: partition p's first replica is
// brokers[(p + startIndex) % len(brokers)], the others follow with a shift that grows every full round.
// Kafka picks startIndex at random for a new topic; the lab uses 0 so that placements are predictable
// (partition p of a new topic lives on the p-th live broker in id order, modulo the broker count).
// Errors: rf < 1, or rf larger than the live broker count (INVALID_REPLICATION_FACTOR).
func assignReplicas(live []int32, first, n int32, rf int16, startIndex int) (map[int32][]int32, error) {
	if rf < 1 {
		return nil, fmt.Errorf("replication factor must be larger than 0")
	}
	if int(rf) > len(live) {
		return nil, fmt.Errorf("replication factor: %d larger than available brokers: %d", rf, len(live))
	}
	brokers := slices.Clone(live)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	nb := int32(len(brokers))
	out := make(map[int32][]int32, n)
	shift := int32(startIndex) // AdminUtils: nextReplicaShift starts at the fixed start index
	for p := first; p < first+n; p++ {
		if p > 0 && p%nb == 0 {
			shift++
		}
		firstIdx := (p + int32(startIndex)) % nb
		replicas := []int32{brokers[firstIdx]}
		for j := int32(0); j < int32(rf)-1; j++ {
			// AdminUtils.replicaIndex
			s := 1 + (shift+j)%(nb-1)
			replicas = append(replicas, brokers[(firstIdx+s)%nb])
		}
		out[p] = replicas
	}
	return out, nil
}

// startIndexFor is AdminUtils.addPartitions' start index: the position, among the sorted live brokers,
// of the first broker not below partition 0's first replica, so that added partitions continue the
// existing round-robin.
func startIndexFor(live []int32, replica0 int32) int {
	brokers := slices.Clone(live)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	for i, b := range brokers {
		if b >= replica0 {
			return i
		}
	}
	return 0
}

// newPartitionState is the state the controller writes for a new partition (PartitionStateMachine
// NewPartition -> OnlinePartition): the first live replica leads, the live replicas are the ISR, leader
// epoch 0. With no live replica the leader is -1 and the ISR is the assignment, so that the partition
// comes back when one of them registers.
func newPartitionState(replicas []int32, live map[int32]bool, controllerEpoch int32) leaderAndISR {
	s := leaderAndISR{Leader: -1, ControllerEpoch: controllerEpoch}
	for _, r := range replicas {
		if live[r] {
			if s.Leader < 0 {
				s.Leader = r
			}
			s.ISR = append(s.ISR, r)
		}
	}
	if len(s.ISR) == 0 {
		s.ISR = slices.Clone(replicas)
	}
	return s
}

// nextPartitionState is the controller's reaction to broker changes for one partition, with
// unclean.leader.election.enable=false (the default since 0.11):
//   - the leader's broker is live: nothing changes;
//   - the leader's broker died: the next live replica in the ISR (assignment order) leads, else the
//     leader becomes -1; the dead leader leaves the ISR unless it is its last member (Kafka >= 1.1 keeps
//     the last ISR member so that it may lead again); leader epoch + 1;
//   - there is no leader and an ISR replica is live again: it leads; leader epoch + 1.
//
// It reports whether the state changed; a changed state carries controllerEpoch.
func nextPartitionState(cur leaderAndISR, replicas []int32, live map[int32]bool, controllerEpoch int32) (leaderAndISR, bool) {
	if cur.Leader >= 0 && live[cur.Leader] {
		return cur, false
	}
	candidate := int32(-1)
	for _, r := range replicas {
		if r != cur.Leader && live[r] && slices.Contains(cur.ISR, r) {
			candidate = r
			break
		}
	}
	next := leaderAndISR{Leader: candidate, LeaderEpoch: cur.LeaderEpoch + 1, ControllerEpoch: controllerEpoch, ISR: slices.Clone(cur.ISR)}
	if cur.Leader >= 0 {
		if len(cur.ISR) > 1 || candidate >= 0 {
			next.ISR = slices.DeleteFunc(next.ISR, func(r int32) bool { return r == cur.Leader })
		}
		return next, true
	}
	if candidate < 0 {
		return cur, false
	}
	return next, true
}
