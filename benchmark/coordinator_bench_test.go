package benchmark

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/conformance"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
)

// Shape of the coordinator benchmarks: the group's members subscribe to coordTopics topics of
// coordPartitions partitions each (1,000 partitions in all), protocol cooperative-sticky.
const (
	coordTopics     = 10
	coordPartitions = 100 // per topic

	coordSessionTimeoutMs   = 120_000 // session.timeout.ms of the benchmark's members: no heartbeats between rebalances
	coordRebalanceTimeoutMs = 30_000  // max.poll.interval.ms, the JoinGroup rebalance timeout

	// Request versions: the newest the lab's coordinator (Kafka 3.9) accepts; kfake accepts them too.
	joinVersion      = 9
	syncVersion      = 5
	heartbeatVersion = 4
)

// coordSizes are the group sizes measured (members).
var coordSizes = []int{10, 100, 1000}

// coordWarmup bounds the warm-up of each wire target before BenchmarkCoordinatorRebalance times it
// (per target and group size). 0 skips the warm-up, and with it the ratio against Kafka.
var coordWarmup = flag.Duration("coord.warmup", 2*time.Minute, "BenchmarkCoordinatorRebalance: most time spent warming each wire target (per size) before timing; 0: no warm-up and no ratio against Kafka")

// Warm-up rule (warmUp): rebalances in windows of warmWindow, until at least the minimum count is
// done and a window's median rebalance time is within warmSettle of the previous window's. For the
// JVM the minimum is kafkaWarmRequests group requests (JoinGroup + SyncGroup per member per
// rebalance): HotSpot compiles a method with C2 after about 10,000 invocations (Tier4 thresholds), so
// every request path has been compiled well before the clock starts.
const (
	warmWindow        = 20
	warmSettle        = 0.10
	kafkaWarmRequests = 40_000
)

