package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the controller's decisions as pure functions (no ZooKeeper, no clock); the controller
// core (controller_core.go) asks them what to write as it steps through ZooKeeper's events, and its
// driver (controller_driver.go) writes it. The oracle is Kafka 3.9's
// ZooKeeper-mode controller (core/src/main/scala/kafka/controller).

// Leader recovery states (org.apache.kafka.metadata.LeaderRecoveryState): a leader elected uncleanly is
// RECOVERING until it tells the controller (AlterPartition) that it has recovered.
const (
	leaderRecovered  int8 = 0
	leaderRecovering int8 = 1
)

// leaderAndISR is a partition's state znode (kafka.api.LeaderAndIsr + controller epoch).
type leaderAndISR struct {
	Leader          int32 // broker id, -1 = no leader
	LeaderEpoch     int32
	ControllerEpoch int32
	ISR             []int32
	// LeaderRecoveryState is leaderRecovered or leaderRecovering; 3.9's TopicPartitionStateZNode.encode
	// writes "leader_recovery_state" only when it is not RECOVERED.
	LeaderRecoveryState int8
}

func (s leaderAndISR) equal(o leaderAndISR) bool {
	return s.Leader == o.Leader && s.LeaderEpoch == o.LeaderEpoch && s.ControllerEpoch == o.ControllerEpoch &&
		slices.Equal(s.ISR, o.ISR) && s.LeaderRecoveryState == o.LeaderRecoveryState
}

// partitionRef names a partition in the controller's multi-partition decisions.
type partitionRef struct {
	Topic     string
	Partition int32
}

// partitionInfo is what the controller knows of one partition: its assignment (replicas, preferred
// first) and, when HasState, its state znode (ControllerContext.partitionLeadershipInfo).
type partitionInfo struct {
	Replicas []int32
	State    leaderAndISR
	HasState bool
}

func sortRefs(rs []partitionRef) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Topic != rs[j].Topic {
			return rs[i].Topic < rs[j].Topic
		}
		return rs[i].Partition < rs[j].Partition
	})
}

// assignReplicas places partitions [first, first+n) with replication factor rf over the live brokers as
// Kafka 3.9's AdminUtils.assignReplicasToBrokersRackUnaware (server-common, org.apache.kafka.admin)
// does. The broker list is sorted by id, as AdminZkClient.getBrokerMetadatas gives it (3.9's
// CreatePartitions path; its CreateTopics path takes ZkMetadataCache.getAliveBrokers, a LongMap in hash
// order, not modelled: with a random start the spread is the same); then
//
//	startIndex, nextReplicaShift = fixedStartIndex, fixedStartIndex       if fixedStartIndex >= 0
//	                             = rnd.IntN(len), rnd.IntN(len) (in that order) otherwise
//	for p := max(0, first); ...: if p > 0 && p%len == 0 { nextReplicaShift++ }
//	  firstReplicaIndex = (p + startIndex) % len
//	  replica j+1 (j = 0..rf-2) = brokers[(firstReplicaIndex + 1 + (nextReplicaShift+j)%(len-1)) % len]
//	                              (AdminUtils.replicaIndex)
//
// Kafka draws from one process-wide java.util.Random; the lab passes the source (assignrand.go), so
// the random start differs from a real broker's draw but follows the same distribution.
// Errors, with 3.9's messages: n < 1 ("Number of partitions must be larger than 0.", InvalidPartitions),
// rf < 1 and rf > len(live) (InvalidReplicationFactor), and a nil rnd with fixedStartIndex < 0.
func assignReplicas(live []int32, first, n int32, rf int16, fixedStartIndex int, rnd *rand.Rand) (map[int32][]int32, error) {
	if n <= 0 {
		return nil, errors.New("Number of partitions must be larger than 0.")
	}
	if rf <= 0 {
		return nil, errors.New("Replication factor must be larger than 0.")
	}
	if int(rf) > len(live) {
		return nil, fmt.Errorf("Replication factor: %d larger than available brokers: %d.", rf, len(live))
	}
	if fixedStartIndex < 0 && rnd == nil {
		return nil, errors.New("assignReplicas: no random source for a random start index")
	}
	brokers := slices.Clone(live)
	slices.Sort(brokers)
	nb := int64(len(brokers))
	startIndex, shift := int64(fixedStartIndex), int64(fixedStartIndex)
	if fixedStartIndex < 0 {
		startIndex = int64(rnd.IntN(len(brokers)))
		shift = int64(rnd.IntN(len(brokers)))
	}
	out := make(map[int32][]int32, n)
	p := int64(max(0, first))
	for i := int32(0); i < n; i, p = i+1, p+1 {
		if p > 0 && p%nb == 0 {
			shift++
		}
		firstIdx := (p + startIndex) % nb
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[firstIdx])
		for j := int64(0); j < int64(rf)-1; j++ {
			s := 1 + (shift+j)%(nb-1) // AdminUtils.replicaIndex
			replicas = append(replicas, brokers[(firstIdx+s)%nb])
		}
		out[int32(p)] = replicas
	}
	return out, nil
}

