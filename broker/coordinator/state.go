package coordinator

import "fmt"

// GroupState is a classic group's state, as kafka.coordinator.group.GroupState (GroupMetadata.scala,
// Kafka 3.9). Each state names the states it may be entered from; group.transitionTo refuses any other
// move, like GroupMetadata.assertValidTransition.
type GroupState int

const (
	// Empty: no members, but the group lingers until its offsets expire (also the state of groups that
	// only commit offsets). JoinGroup from a new member → PreparingRebalance.
	Empty GroupState = iota
	// PreparingRebalance: JoinGroups are parked until every known member rejoined or the rebalance
	// timeout fires; heartbeats and SyncGroups get REBALANCE_IN_PROGRESS; commits of the current
	// generation are still accepted.
	PreparingRebalance
	// CompletingRebalance ("AwaitingSync"): the new generation exists; followers' SyncGroups wait for
	// the leader's assignment; commits get REBALANCE_IN_PROGRESS.
	CompletingRebalance
	// Stable: the assignment has been propagated; heartbeats are answered normally.
	Stable
	// Dead: the group's metadata is being removed (deleted, expired or unloaded).
	Dead
)

// String gives the name Kafka uses in DescribeGroups/ListGroups ("PreparingRebalance", ...).
func (s GroupState) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("GroupState(%d)", int(s))
}

// validPreviousStates is GroupState.validPreviousStates of GroupMetadata.scala.
func (s GroupState) validPreviousStates() []GroupState {
	switch s {
	case PreparingRebalance:
		return []GroupState{Stable, CompletingRebalance, Empty}
	case CompletingRebalance:
		return []GroupState{PreparingRebalance}
	case Stable:
		return []GroupState{CompletingRebalance}
	case Dead:
		return []GroupState{Stable, PreparingRebalance, CompletingRebalance, Empty, Dead}
	case Empty:
		return []GroupState{PreparingRebalance}
	}
	return nil
}

// canFollow reports whether a group in state prev may move to s.
func (s GroupState) canFollow(prev GroupState) bool {
	for _, p := range s.validPreviousStates() {
		if p == prev {
			return true
		}
	}
	return false
}

// IllegalTransitionError is what transitionTo returns for a move Kafka refuses (Kafka throws
// IllegalStateException: "Group g should be in the [..] states before moving to X state").
type IllegalTransitionError struct {
	Group    string
	From, To GroupState
}

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("group %s should be in one of the %v states before moving to %s state; instead it is in %s state",
		e.Group, e.To.validPreviousStates(), e.To, e.From)
}