// BenchmarkCoordinatorRebalance measures the coordinator's handling of one full rebalance of an
// established group of N members (N = 10, 100, 1000), three ways in the same b.N loop:
//
//   - core: broker/coordinator's pure Core, driven in-process with a fake clock (Step, no network,
//     no log: Append effects are completed at once, so the group record is encoded but not written).
//   - rebalancelab-wire: the lab's broker (conformance.StartPair's: a real ZooKeeper shared with the
//     Kafka broker below under another chroot, one in-process broker) over
//     TCP, one wire.Conn per member; the leader's SyncGroup appends the group record to the broker's
//     __consumer_offsets log (page cache, no fsync).
//   - kafka-wire: Kafka 3.9's broker in ZooKeeper mode (the pair's other side, from
//     `make deps`; the lab's group.initial.rebalance.delay.ms=0 and its reduced heap and threads,
//     lab.KafkaSettingsSummary), over TCP, the same raw requests; its group record goes to its
//     __consumer_offsets log.
//   - kfake-wire: franz-go's kfake cluster (one broker, in memory) over TCP, the same raw requests.
//
// One operation is one rebalance: every member sends JoinGroup v9 with its member id and a
// subscription whose generation changed (ConsumerMemberMetadata v3: coordTopics topics, owned
// partitions = its current assignment, cooperative-sticky user data = the generation), which makes
// any member's rejoin of the Stable group start a rebalance (Kafka's doCurrentMemberJoinGroup: changed
// metadata), and the join phase ends when the last member has rejoined. Then the leader sends
// SyncGroup v5 with every member's assignment (a cooperative-sticky assignment of the 1,000
// partitions, encoded once) and the N-1 followers send theirs. Over the wire the N joins are sent
// concurrently on N connections and so are the N syncs, as N clients would (followers' syncs
// wait in the coordinator for the leader's); the core gets the joins one after another, then the
// leader's sync, then the followers'. Requests are built before the stopwatch starts; over the wire
// their encoding and decoding is timed. Every response is checked (no error, one new generation,
// the leader sees N members, each member receives the assignment the leader sent for it): the
// benchmark fails otherwise.
//
// The group is formed once per target and size, outside the timer, by members that join, sync and
// heartbeat until all N are in one generation. Before the first timed rebalance, when b.N > 1, every
// wire target is warmed up (warmUp, outside b's timer): rebalanced in windows of warmWindow until the
// window's median time settles (within warmSettle of the previous window's), after at least
// kafkaWarmRequests group requests for Kafka's JVM (its JIT compiles the request paths), bounded by
// -coord.warmup (default 2 min) per target and size. The ratio against Kafka is reported only after a
// settled warm-up: with -benchtime 1x (b.N = 1), -coord.warmup=0, or a warm-up that did not settle
// within its bound, x-rebalancelab-wire-vs-kafka-wire is left out and the log says why. The peers'
// settings are printed as configuration lines (kafka-settings, kfake-settings,
// rebalancelab-settings) before the results. Metrics: ms-core/op, ms-rebalancelab-wire/op,
// ms-kafka-wire/op, ms-kfake-wire/op, x-rebalancelab-wire-vs-kafka-wire and
// x-rebalancelab-wire-vs-kfake-wire (ours/peer; below 1: ours faster), kafka-warmup-rebalances (the
// warm-up's length, with the ratio against Kafka).
func BenchmarkCoordinatorRebalance(b *testing.B) {
	testutil.Needs(b, testutil.ZooKeeper, testutil.Kafka)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	// Our broker and Kafka 3.9's on one ZooKeeper (conformance's start-up, as the differential test's).
	pair, err := conformance.StartPair(ctx, logrus.NewEntry(log))
	if err != nil {
		b.Fatal(err)
	}
	defer pair.Close()
	l, kl := pair.Ours, pair.Kafka
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	// The peers' settings, as configuration lines of the output (`bench report` prints them beside
	// the ratios and keeps them in the history line).
	printBenchConfig(map[string]string{
		"kafka-settings":        lab.KafkaSettingsSummary(kl.Brokers()[0].Properties()),
		"kfake-settings":        KfakeSettings(1, false),
		"rebalancelab-settings": RebalancelabSettings(l.Brokers()[0].Properties(), true),
	})
	fakeAddr := fake.ListenAddrs()[0]
	var groups []*wireGroup // closed when the parent ends: b.Run may call a sub-benchmark twice
	defer func() {
		for _, g := range groups {
			g.close()
		}
	}()

	for _, n := range coordSizes {
		var core *coreGroup
		var ours, kafka, peer *wireGroup
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			if core == nil { // formed once; b.Run may call this function more than once
				start := time.Now()
				var err error
				if core, err = newCoreGroup(fmt.Sprintf("bench-core-%d", n), n); err != nil {
					b.Fatalf("core: %v", err)
				}
				fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
				defer fcancel()
				if ours, err = formWireGroup(fctx, "rebalancelab", l.Brokers()[0].Addr(), fmt.Sprintf("bench-wire-%d", n), n); err != nil {
					b.Fatalf("rebalancelab: %v", err)
				}
				groups = append(groups, ours)
				if kafka, err = formWireGroup(fctx, "kafka", kl.Brokers()[0].Addr(), fmt.Sprintf("bench-wire-%d", n), n); err != nil {
					b.Fatalf("kafka: %v", err)
				}
				groups = append(groups, kafka)
				if peer, err = formWireGroup(fctx, "kfake", fakeAddr, fmt.Sprintf("bench-wire-%d", n), n); err != nil {
					b.Fatalf("kfake: %v", err)
				}
				groups = append(groups, peer)
				b.Logf("formed %d-member groups in %v: core at generation %d, rebalancelab at %d, kafka at %d, kfake at %d",
					n, time.Since(start).Round(time.Millisecond), core.generation, ours.generation, kafka.generation, peer.generation)
			}
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
			defer rcancel()
			// Warm up once per group, and only when timing more than one rebalance: b.N is 1 in
			// the probe run before a -benchtime Nx run and under -benchtime 1x (a check of the
			// benchmark's mechanics, whose cost stays the groups' formation).
			if b.N > 1 && *coordWarmup > 0 && !kafka.warmed.done {
				for _, g := range []*wireGroup{ours, kafka, peer} {
					minimum := 2 * warmWindow
					if g == kafka {
						minimum = max(minimum, (kafkaWarmRequests+2*n-1)/(2*n))
					}
					w, err := g.warmUp(rctx, minimum, *coordWarmup)
					if err != nil {
						b.Fatalf("%s warm-up: %v", g.target, err)
					}
					g.warmed = w
					b.Logf("members=%d %s warm-up: %s", n, g.target, w)
				}
			}
			s := newSideBySide(
				side{"core", core.prepare, core.rebalance},
				side{"rebalancelab-wire", ours.prepare, func() error { return ours.rebalance(rctx) }},
				side{"kafka-wire", kafka.prepare, func() error { return kafka.rebalance(rctx) }},
				side{"kfake-wire", peer.prepare, func() error { return peer.rebalance(rctx) }},
			)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.iteration(b, i)
			}
			if kafka.warmed.settled() {
				s.report(b, [2]int{1, 2}, [2]int{1, 3})
				b.ReportMetric(float64(kafka.warmed.rebalances), "kafka-warmup-rebalances")
			} else {
				// A cold or unsettled JVM's time is not Kafka's: no ratio against it.
				s.report(b, [2]int{1, 3})
				b.Logf("members=%d: no x-rebalancelab-wire-vs-kafka-wire: Kafka's JVM not warmed (%s)", n, kafka.warmed.why(b.N))
			}
		})
	}
}