// startIndexFor is AdminZkClient.createNewPartitionsAssignment's start index for added partitions
// (3.9): max(0, the position among the id-sorted brokers of the first broker >= partition 0's first
// replica). 3.9 passes it as fixedStartIndex, so nextReplicaShift starts at the same value, and
// startPartitionId = the existing partition count.
func startIndexFor(live []int32, replica0 int32) int {
	brokers := slices.Clone(live)
	slices.Sort(brokers)
	for i, b := range brokers {
		if b >= replica0 {
			return i
		}
	}
	return 0
}

// newPartitionState is the state the controller writes for a new partition (PartitionStateMachine
// NewPartition -> OnlinePartition, initializeLeaderAndIsrForPartitions): the first live replica leads,
// the live replicas are the ISR, leader epoch 0. With no live replica 3.9 writes nothing; the lab writes
// leader -1 and the assignment as ISR, so that the partition comes back when one of them registers.
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

// partitionChange is the controller's decision for one partition.
type partitionChange struct {
	Next    leaderAndISR
	Changed bool // Next must be written
	// Unclean: the new leader was elected outside the ISR (unclean.leader.election.enable); Kafka marks
	// kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec.
	Unclean bool
}

// offlineLeader is PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection (3.9): the first
// replica in assignment order that is live and in the ISR; else, with unclean election enabled, the
// first live replica (unclean = true); else -1.
func offlineLeader(replicas, isr []int32, live map[int32]bool, uncleanEnabled bool) (leader int32, unclean bool) {
	for _, r := range replicas {
		if live[r] && slices.Contains(isr, r) {
			return r, false
		}
	}
	if uncleanEnabled {
		for _, r := range replicas {
			if live[r] {
				return r, true
			}
		}
	}
	return -1, false
}

// removeFromISR is ReplicaStateMachine.doRemoveReplicasFromIsr for one replica (3.9, OfflineReplica):
// if r is in the ISR, the leader becomes -1 when r led, the ISR loses r unless r is its only member,
// and the leader epoch goes up by one (LeaderAndIsr.newLeaderAndIsr always bumps it, follower removal
// included). ok is false when r is not in the ISR (nothing is written).
func removeFromISR(s leaderAndISR, r, controllerEpoch int32) (leaderAndISR, bool) {
	if !slices.Contains(s.ISR, r) {
		return s, false
	}
	next := leaderAndISR{Leader: s.Leader, LeaderEpoch: s.LeaderEpoch + 1, ControllerEpoch: controllerEpoch,
		ISR: slices.Clone(s.ISR), LeaderRecoveryState: s.LeaderRecoveryState}
	if r == s.Leader {
		next.Leader = -1
	}
	if len(s.ISR) > 1 {
		next.ISR = slices.DeleteFunc(next.ISR, func(x int32) bool { return x == r })
	}
	return next, true
}

