package replica

import (
	"math/rand"
	"slices"
	"testing"
)

const (
	t0  int64 = 1_700_000_000_000 // a real clock's milliseconds, as Kafka's MockTime starts at
	lag int64 = 10_000
)

// newTestLeader: broker 1 leads replicas 1,2,3 at leader epoch 5, partition epoch 1.
func newTestLeader(isr []int32, leo, hw int64) *Leader {
	return NewLeader(1, []int32{1, 2, 3}, State{Leader: 1, LeaderEpoch: 5, ISR: isr, PartitionEpoch: 1}, leo, hw, lag, t0)
}

// Replica.updateFetchStateOrThrow / ReplicaState.isCaughtUp, values of Kafka 3.9 ReplicaTest
// testIsCaughtUpWhenReplicaIsCaughtUpToLogEndOffset and testIsCaughtUpWhenReplicaIsNotCaughtUpToLogEndOffset.
func TestCaughtUpReplicaTest(t *testing.T) {
	// testIsCaughtUpWhenReplicaIsCaughtUpToLogEndOffset: fetch at 10 with leader LEO 10 is caught
	// up, and stays caught up past the lag time as long as its LEO equals the leader's.
	l := newTestLeader([]int32{1}, 10, 0)
	f := l.followers[2]
	if l.caughtUp(f, t0) {
		t.Fatal("caught up before any fetch")
	}
	l.FollowerFetch(2, 10, 10, t0)
	if !l.caughtUp(f, t0) || !l.caughtUp(f, t0+lag+1) {
		t.Fatal("LEO == leader LEO must be caught up")
	}

	// testIsCaughtUpWhenReplicaIsNotCaughtUpToLogEndOffset.
	l = newTestLeader([]int32{1}, 10, 0)
	f = l.followers[2]
	l.FollowerFetch(2, 5, 10, t0)
	if l.caughtUp(f, t0) || f.lastCaughtUpTimeMs != 0 {
		t.Fatalf("fetch 5 of 10: caught up (lastCaughtUp %d)", f.lastCaughtUpTimeMs)
	}
	l.FollowerFetch(2, 10, 15, t0) // reached the LEO of its previous fetch: caught up as of then
	l.Appended(16, t0)
	if !l.caughtUp(f, t0) || f.lastCaughtUpTimeMs != t0 {
		t.Fatalf("fetch 10 after 10: lastCaughtUp %d, want %d", f.lastCaughtUpTimeMs, t0)
	}
	if l.caughtUp(f, t0+lag+1) {
		t.Fatal("still caught up lag+1 ms later")
	}
	if !l.caughtUp(f, t0+lag) {
		t.Fatal("not caught up exactly lag ms later (isCaughtUp uses <=)")
	}
}

// lastCaughtUpTime after fetch sequences (updateFetchStateOrThrow's three branches).
func TestLastCaughtUpTime(t *testing.T) {
	type fetch struct{ off, leaderLEO, now int64 }
	for _, tc := range []struct {
		name    string
		inISR   bool
		fetches []fetch
		want    int64
	}{
		{"never fetched, ISR: reset to now", true, nil, t0},
		{"never fetched, not ISR: 0", false, nil, 0},
		{"at leader LEO", false, []fetch{{10, 10, t0 + 5}}, t0 + 5},
		{"behind first fetch: unchanged", true, []fetch{{5, 10, t0 + 5}}, t0},
		{"reached previous leader LEO: previous fetch time", false, []fetch{{5, 10, t0 + 5}, {10, 12, t0 + 9}}, t0 + 5},
		{"short of previous leader LEO: unchanged", false, []fetch{{5, 10, t0 + 5}, {9, 12, t0 + 9}}, 0},
		{"lastFetchLeaderLogEndOffset keeps the max over a stale leader LEO", false, []fetch{{5, 10, t0 + 5}, {7, 8, t0 + 6}, {9, 12, t0 + 9}}, 0},
		{"never moves back", false, []fetch{{10, 10, t0 + 9}, {10, 12, t0 + 7}}, t0 + 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isr := []int32{1, 3}
			if tc.inISR {
				isr = []int32{1, 2, 3}
			}
			l := newTestLeader(isr, 10, 0)
			for _, f := range tc.fetches {
				l.FollowerFetch(2, f.off, f.leaderLEO, f.now)
			}
			if got := l.followers[2].lastCaughtUpTimeMs; got != tc.want {
				t.Fatalf("lastCaughtUpTime %d, want %d", got, tc.want)
			}
		})
	}
}

