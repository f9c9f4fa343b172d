package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// FID-ORDER: the coordinator's answers are applied in the order they arrive on the coordinator
// connection, each judged against the generation its request carried; an error of an older
// generation (a Heartbeat, OffsetCommit or LeaveGroup sent before, and answered after, a
// JoinGroup/SyncGroup round) is dropped, as AbstractCoordinator's handlers do.

// coordScript scripts an interleaving of one consumer's coordinator requests through
// Config.coordHook: a hold makes the first matching request block at a step until released, and
// every step taken is recorded.
type coordScript struct {
	mu    sync.Mutex
	holds []*coordHold
	steps []scriptedStep
}

type scriptedStep struct {
	step coordStep
	key  kmsg.Key
	sent generation
}

// coordHold is one armed hold: reached is closed when a request blocks on it (sent is then its
// generation), release lets it go on.
type coordHold struct {
	step    coordStep
	key     kmsg.Key
	match   func(generation) bool
	taken   bool
	sent    generation
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *coordScript) hook(step coordStep, key kmsg.Key, sent generation) {
	s.mu.Lock()
	s.steps = append(s.steps, scriptedStep{step, key, sent})
	var h *coordHold
	for _, x := range s.holds {
		if !x.taken && x.step == step && x.key == key && (x.match == nil || x.match(sent)) {
			h, x.taken, x.sent = x, true, sent
			break
		}
	}
	s.mu.Unlock()
	if h != nil {
		close(h.reached)
		<-h.release
	}
}

// hold arms a hold on the next request of key (whose generation satisfies match, if not nil) at step.
// The test's cleanup releases it, whatever happened.
func (s *coordScript) hold(t *testing.T, step coordStep, key kmsg.Key, match func(generation) bool) *coordHold {
	h := &coordHold{step: step, key: key, match: match, reached: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	t.Cleanup(h.let)
	return h
}

func (h *coordHold) let() { h.once.Do(func() { close(h.release) }) }

// wait blocks until a request is held (or fails the test after d) and returns its generation.
func (h *coordHold) wait(t *testing.T, d time.Duration) generation {
	t.Helper()
	select {
	case <-h.reached:
		return h.sent
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for a %s request at step %d", d, h.key.Name(), h.step)
		return generation{}
	}
}

// took reports whether a request of key sent with gen reached one of steps.
func (s *coordScript) took(key kmsg.Key, gen generation, steps ...coordStep) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.steps {
		for _, st := range steps {
			if x.key == key && x.sent == gen && x.step == st {
				return true
			}
		}
	}
	return false
}