// onBrokerChange is the controller's reaction, for one partition, to the live broker set (3.9
// KafkaController.onBrokerFailure -> onReplicasBecomeOffline, and onBrokerStartup /
// processUncleanLeaderElectionEnable -> PartitionStateMachine.triggerOnlinePartitionStateChange).
// live excludes brokers that are shutting down (ControllerContext.isReplicaOnline). In 3.9's order:
//
//  1. Election (Election.leaderForOffline) when the leader is -1 or not live: offlineLeader picks the
//     new leader. Clean: ISR = the old ISR's live members (ISR order). Unclean: ISR = [leader] and
//     leader_recovery_state RECOVERING (LeaderAndIsr.newRecoveringLeaderAndIsr; the IBP >= 3.2 default
//     of 3.9). Either way leader epoch + 1, recovery state otherwise kept (newLeaderAndIsr).
//  2. When no leader could be elected, or the leader is live: every dead ISR member leaves the ISR
//     (removeFromISR), one write each, in ascending broker id (processBrokerChange sorts the dead
//     brokers; ReplicaStateMachine.handleStateChanges' groupBy keeps that order for up to four):
//     a dead leader becomes -1, the last ISR member stays, each removal bumps the leader epoch.
//
// The function is stateless, so a state 3.9 has already settled is left alone: a leaderless partition
// whose ISR has no live member is not written again (3.9 would not, until one of its replicas comes
// back), and the "last member stays" write that changes nothing but the epoch is made only after an
// earlier write of the same call (two ISR members dying together bump the epoch twice, as in 3.9).
func onBrokerChange(cur leaderAndISR, replicas []int32, live map[int32]bool, uncleanEnabled bool, controllerEpoch int32) partitionChange {
	if cur.Leader < 0 || !live[cur.Leader] {
		if leader, unclean := offlineLeader(replicas, cur.ISR, live, uncleanEnabled); leader >= 0 {
			next := leaderAndISR{Leader: leader, LeaderEpoch: cur.LeaderEpoch + 1, ControllerEpoch: controllerEpoch, LeaderRecoveryState: cur.LeaderRecoveryState}
			if unclean {
				next.ISR = []int32{leader}
				next.LeaderRecoveryState = leaderRecovering
			} else {
				next.ISR = slices.DeleteFunc(slices.Clone(cur.ISR), func(r int32) bool { return !live[r] })
			}
			return partitionChange{Next: next, Changed: true, Unclean: unclean}
		}
		if cur.Leader < 0 {
			return partitionChange{Next: cur}
		}
	}
	next, changed := offlineReplicas(cur, live, controllerEpoch)
	return partitionChange{Next: next, Changed: changed}
}

// offlineReplicas is ReplicaStateMachine's OfflineReplica transition for every ISR member that is
// not live, as a new controller runs it at startup before any election (onControllerFailover →
// replicaStateMachine.startup, then partitionStateMachine.startup): removeFromISR for each, in
// ascending broker id, a dead leader becoming -1. It reports whether anything changed.
func offlineReplicas(cur leaderAndISR, live map[int32]bool, controllerEpoch int32) (leaderAndISR, bool) {
	var dead []int32
	for _, r := range cur.ISR {
		if !live[r] {
			dead = append(dead, r)
		}
	}
	slices.Sort(dead)
	s, changed := cur, false
	for _, d := range dead {
		if !changed && len(s.ISR) == 1 && d != s.Leader {
			continue // settled: nothing but the epoch would change
		}
		if n, ok := removeFromISR(s, d, controllerEpoch); ok {
			s, changed = n, true
		}
	}
	return s, changed
}

// nextPartitionState is onBrokerChange with unclean.leader.election.enable=false (the default since
// 0.11), a shorthand for the tests (the controller core calls onBrokerChange with the topic's
// setting). It reports whether the state changed; a changed state carries controllerEpoch.
func nextPartitionState(cur leaderAndISR, replicas []int32, live map[int32]bool, controllerEpoch int32) (leaderAndISR, bool) {
	c := onBrokerChange(cur, replicas, live, false, controllerEpoch)
	return c.Next, c.Changed
}