// ---- what every target shares ----

// groupShape is what a benchmark group's members subscribe to and are assigned.
type groupShape struct {
	topics     []string
	partitions map[string]int32
}

func newGroupShape() groupShape {
	t, p := topicsOf(coordTopics, coordPartitions)
	return groupShape{t, p}
}

// assign computes the cooperative-sticky assignment of the shape's partitions over memberIDs, and
// each member's encoded ConsumerMemberAssignment.
func (s groupShape) assign(memberIDs []string) (map[string][]assignor.TopicPartition, map[string][]byte, error) {
	subs := make([]assignor.Subscription, len(memberIDs))
	for i, id := range memberIDs {
		subs[i] = assignor.Subscription{MemberID: id, Topics: s.topics, Generation: assignor.DefaultGeneration}
	}
	plan := assignor.CooperativeSticky{}.Assign(s.partitions, subs)
	if err := checkCoverage(plan, s.partitions); err != nil {
		return nil, nil, err
	}
	enc := make(map[string][]byte, len(plan))
	for id, ps := range plan {
		enc[id] = assignor.EncodeAssignment(ps, nil)
	}
	return plan, enc, nil
}

// joinRequest is a member's JoinGroup v9: generation gen and owned partitions in its
// cooperative-sticky subscription.
func (s groupShape) joinRequest(group, memberID string, gen int32, owned []assignor.TopicPartition) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = joinVersion
	r.Group = group
	r.MemberID = memberID
	r.SessionTimeoutMillis = coordSessionTimeoutMs
	r.RebalanceTimeoutMillis = coordRebalanceTimeoutMs
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = assignor.CooperativeStickyName
	p.Metadata = assignor.EncodeSubscription(assignor.Subscription{
		Topics:          s.topics,
		UserData:        assignor.EncodeCooperativeUserData(gen),
		OwnedPartitions: owned,
		Generation:      gen,
	})
	r.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return r
}