// TestFIDOrderStaleAnswerAfterRound: for each pairing of a Heartbeat, OffsetCommit or LeaveGroup
// with a JoinGroup or SyncGroup answer, the member's request of the older generation is written
// after the round's request (the consumer's goroutines race so; the script makes it so), the real
// coordinator answers it with ILLEGAL_GENERATION (UNKNOWN_MEMBER_ID for the LeaveGroup of a removed
// member id), and that answer is read after the round's. The round's answer is held at the moment it
// was read, until the stale answer has been read too and is applied or waits for its turn: so a
// consumer that applies answers in goroutine order applies the stale one first. The stale answer
// must be ignored: the round completes (the member ends in the round's generation, no round
// discarded, one rebalance of one attempt), nothing is given away as lost, and the stale commit is
// reported as Kafka does (RebalanceInProgressException mid-round, CommitFailedException after).
func TestFIDOrderStaleAnswerAfterRound(t *testing.T) {
	bootstrap := startCluster(t, "t", 4, 3, 0)
	for _, tc := range []struct {
		stale kmsg.Key // the request of the older generation
		round kmsg.Key // the answer it is read after
	}{
		{kmsg.Heartbeat, kmsg.JoinGroup},
		{kmsg.Heartbeat, kmsg.SyncGroup},
		{kmsg.OffsetCommit, kmsg.JoinGroup},
		{kmsg.OffsetCommit, kmsg.SyncGroup},
		{kmsg.LeaveGroup, kmsg.JoinGroup},
		{kmsg.LeaveGroup, kmsg.SyncGroup},
	} {
		t.Run(tc.stale.Name()+"After"+tc.round.Name(), func(t *testing.T) {
			group := "order-" + tc.stale.Name() + "-" + tc.round.Name()
			col := &timeline.Collector{}
			s := &coordScript{}
			props := map[string]string{"group.id": group, "partition.assignment.strategy": "range",
				"enable.auto.commit": "false", "session.timeout.ms": "10000", "heartbeat.interval.ms": "300"}
			if tc.stale == kmsg.LeaveGroup {
				// The LeaveGroup is the heartbeat thread's, when the application stops polling.
				props["max.poll.interval.ms"] = "3000"
			}
			m := startMember(t, "m", bootstrap, "t", col, props, func(c *Config) { c.coordHook = s.hook })
			dumpOnFailure(t, col, m)
			waitFor(t, 30*time.Second, "m alone owning 4 partitions", func() bool { return groupStable([]*member{m}, 4) })
			gen0, id0, owned := m.c.Generation(), m.c.MemberID(), m.c.Assignment()
			since := time.Now().UnixMilli()

			// The stale request takes its generation, and waits.
			var commitErr chan error
			var stale *coordHold
			switch tc.stale {
			case kmsg.Heartbeat:
				stale = s.hold(t, stepSend, kmsg.Heartbeat, nil)
			case kmsg.OffsetCommit:
				stale = s.hold(t, stepSend, kmsg.OffsetCommit, nil)
				offsets := map[TopicPartition]int64{}
				for _, tp := range owned {
					offsets[tp] = 1
				}
				commitErr = make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					commitErr <- m.c.CommitSync(ctx, offsets)
				}()
			case kmsg.LeaveGroup:
				stale = s.hold(t, stepSend, kmsg.LeaveGroup, nil)
				m.paused.Store(true)
			}
			sent := stale.wait(t, 20*time.Second)
			if sent.memberID != id0 || (tc.stale != kmsg.LeaveGroup && sent.id != gen0) {
				t.Fatalf("the held %s carries %+v, want member %s generation %d", tc.stale.Name(), sent, id0, gen0)
			}

			// The round: its answer is read, and held before it is applied. The round of interest
			// is the one sent with a member id (after a poll timeout, the first JoinGroup has none
			// and is answered MEMBER_ID_REQUIRED).
			round := s.hold(t, stepAnswered, tc.round, func(g generation) bool { return g.memberID != "" })
			if tc.stale == kmsg.LeaveGroup {
				m.paused.Store(false)
			} else {
				m.c.EnforceRebalance("FID-ORDER")
			}
			roundGen := round.wait(t, 30*time.Second)

			// The stale request goes out after the round's, is answered, and is applied or waits.
			stale.let()
			waitFor(t, 20*time.Second, "the stale "+tc.stale.Name()+" answered and applied or queued", func() bool {
				return s.took(tc.stale, sent, stepApplied, stepQueued)
			})
			round.let()

			want := "ILLEGAL_GENERATION"
			if tc.stale == kmsg.LeaveGroup {
				want = "UNKNOWN_MEMBER_ID"
			}
			waitFor(t, 30*time.Second, "m stable again, the stale answer applied", func() bool {
				return groupStable([]*member{m}, 4) && s.took(tc.stale, sent, stepApplied)
			})
			var staleErrs []string
			for _, r := range groupRequestsAfter(col, "m", tc.stale.Name(), since) {
				staleErrs = append(staleErrs, r.Err)
			}
			if tc.stale != kmsg.Heartbeat && (len(staleErrs) != 1 || staleErrs[0] != want) {
				t.Fatalf("%s answers %q, want exactly one %s: the scripted order did not happen", tc.stale.Name(), staleErrs, want)
			}
			if tc.stale == kmsg.Heartbeat && !containsString(staleErrs, want) {
				t.Fatalf("Heartbeat answers %q, none %s: the scripted order did not happen", staleErrs, want)
			}
			if n := m.c.DiscardedRounds(); n != 0 {
				t.Fatalf("m discarded %d round results of the current generation", n)
			}
			// The round the member was in when the stale answer came is the one it completes.
			if tc.stale != kmsg.LeaveGroup {
				if got := m.c.Generation(); got != gen0+1 {
					t.Fatalf("m ends in generation %d, want %d (the round of %d it was in)", got, gen0+1, gen0)
				}
				if calls, _ := m.snapshot(); containsPrefix(calls, "lost") {
					t.Fatalf("m gave partitions away as lost: %v", calls)
				}
			} else if roundGen.memberID != m.c.MemberID() {
				t.Fatalf("m's member id %s, want %s (the round it was in)", m.c.MemberID(), roundGen.memberID)
			}
			ends := recordsAfter(col, "m", timeline.RebalanceEnd, since)
			begins := recordsAfter(col, "m", timeline.RebalanceBegin, since)
			okEnds := 0
			for _, r := range ends {
				if *r.OK {
					okEnds++
				}
			}
			// After a poll timeout the first JoinGroup is answered MEMBER_ID_REQUIRED: a failed first attempt.
			oneAttempt := tc.stale == kmsg.LeaveGroup || (len(ends) == 1 && ends[0].Attempt == 1)
			if len(begins) != 1 || okEnds != 1 || !oneAttempt {
				t.Fatalf("m's rebalances since the script began: %d begins, ends %+v; want one, ending ok at attempt 1", len(begins), ends)
			}
			if commitErr != nil {
				err := <-commitErr
				wantErr := ErrRebalanceInProgress
				if tc.round == kmsg.SyncGroup {
					wantErr = ErrCommitFailed
				}
				if !errors.Is(err, wantErr) {
					t.Fatalf("the stale CommitSync: %v, want %v", err, wantErr)
				}
			}
			if n := len(recordsAfter(col, "m", timeline.Error, since)); n != 0 {
				t.Fatalf("m wrote %d error records: %v", n, fmt.Sprint(recordsAfter(col, "m", timeline.Error, since)))
			}
		})
	}
}