// maybeIncrementLeaderHW over event sequences (PartitionTest testUpdateFollowerFetchState,
// testHighWatermarkIncreasesWithFollowerLogEndOffset-like; shouldWaitForReplicaToJoinIsr; KIP-966 min ISR).
func TestHighWatermark(t *testing.T) {
	type ev struct {
		kind     byte // 'a' append, 'f' fetch, 'd' AlterPartitionDone code, 't' tick
		r        int32
		off, now int64
		wantHW   int64
	}
	for _, tc := range []struct {
		name   string
		isr    []int32
		minISR int
		leo    int64
		evs    []ev
	}{
		{"ISR followers hold it until they fetch", []int32{1, 2, 3}, 1, 10, []ev{
			{'a', 0, 12, t0, 0},
			{'f', 2, 10, t0 + 1, 0},  // 3 has not fetched (-1)
			{'f', 3, 8, t0 + 2, 8},   // min(12, 10, 8)
			{'f', 2, 12, t0 + 3, 8},  //
			{'f', 3, 12, t0 + 4, 12}, //
			{'a', 0, 13, t0 + 5, 12},
		}},
		{"leader alone", []int32{1}, 1, 10, []ev{{'a', 0, 15, t0 + lag + 1, 15}}},
		{"under min ISR: does not move (Kafka 3.9 isUnderMinIsr)", []int32{1}, 2, 10, []ev{{'a', 0, 15, t0 + lag + 1, 10}}}, // 10 from NewLeader, before SetMinISR
		{"min ISR above replicas counts as replicas", []int32{1, 2, 3}, 5, 10, []ev{
			{'f', 2, 10, t0, 0}, {'f', 3, 10, t0, 10}}},
		{"caught-up follower outside ISR holds it until lag elapsed; unchanged fetch does not recompute", []int32{1, 2}, 1, 10, []ev{
			{'f', 3, 10, t0, 0},        // proposes adding 3
			{'d', 0, 55, t0, 0},        // OPERATION_NOT_ATTEMPTED: 3 is back outside the ISR
			{'a', 0, 20, t0, 0},        //
			{'f', 2, 20, t0 + lag, 10}, // 3 caught up at t0, still within lag: holds at its 10
			{'f', 2, 20, t0 + lag + 1, 10},
			{'a', 0, 21, t0 + lag + 1, 20},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLeader(tc.isr, tc.leo, 0)
			l.SetMinISR(tc.minISR)
			l.advanceHW(t0)
			for i, e := range tc.evs {
				switch e.kind {
				case 'a':
					l.Appended(e.off, e.now)
				case 'f':
					l.FollowerFetch(e.r, e.off, l.LogEndOffset(), e.now)
				case 'd':
					l.AlterPartitionDone(int16(e.off), State{}, e.now)
				}
				if l.HighWatermark() != e.wantHW {
					t.Fatalf("event %d %c: HW %d, want %d", i, e.kind, l.HighWatermark(), e.wantHW)
				}
			}
		})
	}
}

