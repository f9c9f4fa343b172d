package zkconsumer

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// The initial rebalance's failure after rebalance.max.retries attempts is returned to the caller
// (ConsumerRebalanceFailedException), and no attempt leaves an owner znode behind.
func TestInitialRebalanceFailureReturned(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 3)
	squatter := newAdmin(t, z.Connect())
	squatter.create("/consumers/g/owners/t/1", []byte("g_other-0"), zk.FlagEphemeral)
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"rebalance.max.retries": "2", "rebalance.backoff.ms": "100"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := m.CreateMessageStreams(ctx, map[string]int{"t": 1})
	if !errors.Is(err, ErrRebalanceFailed) || !strings.Contains(err.Error(), `/consumers/g/owners/t/1 is owned by "g_other-0"`) {
		t.Fatalf("CreateMessageStreams = %v, want ErrRebalanceFailed naming the conflict", err)
	}
	if got := a.owners("g", "t"); !reflect.DeepEqual(got, map[int32]string{1: "g_other-0"}) {
		t.Fatalf("owners after the failure = %v, want only the squatter's", got)
	}
	// One rebalance, two attempts: one rebalance_begin, one rebalance_end{ok=false} per attempt, and
	// each attempt's failed claim of partition 1 marked as an ownership conflict.
	if n := m.count(0, timeline.RebalanceBegin, nil); n != 1 {
		t.Fatalf("rebalance_begin = %d, want 1", n)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if n := m.count(0, timeline.RebalanceEnd, func(r timeline.Record) bool { return !*r.OK && r.Attempt == attempt }); n != 1 {
			t.Fatalf("rebalance_end{ok=false, attempt=%d} = %d, want 1", attempt, n)
		}
	}
	conflicts := m.count(0, timeline.ZKOp, func(r timeline.Record) bool {
		return r.Op == "write" && r.Result == timeline.ZKOwnerConflict && r.Path == "/consumers/g/owners/t/1"
	})
	if conflicts != 2 {
		t.Fatalf("owner conflicts on /consumers/g/owners/t/1 = %d, want 2 (one per attempt)", conflicts)
	}
	if n := m.count(0, timeline.ZKOp, func(r timeline.Record) bool {
		return r.Result == timeline.ZKOwnerConflict && r.Path != "/consumers/g/owners/t/1"
	}); n != 0 {
		t.Fatalf("%d conflicts marked on partitions nobody else owns", n)
	}
	if _, err := m.CreateMessageStreams(ctx, map[string]int{"t": 1}); !errors.Is(err, ErrStreamsExist) {
		t.Fatalf("second CreateMessageStreams = %v, want ErrStreamsExist", err)
	}
}

// A watch-triggered rebalance that fails every attempt is logged, recorded and sent on Errors();
// the connector then holds no partition until the next event, whose rebalance succeeds.
func TestWatchTriggeredFailureReported(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 2)
	m := newMember(t, z.Connect(), "g", "c1", map[string]string{"rebalance.max.retries": "2", "rebalance.backoff.ms": "100"})
	createStreams(t, m, map[string]int{"t": 1})
	if got := ownedString(m.Owned()); got != "t:[0 1]" {
		t.Fatalf("owns %s", got)
	}
	// A member whose registration does not parse joins: every attempt fails reading it.
	a.create("/consumers/g/ids/g_bad", []byte("not json"), zk.FlagEphemeral)
	var err error
	select {
	case err = <-m.Errors():
	case <-time.After(20 * time.Second):
		t.Fatal("no error reported")
	}
	if !errors.Is(err, ErrRebalanceFailed) || !strings.Contains(err.Error(), "not json") {
		t.Fatalf("reported %v, want ErrRebalanceFailed about the bad registration", err)
	}
	if got := m.Owned(); len(got) != 0 {
		t.Fatalf("owns %v after the failure, want nothing", got)
	}
	if got := a.owners("g", "t"); len(got) != 0 {
		t.Fatalf("owner znodes %v after the failure, want none", got)
	}
	if n := m.count(0, timeline.Error, func(r timeline.Record) bool { return strings.Contains(r.Text, "can't rebalance after 2 retries") }); n != 1 {
		t.Fatalf("error records = %d, want 1", n)
	}
	if err := a.conn.Delete("/consumers/g/ids/g_bad", -1); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "recovery at the next event", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c1-0"}) && m.rebalanceIdle()
	})
}

type listenerCall struct {
	kind       string
	owned      map[string][]int32
	consumerID string
	assignment map[string]map[int32]string
}

type recordingListener struct {
	mu    sync.Mutex
	calls []listenerCall
}

func (l *recordingListener) BeforeReleasingPartitions(owned map[string][]int32) {
	l.mu.Lock()
	l.calls = append(l.calls, listenerCall{kind: "release", owned: owned})
	l.mu.Unlock()
}

func (l *recordingListener) BeforeStartingFetchers(id string, assignment map[string]map[int32]string) {
	l.mu.Lock()
	l.calls = append(l.calls, listenerCall{kind: "start", consumerID: id, assignment: assignment})
	l.mu.Unlock()
}

func (l *recordingListener) get() []listenerCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]listenerCall(nil), l.calls...)
}

// The rebalance listener (0.9's ConsumerRebalanceListener) sees what this consumer held before
// releasing, and the whole group's assignment before its fetchers start.
func TestRebalanceListener(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	a := newAdmin(t, z.Connect())
	a.fakeBroker(0)
	a.createTopic("t", 4)
	l := &recordingListener{}
	m1 := newMemberWith(t, z.Connect(), "g", "c1", nil, func(c *Config) { c.Listener = l })
	createStreams(t, m1, map[string]int{"t": 1})
	m2 := newMember(t, z.Connect(), "g", "c2", nil)
	createStreams(t, m2, map[string]int{"t": 1})
	testutil.WaitFor(t, 20*time.Second, "2 and 2", func() bool {
		return reflect.DeepEqual(a.owners("g", "t"), map[int32]string{0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}) && m1.rebalanceIdle() && m2.rebalanceIdle()
	})
	calls := l.get()
	want := []listenerCall{
		{kind: "release", owned: map[string][]int32{}},
		{kind: "start", consumerID: "g_c1", assignment: map[string]map[int32]string{"t": {0: "g_c1-0", 1: "g_c1-0", 2: "g_c1-0", 3: "g_c1-0"}}},
		{kind: "release", owned: map[string][]int32{"t": {0, 1, 2, 3}}},
		{kind: "start", consumerID: "g_c1", assignment: map[string]map[int32]string{"t": {0: "g_c1-0", 1: "g_c1-0", 2: "g_c2-0", 3: "g_c2-0"}}},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("listener calls:\n got %+v\nwant %+v", calls, want)
	}
}
