package newconsumer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
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
	testutil.Needs(t, testutil.ZooKeeper)
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
			testutil.WaitFor(t, 30*time.Second, "m alone owning 4 partitions", func() bool { return groupStable([]*member{m}, 4) })
			gen0, id0, owned := m.c.Generation(), m.c.MemberID(), m.c.Assignment()
			since := col.Mark()

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
				m.pause()
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
				m.resume()
			} else {
				m.c.EnforceRebalance("FID-ORDER")
			}
			roundGen := round.wait(t, 30*time.Second)

			// The stale request goes out after the round's, is answered, and is applied or waits.
			stale.let()
			testutil.WaitFor(t, 20*time.Second, "the stale "+tc.stale.Name()+" answered and applied or queued", func() bool {
				return s.took(tc.stale, sent, stepApplied, stepQueued)
			})
			round.let()

			want := "ILLEGAL_GENERATION"
			if tc.stale == kmsg.LeaveGroup {
				want = "UNKNOWN_MEMBER_ID"
			}
			testutil.WaitFor(t, 30*time.Second, "m stable again, the stale answer applied", func() bool {
				return groupStable([]*member{m}, 4) && s.took(tc.stale, sent, stepApplied)
			})
			var staleErrs []string
			for _, r := range groupRequestsSince(col, "m", tc.stale.Name(), since) {
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
			ends := recordsSince(col, "m", timeline.RebalanceEnd, since)
			begins := recordsSince(col, "m", timeline.RebalanceBegin, since)
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
			if errs := recordsSince(col, "m", timeline.Error, since); len(errs) != 0 {
				t.Fatalf("m wrote %d error records: %v", len(errs), fmt.Sprint(errs))
			}
		})
	}
}

// fidOrderChanges is how many membership changes TestFIDOrderStress makes per rebalance protocol:
// 30 in the normal test run, more from `make soak` (-fidorder.changes=300).
var fidOrderChanges = flag.Int("fidorder.changes", 30, "membership changes per protocol in TestFIDOrderStress")

// TestFIDOrderStress: members join and leave a group one change at a time while every member's
// coordinator link has a random latency (0 to 60 ms, drawn for each member) and the members
// heartbeat every 100 ms and auto-commit every 50 ms, so that heartbeats and commits of one generation
// keep crossing the JoinGroup/SyncGroup rounds of the next. No member may discard the result of a
// round of the current generation, and each change costs exactly the rebalances Kafka's protocol
// needs: EAGER one; COOPERATIVE two when the first round made a remaining member revoke partitions
// (it rejoins to hand them over), else one.
func TestFIDOrderStress(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 10, 0)
	for _, proto := range []struct{ name, assignor string }{{"eager", "range"}, {"cooperative", "cooperative-sticky"}} {
		t.Run(proto.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 10))
			t.Logf("seed %d, %d changes", seed, *fidOrderChanges)
			col := &timeline.Collector{}
			group := "stress-" + proto.name
			props := map[string]string{"group.id": group, "partition.assignment.strategy": proto.assignor,
				"session.timeout.ms": "6000", "heartbeat.interval.ms": "100", "auto.commit.interval.ms": "50"}
			var live, all []*member
			next := 0
			start := func() {
				next++
				name := fmt.Sprintf("m%d", next)
				l := lab.NewMemberLinks(name)
				t.Cleanup(func() { l.Close() })
				// Set once, before the member dials, and never replaced: fewer toxics torn down while
				// bytes flow (toxiproxy strands a pipe goroutine then; see TestMain).
				if err := l.Latency(lab.LinkCoordinator, time.Duration(rng.IntN(61))*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				m := startMember(t, name, bootstrap, "t", col, props, func(c *Config) { c.CoordinatorDialer = l.Dialer(lab.LinkCoordinator) })
				live = append(live, m)
				all = append(all, m)
			}
			// settled: the group is stable and every member's heartbeat succeeded after it was seen so,
			// in the same generation: no round is pending at the coordinator either.
			settled := func(what string) int32 {
				var gen int32
				seenAt := -1 // the Mark when the group was seen stable in generation gen
				testutil.WaitFor(t, 60*time.Second, what, func() bool {
					if !groupStable(live, 6) {
						seenAt = -1
						return false
					}
					g := live[0].c.Generation()
					if seenAt < 0 || g != gen {
						gen, seenAt = g, col.Mark()
						return false
					}
					for _, m := range live {
						ok := false
						for _, r := range groupRequestsSince(col, m.name, "Heartbeat", seenAt) {
							ok = ok || r.Err == ""
						}
						if !ok {
							return false
						}
					}
					return true
				})
				return gen
			}
			for i := 0; i < 3; i++ {
				start()
			}
			gen := settled("the first 3 members stable")
			perChange := map[string]int{}
			var wrong []string
			for i := 0; i < *fidOrderChanges; i++ {
				since := col.Mark()
				change := ""
				if len(live) <= 2 || (len(live) < 5 && rng.IntN(2) == 0) {
					start()
					change = "join of " + live[len(live)-1].name
				} else {
					k := rng.IntN(len(live))
					leaving := live[k]
					live = append(live[:k:k], live[k+1:]...)
					leaving.close(t)
					change = "leave of " + leaving.name
				}
				after := settled(fmt.Sprintf("stable after change %d (%s)", i+1, change))
				want := int32(1)
				if proto.name == "cooperative" {
					for _, m := range live {
						if len(recordsSince(col, m.name, timeline.Revoked, since)) > 0 {
							want = 2
						}
					}
				}
				got := after - gen
				perChange[fmt.Sprintf("%d rebalance(s)", got)]++
				if got != want {
					wrong = append(wrong, fmt.Sprintf("change %d (%s): %d rebalances, want %d", i+1, change, got, want))
				}
				gen = after
			}
			discarded := 0
			for _, m := range all {
				discarded += m.c.DiscardedRounds()
			}
			var discardRecords []string
			for _, r := range col.Records() {
				if r.Kind == timeline.Error && strings.Contains(r.Text, "discarded") {
					discardRecords = append(discardRecords, r.Member+": "+r.Text)
				}
			}
			t.Logf("%s: %d changes, rebalances per change %v, discarded current-generation results %d", proto.name, *fidOrderChanges, perChange, discarded)
			if discarded != 0 || len(discardRecords) != 0 {
				t.Errorf("discarded current-generation results: %d (%v)", discarded, discardRecords)
			}
			if len(wrong) > 0 {
				t.Errorf("%d of %d changes cost other than the protocol's rebalances:\n%s", len(wrong), *fidOrderChanges, strings.Join(wrong, "\n"))
			}
		})
	}
}
