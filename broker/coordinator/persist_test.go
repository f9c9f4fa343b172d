package coordinator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// gatedLog is a memLog whose next append to an armed partition blocks until the test releases it:
// a disk that stalls (a slow fsync) on demand, deterministically.
type gatedLog struct {
	*memLog
	mu       sync.Mutex
	gates    map[int32]*appendGate
	inFlight map[int32]int   // appends under way per partition
	overlaps []int32         // partitions read while an append to them was under way
	calls    map[int32][]int // per partition, the number of batches of each Append call
}

// appendGate holds one append: entered is closed when the append has started and is blocked,
// release lets it through.
type appendGate struct {
	entered chan struct{}
	release chan struct{}
}

func newGatedLog() *gatedLog {
	return &gatedLog{memLog: newMemLog(), gates: map[int32]*appendGate{}, inFlight: map[int32]int{}, calls: map[int32][]int{}}
}

// arm makes the next append to partition p block until the returned gate is released.
func (l *gatedLog) arm(p int32) *appendGate {
	g := &appendGate{entered: make(chan struct{}), release: make(chan struct{})}
	l.mu.Lock()
	l.gates[p] = g
	l.mu.Unlock()
	return g
}

func (l *gatedLog) Append(p int32, batches [][]byte) []error {
	l.mu.Lock()
	l.calls[p] = append(l.calls[p], len(batches))
	g := l.gates[p]
	delete(l.gates, p)
	l.inFlight[p]++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.inFlight[p]--
		l.mu.Unlock()
	}()
	if g != nil {
		close(g.entered)
		<-g.release
	}
	return l.memLog.Append(p, batches)
}

// startGated starts a driver (driverConfig) on a gatedLog, closed when the test ends.
func startGated(t *testing.T) (*Coordinator, *gatedLog, Config) {
	t.Helper()
	olog := newGatedLog()
	cfg := driverConfig()
	c, err := Start(context.Background(), cfg, olog, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, olog, cfg
}

// appendCalls returns, for partition p, the number of batches of each Append call so far.
func (l *gatedLog) appendCalls(p int32) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.calls[p]...)
}

// ReadAll records a read that overlaps an append to the same partition (OffsetsLog's contract
// forbids it), then reads.
func (l *gatedLog) ReadAll(p int32, fn func(key, value []byte) error) error {
	l.mu.Lock()
	if l.inFlight[p] > 0 {
		l.overlaps = append(l.overlaps, p)
	}
	l.mu.Unlock()
	return l.memLog.ReadAll(p, fn)
}

func (l *gatedLog) overlapped() []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int32(nil), l.overlaps...)
}