// Partition.maybeShrinkIsr / getOutOfSyncReplicas at the replica.lag.time.max.ms boundary
// (PartitionTest testMaybeShrinkIsr / testIsrNotShrunkIfUpdateFails-like).
func TestShrinkBoundary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leo2    int64 // follower 2's fetch at t0 (-1: none)
		append  int64 // leader LEO after t0 (0: none)
		now     int64
		wantISR []int32 // nil: no proposal
	}{
		{"exactly at lag: nobody out", 10, 0, t0 + lag, nil},
		{"lag+1: silent 3 out, 2 at leader LEO stays", 10, 0, t0 + lag + 1, []int32{1, 2}},
		{"lag+1 after an append: both out", 10, 20, t0 + lag + 1, []int32{1}},
		{"lag after an append: both in", 10, 20, t0 + lag, nil},
		{"neither fetched, lag+1", -1, 0, t0 + lag + 1, []int32{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLeader([]int32{1, 2, 3}, 10, 10)
			if tc.leo2 >= 0 {
				l.FollowerFetch(2, tc.leo2, 10, t0)
			}
			if tc.append > 0 {
				l.Appended(tc.append, t0+1)
			}
			a := l.Tick(tc.now)
			if tc.wantISR == nil {
				if a != nil || l.Inflight() != nil {
					t.Fatalf("proposed %v", a.NewISR)
				}
				return
			}
			if a == nil || !slices.Equal(a.NewISR, tc.wantISR) || a.LeaderEpoch != 5 || a.PartitionEpoch != 1 {
				t.Fatalf("proposal %+v, want ISR %v at epochs 5/1", a, tc.wantISR)
			}
			// In flight: the maximal ISR is still the committed one, and no second request.
			if !slices.Equal(l.MaximalISR(), []int32{1, 2, 3}) || l.Tick(tc.now+lag) != nil || len(l.OutOfSync(tc.now+lag)) != 0 {
				t.Fatal("a shrink in flight must keep the committed ISR and block another request")
			}
		})
	}
}

// An ISR member that is not a replica is out of sync (isFollowerOutOfSync: getReplica(..).fold(true)).
func TestShrinkRemovesNonReplica(t *testing.T) {
	l := NewLeader(1, []int32{1, 2}, State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 9}, PartitionEpoch: 1}, 10, 0, lag, t0)
	if a := l.Tick(t0); a == nil || !slices.Equal(a.NewISR, []int32{1, 2}) {
		t.Fatalf("proposal %+v, want [1 2]", a)
	}
}

// Partition.maybeExpandIsr / isFollowerInSync: LEO >= HW and >= leader epoch start offset
// (PartitionTest testIsrExpansion / testIsrNotExpandedIfReplicaIsFencedOrShutdown-like).
func TestExpand(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, 5, 0) // epoch start offset 5
	l.Appended(10, t0)
	l.FollowerFetch(2, 8, 10, t0) // HW 8
	if l.HighWatermark() != 8 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	for _, off := range []int64{4, 5, 7} { // below HW (or epoch start)
		if a, _ := l.FollowerFetch(3, off, 10, t0+1); a != nil {
			t.Fatalf("fetch %d proposed %v", off, a.NewISR)
		}
	}
	a, _ := l.FollowerFetch(3, 8, 10, t0+2)
	if a == nil || !slices.Equal(a.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("fetch at HW: proposal %+v", a)
	}
	// In flight: the maximal ISR has 3, the committed ISR does not; 3 now holds the HW.
	if !slices.Equal(l.MaximalISR(), []int32{1, 2, 3}) || l.ISRSize() != 2 {
		t.Fatalf("maximal %v committed size %d", l.MaximalISR(), l.ISRSize())
	}
	l.FollowerFetch(2, 10, 10, t0+3)
	if l.HighWatermark() != 8 {
		t.Fatalf("HW %d, want 8 (held by 3 in the maximal ISR)", l.HighWatermark())
	}
	if a := l.Tick(t0 + 3*lag); a != nil {
		t.Fatal("a shrink while an expand is in flight")
	}
	if !l.AlterPartitionDone(0, State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}, PartitionEpoch: 2}, t0+4) && l.HighWatermark() != 8 {
		t.Fatal()
	}
	if st := l.State(); !slices.Equal(st.ISR, []int32{1, 2, 3}) || st.PartitionEpoch != 2 || l.Inflight() != nil {
		t.Fatalf("state %+v inflight %v", st, l.Inflight())
	}

	// Epoch start offset: a follower at the HW but below the epoch start does not join.
	l = newTestLeader([]int32{1, 2}, 10, 6)
	if a, _ := l.FollowerFetch(3, 8, 10, t0); a != nil {
		t.Fatalf("LEO 8 < epoch start 10 proposed %v", a.NewISR)
	}
}