// syncRequest is a member's SyncGroup v5; the leader passes every member's assignment.
func syncRequest(group, memberID string, gen int32, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = syncVersion
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr(assignor.CooperativeStickyName)
	for id, a := range assignments {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

// checkJoins checks one rebalance's JoinGroup responses: no error, one generation newer than prev,
// one leader (a member) who sees every member. It returns the generation and the leader's index.
func checkJoins(resps []*kmsg.JoinGroupResponse, memberIDs []string, prev int32) (int32, int, error) {
	gen, leader := resps[0].Generation, -1
	for i, r := range resps {
		if r.ErrorCode != 0 {
			return 0, 0, fmt.Errorf("member %s: JoinGroup: %v", memberIDs[i], kerr.ErrorForCode(r.ErrorCode))
		}
		if r.Generation != gen || r.Generation <= prev {
			return 0, 0, fmt.Errorf("member %s: JoinGroup generation %d (first member: %d, previous: %d)", memberIDs[i], r.Generation, gen, prev)
		}
		if r.MemberID != memberIDs[i] {
			return 0, 0, fmt.Errorf("JoinGroup answered member id %s to member %s", r.MemberID, memberIDs[i])
		}
		if r.LeaderID == r.MemberID {
			leader = i
		}
	}
	if leader < 0 {
		return 0, 0, fmt.Errorf("no member is the leader (%s)", resps[0].LeaderID)
	}
	if got := len(resps[leader].Members); got != len(memberIDs) {
		return 0, 0, fmt.Errorf("leader sees %d members, want %d", got, len(memberIDs))
	}
	return gen, leader, nil
}

// checkSync checks a SyncGroup response: no error and the assignment the leader sent.
func checkSync(r *kmsg.SyncGroupResponse, memberID string, want []byte) error {
	if r.ErrorCode != 0 {
		return fmt.Errorf("member %s: SyncGroup: %v", memberID, kerr.ErrorForCode(r.ErrorCode))
	}
	if string(r.MemberAssignment) != string(want) {
		return fmt.Errorf("member %s: SyncGroup assignment of %d bytes, the leader sent %d", memberID, len(r.MemberAssignment), len(want))
	}
	return nil
}

// ---- the pure core, with a fake clock ----

// coreGroup is a coordinator.Core holding one established group, driven as the broker's driver
// drives it but with a fake clock and no log.
type coreGroup struct {
	shape  groupShape
	group  string
	core   *coordinator.Core
	now    time.Time
	timers map[coordinator.TimerID]time.Time
	resps  map[coordinator.RequestID]kmsg.Response
	nextID coordinator.RequestID

	memberIDs   []string
	owned       map[string][]assignor.TopicPartition
	assignments map[string][]byte
	generation  int32

	joins []*kmsg.JoinGroupRequest // the next rebalance's requests, built outside the stopwatch
}

// newCoreGroup starts a Core (Kafka 3.9 defaults, group.initial.rebalance.delay.ms 3000 on the fake
// clock), loads every __consumer_offsets partition empty and forms a group of n members: n
// JoinGroups that get MEMBER_ID_REQUIRED, n JoinGroups with those ids, the initial delay passes,
// then the syncs.
func newCoreGroup(group string, n int) (*coreGroup, error) {
	cfg := coordinator.DefaultConfig()
	cfg.Node = coordinator.Node{ID: 1, Host: "127.0.0.1", Port: 9092}
	core, err := coordinator.NewCore(cfg, nil, 1)
	if err != nil {
		return nil, err
	}
	g := &coreGroup{shape: newGroupShape(), group: group, core: core, now: time.UnixMilli(1_700_000_000_000),
		timers: map[coordinator.TimerID]time.Time{}, resps: map[coordinator.RequestID]kmsg.Response{}}
	if err := g.apply(core.Startup(g.now)); err != nil {
		return nil, err
	}
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		if !core.BeginLoad(p) {
			return nil, fmt.Errorf("BeginLoad(%d) refused", p)
		}
		effects, err := core.CompleteLoad(g.now, p, nil)
		if err != nil {
			return nil, err
		}
		if err := g.apply(effects); err != nil {
			return nil, err
		}
	}

	ids := make([]coordinator.RequestID, n)
	for i := range ids {
		if ids[i], err = g.send(g.shape.joinRequest(group, "", assignor.DefaultGeneration, nil)); err != nil {
			return nil, err
		}
	}
	for i, id := range ids {
		r, ok := g.resps[id].(*kmsg.JoinGroupResponse)
		if !ok || r.ErrorCode != kerr.MemberIDRequired.Code {
			return nil, fmt.Errorf("first JoinGroup of member %d: %+v, want MEMBER_ID_REQUIRED", i, g.resps[id])
		}
		g.memberIDs = append(g.memberIDs, r.MemberID)
		delete(g.resps, id)
	}
	for i, m := range g.memberIDs {
		if ids[i], err = g.send(g.shape.joinRequest(group, m, assignor.DefaultGeneration, nil)); err != nil {
			return nil, err
		}
	}
	for tries := 0; g.resps[ids[n-1]] == nil; tries++ {
		if tries == 10 {
			return nil, fmt.Errorf("join phase did not end after %d initial delays", tries)
		}
		if err := g.advance(time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond); err != nil {
			return nil, err
		}
	}
	joins, err := g.takeJoins(ids)
	if err != nil {
		return nil, err
	}
	gen, leader, err := checkJoins(joins, g.memberIDs, 0)
	if err != nil {
		return nil, err
	}
	if g.owned, g.assignments, err = g.shape.assign(g.memberIDs); err != nil {
		return nil, err
	}
	g.generation = gen
	if err := g.syncAll(leader); err != nil {
		return nil, err
	}
	return g, nil
}

// apply carries out effects as the broker's driver does, except that appends succeed at once.
func (g *coreGroup) apply(effects []coordinator.Effect) error {
	queue := effects
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		switch e := e.(type) {
		case coordinator.Respond:
			if e.Err != nil {
				return fmt.Errorf("request %d: %w", e.ID, e.Err)
			}
			g.resps[e.ID] = e.Response
		case coordinator.SetTimer:
			g.timers[e.Timer] = e.At
		case coordinator.CancelTimer:
			delete(g.timers, e.Timer)
		case coordinator.Append:
			queue = append(g.core.Step(g.now, coordinator.AppendCompleted{ID: e.ID}), queue...)
		}
	}
	if f := g.core.Faults(); len(f) > 0 {
		return fmt.Errorf("core faults: %v", f)
	}
	return nil
}

