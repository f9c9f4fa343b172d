package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

func driverConfig() Config {
	cfg := DefaultConfig()
	cfg.Node = Node{ID: 1, Host: "127.0.0.1", Port: 9092}
	cfg.OffsetsTopicNumPartitions = 3
	cfg.GroupMinSessionTimeoutMs = 100
	cfg.GroupInitialRebalanceDelayMs = 50
	return cfg
}

func testLogger(t testing.TB) *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l).WithField("broker", 1)
}

// handle calls Handle with a deadline and fails the test on an error return.
func handle(t *testing.T, c *Coordinator, clientID string, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := tryHandle(c, clientID, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tryHandle is handle returning Handle's error (named by the request's type) instead of failing the
// test: for goroutines other than the test's, which hand it over (handleIn).
func tryHandle(c *Coordinator, clientID string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ContextWithClient(context.Background(), clientID, "/127.0.0.1"), 5*time.Second)
	defer cancel()
	resp, err := c.Handle(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", req, err)
	}
	return resp, nil
}

// handled is a tryHandle's outcome, sent from its goroutine to the test's.
type handled struct {
	resp kmsg.Response
	err  error
}

// handleIn runs tryHandle in a goroutine (a request that parks until something else happens); its
// outcome comes on the channel, for awaitHandled on the test goroutine.
func handleIn(c *Coordinator, clientID string, req kmsg.Request) <-chan handled {
	ch := make(chan handled, 1)
	go func() {
		resp, err := tryHandle(c, clientID, req)
		ch <- handled{resp, err}
	}()
	return ch
}

// awaitHandled receives a handleIn's outcome on the test goroutine: its error fails the test.
func awaitHandled(t *testing.T, ch <-chan handled) kmsg.Response {
	t.Helper()
	h := <-ch
	if h.err != nil {
		t.Fatal(h.err)
	}
	return h.resp
}