// Partition.submitAlterPartition's callback: handleAlterPartitionUpdate / handleAlterPartitionError
// (PartitionTest testAlterIsrUnknownTopic, testAlterIsrInvalidVersion, testAlterIsrUnexpectedError,
// testIsrNotExpandedIfUpdateFails, testAlterIsrNewLeaderElected-like).
func TestAlterPartitionDone(t *testing.T) {
	ok := func(isr []int32, le, pe int32) State {
		return State{Leader: 1, LeaderEpoch: le, ISR: isr, PartitionEpoch: pe}
	}
	for _, tc := range []struct {
		name         string
		code         int16
		st           State
		wantInflight bool
		wantISR      []int32
		wantPE       int32
	}{
		{"accepted, newer partition epoch", 0, ok([]int32{1, 2, 3}, 5, 2), false, []int32{1, 2, 3}, 2},
		{"accepted, same partition epoch (no-op on the controller)", 0, ok([]int32{1, 2, 3}, 5, 1), false, []int32{1, 2, 3}, 1},
		{"success with stale leader epoch: ignored, stays pending", 0, ok([]int32{1, 2, 3}, 4, 2), true, []int32{1, 2}, 1},
		{"success with newer leader epoch: ignored, stays pending", 0, ok([]int32{1, 2, 3}, 6, 2), true, []int32{1, 2}, 1},
		{"success with older partition epoch: ignored, stays pending", 0, ok([]int32{1, 2, 3}, 5, 0), true, []int32{1, 2}, 1},
		{"OPERATION_NOT_ATTEMPTED: back to committed", ErrOperationNotAttempted, State{}, false, []int32{1, 2}, 1},
		{"INELIGIBLE_REPLICA: back to committed", ErrIneligibleReplica, State{}, false, []int32{1, 2}, 1},
		{"UNKNOWN_TOPIC_OR_PARTITION: stays pending", ErrUnknownTopicOrPartition, State{}, true, []int32{1, 2}, 1},
		{"FENCED_LEADER_EPOCH: stays pending", ErrFencedLeaderEpoch, State{}, true, []int32{1, 2}, 1},
		{"INVALID_UPDATE_VERSION: stays pending", ErrInvalidUpdateVersion, State{}, true, []int32{1, 2}, 1},
		{"UNKNOWN_TOPIC_ID: stays pending", ErrUnknownTopicID, State{}, true, []int32{1, 2}, 1},
		{"INVALID_REQUEST: stays pending", ErrInvalidRequest, State{}, true, []int32{1, 2}, 1},
		{"NEW_LEADER_ELECTED: stays pending", ErrNewLeaderElected, State{}, true, []int32{1, 2}, 1},
		{"unexpected error (REQUEST_TIMED_OUT): retried, stays in flight", 7, State{}, true, []int32{1, 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLeader([]int32{1, 2}, 10, 0)
			if a, _ := l.FollowerFetch(3, 10, 10, t0); a == nil {
				t.Fatal("no expand")
			}
			l.AlterPartitionDone(tc.code, tc.st, t0+1)
			if RetryAlterPartition(tc.code) != (tc.code == 7) {
				t.Fatalf("RetryAlterPartition(%d) = %v", tc.code, RetryAlterPartition(tc.code))
			}
			st := l.State()
			if (l.Inflight() != nil) != tc.wantInflight || !slices.Equal(st.ISR, tc.wantISR) || st.PartitionEpoch != tc.wantPE {
				t.Fatalf("inflight %v ISR %v PE %d; want inflight %v ISR %v PE %d", l.Inflight(), st.ISR, st.PartitionEpoch, tc.wantInflight, tc.wantISR, tc.wantPE)
			}
			if tc.wantInflight {
				if in := l.Inflight(); !slices.Equal(in.NewISR, []int32{1, 2, 3}) || !slices.Equal(l.MaximalISR(), []int32{1, 2, 3}) {
					t.Fatalf("pending request %v maximal %v", in.NewISR, l.MaximalISR())
				}
			}
		})
	}
	// An answer with nothing in flight is ignored.
	l := newTestLeader([]int32{1, 2}, 10, 0)
	if l.AlterPartitionDone(0, ok([]int32{1}, 5, 7), t0); !slices.Equal(l.State().ISR, []int32{1, 2}) {
		t.Fatal("answer without a request installed")
	}
}