// send hands req to the core and carries out the effects; the response may come in a later step.
func (g *coreGroup) send(req kmsg.Request) (coordinator.RequestID, error) {
	g.nextID++
	id := g.nextID
	return id, g.apply(g.core.Step(g.now, coordinator.RequestEvent{ID: id, Request: req, ClientID: "bench", ClientHost: "/127.0.0.1"}))
}

// advance moves the fake clock by d, firing the timers due on the way in deadline order.
func (g *coreGroup) advance(d time.Duration) error {
	end := g.now.Add(d)
	for {
		var next coordinator.TimerID
		var at time.Time
		found := false
		for id, t := range g.timers {
			if !t.After(end) && (!found || t.Before(at) || (t.Equal(at) && id.Seq < next.Seq)) {
				next, at, found = id, t, true
			}
		}
		if !found {
			break
		}
		delete(g.timers, next)
		if at.After(g.now) {
			g.now = at
		}
		if err := g.apply(g.core.Step(g.now, coordinator.TimerFired{Timer: next})); err != nil {
			return err
		}
	}
	g.now = end
	return nil
}

// takeJoins removes and returns the JoinGroup responses to ids; every one must be there.
func (g *coreGroup) takeJoins(ids []coordinator.RequestID) ([]*kmsg.JoinGroupResponse, error) {
	out := make([]*kmsg.JoinGroupResponse, len(ids))
	for i, id := range ids {
		r, ok := g.resps[id].(*kmsg.JoinGroupResponse)
		if !ok {
			return nil, fmt.Errorf("member %s: no JoinGroup response (%T)", g.memberIDs[i], g.resps[id])
		}
		delete(g.resps, id)
		out[i] = r
	}
	return out, nil
}

// syncAll sends the leader's SyncGroup, then the followers', and checks every answer.
func (g *coreGroup) syncAll(leader int) error {
	order := make([]int, 0, len(g.memberIDs))
	order = append(order, leader)
	for i := range g.memberIDs {
		if i != leader {
			order = append(order, i)
		}
	}
	for _, i := range order {
		var asg map[string][]byte
		if i == leader {
			asg = g.assignments
		}
		id, err := g.send(syncRequest(g.group, g.memberIDs[i], g.generation, asg))
		if err != nil {
			return err
		}
		r, ok := g.resps[id].(*kmsg.SyncGroupResponse)
		if !ok {
			return fmt.Errorf("member %s: SyncGroup not answered at once (%T)", g.memberIDs[i], g.resps[id])
		}
		delete(g.resps, id)
		if err := checkSync(r, g.memberIDs[i], g.assignments[g.memberIDs[i]]); err != nil {
			return err
		}
	}
	return nil
}

