package broker

import (
	"testing"
)

func TestNewPartitionState(t *testing.T) {
	live := map[int32]bool{1: true}
	if got, want := newPartitionState([]int32{1}, live, 4), (leaderAndISR{Leader: 1, ControllerEpoch: 4, ISR: []int32{1}}); !got.equal(want) {
		t.Fatalf("live replica: %+v, want %+v", got, want)
	}
	if got, want := newPartitionState([]int32{2}, live, 4), (leaderAndISR{Leader: -1, ControllerEpoch: 4, ISR: []int32{2}}); !got.equal(want) {
		t.Fatalf("dead replica: %+v, want %+v", got, want)
	}
}

func TestNextPartitionState(t *testing.T) {
	cur := leaderAndISR{Leader: 2, LeaderEpoch: 3, ControllerEpoch: 1, ISR: []int32{2}}
	// Leader alive: nothing to do.
	if _, changed := nextPartitionState(cur, []int32{2}, map[int32]bool{1: true, 2: true}, 5); changed {
		t.Fatal("live leader changed")
	}
	// The only replica dies: leader -1, epoch+1, the last ISR member stays.
	down, changed := nextPartitionState(cur, []int32{2}, map[int32]bool{1: true}, 5)
	if want := (leaderAndISR{Leader: -1, LeaderEpoch: 4, ControllerEpoch: 5, ISR: []int32{2}}); !changed || !down.equal(want) {
		t.Fatalf("leader died: %+v (changed %v), want %+v", down, changed, want)
	}
	// Still dead: no change (no unclean election).
	if _, changed := nextPartitionState(down, []int32{2}, map[int32]bool{1: true}, 5); changed {
		t.Fatal("leaderless partition changed while its replica is dead")
	}
	// It returns: leads again, epoch+1.
	up, changed := nextPartitionState(down, []int32{2}, map[int32]bool{1: true, 2: true}, 6)
	if want := (leaderAndISR{Leader: 2, LeaderEpoch: 5, ControllerEpoch: 6, ISR: []int32{2}}); !changed || !up.equal(want) {
		t.Fatalf("replica back: %+v (changed %v), want %+v", up, changed, want)
	}
	// Two ISR replicas: the next live one takes over and the dead leader leaves the ISR.
	two := leaderAndISR{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}}
	moved, changed := nextPartitionState(two, []int32{1, 2}, map[int32]bool{2: true}, 7)
	if want := (leaderAndISR{Leader: 2, LeaderEpoch: 1, ControllerEpoch: 7, ISR: []int32{2}}); !changed || !moved.equal(want) {
		t.Fatalf("failover to second replica: %+v, want %+v", moved, want)
	}
}