// Partition.makeLeader while leading: partition epoch older ignored, equal or newer replaces the
// pending state; a newer leader epoch resets the followers and the epoch start offset.
func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		st           State
		applied      bool
		wantInflight bool
	}{
		{"older partition epoch", State{1, 5, []int32{1}, 0}, false, true},
		{"older leader epoch", State{1, 4, []int32{1}, 3}, false, true},
		{"same partition epoch drops pending", State{1, 5, []int32{1, 2}, 1}, true, false},
		{"newer partition epoch", State{1, 5, []int32{1, 2, 3}, 2}, true, false},
		{"newer leader epoch", State{1, 6, []int32{1, 2}, 2}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLeader([]int32{1, 2}, 10, 0)
			l.FollowerFetch(3, 10, 10, t0)
			l.Update(tc.st, t0+1)
			if (l.Inflight() != nil) != tc.wantInflight {
				t.Fatalf("inflight %v", l.Inflight())
			}
			st := l.State()
			if tc.applied != (st.PartitionEpoch == tc.st.PartitionEpoch && st.LeaderEpoch == tc.st.LeaderEpoch && slices.Equal(st.ISR, tc.st.ISR)) {
				t.Fatalf("state %+v after %+v", st, tc.st)
			}
		})
	}
	// New leader epoch: the epoch start offset is the LEO then; followers reset.
	l := newTestLeader([]int32{1, 2}, 10, 0)
	l.FollowerFetch(2, 10, 10, t0)
	l.Appended(20, t0+1)
	l.Update(State{1, 6, []int32{1, 2}, 2}, t0+2)
	if l.epochStartOffset != 20 {
		t.Fatalf("epoch start %d", l.epochStartOffset)
	}
	f2, f3 := l.followers[2], l.followers[3]
	if f2.logEndOffset != 10 || f2.lastCaughtUpTimeMs != t0+2 || f2.lastFetchLeaderLEO != 20 || f3.lastCaughtUpTimeMs != 0 {
		t.Fatalf("reset: %+v %+v", *f2, *f3)
	}
	if a, _ := l.FollowerFetch(3, 15, 20, t0+3); a != nil { // below the new epoch start
		t.Fatal("expanded below the epoch start")
	}
}

// Partition.checkEnoughReplicasReachOffset (PartitionTest testAcksAll... / NOT_ENOUGH_REPLICAS_AFTER_APPEND).
func TestAcksAll(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, 10, 0)
	if done, _ := l.AcksAllCode(10, 2); done {
		t.Fatal("done below HW")
	}
	l.FollowerFetch(2, 10, 10, t0)
	if done, code := l.AcksAllCode(10, 2); !done || code != 0 {
		t.Fatalf("%v %d", done, code)
	}
	if done, code := l.AcksAllCode(10, 3); !done || code != 20 {
		t.Fatalf("minISR 3 over maximal ISR 2: %v %d, want true 20", done, code)
	}
	l.FollowerFetch(3, 10, 10, t0) // expand in flight: maximal ISR 3
	if done, code := l.AcksAllCode(10, 3); !done || code != 0 {
		t.Fatalf("maximal ISR 3: %v %d", done, code)
	}
	if l.ISRSize() != 2 {
		t.Fatal("ISRSize counts the committed ISR")
	}
	// effectiveMinIsr: min.insync.replicas 5 on 3 replicas is 3.
	if done, code := l.AcksAllCode(10, 5); !done || code != 0 || l.EffectiveMinISR(5) != 3 {
		t.Fatalf("minISR 5 over 3 replicas: %v %d", done, code)
	}
	l.Update(State{1, 5, []int32{1}, 3}, t0+1)
	if done, code := l.AcksAllCode(10, 5); !done || code != 20 {
		t.Fatalf("ISR [1], minISR 5 over 3 replicas: %v %d, want true 20", done, code)
	}
}