// prepare builds the next rebalance's JoinGroup requests (outside the stopwatch).
func (g *coreGroup) prepare() error {
	g.joins = rejoinRequests(g.shape, g.group, g.memberIDs, g.generation, g.owned)
	return nil
}

// rejoinRequests are every member's JoinGroup for the next rebalance.
func rejoinRequests(s groupShape, group string, memberIDs []string, gen int32, owned map[string][]assignor.TopicPartition) []*kmsg.JoinGroupRequest {
	out := make([]*kmsg.JoinGroupRequest, len(memberIDs))
	for i, m := range memberIDs {
		out[i] = s.joinRequest(group, m, gen, owned[m])
	}
	return out
}

// rebalance is one operation: the n rejoins, the leader's sync, the followers' syncs.
func (g *coreGroup) rebalance() error {
	ids := make([]coordinator.RequestID, len(g.joins))
	for i, r := range g.joins {
		var err error
		if ids[i], err = g.send(r); err != nil {
			return err
		}
	}
	joins, err := g.takeJoins(ids)
	if err != nil {
		return err
	}
	gen, leader, err := checkJoins(joins, g.memberIDs, g.generation)
	if err != nil {
		return err
	}
	g.generation = gen
	if err := g.syncAll(leader); err != nil {
		return err
	}
	return g.prepare()
}

// ---- a broker over the wire ----

// wireGroup is an established group of n members on one broker, each member with its own
// connection.
type wireGroup struct {
	target string
	shape  groupShape
	group  string
	conns  []*wire.Conn

	memberIDs   []string
	owned       map[string][]assignor.TopicPartition
	assignments map[string][]byte
	generation  int32

	joins []*kmsg.JoinGroupRequest // the next rebalance's requests, built outside the stopwatch

	warmed warmup // what warmUp did; zero until it ran
}

// warmup is what wireGroup.warmUp did: rebalances done, time spent, the first and last window's
// median rebalance time, and whether the last two windows' medians agreed within warmSettle after
// the minimum count.
type warmup struct {
	done             bool
	rebalances       int
	elapsed          time.Duration
	first, last      time.Duration
	isSettled        bool
	minimum          int
	bound            time.Duration
	windowsCompleted int
}

func (w warmup) settled() bool { return w.done && w.isSettled }

func (w warmup) String() string {
	state := "settled"
	if !w.isSettled {
		state = fmt.Sprintf("NOT settled within the %v bound", w.bound)
	}
	return fmt.Sprintf("%d rebalances (minimum %d) in %v, %d windows of %d: median %v in the first, %v in the last; %s",
		w.rebalances, w.minimum, w.elapsed.Round(time.Millisecond), w.windowsCompleted, warmWindow,
		w.first.Round(time.Microsecond), w.last.Round(time.Microsecond), state)
}

func (w warmup) why(n int) string {
	switch {
	case !w.done && n == 1:
		return "b.N is 1 (-benchtime 1x or the probe run): no warm-up"
	case !w.done:
		return "-coord.warmup=0"
	default:
		return w.String()
	}
}

// warmUp rebalances g (as rebalance does, untimed by b) in windows of warmWindow rebalances until
// at least minimum are done and settledWindows says the per-rebalance time has settled, or until
// bound has passed (then the result says not settled). Errors: a rebalance's.
func (g *wireGroup) warmUp(ctx context.Context, minimum int, bound time.Duration) (warmup, error) {
	w := warmup{done: true, minimum: minimum, bound: bound}
	start := time.Now()
	var medians []time.Duration
	for time.Since(start) < bound {
		window := make([]time.Duration, 0, warmWindow)
		for range warmWindow {
			if err := g.prepare(); err != nil {
				return w, err
			}
			t := time.Now()
			if err := g.rebalance(ctx); err != nil {
				return w, err
			}
			window = append(window, time.Since(t))
		}
		w.rebalances += warmWindow
		medians = append(medians, median(window))
		if w.rebalances >= minimum && settledWindows(medians) {
			w.isSettled = true
			break
		}
	}
	w.elapsed, w.windowsCompleted = time.Since(start), len(medians)
	if len(medians) > 0 {
		w.first, w.last = medians[0], medians[len(medians)-1]
	}
	return w, g.prepare()
}