// controlledShutdown decides what the controller writes when broker id asks to shut down (3.9
// KafkaController.doControlledShutdown). live is the registered brokers (shutting-down ones included:
// liveOrShuttingDownBrokerIds), shuttingDown the brokers already shutting down (id is added). Only
// partitions with id in their assignment, more than one replica, and a state are acted on:
//   - led by id: the new leader is the first replica in assignment order that is live, in the ISR
//     and not shutting down (Election.leaderForControlledShutdown /
//     controlledShutdownPartitionLeaderElection); ISR = the old ISR without the shutting-down brokers;
//     leader epoch + 1. Without such a replica nothing is written and id keeps leading;
//   - followed by id: id leaves the ISR as an OfflineReplica (removeFromISR: epoch + 1, the last ISR
//     member stays; nothing written when id is not in the ISR).
//
// remaining is what ControlledShutdownResponse lists (ControllerContext.partitionLeadersOnBroker):
// the partitions id still leads afterwards that have more than one replica, sorted; 3.9 does not list
// single-replica partitions, though id leads them.
func controlledShutdown(id int32, parts map[partitionRef]partitionInfo, live, shuttingDown map[int32]bool, controllerEpoch int32) (next map[partitionRef]leaderAndISR, remaining []partitionRef) {
	down := map[int32]bool{id: true}
	for b, v := range shuttingDown {
		if v {
			down[b] = true
		}
	}
	next = map[partitionRef]leaderAndISR{}
	for ref, pi := range parts {
		if !pi.HasState || len(pi.Replicas) <= 1 || !slices.Contains(pi.Replicas, id) {
			continue
		}
		cur := pi.State
		if cur.Leader == id {
			leader := int32(-1)
			for _, r := range pi.Replicas {
				if live[r] && slices.Contains(cur.ISR, r) && !down[r] {
					leader = r
					break
				}
			}
			if leader < 0 {
				remaining = append(remaining, ref)
				continue
			}
			next[ref] = leaderAndISR{Leader: leader, LeaderEpoch: cur.LeaderEpoch + 1, ControllerEpoch: controllerEpoch,
				ISR: slices.DeleteFunc(slices.Clone(cur.ISR), func(r int32) bool { return down[r] }), LeaderRecoveryState: cur.LeaderRecoveryState}
			continue
		}
		if n, ok := removeFromISR(cur, id, controllerEpoch); ok {
			next[ref] = n
		}
	}
	sortRefs(remaining)
	return next, remaining
}

// alterPartitionReq is one partition of an AlterPartition request (AlterPartitionRequestData): Leader
// is the request's brokerId; Version the request version (INELIGIBLE_REPLICA needs > 1).
type alterPartitionReq struct {
	Leader, LeaderEpoch, PartitionEpoch int32
	NewISR                              []int32
	LeaderRecoveryState                 int8
	Version                             int16
}