// TestDriverHandle runs the coordinator with real timers through Handle: two v5 members join
// concurrently (blocking JoinGroups released together after the initial delay), sync, one goes
// silent and is expired by its session timer, the other rejoins into generation 2 and commits; a
// parked JoinGroup ends with its ctx, another with Close; a restarted coordinator replays the log.
func TestDriverHandle(t *testing.T) {
	log := newMemLog()
	c, err := Start(context.Background(), driverConfig(), log, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	o := joinOpts{version: 5, session: 300, rebalance: 2000}
	// joinMember runs on its own goroutine: it returns its failure for the test goroutine to report.
	joinMember := func(client string) (*kmsg.JoinGroupResponse, error) {
		resp, err := tryHandle(c, client, joinReq("g", o))
		if err != nil {
			return nil, err
		}
		first := resp.(*kmsg.JoinGroupResponse)
		if first.ErrorCode != codeMemberIDRequired {
			return first, fmt.Errorf("%s first join: %d, want MEMBER_ID_REQUIRED", client, first.ErrorCode)
		}
		oo := o
		oo.memberID = first.MemberID
		resp, err = tryHandle(c, client, joinReq("g", oo))
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.JoinGroupResponse), nil
	}
	var wg sync.WaitGroup
	resps := make([]*kmsg.JoinGroupResponse, 2)
	errs := make([]error, 2)
	start := time.Now()
	for i, client := range []string{"client-a", "client-b"} {
		wg.Add(1)
		go func(i int, client string) {
			defer wg.Done()
			resps[i], errs[i] = joinMember(client)
		}(i, client)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("joins completed after %v, before group.initial.rebalance.delay.ms", took)
	}
	a, b := resps[0], resps[1]
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.Generation != 1 || b.Generation != 1 || a.LeaderID != b.LeaderID {
		t.Fatalf("joins: %+v / %+v", a, b)
	}
	leader, follower, followerClient := a, b, "client-b"
	if b.LeaderID == b.MemberID {
		leader, follower, followerClient = b, a, "client-a"
	}
	fsync := handleIn(c, "f", syncReq(3, "g", follower.MemberID, 1, nil, nil))
	testutil.WaitFor(t, 2*time.Second, "the follower's SyncGroup to park", func() bool {
		g, _ := c.Group("g")
		for _, m := range g.Members {
			if m.MemberID == follower.MemberID && m.AwaitingSync {
				return true
			}
		}
		return false
	})
	ls := handle(t, c, "l", syncReq(3, "g", leader.MemberID, 1, nil,
		map[string]string{leader.MemberID: "L", follower.MemberID: "F"})).(*kmsg.SyncGroupResponse)
	if fs := awaitHandled(t, fsync).(*kmsg.SyncGroupResponse); ls.ErrorCode != 0 || fs.ErrorCode != 0 || string(ls.MemberAssignment) != "L" || string(fs.MemberAssignment) != "F" {
		t.Fatalf("syncs: %+v / %+v", ls, fs)
	}

	// the follower heartbeats every 40 ms; the leader is silent and its 300 ms session runs out
	hbCtx, stopHB := context.WithCancel(context.Background())
	rebalancing := make(chan struct{})
	var hbWG sync.WaitGroup
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-tick.C:
			}
			resp, err := c.Handle(hbCtx, heartbeatReq(3, "g", follower.MemberID, 1, nil))
			if err != nil {
				return
			}
			if resp.(*kmsg.HeartbeatResponse).ErrorCode == codeRebalanceInProgress {
				close(rebalancing)
				return
			}
		}
	}()
	select {
	case <-rebalancing:
	case <-time.After(3 * time.Second):
		t.Fatal("no REBALANCE_IN_PROGRESS after the leader went silent")
	}
	stopHB()
	hbWG.Wait()
	if g, _ := c.Group("g"); g.State != PreparingRebalance || len(g.Members) != 1 || g.Members[0].MemberID != follower.MemberID {
		t.Fatalf("after the leader's session timeout: %+v", g)
	}
	oo := o
	oo.memberID = follower.MemberID
	rj := handle(t, c, "f", joinReq("g", oo)).(*kmsg.JoinGroupResponse)
	if rj.ErrorCode != 0 || rj.Generation != 2 || rj.LeaderID != follower.MemberID {
		t.Fatalf("rejoin: %+v", rj)
	}
	handle(t, c, "f", syncReq(3, "g", follower.MemberID, 2, nil, map[string]string{follower.MemberID: "LF"}))
	if e := commitErr(t, handle(t, c, "f", commitReq(8, "g", follower.MemberID, 2, nil, "t", 0, 41))); e != 0 {
		t.Fatalf("commit: %d", e)
	}
	if off, ok := c.CommittedOffset("g", "t", 0); !ok || off != 41 {
		t.Fatalf("committed %d %v", off, ok)
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	if d := handle(t, c, "x", dr).(*kmsg.DescribeGroupsResponse).Groups[0]; d.State != "Stable" || len(d.Members) != 1 ||
		d.Members[0].ClientID != followerClient || d.Members[0].ClientHost != "/127.0.0.1" { // the first join's client id
		t.Fatalf("describe: %+v", d)
	}

	// a new member's JoinGroup parks (the group waits up to 2 s for the others); its ctx ends it
	nj := handle(t, c, "n", joinReq("g", o)).(*kmsg.JoinGroupResponse)
	on := o
	on.memberID = nj.MemberID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	_, err = c.Handle(ctx, joinReq("g", on))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("parked join with an expiring ctx: %v", err)
	}
	// another new member's JoinGroup parks too (the follower has not rejoined); Close ends it
	n2 := handle(t, c, "n2", joinReq("g", o)).(*kmsg.JoinGroupResponse)
	on2 := o
	on2.memberID = n2.MemberID
	parked := make(chan error, 1)
	go func() {
		_, err := c.Handle(context.Background(), joinReq("g", on2))
		parked <- err
	}()
	testutil.WaitFor(t, 2*time.Second, "the second new member's join to park", func() bool {
		g, _ := c.Group("g")
		for _, m := range g.Members {
			if m.MemberID == n2.MemberID && m.AwaitingJoin {
				return true
			}
		}
		return false
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-parked; !errors.Is(err, ErrClosed) {
		t.Fatalf("parked join at Close: %v", err)
	}
	if _, err := c.Handle(context.Background(), heartbeatReq(3, "g", follower.MemberID, 2, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Handle after Close: %v", err)
	}
	if f := c.Faults(); len(f) != 0 {
		t.Fatalf("faults: %v", f)
	}

	// a restarted coordinator replays __consumer_offsets
	c2, err := Start(context.Background(), driverConfig(), log, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	g, ok := c2.Group("g")
	if !ok || g.State != Stable || g.Generation != 2 || len(g.Members) != 1 || g.Members[0].MemberID != follower.MemberID ||
		string(g.Members[0].Assignment) != "LF" {
		t.Fatalf("replayed group: %+v", g)
	}
	if off, ok := c2.CommittedOffset("g", "t", 0); !ok || off != 41 {
		t.Fatalf("replayed offset %d %v", off, ok)
	}
	// its restored member is expired by a real session timer if it never heartbeats
	testutil.WaitFor(t, 3*time.Second, "the restored silent member to expire", func() bool {
		g, _ := c2.Group("g")
		return g.State == Empty && len(g.Members) == 0 && g.Generation == 3
	})
}

// TestDriverStartErrors: bad configuration and a failing log are errors, not crashes.
func TestDriverStartErrors(t *testing.T) {
	cfg := driverConfig()
	cfg.GroupMaxSessionTimeoutMs = 10
	if _, err := Start(context.Background(), cfg, newMemLog(), testLogger(t)); err == nil {
		t.Fatal("max < min session timeout accepted")
	}
	if _, err := Start(context.Background(), driverConfig(), nil, testLogger(t)); err == nil {
		t.Fatal("nil OffsetsLog accepted")
	}
	bad := newMemLog()
	bad.batches[0] = [][]byte{[]byte("garbage that is not a batch at all")}
	c, err := Start(context.Background(), driverConfig(), bad, testLogger(t))
	if err == nil || !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("corrupt log: %v", err)
	}
	defer c.Close()
	// the coordinator still serves the partition with what it could read
	if e := commitErr(t, handle(t, c, "x", commitReq(5, "", "", -1, nil, "t", 0, 1))); e != 0 {
		t.Fatalf("commit after a failed load: %d", e)
	}
}

// TestDriverClientInfoAndVersions: Config.ClientInfo feeds the member's client id/host when the
// context has no ContextWithClient; GroupAPIVersions advertises Kafka 3.9's ranges.
func TestDriverClientInfoAndVersions(t *testing.T) {
	type riKey struct{}
	cfg := driverConfig()
	cfg.GroupInitialRebalanceDelayMs = 0
	cfg.ClientInfo = func(ctx context.Context) (string, string) {
		id, _ := ctx.Value(riKey{}).(string)
		return id, "/10.0.0.7"
	}
	c, err := Start(context.Background(), cfg, newMemLog(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), riKey{}, "from-broker"), 5*time.Second)
	defer cancel()
	resp, err := c.Handle(ctx, joinReq("g", joinOpts{version: 3, session: 1000, rebalance: 1000}))
	if err != nil || resp.(*kmsg.JoinGroupResponse).ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	g, _ := c.Group("g")
	if len(g.Members) != 1 || g.Members[0].ClientID != "from-broker" || g.Members[0].ClientHost != "/10.0.0.7" {
		t.Fatalf("member: %+v", g.Members)
	}
	want := map[int16][2]int16{8: {0, 9}, 9: {0, 9}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 42: {0, 2}, 47: {0, 0}}
	vs := c.GroupAPIVersions()
	if len(vs) != len(want) {
		t.Fatalf("versions: %+v", vs)
	}
	for _, v := range vs {
		if w, ok := want[v.ApiKey]; !ok || w != [2]int16{v.MinVersion, v.MaxVersion} {
			t.Fatalf("api %d: %d-%d", v.ApiKey, v.MinVersion, v.MaxVersion)
		}
	}
}

// TestDriverElectionMarksLoadingAtOnce: BeginElection makes a partition's groups answer JoinGroup with
// COORDINATOR_LOAD_IN_PROGRESS before any of it is read (GroupMetadataManager's loadingPartitions);
// LoadPartition then serves them; a resignation between the two drops the read.
func TestDriverElectionMarksLoadingAtOnce(t *testing.T) {
	cfg := driverConfig()
	var leads atomic.Bool // whether this broker leads the offsets partitions; none at start
	cfg.CoordinatorFor = func(int32) (Node, bool) {
		if leads.Load() {
			return cfg.Node, true
		}
		return Node{ID: 2, Host: "127.0.0.1", Port: 9093}, true
	}
	c, err := Start(context.Background(), cfg, newMemLog(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leads.Store(true)
	p := PartitionFor("g", cfg.OffsetsTopicNumPartitions)
	// JoinGroup with a member id the group does not know: answered at once in every state. (A
	// Heartbeat would not do: Kafka answers it NONE while the group loads, "blindly".)
	joinCode := func() int16 {
		return handle(t, c, "c", joinReq("g", joinOpts{version: 5, memberID: "stranger", session: 1000, rebalance: 1000})).(*kmsg.JoinGroupResponse).ErrorCode
	}
	if got := joinCode(); got != kerr.NotCoordinator.Code {
		t.Fatalf("before the election: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	if began, err := c.BeginElection(p); !began || err != nil {
		t.Fatalf("BeginElection = %v, %v", began, err)
	}
	if got := joinCode(); got != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("marked, not read: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(got))
	}
	if began, _ := c.BeginElection(p); began {
		t.Fatal("a second BeginElection of a loading partition began again")
	}
	c.OnResignation(p)
	if err := c.LoadPartition(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := joinCode(); got != kerr.NotCoordinator.Code {
		t.Fatalf("resigned during the read: %v, want NOT_COORDINATOR (the read dropped)", kerr.ErrorForCode(got))
	}
	if err := c.OnElection(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := joinCode(); got != kerr.UnknownMemberID.Code {
		t.Fatalf("loaded: %v, want UNKNOWN_MEMBER_ID (serving, no such member)", kerr.ErrorForCode(got))
	}
}