// settledWindows reports whether the last two window medians differ by at most warmSettle of the
// earlier one.
func settledWindows(medians []time.Duration) bool {
	if len(medians) < 2 {
		return false
	}
	prev, last := float64(medians[len(medians)-2]), float64(medians[len(medians)-1])
	return prev > 0 && (last-prev)/prev <= warmSettle && (prev-last)/prev <= warmSettle
}

// median of ds (the mean of the middle two for an even count); ds is reordered.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

// prepare builds the next rebalance's JoinGroup requests (outside the stopwatch).
func (g *wireGroup) prepare() error {
	g.joins = rejoinRequests(g.shape, g.group, g.memberIDs, g.generation, g.owned)
	return nil
}

func (g *wireGroup) close() {
	for _, c := range g.conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// formWireGroup dials n connections to addr and forms group: each member looks the coordinator up,
// then joins, syncs (the leader with an empty assignment for everyone) and heartbeats, rejoining
// when told, until all n have synced in one generation. Then the group is rebalanced once more with
// the real assignment, so that every member owns its partitions.
func formWireGroup(ctx context.Context, target, addr, group string, n int) (*wireGroup, error) {
	g := &wireGroup{target: target, shape: newGroupShape(), group: group, conns: make([]*wire.Conn, n)}
	for i := range g.conns {
		c, err := wire.Dial(ctx, nil, addr, fmt.Sprintf("bench-%d", i))
		if err != nil {
			g.close()
			return nil, err
		}
		g.conns[i] = c
	}
	if err := findCoordinator(ctx, g.conns[0], group); err != nil {
		g.close()
		return nil, err
	}
	f := &formation{n: n, synced: make([]int32, n), done: make(chan struct{})}
	for i := range f.synced {
		f.synced[i] = -1
	}
	ids := make([]string, n)
	gens := make([]int32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], gens[i], errs[i] = g.formMember(ctx, f, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		g.close()
		return nil, err
	}
	g.memberIDs, g.generation = ids, gens[0]
	var err error
	if g.owned, g.assignments, err = g.shape.assign(g.memberIDs); err != nil {
		g.close()
		return nil, err
	}
	if err := g.prepare(); err != nil {
		g.close()
		return nil, err
	}
	if err := g.rebalance(ctx); err != nil {
		g.close()
		return nil, fmt.Errorf("first rebalance with assignments: %w", err)
	}
	return g, nil
}

// formation tracks the members' last synced generation until all n agree.
type formation struct {
	mu     sync.Mutex
	n      int
	synced []int32
	done   chan struct{}
	closed bool
}

func (f *formation) syncedAt(i int, gen int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced[i] = gen
	for _, s := range f.synced {
		if s != gen {
			return
		}
	}
	if !f.closed {
		f.closed = true
		close(f.done)
	}
}

// formMember is member i's loop during formation; it returns the member id and generation once
// every member has synced in the same generation.
func (g *wireGroup) formMember(ctx context.Context, f *formation, i int) (string, int32, error) {
	conn := g.conns[i]
	memberID, gen := "", assignor.DefaultGeneration
	retry := func() error {
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %d of %d: %w", i, f.n, ctx.Err())
		case <-time.After(time.Duration(20+rand.IntN(30)) * time.Millisecond):
			return nil
		}
	}
	for {
		resp, err := conn.Request(ctx, g.shape.joinRequest(g.group, memberID, gen, nil))
		if err != nil {
			return "", 0, err
		}
		jr := resp.(*kmsg.JoinGroupResponse)
		switch err := kerr.ErrorForCode(jr.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.MemberIDRequired):
			memberID = jr.MemberID
			continue
		case errors.Is(err, kerr.UnknownMemberID):
			memberID = ""
			continue
		case errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable):
			if err := retry(); err != nil {
				return "", 0, err
			}
			continue
		default:
			return "", 0, fmt.Errorf("member %d: JoinGroup: %w", i, err)
		}
		memberID, gen = jr.MemberID, jr.Generation
		var asg map[string][]byte
		if jr.LeaderID == memberID {
			asg = map[string][]byte{}
			for _, m := range jr.Members {
				asg[m.MemberID] = assignor.EncodeAssignment(nil, nil)
			}
		}
		resp, err = conn.Request(ctx, syncRequest(g.group, memberID, gen, asg))
		if err != nil {
			return "", 0, err
		}
		switch err := kerr.ErrorForCode(resp.(*kmsg.SyncGroupResponse).ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.RebalanceInProgress), errors.Is(err, kerr.IllegalGeneration):
			continue
		case errors.Is(err, kerr.UnknownMemberID):
			memberID = ""
			continue
		default:
			return "", 0, fmt.Errorf("member %d: SyncGroup: %w", i, err)
		}
		f.syncedAt(i, gen)
		// Heartbeat until everyone is in, or until told to rejoin.
		for {
			select {
			case <-f.done:
				return memberID, gen, nil
			case <-ctx.Done():
				return "", 0, fmt.Errorf("member %d of %d: %w", i, f.n, ctx.Err())
			case <-time.After(time.Duration(50+rand.IntN(50)) * time.Millisecond):
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Version = heartbeatVersion
			hb.Group, hb.MemberID, hb.Generation = g.group, memberID, gen
			resp, err := conn.Request(ctx, hb)
			if err != nil {
				return "", 0, err
			}
			if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
				if code == kerr.UnknownMemberID.Code {
					memberID = ""
				}
				break // rejoin
			}
		}
	}
}

