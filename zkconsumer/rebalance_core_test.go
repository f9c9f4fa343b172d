package zkconsumer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// The rebalance core's unit tests: whole syncedRebalances scripted as the events a driver would
// step in (ZooKeeper results, the session observed, the back-off timer) and the effects expected
// back, with a fake clock — no ZooKeeper server, no goroutines, no sleeps. The behaviour through
// Connector on the real ZooKeeper is the other test files' (the cross-check layer).

// coreStep is one step of a script: the event stepped in at t0+at and the effects expected back
// (effLog left out; an effFinished compared by its error's text).
type coreStep struct {
	at   time.Duration
	in   coreEvent
	want []coreEffect
}

// finishedWith is how a script expects effFinished: its error's text ("" for nil).
type finishedWith struct{ Text string }

func (finishedWith) isCoreEffect() {}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	s1 int64 = 0x1 // the session the attempts begin in
	s2 int64 = 0x2 // the session after an expiry
)

func testCoreConfig() coreConfig {
	return coreConfig{consumerID: "g_c1", groupID: "g", maxRetries: 4, backoff: 500 * time.Millisecond,
		streams: map[string]int{"t": 1}}
}

// runCoreScript steps the script through k and returns every step's full output (logs included).
func runCoreScript(t *testing.T, k *rebalanceCore, script []coreStep) [][]coreEffect {
	t.Helper()
	var all [][]coreEffect
	for i, st := range script {
		got := k.Step(st.in, t0.Add(st.at))
		all = append(all, got)
		if g, w := normEffects(got), normEffects(st.want); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d (%T %+v):\n got  %s\n want %s", i, st.in, st.in, fmtEffects(g), fmtEffects(w))
		}
	}
	return all
}

func normEffects(effs []coreEffect) []coreEffect {
	out := []coreEffect{}
	for _, e := range effs {
		switch e := e.(type) {
		case effLog:
			continue
		case effFinished:
			text := ""
			if e.Err != nil {
				text = e.Err.Error()
			}
			out = append(out, finishedWith{text})
		default:
			out = append(out, e)
		}
	}
	return out
}

