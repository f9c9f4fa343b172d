package broker

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func liveSet(ids ...int32) map[int32]bool {
	m := map[int32]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func st(leader, epoch int32, isr ...int32) leaderAndISR {
	return leaderAndISR{Leader: leader, LeaderEpoch: epoch, ControllerEpoch: 1, ISR: isr}
}

// onBrokerChange against 3.9's onReplicasBecomeOffline: Election.leaderForOffline first, then
// ReplicaStateMachine.doRemoveReplicasFromIsr for every dead ISR member (each write: epoch + 1).
func TestOfflineElectionAndISRRemoval(t *testing.T) {
	rec := func(s leaderAndISR) leaderAndISR { s.LeaderRecoveryState = leaderRecovering; return s }
	ce := func(s leaderAndISR) leaderAndISR { s.ControllerEpoch = 9; return s }
	for _, c := range []struct {
		name     string
		cur      leaderAndISR
		replicas []int32
		live     map[int32]bool
		unclean  bool
		want     leaderAndISR
		changed  bool
		isUnc    bool
	}{
		{"leader and ISR live", st(1, 3, 1, 2, 3), []int32{1, 2, 3}, liveSet(1, 2, 3), false, st(1, 3, 1, 2, 3), false, false},
		{"leader dies: first live ISR replica in assignment order", st(1, 3, 3, 1, 2), []int32{1, 2, 3}, liveSet(2, 3), false, ce(st(2, 4, 3, 2)), true, false},
		{"leader and a follower die together: ISR filtered once, one bump", st(1, 3, 1, 2, 3), []int32{1, 2, 3}, liveSet(3), false, ce(st(3, 4, 3)), true, false},
		{"follower dies: removed, leader kept, epoch + 1", st(1, 3, 1, 2, 3), []int32{1, 2, 3}, liveSet(1, 3), false, ce(st(1, 4, 1, 3)), true, false},
		{"two followers die: two removals, epoch + 2", st(1, 3, 1, 2, 3), []int32{1, 2, 3}, liveSet(1), false, ce(st(1, 5, 1)), true, false},
		{"dead follower outside the ISR: nothing", st(1, 3, 1, 3), []int32{1, 2, 3}, liveSet(1, 3), false, st(1, 3, 1, 3), false, false},
		{"only ISR member dies: leader -1, last member stays", st(2, 3, 2), []int32{1, 2}, liveSet(1), false, ce(st(-1, 4, 2)), true, false},
		{"both ISR members die: ascending id, epoch + 2, last stays", st(1, 3, 1, 2), []int32{1, 2}, liveSet(), false, ce(st(-1, 5, 2)), true, false},
		{"settled leaderless partition: nothing", st(-1, 5, 2), []int32{1, 2}, liveSet(1), false, st(-1, 5, 2), false, false},
		{"lab's leaderless new partition: nothing", st(-1, 0, 1, 2), []int32{1, 2}, liveSet(), false, st(-1, 0, 1, 2), false, false},
		{"ISR member back: leads, ISR its live members", st(-1, 5, 2), []int32{1, 2}, liveSet(1, 2), false, ce(st(2, 6, 2)), true, false},
		{"unclean disabled: a live non-ISR replica does not lead", st(2, 3, 2), []int32{1, 2, 3}, liveSet(1, 3), false, ce(st(-1, 4, 2)), true, false},
		{"unclean: first live replica, ISR [it], RECOVERING", st(2, 3, 2), []int32{2, 3, 1}, liveSet(1, 3), true, rec(ce(st(3, 4, 3))), true, true},
		{"unclean enabled later on a leaderless partition", st(-1, 4, 2), []int32{2, 1}, liveSet(1), true, rec(ce(st(1, 5, 1))), true, true},
		{"unclean allowed but an ISR member is live: clean", st(2, 3, 2, 1), []int32{2, 3, 1}, liveSet(1, 3), true, ce(st(1, 4, 1)), true, false},
		{"unclean enabled, no live replica: as clean", st(2, 3, 2), []int32{2}, liveSet(), true, ce(st(-1, 4, 2)), true, false},
	} {
		got := onBrokerChange(c.cur, c.replicas, c.live, c.unclean, 9)
		if got.Changed != c.changed || got.Unclean != c.isUnc || !got.Next.equal(c.want) {
			t.Errorf("%s: %+v (changed %v unclean %v), want %+v (changed %v unclean %v)", c.name, got.Next, got.Changed, got.Unclean, c.want, c.changed, c.isUnc)
		}
		if got.Changed {
			// Idempotent: the written state, seen again with the same live brokers, is settled.
			if again := onBrokerChange(got.Next, c.replicas, c.live, c.unclean, 9); again.Changed {
				t.Errorf("%s: not settled after one step: %+v -> %+v", c.name, got.Next, again.Next)
			}
		}
	}
	// A clean election keeps the recovery state (newLeaderAndIsr); zk.go's nextPartitionState is the
	// clean path.
	cur := rec(st(1, 2, 1, 2))
	next, changed := nextPartitionState(cur, []int32{1, 2}, liveSet(2), 9)
	if want := rec(ce(st(2, 3, 2))); !changed || !next.equal(want) {
		t.Fatalf("clean election of a recovering partition: %+v, want %+v", next, want)
	}
}

func TestPartitionStateZNodeLeaderRecoveryState(t *testing.T) {
	s := leaderAndISR{Leader: 3, LeaderEpoch: 4, ControllerEpoch: 2, ISR: []int32{3}, LeaderRecoveryState: leaderRecovering}
	data := encodeState(s)
	if want := `{"version":1,"leader":3,"leader_epoch":4,"controller_epoch":2,"isr":[3],"leader_recovery_state":1}`; string(data) != want {
		t.Fatalf("encode %s, want %s", data, want)
	}
	if got, err := decodeState(data); err != nil || !got.equal(s) {
		t.Fatalf("decode %+v, %v", got, err)
	}
	s.LeaderRecoveryState = leaderRecovered
	if want := `{"version":1,"leader":3,"leader_epoch":4,"controller_epoch":2,"isr":[3]}`; string(encodeState(s)) != want {
		t.Fatalf("RECOVERED writes no leader_recovery_state: %s", encodeState(s))
	}
	if got, err := decodeState([]byte(`{"version":1,"leader":3,"leader_epoch":4,"controller_epoch":2,"isr":[3],"leader_recovery_state":0}`)); err != nil || got.LeaderRecoveryState != leaderRecovered {
		t.Fatalf("explicit 0: %+v, %v", got, err)
	}
	if _, err := decodeState([]byte(`{"version":1,"leader":3,"leader_epoch":4,"controller_epoch":2,"isr":[3],"leader_recovery_state":2}`)); err == nil {
		t.Fatal("leader_recovery_state 2 accepted")
	}
}

// KafkaController.doControlledShutdown (3.9) for broker 1, broker 4 already shutting down, 3 dead.
func TestControlledShutdownDecisions(t *testing.T) {
	ref := func(p int32) partitionRef { return partitionRef{"t", p} }
	parts := map[partitionRef]partitionInfo{
		ref(0): {Replicas: []int32{1, 2, 3}, State: st(1, 5, 1, 2, 3), HasState: true}, // led: 2 takes over
		ref(1): {Replicas: []int32{1, 4, 2}, State: st(1, 5, 1, 4, 2), HasState: true}, // 4 shutting down: 2; ISR loses 1 and 4
		ref(2): {Replicas: []int32{1, 3}, State: st(1, 5, 1, 3), HasState: true},       // 3 dead: stays, remaining
		ref(3): {Replicas: []int32{1, 2}, State: st(1, 5, 1), HasState: true},          // no other ISR member: remaining
		ref(4): {Replicas: []int32{1}, State: st(1, 5, 1), HasState: true},             // rf 1: untouched, not listed
		ref(5): {Replicas: []int32{2, 1}, State: st(2, 5, 2, 1), HasState: true},       // follower: leaves ISR, epoch + 1
		ref(6): {Replicas: []int32{2, 1}, State: st(2, 5, 2), HasState: true},          // follower outside ISR: nothing
		ref(7): {Replicas: []int32{2, 1}, State: st(-1, 5, 1), HasState: true},         // follower, last ISR member: stays, epoch + 1
		ref(8): {Replicas: []int32{2, 3}, State: st(2, 5, 2, 3), HasState: true},       // not on broker 1
		ref(9): {Replicas: []int32{1, 2}, HasState: false},                             // no state yet
	}
	next, remaining := controlledShutdown(1, parts, liveSet(1, 2, 4), liveSet(4), 9)
	cs := func(s leaderAndISR) leaderAndISR { s.ControllerEpoch = 9; return s }
	want := map[partitionRef]leaderAndISR{
		ref(0): cs(st(2, 6, 2, 3)),
		ref(1): cs(st(2, 6, 2)),
		ref(5): cs(st(2, 6, 2)),
		ref(7): cs(st(-1, 6, 1)),
	}
	if len(next) != len(want) {
		t.Fatalf("writes %v, want %v", next, want)
	}
	for r, w := range want {
		if !next[r].equal(w) {
			t.Errorf("%v: %+v, want %+v", r, next[r], w)
		}
	}
	if w := []partitionRef{ref(2), ref(3)}; !reflect.DeepEqual(remaining, w) {
		t.Fatalf("remaining %v, want %v", remaining, w)
	}
}

// KafkaController.tryProcessAlterPartition (3.9, ZK mode): the checks in their order.
func TestAlterPartitionValidation(t *testing.T) {
	cur := leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: 2, ISR: []int32{1, 2}}
	live, down := liveSet(1, 2, 3, 4), liveSet(4)
	req := func(epoch, version int32, isr ...int32) alterPartitionReq {
		return alterPartitionReq{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: version, NewISR: isr, Version: 2}
	}
	for _, c := range []struct {
		name string
		cur  leaderAndISR
		req  alterPartitionReq
		code int16
		want leaderAndISR
	}{
		{"expand ISR", cur, req(5, 7, 1, 2, 3), 0, leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: 9, ISR: []int32{1, 2, 3}}},
		{"shrink ISR", cur, req(5, 7, 1), 0, leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: 9, ISR: []int32{1}}},
		{"newer partition epoch", cur, req(5, 8, 1), kerr.NotController.Code, cur},
		{"newer leader epoch (before the stale version check)", cur, req(6, 3, 1), kerr.NotController.Code, cur},
		{"older leader epoch", cur, req(4, 7, 1), kerr.FencedLeaderEpoch.Code, cur},
		{"older leader epoch beats stale version", cur, req(4, 3, 1), kerr.FencedLeaderEpoch.Code, cur},
		{"already applied, stale version: idempotent", cur, req(5, 3, 1, 2), 0, cur},
		{"stale version", cur, req(5, 6, 1), kerr.InvalidUpdateVersion.Code, cur},
		{"stale version beats ineligible", cur, req(5, 6, 1, 9), kerr.InvalidUpdateVersion.Code, cur},
		{"dead replica", cur, req(5, 7, 1, 2, 9), kerr.IneligibleReplica.Code, cur},
		{"shutting-down replica", cur, req(5, 7, 1, 4), kerr.IneligibleReplica.Code, cur},
		{"ineligible, request v1", cur, alterPartitionReq{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7, NewISR: []int32{1, 9}, Version: 1}, kerr.OperationNotAttempted.Code, cur},
		{"RECOVERED -> RECOVERING", cur, alterPartitionReq{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7, NewISR: []int32{1}, LeaderRecoveryState: leaderRecovering, Version: 2}, kerr.InvalidRequest.Code, cur},
		{"RECOVERING with two ISR members", leaderAndISR{Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, LeaderRecoveryState: leaderRecovering},
			alterPartitionReq{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7, NewISR: []int32{1, 2}, LeaderRecoveryState: leaderRecovering, Version: 2}, kerr.InvalidRequest.Code,
			leaderAndISR{Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, LeaderRecoveryState: leaderRecovering}},
		{"recovered leader reports RECOVERED", leaderAndISR{Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, LeaderRecoveryState: leaderRecovering},
			alterPartitionReq{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7, NewISR: []int32{1}, Version: 2}, 0,
			leaderAndISR{Leader: 1, LeaderEpoch: 5, ControllerEpoch: 9, ISR: []int32{1}}},
	} {
		got, code := decideAlterPartition(c.cur, 7, live, down, c.req, 9)
		if code != c.code || !got.equal(c.want) {
			t.Errorf("%s: %+v code %d, want %+v code %d", c.name, got, code, c.want, c.code)
		}
	}
}