// findCoordinator asks until the broker names itself the group's coordinator (the lab's broker
// creates __consumer_offsets on the first lookup and answers COORDINATOR_NOT_AVAILABLE meanwhile).
func findCoordinator(ctx context.Context, conn *wire.Conn, group string) error {
	for {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = 3
		r.CoordinatorKey = group
		resp, err := conn.Request(ctx, r)
		if err != nil {
			return err
		}
		fr := resp.(*kmsg.FindCoordinatorResponse)
		if fr.ErrorCode == 0 {
			if want := conn.Addr(); !strings.HasSuffix(want, fmt.Sprintf(":%d", fr.Port)) {
				return fmt.Errorf("FindCoordinator names %s:%d, not %s", fr.Host, fr.Port, want)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("FindCoordinator(%s): last error %v: %w", group, kerr.ErrorForCode(fr.ErrorCode), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rebalance is one operation: the n rejoins (built by prepare) concurrently, then the n syncs
// concurrently, each on its member's connection.
func (g *wireGroup) rebalance(ctx context.Context) error {
	n := len(g.memberIDs)
	joins := make([]*kmsg.JoinGroupResponse, n)
	if err := g.each(func(i int) error {
		resp, err := g.conns[i].Request(ctx, g.joins[i])
		if err != nil {
			return err
		}
		joins[i] = resp.(*kmsg.JoinGroupResponse)
		return nil
	}); err != nil {
		return err
	}
	gen, leader, err := checkJoins(joins, g.memberIDs, g.generation)
	if err != nil {
		return err
	}
	g.generation = gen
	return g.each(func(i int) error {
		var asg map[string][]byte
		if i == leader {
			asg = g.assignments
		}
		resp, err := g.conns[i].Request(ctx, syncRequest(g.group, g.memberIDs[i], gen, asg))
		if err != nil {
			return err
		}
		return checkSync(resp.(*kmsg.SyncGroupResponse), g.memberIDs[i], g.assignments[g.memberIDs[i]])
	})
}

// each runs fn for every member concurrently and joins the errors.
func (g *wireGroup) each(fn func(i int) error) error {
	errs := make([]error, len(g.conns))
	var wg sync.WaitGroup
	for i := range g.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", g.target, err)
	}
	return nil
}