func fmtEffects(effs []coreEffect) string {
	parts := make([]string, len(effs))
	for i, e := range effs {
		parts[i] = fmt.Sprintf("%T%+v", e, e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Scripted ZooKeeper data.
var (
	brokerNode = []byte(`{"version":1,"host":"localhost","port":9092,"jmx_port":-1}`)
	noNode     = evData{Err: zk.ErrNoNode}
	done       = evDone{}
)

func regNode(subscription string) evData {
	return evData{Data: []byte(`{"version":1,"subscription":` + subscription + `,"pattern":"static","timestamp":"1"}`)}
}

func topicNode(partitions int) evData {
	ps := make([]string, partitions)
	for i := range ps {
		ps[i] = fmt.Sprintf(`"%d":[1]`, i)
	}
	return evData{Data: []byte(`{"version":1,"partitions":{` + strings.Join(ps, ",") + `}}`)}
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }

func rec(kind timeline.Kind) effRecord { return effRecord{timeline.Record{Kind: kind}} }

func endRec(ok bool, attempt int) effRecord {
	return effRecord{timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(ok), Attempt: attempt}}
}

// failedAttempt is what a failed attempt's last event gets back (no auto-commit).
func failedAttempt(attempt int, at time.Duration) []coreEffect {
	return []coreEffect{endRec(false, attempt), effStopFetchers{All: true}, effRecordRevoked{},
		effBackoff{At: t0.Add(at + 500*time.Millisecond), After: 500 * time.Millisecond}}
}

// attemptUpToRelease scripts an attempt from its first observation through getCluster, the own
// registration (subscription JSON), the second broker read and the stop of the fetchers of topics,
// up to the first request after it (next).
func attemptUpToRelease(at time.Duration, session int64, subscription string, topics []string, next coreEffect) []coreStep {
	return []coreStep{
		{at, evObserved{Session: session}, []coreEffect{effReadChildren{brokerIdsPath}}},
		{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
		{at, evData{Data: brokerNode}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
		{at, regNode(subscription), []coreEffect{effReadChildren{brokerIdsPath}}},
		{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
		{at, evData{Data: brokerNode}, []coreEffect{effStopFetchers{Topics: topics}, effRecordRevoked{}, next}},
	}
}

// readContext scripts the assignment context's reads for one topic t of n partitions: own
// registration, the topic, the member list and each member's registration (members[i] answered by
// regs[i]), the list again; next is the first request after them.
func readContext(at time.Duration, n int, members []string, regs []evData, next coreEffect) []coreStep {
	steps := []coreStep{
		{at, regNode(`{"t":1}`), []coreEffect{effReadData{"/brokers/topics/t"}}},
		{at, topicNode(n), []coreEffect{effReadChildren{"/consumers/g/ids"}}},
	}
	prev := coreEvent(evChildren{Children: members})
	for i, m := range members {
		steps = append(steps, coreStep{at, prev, []coreEffect{effReadData{"/consumers/g/ids/" + m}}})
		prev = regs[i]
	}
	return append(steps, coreStep{at, prev, []coreEffect{effReadChildren{"/consumers/g/ids"}}},
		coreStep{at, evChildren{Children: members}, []coreEffect{next}})
}

func concat(parts ...[]coreStep) []coreStep {
	var out []coreStep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A clean rebalance: g_c1 holds t-1; with g_c2 in the group the range assignor gives it t-0. It
// releases t-1, reads the group, finds no committed offset, claims t-0 and starts fetching.
func TestRebalanceCoreCleanRebalance(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	script := concat(
		[]coreStep{
			{0, evStart{Owned: []TopicPartition{tp("t", 1)}}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attemptUpToRelease(0, s1, `{"t":1}`, []string{"t"}, effReleaseOwner{tp("t", 1), "/consumers/g/owners/t/1"}),
		[]coreStep{{0, done, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}}},
		readContext(0, 2, []string{"g_c2", "g_c1"}, []evData{regNode(`{"t":1}`), regNode(`{"t":1}`)},
			effReadData{"/consumers/g/offsets/t/0"}),
		[]coreStep{
			{0, noNode, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
			{0, evCreated{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{
				effInstall{[]installedPartition{{tp("t", 0), ThreadID{"g_c1", 0}, -1}}},
				effStartFetchers{}, endRec(true, 1), finishedWith{""}}},
		},
	)
	runCoreScript(t, k, script)
	if k.Running() {
		t.Fatal("core still running after effFinished")
	}
	if want := []TopicPartition{tp("t", 0)}; !reflect.DeepEqual(k.owned, want) {
		t.Fatalf("owned = %v, want %v", k.owned, want)
	}
}

// conflictScript: g_c1, alone with one thread on t (2 partitions), finds t-1 owned by g_c2-0 in
// attempt 1 (its claim of t-0 is deleted again), backs off rebalance.backoff.ms, and claims both in
// attempt 2. The committed offset of t-0 is 7.
func conflictScript() []coreStep {
	const later = 500 * time.Millisecond
	attempt := func(at time.Duration) []coreStep {
		return concat(
			attemptUpToRelease(at, s1, `{"t":1}`, []string{"t"}, effReadData{"/consumers/g/ids/g_c1"}),
			readContext(at, 2, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effReadData{"/consumers/g/offsets/t/0"}),
			[]coreStep{
				{at, evData{Data: []byte("7")}, []coreEffect{effReadData{"/consumers/g/offsets/t/1"}}},
				{at, noNode, []coreEffect{effObserve{}}},
				{at, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
				{at, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/1", "g_c1-0"}}},
			})
	}
	return concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attempt(0),
		[]coreStep{
			{0, evCreated{Err: zk.ErrNodeExists}, []coreEffect{effReadData{"/consumers/g/owners/t/1"}}},
			{0, evData{Data: []byte("g_c2-0")}, []coreEffect{effRecordOwnerWrite{"/consumers/g/owners/t/1", timeline.ZKOwnerConflict},
				effDelete{"/consumers/g/owners/t/0"}}},
			{0, done, failedAttempt(1, 0)},
			{later, evTimerFired{}, []coreEffect{effObserve{}}},
		},
		attempt(later),
		[]coreStep{
			{later, evCreated{}, []coreEffect{effObserve{}}},
			{later, evObserved{Session: s1}, []coreEffect{
				effInstall{[]installedPartition{{tp("t", 0), ThreadID{"g_c1", 0}, 7}, {tp("t", 1), ThreadID{"g_c1", 0}, -1}}},
				effStartFetchers{}, endRec(true, 2), finishedWith{""}}},
		})
}

// An owner conflict fails the attempt after deleting what it claimed, and the retry comes after
// the back-off timer (armed for t0+rebalance.backoff.ms), not before.
func TestRebalanceCoreOwnerConflictRetriesAfterBackoff(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	runCoreScript(t, k, conflictScript())
}

// A result of another kind than the one awaited (a stray timer) is ignored: the request still waits.
func TestRebalanceCoreIgnoresUnexpectedEvent(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	runCoreScript(t, k, []coreStep{
		{0, evStart{}, []coreEffect{effObserve{}}},
		{0, evTimerFired{}, nil},
		{0, evStart{}, nil}, // one syncedRebalance at a time
		{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
	})
}

// After rebalance.max.retries failed attempts (each backed off, the last one too, as 0.8.2) the
// rebalance ends with ErrRebalanceFailed wrapping the last attempt's error.
func TestRebalanceCoreGivesUpAfterMaxRetries(t *testing.T) {
	cfg := testCoreConfig()
	cfg.maxRetries = 2
	cfg.autoCommit = true
	k := newRebalanceCore(cfg)
	attempt := func(at time.Duration, n int) []coreStep {
		return concat(
			[]coreStep{
				{at, evObserved{Session: s1}, []coreEffect{effReadChildren{brokerIdsPath}}},
				{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
				{at, evData{Data: brokerNode}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
				{at, regNode(`{"t":1}`), []coreEffect{effReadChildren{brokerIdsPath}}},
				{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
				{at, evData{Data: brokerNode}, []coreEffect{effStopFetchers{Topics: []string{"t"}}, effCommitOffsets{}, effRecordRevoked{},
					effReadData{"/consumers/g/ids/g_c1"}}},
			},
			readContext(at, 1, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effReadData{"/consumers/g/offsets/t/0"}),
			[]coreStep{
				{at, noNode, []coreEffect{effObserve{}}},
				{at, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
				{at, evCreated{Err: zk.ErrNodeExists}, []coreEffect{effReadData{"/consumers/g/owners/t/0"}}},
				{at, evData{Data: []byte("g_c2-0")}, []coreEffect{effRecordOwnerWrite{"/consumers/g/owners/t/0", timeline.ZKOwnerConflict}, endRec(false, n),
					effStopFetchers{All: true}, effCommitOffsets{}, effRecordRevoked{},
					effBackoff{At: t0.Add(at + 500*time.Millisecond), After: 500 * time.Millisecond}}},
			})
	}
	all := runCoreScript(t, k, concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attempt(0, 1),
		[]coreStep{{500 * time.Millisecond, evTimerFired{}, []coreEffect{effObserve{}}}},
		attempt(500*time.Millisecond, 2),
		[]coreStep{{time.Second, evTimerFired{}, []coreEffect{finishedWith{
			`zkconsumer: rebalance failed: g_c1 can't rebalance after 2 retries: partition ownership conflict: /consumers/g/owners/t/0 is owned by "g_c2-0"`}}}},
	))
	last := all[len(all)-1]
	fin := last[len(last)-1].(effFinished)
	if !errors.Is(fin.Err, ErrRebalanceFailed) {
		t.Fatalf("final error %v does not wrap ErrRebalanceFailed", fin.Err)
	}
	if k.Running() {
		t.Fatal("core still running after giving up")
	}
}

// A member's registration that vanishes between the list of /consumers/<g>/ids and its read fails
// the attempt (0.8.2 reads it with readData, not readDataMaybeNull); the next attempt, after the
// back-off, lists the group without it and takes both partitions.
func TestRebalanceCoreRegistrationVanishesBetweenListAndRead(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	const later = 500 * time.Millisecond
	runCoreScript(t, k, concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attemptUpToRelease(0, s1, `{"t":1}`, []string{"t"}, effReadData{"/consumers/g/ids/g_c1"}),
		[]coreStep{
			{0, regNode(`{"t":1}`), []coreEffect{effReadData{"/brokers/topics/t"}}},
			{0, topicNode(2), []coreEffect{effReadChildren{"/consumers/g/ids"}}},
			{0, evChildren{Children: []string{"g_c1", "g_c2"}}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
			{0, regNode(`{"t":1}`), []coreEffect{effReadData{"/consumers/g/ids/g_c2"}}},
			{0, noNode, failedAttempt(1, 0)},
			{later, evTimerFired{}, []coreEffect{effObserve{}}},
		},
		attemptUpToRelease(later, s1, `{"t":1}`, []string{"t"}, effReadData{"/consumers/g/ids/g_c1"}),
		readContext(later, 2, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effReadData{"/consumers/g/offsets/t/0"}),
		[]coreStep{
			{later, noNode, []coreEffect{effReadData{"/consumers/g/offsets/t/1"}}},
			{later, noNode, []coreEffect{effObserve{}}},
			{later, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
			{later, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/1", "g_c1-0"}}},
			{later, evCreated{}, []coreEffect{effObserve{}}},
			{later, evObserved{Session: s1}, []coreEffect{
				effInstall{[]installedPartition{{tp("t", 0), ThreadID{"g_c1", 0}, -1}, {tp("t", 1), ThreadID{"g_c1", 0}, -1}}},
				effStartFetchers{}, endRec(true, 2), finishedWith{""}}},
		},
	))
}

// The session expires in the middle of the claims: the attempt began in s1, the claims were sent
// again in s2 (retryUntilConnected). The owner znodes of the decision that s2 owns are deleted,
// one s1 still owns (its expiry not yet applied) is left to ZooKeeper, and the attempt fails; with
// rebalance.max.retries=1 the rebalance then gives up, naming the session change.
func TestRebalanceCoreSessionExpiresMidClaim(t *testing.T) {
	cfg := testCoreConfig()
	cfg.maxRetries = 1
	k := newRebalanceCore(cfg)
	runCoreScript(t, k, concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attemptUpToRelease(0, s1, `{"t":1}`, []string{"t"}, effReadData{"/consumers/g/ids/g_c1"}),
		readContext(0, 3, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effReadData{"/consumers/g/offsets/t/0"}),
		[]coreStep{
			{0, noNode, []coreEffect{effReadData{"/consumers/g/offsets/t/1"}}},
			{0, noNode, []coreEffect{effReadData{"/consumers/g/offsets/t/2"}}},
			{0, noNode, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
			// t-0 claimed in s1; the session expires; t-1 and t-2 are claimed in s2 — t-1's create, sent
			// again after the connection loss, meets the node its first try made: ours
			{0, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/1", "g_c1-0"}}},
			{0, evCreated{Err: zk.ErrNodeExists}, []coreEffect{effReadData{"/consumers/g/owners/t/1"}}},
			{0, evData{Data: []byte("g_c1-0")}, []coreEffect{effRecordOwnerWrite{"/consumers/g/owners/t/1", ""},
				effCreateOwner{"/consumers/g/owners/t/2", "g_c1-0"}}},
			{0, evCreated{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s2}, []coreEffect{effReadStat{"/consumers/g/owners/t/0"}}},
			{0, evStat{Owner: s1, Session: s2}, []coreEffect{effReadStat{"/consumers/g/owners/t/1"}}},
			{0, evStat{Owner: s2, Session: s2}, []coreEffect{effDelete{"/consumers/g/owners/t/1"}}},
			{0, done, []coreEffect{effReadStat{"/consumers/g/owners/t/2"}}},
			{0, evStat{Owner: s2, Session: s2}, []coreEffect{effDelete{"/consumers/g/owners/t/2"}}},
			{0, done, failedAttempt(1, 0)},
			{500 * time.Millisecond, evTimerFired{}, []coreEffect{finishedWith{
				"zkconsumer: rebalance failed: g_c1 can't rebalance after 1 retries: ZooKeeper session changed from 0x1 to 0x2 during the attempt: its claims are released"}}},
		},
	))
	if len(k.owned) != 0 {
		t.Fatalf("owned = %v after the failed attempt, want none", k.owned)
	}
}

// Shutdown observed before the claims ends the attempt without a rebalance_end record; the next
// observation ends the rebalance with ErrShutdown.
func TestRebalanceCoreShutdownBeforeClaims(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	runCoreScript(t, k, concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attemptUpToRelease(0, s1, `{"t":1}`, []string{"t"}, effReadData{"/consumers/g/ids/g_c1"}),
		readContext(0, 1, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effReadData{"/consumers/g/offsets/t/0"}),
		[]coreStep{
			{0, noNode, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1, Closing: true}, []coreEffect{effStopFetchers{All: true}, effRecordRevoked{},
				effBackoff{At: t0.Add(500 * time.Millisecond), After: 500 * time.Millisecond}}},
			{0, evTimerFired{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1, Closing: true}, []coreEffect{finishedWith{ErrShutdown.Error()}}},
		},
	))
}

// No broker registered: 0.8.2 subscribes to /brokers/ids and counts the rebalance done, touching
// neither fetchers nor owner znodes.
func TestRebalanceCoreNoBrokers(t *testing.T) {
	k := newRebalanceCore(testCoreConfig())
	runCoreScript(t, k, []coreStep{
		{0, evStart{Owned: []TopicPartition{tp("t", 0)}}, []coreEffect{effObserve{}}},
		{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		{0, evObserved{Session: s1}, []coreEffect{effReadChildren{brokerIdsPath}}},
		{0, evChildren{Err: zk.ErrNoNode}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
		{0, regNode(`{"t":1}`), []coreEffect{effReadChildren{brokerIdsPath}}},
		{0, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
		{0, noNode, []coreEffect{effSubscribeChildren{brokerIdsPath}}}, // broker 1 went away (KAFKA-1010)
		{0, done, []coreEffect{endRec(true, 1), finishedWith{""}}},
	})
}

// determinismScript: a group of three members over two topics (maps everywhere on the way: the
// registrations' subscriptions, threads per topic, the assignment), with a listener, auto-commit,
// an owner conflict, a back-off and a successful retry.
func determinismCoreScript() (coreConfig, []coreStep) {
	cfg := testCoreConfig()
	cfg.streams = map[string]int{"a": 2, "b": 2}
	cfg.listener, cfg.autoCommit = true, true
	sub := `{"b":2,"a":2}`
	members := []string{"g_c3", "g_c1", "g_c2"}
	regs := []evData{regNode(`{"a":1,"b":1}`), regNode(sub), regNode(`{"b":1,"a":1}`)}
	owned := []TopicPartition{tp("b", 3), tp("a", 0), tp("b", 0), tp("a", 3)}
	const later = 500 * time.Millisecond
	attempt := func(at time.Duration, owned []TopicPartition) []coreStep {
		steps := []coreStep{
			{at, evObserved{Session: s1}, []coreEffect{effReadChildren{brokerIdsPath}}},
			{at, evChildren{Children: []string{"2", "1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
			{at, evData{Data: brokerNode}, []coreEffect{effReadData{"/brokers/ids/2"}}},
			{at, evData{Data: brokerNode}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
			{at, regNode(sub), []coreEffect{effReadChildren{brokerIdsPath}}},
			{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
			{at, evData{Data: brokerNode}, []coreEffect{effStopFetchers{Topics: []string{"a", "b"}}, effCommitOffsets{}, effRecordRevoked{},
				effBeforeReleasing{partitionsByTopic(owned)}}},
		}
		prev := coreEvent(done)
		for _, o := range owned {
			steps = append(steps, coreStep{at, prev, []coreEffect{effReleaseOwner{o, ownerPath("g", o)}}})
			prev = done
		}
		steps = append(steps,
			coreStep{at, prev, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
			coreStep{at, regNode(sub), []coreEffect{effReadData{"/brokers/topics/a"}}},
			coreStep{at, topicNode(4), []coreEffect{effReadData{"/brokers/topics/b"}}},
			coreStep{at, topicNode(4), []coreEffect{effReadChildren{"/consumers/g/ids"}}})
		prev = evChildren{Children: members}
		for i, m := range members {
			steps = append(steps, coreStep{at, prev, []coreEffect{effReadData{"/consumers/g/ids/" + m}}})
			prev = regs[i]
		}
		// range: a and b each have threads g_c1-0, g_c1-1, g_c2-0, g_c3-0: g_c1 gets 0 and 1
		return append(steps,
			coreStep{at, prev, []coreEffect{effReadChildren{"/consumers/g/ids"}}},
			coreStep{at, evChildren{Children: members}, []coreEffect{effReadData{"/consumers/g/offsets/a/0"}}},
			coreStep{at, evData{Data: []byte("10")}, []coreEffect{effReadData{"/consumers/g/offsets/a/1"}}},
			coreStep{at, evData{Data: []byte("11\n")}, []coreEffect{effReadData{"/consumers/g/offsets/b/0"}}},
			coreStep{at, noNode, []coreEffect{effReadData{"/consumers/g/offsets/b/1"}}},
			coreStep{at, evData{Data: []byte("13")}, []coreEffect{effObserve{}}},
			coreStep{at, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/a/0", "g_c1-0"}}},
			coreStep{at, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/a/1", "g_c1-1"}}},
			coreStep{at, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/b/0", "g_c1-0"}}},
		)
	}
	parts := []installedPartition{{tp("a", 0), ThreadID{"g_c1", 0}, 10}, {tp("a", 1), ThreadID{"g_c1", 1}, 11},
		{tp("b", 0), ThreadID{"g_c1", 0}, -1}, {tp("b", 1), ThreadID{"g_c1", 1}, 13}}
	byTopic := map[string]map[int32]string{}
	for _, tpc := range []string{"a", "b"} {
		byTopic[tpc] = map[int32]string{0: "g_c1-0", 1: "g_c1-1", 2: "g_c2-0", 3: "g_c3-0"}
	}
	sorted := []TopicPartition{tp("a", 0), tp("a", 3), tp("b", 0), tp("b", 3)}
	script := concat(
		[]coreStep{
			{0, evStart{Owned: owned}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attempt(0, sorted),
		[]coreStep{
			{0, evCreated{Err: zk.ErrNodeExists}, []coreEffect{effReadData{"/consumers/g/owners/b/0"}}},
			{0, evData{Data: []byte("g_c3-0")}, []coreEffect{effRecordOwnerWrite{"/consumers/g/owners/b/0", timeline.ZKOwnerConflict},
				effCreateOwner{"/consumers/g/owners/b/1", "g_c1-1"}}},
			{0, evCreated{}, []coreEffect{effDelete{"/consumers/g/owners/a/0"}}},
			{0, done, []coreEffect{effDelete{"/consumers/g/owners/a/1"}}},
			{0, done, []coreEffect{effDelete{"/consumers/g/owners/b/1"}}},
			{0, evDone{Err: zk.ErrConnectionClosed}, []coreEffect{endRec(false, 1), effStopFetchers{All: true}, effCommitOffsets{}, effRecordRevoked{},
				effBackoff{At: t0.Add(later), After: later}}},
			{later, evTimerFired{}, []coreEffect{effObserve{}}},
		},
		attempt(later, nil),
		[]coreStep{
			{later, evCreated{}, []coreEffect{effCreateOwner{"/consumers/g/owners/b/1", "g_c1-1"}}},
			{later, evCreated{}, []coreEffect{effObserve{}}},
			{later, evObserved{Session: s1}, []coreEffect{effInstall{parts}, effBeforeStarting{byTopic}}},
			{later, done, []coreEffect{effStartFetchers{}, endRec(true, 2), finishedWith{""}}},
		})
	return cfg, script
}

// The same script stepped through two cores gives identical effect slices, logs included (each
// step's slice in the same order; maps inside effects are compared as maps).
func TestRebalanceCoreDeterministic(t *testing.T) {
	cfg, script := determinismCoreScript()
	a := runCoreScript(t, newRebalanceCore(cfg), script)
	cfg2, script2 := determinismCoreScript()
	b := runCoreScript(t, newRebalanceCore(cfg2), script2)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d steps", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("step %d differs:\n%s\n%s", i, fmtEffects(a[i]), fmtEffects(b[i]))
		}
	}
}

// With a listener and offsets.storage=kafka: BeforeStartingFetchers panics after the partitions were
// installed, so the attempt fails holding them; the next attempt calls BeforeReleasingPartitions with
// them and deletes their owner znodes before reading the group again.
func TestRebalanceCoreListenerFailureAfterInstall(t *testing.T) {
	cfg := testCoreConfig()
	cfg.listener, cfg.kafkaOffsets = true, true
	k := newRebalanceCore(cfg)
	const later = 500 * time.Millisecond
	panicked := errors.New("rebalance listener panicked: boom")
	mine := []installedPartition{{tp("t", 0), ThreadID{"g_c1", 0}, 42}}
	attempt := func(at time.Duration, owned []TopicPartition) []coreStep {
		steps := []coreStep{
			{at, evObserved{Session: s1}, []coreEffect{effReadChildren{brokerIdsPath}}},
			{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
			{at, evData{Data: brokerNode}, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}},
			{at, regNode(`{"t":1}`), []coreEffect{effReadChildren{brokerIdsPath}}},
			{at, evChildren{Children: []string{"1"}}, []coreEffect{effReadData{"/brokers/ids/1"}}},
			{at, evData{Data: brokerNode}, []coreEffect{effStopFetchers{Topics: []string{"t"}}, effRecordRevoked{},
				effBeforeReleasing{partitionsByTopic(owned)}}},
		}
		prev := coreEvent(done)
		for _, o := range owned {
			steps = append(steps, coreStep{at, prev, []coreEffect{effReleaseOwner{o, ownerPath("g", o)}}})
		}
		steps = append(steps, coreStep{at, prev, []coreEffect{effReadData{"/consumers/g/ids/g_c1"}}})
		return concat(steps,
			readContext(at, 1, []string{"g_c1"}, []evData{regNode(`{"t":1}`)}, effFetchKafkaOffsets{[]TopicPartition{tp("t", 0)}}),
			[]coreStep{
				{at, evOffsets{Offsets: map[TopicPartition]int64{tp("t", 0): 42}}, []coreEffect{effObserve{}}},
				{at, evObserved{Session: s1}, []coreEffect{effCreateOwner{"/consumers/g/owners/t/0", "g_c1-0"}}},
				{at, evCreated{}, []coreEffect{effObserve{}}},
				{at, evObserved{Session: s1}, []coreEffect{effInstall{mine}, effBeforeStarting{map[string]map[int32]string{"t": {0: "g_c1-0"}}}}},
			})
	}
	runCoreScript(t, k, concat(
		[]coreStep{
			{0, evStart{}, []coreEffect{effObserve{}}},
			{0, evObserved{Session: s1}, []coreEffect{rec(timeline.RebalanceBegin), effObserve{}}},
		},
		attempt(0, nil),
		[]coreStep{
			{0, evDone{Err: panicked}, failedAttempt(1, 0)},
			{later, evTimerFired{}, []coreEffect{effObserve{}}},
		},
		attempt(later, []TopicPartition{tp("t", 0)}),
		[]coreStep{{later, done, []coreEffect{effStartFetchers{}, endRec(true, 2), finishedWith{""}}}},
	))
}