// KafkaController.checkAndTriggerAutoLeaderRebalance (3.9) with leader.imbalance.per.broker.percentage.
func TestPreferredLeaderRebalance(t *testing.T) {
	ref := func(tp string, p int32) partitionRef { return partitionRef{tp, p} }
	parts := map[partitionRef]partitionInfo{
		// Broker 1 prefers a0..a3; leads only a0: ratio 3/4 > 10%.
		ref("a", 0): {Replicas: []int32{1, 2}, State: st(1, 1, 1, 2), HasState: true},
		ref("a", 1): {Replicas: []int32{1, 2}, State: st(2, 3, 2, 1), HasState: true}, // moves back
		ref("a", 2): {Replicas: []int32{1, 3}, State: st(3, 2, 3), HasState: true},    // 1 not in ISR: stays
		ref("a", 3): {Replicas: []int32{1, 3}, State: st(3, 4, 3, 1), HasState: true}, // moves back
		// Broker 2 prefers b0..b9, one led elsewhere: ratio 1/10, not above 10%.
		ref("b", 0): {Replicas: []int32{2, 1}, State: st(1, 1, 1, 2), HasState: true},
		// Broker 5 is dead: its partition cannot move back.
		ref("c", 0): {Replicas: []int32{5, 1}, State: st(1, 1, 1), HasState: true},
		// No state: counted in the ratio's denominator only.
		ref("d", 0): {Replicas: []int32{3, 1}},
	}
	for p := int32(1); p < 10; p++ {
		parts[ref("b", p)] = partitionInfo{Replicas: []int32{2, 1}, State: st(2, 1, 2, 1), HasState: true}
	}
	got := autoLeaderRebalance(parts, liveSet(1, 2, 3), 10, 9)
	cs := func(s leaderAndISR) leaderAndISR { s.ControllerEpoch = 9; return s }
	want := map[partitionRef]leaderAndISR{
		ref("a", 1): cs(st(1, 4, 2, 1)),
		ref("a", 3): cs(st(1, 5, 3, 1)),
	}
	if len(got) != len(want) {
		t.Fatalf("elections %v, want %v", got, want)
	}
	for r, w := range want {
		if !got[r].equal(w) {
			t.Errorf("%v: %+v, want %+v", r, got[r], w)
		}
	}
	// Two of ten not led by broker 2: 20% > 10% moves b0 back.
	parts[ref("b", 1)] = partitionInfo{Replicas: []int32{2, 1}, State: st(1, 2, 1), HasState: true}
	got = autoLeaderRebalance(parts, liveSet(1, 2, 3), 10, 9)
	if g, ok := got[ref("b", 0)]; !ok || !g.equal(cs(st(2, 2, 1, 2))) {
		t.Fatalf("b0 at 20%% imbalance: %+v (%v)", g, ok)
	}
	if _, ok := got[ref("b", 1)]; ok {
		t.Fatal("b1 moved to 2, which is not in its ISR")
	}
}