// decideAlterPartition validates one partition of an AlterPartition request as 3.9's ZooKeeper-mode
// KafkaController.tryProcessAlterPartition does, checks in this order:
//
//	partitionEpoch > curVersion or leaderEpoch > cur's          NOT_CONTROLLER
//	leaderEpoch < cur's                                         FENCED_LEADER_EPOCH
//	leader, leader epoch, ISR (order too), recovery state equal  0, next = cur (nothing to write;
//	                                                            checked before the version for idempotency)
//	partitionEpoch < curVersion                                 INVALID_UPDATE_VERSION
//	RECOVERING with more than one ISR member                    INVALID_REQUEST
//	RECOVERED -> RECOVERING                                     INVALID_REQUEST
//	an ISR member not live or shutting down (KIP-841)           INELIGIBLE_REPLICA (v > 1), else
//	                                                            OPERATION_NOT_ATTEMPTED
//
// In ZK mode the partition epoch is the state znode's version (curVersion). An accepted request gives
// the state to write with expected version curVersion (the new partition epoch is curVersion + 1; a
// BADVERSION answers INVALID_UPDATE_VERSION): the request's leader, leader epoch (unchanged: AlterPartition
// does not bump it), ISR and recovery state, and controllerEpoch. 3.9's ZK controller does not check
// that the ISR is within the assignment, nor that the sender is the leader beyond the epochs above.
// Broker-epoch checks (STALE_BROKER_EPOCH) and UNKNOWN_TOPIC_OR_PARTITION are the caller's.
func decideAlterPartition(cur leaderAndISR, curVersion int32, live, shuttingDown map[int32]bool, req alterPartitionReq, controllerEpoch int32) (leaderAndISR, int16) {
	switch {
	case req.PartitionEpoch > curVersion || req.LeaderEpoch > cur.LeaderEpoch:
		return cur, kerr.NotController.Code
	case req.LeaderEpoch < cur.LeaderEpoch:
		return cur, kerr.FencedLeaderEpoch.Code
	case req.Leader == cur.Leader && slices.Equal(req.NewISR, cur.ISR) && req.LeaderRecoveryState == cur.LeaderRecoveryState:
		return cur, 0
	case req.PartitionEpoch < curVersion:
		return cur, kerr.InvalidUpdateVersion.Code
	case req.LeaderRecoveryState == leaderRecovering && len(req.NewISR) > 1:
		return cur, kerr.InvalidRequest.Code
	case cur.LeaderRecoveryState == leaderRecovered && req.LeaderRecoveryState == leaderRecovering:
		return cur, kerr.InvalidRequest.Code
	}
	for _, r := range req.NewISR {
		if !live[r] || shuttingDown[r] {
			if req.Version > 1 {
				return cur, kerr.IneligibleReplica.Code
			}
			return cur, kerr.OperationNotAttempted.Code
		}
	}
	return leaderAndISR{Leader: req.Leader, LeaderEpoch: req.LeaderEpoch, ControllerEpoch: controllerEpoch,
		ISR: slices.Clone(req.NewISR), LeaderRecoveryState: req.LeaderRecoveryState}, 0
}

// autoLeaderRebalance is 3.9's KafkaController.checkAndTriggerAutoLeaderRebalance
// (auto.leader.rebalance.enable, run every leader.imbalance.check.interval.seconds): partitions are
// grouped by preferred replica (the assignment's first); a broker's imbalance ratio is
// (partitions with a state whose leader is not it) / (all partitions preferring it); when it is above
// imbalancePercentage/100 (leader.imbalance.per.broker.percentage, default 10), each such partition
// whose preferred replica can lead (live and in the ISR: canPreferredReplicaBeLeader) moves to it
// (Election.leaderForPreferredReplica, LeaderAndIsr.newLeader): same ISR and recovery state, leader
// epoch + 1, controllerEpoch. live excludes shutting-down brokers. Returns the states to write.
func autoLeaderRebalance(parts map[partitionRef]partitionInfo, live map[int32]bool, imbalancePercentage int, controllerEpoch int32) map[partitionRef]leaderAndISR {
	byPreferred := map[int32][]partitionRef{}
	for ref, pi := range parts {
		if len(pi.Replicas) > 0 {
			byPreferred[pi.Replicas[0]] = append(byPreferred[pi.Replicas[0]], ref)
		}
	}
	out := map[partitionRef]leaderAndISR{}
	for preferred, refs := range byPreferred {
		var notPreferred []partitionRef
		for _, ref := range refs {
			if pi := parts[ref]; pi.HasState && pi.State.Leader != preferred {
				notPreferred = append(notPreferred, ref)
			}
		}
		if float64(len(notPreferred))/float64(len(refs)) <= float64(imbalancePercentage)/100 {
			continue
		}
		for _, ref := range notPreferred {
			cur := parts[ref].State
			if !live[preferred] || !slices.Contains(cur.ISR, preferred) {
				continue
			}
			out[ref] = leaderAndISR{Leader: preferred, LeaderEpoch: cur.LeaderEpoch + 1, ControllerEpoch: controllerEpoch,
				ISR: slices.Clone(cur.ISR), LeaderRecoveryState: cur.LeaderRecoveryState}
		}
	}
	return out
}