// Randomized: a leader and followers 2 (fetches to the end) and 3 (stops), random appends, time,
// and controller answers (accepted / OPERATION_NOT_ATTEMPTED / retriable error / delayed / newer state).
func TestLeaderRandomized(t *testing.T) {
	removals := 0
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ctrl := State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}, PartitionEpoch: 1}
		now := t0
		l := NewLeader(1, []int32{1, 2, 3}, ctrl, 0, 0, lag, now)
		fleo := map[int32]int64{2: 0, 3: 0}
		stop3 := 100 + rng.Intn(200)
		steps := stop3 + 400
		hw := l.HighWatermark()
		last3 := now
		check := func(step int, what string) {
			if l.HighWatermark() < hw {
				t.Fatalf("seed %d step %d %s: HW %d went back from %d", seed, step, what, l.HighWatermark(), hw)
			}
			hw = l.HighWatermark()
			if hw > l.LogEndOffset() {
				t.Fatalf("seed %d step %d: HW %d > LEO %d", seed, step, hw, l.LogEndOffset())
			}
			for _, r := range l.MaximalISR() {
				if r != 1 {
					if e := l.FollowerLogEndOffset(r); e >= 0 && hw > e {
						t.Fatalf("seed %d step %d: HW %d > LEO %d of maximal ISR member %d", seed, step, hw, e, r)
					}
				}
			}
			if a := l.Inflight(); a != nil && slices.Contains(l.state.ISR, 2) && !slices.Contains(a.NewISR, 2) {
				t.Fatalf("seed %d step %d: proposed removing 2, which keeps fetching: %v", seed, step, a.NewISR)
			}
		}
		answer := func(all bool) {
			if l.Inflight() == nil {
				return
			}
			k := rng.Intn(7)
			if all {
				k = 0
			}
			switch k {
			case 0, 1:
				ctrl.ISR = slices.Clone(l.Inflight().NewISR)
				ctrl.PartitionEpoch++
				l.AlterPartitionDone(0, ctrl, now)
			case 2:
				l.AlterPartitionDone(ErrOperationNotAttempted, State{}, now)
			case 3:
				l.AlterPartitionDone(7, State{}, now) // retried: still in flight
			case 4:
				l.Update(ctrl, now) // the controller's committed state supersedes the request
			case 5:
				l.AlterPartitionDone(ErrInvalidUpdateVersion, State{}, now) // pending until an Update
			}
		}
		for step := 0; step < steps; step++ {
			before := l.Inflight() != nil
			switch rng.Intn(4) {
			case 0:
				l.Appended(l.LogEndOffset()+int64(rng.Intn(5)), now)
			case 1:
				answer(step > steps-100)
			}
			check(step, "append/answer")
			for _, r := range []int32{2, 3} {
				if r == 3 && step >= stop3 {
					continue
				}
				if r == 3 && rng.Intn(3) == 0 {
					continue
				}
				leo := l.LogEndOffset()
				before := l.Inflight() != nil
				a, _ := l.FollowerFetch(r, fleo[r], leo, now)
				if a != nil && before {
					t.Fatalf("seed %d: second request in flight", seed)
				}
				fleo[r] = leo
				if r == 3 {
					last3 = now
				}
				check(step, "fetch")
			}
			now += rng.Int63n(lag / 4)
			before = l.Inflight() != nil
			in3 := slices.Contains(l.State().ISR, 3)
			a := l.Tick(now)
			if a != nil && before {
				t.Fatalf("seed %d: second request in flight", seed)
			}
			// 3's lastCaughtUpTime is at most its last fetch time: more than lag after it, and
			// behind the leader, it must be proposed for removal as soon as nothing is in flight.
			if !before && in3 && now-last3 > lag && l.FollowerLogEndOffset(3) < l.LogEndOffset() &&
				(a == nil || slices.Contains(a.NewISR, 3)) {
				t.Fatalf("seed %d step %d: 3 silent for %d ms and behind, not proposed for removal (%+v)", seed, step, now-last3, a)
			}
			if a != nil {
				removals++
			}
			check(step, "tick")
		}
		if slices.Contains(l.State().ISR, 3) || !slices.Contains(l.State().ISR, 2) {
			t.Fatalf("seed %d: final ISR %v, want 2 kept and 3 removed", seed, l.State().ISR)
		}
	}
	if removals < 200 {
		t.Fatalf("only %d shrink proposals over 200 runs", removals)
	}
}