// offsetsIn returns the offsets of the commit records in partition p's log, in log order.
func (l *gatedLog) offsetsIn(t *testing.T, p int32) []int64 {
	t.Helper()
	var out []int64
	err := l.ReadAll(p, func(key, value []byte) error {
		k, err := readRecordKey(key)
		if err != nil || k.kind != keyOffset {
			return err
		}
		om, err := readOffsetValue(value)
		if err != nil {
			return err
		}
		out = append(out, om.offset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// answerWithin sends req from another goroutine and fails the test unless the answer comes within d
// (a Handle stuck behind the coordinator's lock does not see its ctx, so the deadline is kept here).
func answerWithin(t *testing.T, c *Coordinator, d time.Duration, req kmsg.Request) kmsg.Response {
	t.Helper()
	type answer struct {
		resp kmsg.Response
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		resp, err := c.Handle(ContextWithClient(context.Background(), "b", "/127.0.0.1"), req)
		ch <- answer{resp, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%T: %v", req, a.err)
		}
		return a.resp
	case <-time.After(d):
		t.Fatalf("%T not answered within %v", req, d)
		return nil
	}
}

// TestDriverSlowAppendHoldsOnlyItsGroup: while the append of group A's SyncGroup (the group record)
// is stalled in the log, group B's Heartbeat is answered at once; A's SyncGroup is answered only
// after its record is in the log. Then two commits of A: the first stalls, the second queues behind
// it; neither is answered before the first is written, both are then in the log in request order
// and the second is the committed offset. Before the driver appended outside its lock, B's
// Heartbeat waited for A's append (the test failed: the heartbeat was not answered within 5 s).
func TestDriverSlowAppendHoldsOnlyItsGroup(t *testing.T) {
	c, olog, cfg := startGated(t)

	groupA, groupB := "group-a", "group-b"
	pA := PartitionFor(groupA, cfg.OffsetsTopicNumPartitions)
	if pB := PartitionFor(groupB, cfg.OffsetsTopicNumPartitions); pA == pB {
		t.Fatalf("groups share partition %d; pick other names", pA)
	}
	o := joinOpts{version: 3, session: 10000, rebalance: 10000}

	// B: one member, Stable at generation 1
	jb := handle(t, c, "b", joinReq(groupB, o)).(*kmsg.JoinGroupResponse)
	if jb.ErrorCode != 0 || jb.Generation != 1 {
		t.Fatalf("B join: %+v", jb)
	}
	if sb := handle(t, c, "b", syncReq(3, groupB, jb.MemberID, 1, nil, map[string]string{jb.MemberID: "B"})).(*kmsg.SyncGroupResponse); sb.ErrorCode != 0 {
		t.Fatalf("B sync: %+v", sb)
	}

	// A: its leader's SyncGroup stores the group record; that append stalls
	ja := handle(t, c, "a", joinReq(groupA, o)).(*kmsg.JoinGroupResponse)
	if ja.ErrorCode != 0 || ja.Generation != 1 {
		t.Fatalf("A join: %+v", ja)
	}
	gate := olog.arm(pA)
	released := false
	release := func() {
		if !released {
			released = true
			close(gate.release)
		}
	}
	defer release()
	syncA := handleIn(c, "a", syncReq(3, groupA, ja.MemberID, 1, nil, map[string]string{ja.MemberID: "A"}))
	<-gate.entered

	hb := answerWithin(t, c, 5*time.Second, heartbeatReq(3, groupB, jb.MemberID, 1, nil)).(*kmsg.HeartbeatResponse)
	if hb.ErrorCode != 0 {
		t.Fatalf("B heartbeat during A's stalled append: error %d, want 0", hb.ErrorCode)
	}
	select {
	case r := <-syncA:
		t.Fatalf("A's SyncGroup answered while its group record was not yet appended: %+v (%v)", r.resp, r.err)
	default:
	}
	if g, _ := c.Group(groupA); g.State != CompletingRebalance {
		t.Fatalf("A during its stalled append: %s, want CompletingRebalance", g.State)
	}
	release()
	if r := awaitHandled(t, syncA).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "A" {
		t.Fatalf("A sync after the append: %+v", r)
	}
	if g, _ := c.Group(groupA); g.State != Stable {
		t.Fatalf("A after its append: %s, want Stable", g.State)
	}

	// two commits of A: the first stalls, the second waits behind it
	gate = olog.arm(pA)
	released = false
	commits := make([]<-chan handled, 2)
	commits[0] = handleIn(c, "a", commitReq(2, groupA, ja.MemberID, 1, nil, "t", 0, 1))
	<-gate.entered
	commits[1] = handleIn(c, "a", commitReq(2, groupA, ja.MemberID, 1, nil, "t", 0, 2))
	testutil.WaitFor(t, 5*time.Second, "the second commit to queue behind the stalled one", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		q := c.appends[pA]
		return q != nil && len(q.pending) == 1
	})
	if hb := answerWithin(t, c, 5*time.Second, heartbeatReq(3, groupB, jb.MemberID, 1, nil)).(*kmsg.HeartbeatResponse); hb.ErrorCode != 0 {
		t.Fatalf("B heartbeat during A's stalled commit: error %d, want 0", hb.ErrorCode)
	}
	for i, ch := range commits {
		select {
		case r := <-ch:
			t.Fatalf("commit %d answered before the stalled append finished: %+v (%v)", i+1, r.resp, r.err)
		default:
		}
	}
	if off, ok := c.CommittedOffset(groupA, "t", 0); ok {
		t.Fatalf("offset %d committed before its append finished", off)
	}
	release()
	for i, ch := range commits {
		if e := commitErr(t, awaitHandled(t, ch)); e != 0 {
			t.Fatalf("commit %d: error %d", i+1, e)
		}
	}
	if got := olog.offsetsIn(t, pA); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("commit records in %s-%d: %v, want [1 2]", OffsetsTopic, pA, got)
	}
	if off, ok := c.CommittedOffset(groupA, "t", 0); !ok || off != 2 {
		t.Fatalf("committed %d %v, want 2", off, ok)
	}
}

// TestDriverCommitsArrivingTogetherShareOneAppend: while one commit's append is stalled, the commits
// of ten other groups of the same __consumer_offsets partition queue behind it; when it ends, the ten
// go to the log in one Append call (one write, and one fsync when log.flush.interval.messages is 1),
// in request order, and each is answered without error. Before, the driver appended them one call each.
func TestDriverCommitsArrivingTogetherShareOneAppend(t *testing.T) {
	c, olog, cfg := startGated(t)
	p := PartitionFor("g", cfg.OffsetsTopicNumPartitions)
	var others []string // ten groups whose records go to the same partition as g's
	for i := 0; len(others) < 10; i++ {
		if name := fmt.Sprintf("g%d", i); PartitionFor(name, cfg.OffsetsTopicNumPartitions) == p {
			others = append(others, name)
		}
	}
	gate := olog.arm(p)
	first := handleIn(c, "a", commitReq(2, "g", "", -1, nil, "t", 0, 100))
	<-gate.entered
	answers := make([]<-chan handled, len(others))
	for i, g := range others {
		testutil.WaitFor(t, 5*time.Second, "commit of "+g+" queued", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.appends[p].pending) == i
		})
		answers[i] = handleIn(c, "a", commitReq(2, g, "", -1, nil, "t", 0, int64(i)))
	}
	testutil.WaitFor(t, 5*time.Second, "ten commits queued behind the stalled one", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.appends[p].pending) == len(others)
	})
	close(gate.release)
	if e := commitErr(t, awaitHandled(t, first)); e != 0 {
		t.Fatalf("the stalled commit: error %d", e)
	}
	for i, ch := range answers {
		if e := commitErr(t, awaitHandled(t, ch)); e != 0 {
			t.Fatalf("commit of %s: error %d", others[i], e)
		}
	}
	if got := olog.appendCalls(p); !reflect.DeepEqual(got, []int{1, len(others)}) {
		t.Fatalf("Append calls to partition %d carried %v batches, want [1 %d]", p, got, len(others))
	}
	if got := olog.offsetsIn(t, p); !reflect.DeepEqual(got, []int64{100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("commit records in %s-%d: %v, want the stalled one then the ten in request order", OffsetsTopic, p, got)
	}
}