// shouldWaitForReplicaToJoinIsr has no "has fetched" condition: a never-fetched follower outside the
// ISR whose lastCaughtUpTime (0) is within the lag time of now holds the HW at its unknown LEO.
func TestHighWatermarkUnfetchedCaughtUpFollower(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 1}, 10, 0, lag, lag)
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d at now=lag, want 0 (2 and 3 count as caught up)", l.HighWatermark())
	}
	l.Appended(11, lag+1)
	if l.HighWatermark() != 11 {
		t.Fatalf("HW %d at now=lag+1, want 11", l.HighWatermark())
	}
}

// maybeShrinkIsr calls maybeIncrementLeaderHW after preparing the shrink.
func TestTickAdvancesHW(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, 10, 0)
	l.FollowerFetch(3, 5, 10, t0)  // outside the ISR, behind: not a join candidate
	l.FollowerFetch(3, 10, 10, t0) // caught up at t0, proposes joining
	l.AlterPartitionDone(ErrOperationNotAttempted, State{}, t0)
	l.Appended(20, t0)
	l.FollowerFetch(2, 20, 20, t0+1) // HW held at 10 by 3 (caught up, waiting to join)
	if l.HighWatermark() != 10 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	l.Update(State{1, 5, []int32{1, 2}, 1}, t0+1)
	// Make 2 out of sync so Tick proposes a shrink; the recomputation then drops 3's hold.
	l.Appended(30, t0+2)
	if a := l.Tick(t0 + lag + 2); a == nil || !slices.Equal(a.NewISR, []int32{1}) {
		t.Fatalf("proposal %+v", a)
	}
	if l.HighWatermark() != 20 {
		t.Fatalf("HW after Tick %d, want 20", l.HighWatermark())
	}
}

// TestDeadReplicaNeitherHoldsHWNorJoins: in ZooKeeper mode a replica is ISR-eligible only while its
// broker is alive (Partition.isReplicaIsrEligible: metadataCache.hasAliveBroker). A caught-up follower
// outside the ISR holds the high watermark back (it is about to join); once its broker is gone it does
// not, and it is not proposed for the ISR. The case a CI run met: broker 3, taken out of the ISR by
// its controlled shutdown, fetched once more; the leader proposed it back, the controller refused
// (OPERATION_NOT_ATTEMPTED), and an acks=all produce waited on broker 3 until it timed out.
func TestDeadReplicaNeitherHoldsHWNorJoins(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, 5, 5)
	l.FollowerFetch(2, 5, 5, t0)
	if a, _ := l.FollowerFetch(3, 5, 5, t0); a == nil || !slices.Equal(a.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("caught-up follower 3: proposal %+v, want ISR [1 2 3]", a)
	}
	l.AlterPartitionDone(ErrOperationNotAttempted, State{}, t0+1) // broker 3 is shutting down
	l.Appended(6, t0+2)
	if _, moved := l.FollowerFetch(2, 6, 6, t0+3); moved || l.HighWatermark() != 5 {
		t.Fatalf("HW %d (moved %v): follower 3, caught up at 5 and alive, must hold it at 5", l.HighWatermark(), moved)
	}
	if !l.Alive(map[int32]bool{1: true, 2: true}, t0+4) || l.HighWatermark() != 6 {
		t.Fatalf("broker 3 gone: HW %d, want 6 (the ISR [1 2] has 6)", l.HighWatermark())
	}
	if a, _ := l.FollowerFetch(3, 6, 6, t0+5); a != nil {
		t.Fatalf("broker 3 is not alive: proposal %+v, want none", a)
	}
	if l.Alive(map[int32]bool{1: true, 2: true}, t0+6) {
		t.Fatal("the same live set again: the high watermark cannot move")
	}
	// Back: eligible again, and (caught up) proposed for the ISR on its next fetch.
	l.Alive(map[int32]bool{1: true, 2: true, 3: true}, t0+7)
	if a, _ := l.FollowerFetch(3, 6, 6, t0+8); a == nil || !slices.Equal(a.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("broker 3 alive again: proposal %+v, want ISR [1 2 3]", a)
	}
}