// TestDriverCloseWaitsForAppend: Close returns only after the append under way has finished (the
// persist goroutine is the driver's, and goleak in TestMain checks none is left), and the request
// that waited for it gets ErrClosed.
func TestDriverCloseWaitsForAppend(t *testing.T) {
	olog := newGatedLog()
	cfg := driverConfig()
	c, err := Start(context.Background(), cfg, olog, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	gate := olog.arm(PartitionFor("g", cfg.OffsetsTopicNumPartitions))
	commit := make(chan error, 1)
	go func() {
		_, err := c.Handle(context.Background(), commitReq(2, "g", "", -1, nil, "t", 0, 7))
		commit <- err
	}()
	<-gate.entered
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	if err := <-commit; err != ErrClosed {
		t.Fatalf("commit during Close: %v, want ErrClosed", err)
	}
	select {
	case <-closed:
		t.Fatal("Close returned while an append it started was still running")
	default:
	}
	close(gate.release)
	<-closed
	if n := olog.count(); n != 1 {
		t.Fatalf("%d records in the log after Close, want the 1 that was being appended", n)
	}
}

// TestDriverLoadWaitsForAppends: a partition resigned and elected again while an append to it is
// stalled is not read until that append is done (OffsetsLog is never read and written at once for
// one partition, and the load sees the record): a load whose ctx ends first reads nothing and
// fails with the ctx's error; a load after the append reads the committed offset back.
func TestDriverLoadWaitsForAppends(t *testing.T) {
	c, olog, cfg := startGated(t)
	p := PartitionFor("g", cfg.OffsetsTopicNumPartitions)
	gate := olog.arm(p)
	defer func() {
		select {
		case <-gate.release:
		default:
			close(gate.release)
		}
	}()
	commit := handleIn(c, "c", commitReq(2, "g", "", -1, nil, "t", 0, 7))
	<-gate.entered

	c.OnResignation(p)
	if began, err := c.BeginElection(p); !began || err != nil {
		t.Fatalf("BeginElection after resigning: %v %v", began, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.LoadPartition(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("load with an ended ctx while an append is stalled: %v, want context.Canceled", err)
	}
	if o := olog.overlapped(); len(o) > 0 {
		t.Fatalf("partitions read during an append to them: %v", o)
	}
	close(gate.release)
	if e := commitErr(t, awaitHandled(t, commit)); e != 0 {
		t.Fatalf("commit: error %d", e)
	}

	c.OnResignation(p)
	if err := c.OnElection(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if off, ok := c.CommittedOffset("g", "t", 0); !ok || off != 7 {
		t.Fatalf("committed offset after the reload: %d %v, want 7", off, ok)
	}
	if o := olog.overlapped(); len(o) > 0 {
		t.Fatalf("partitions read during an append to them: %v", o)
	}
}
