package newconsumer

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// The broker process killed with SIGKILL under a consumer group, and started again on the same port
// and data (lab BrokersAs "process"): what the coordinator persisted in __consumer_offsets comes
// back.

// killLab is a lab with one broker process, topic "t" (6 partitions) holding 5+p records in
// partition p, two members m1 and m2 (range, no auto-commit) Stable with every record delivered and
// committed: offset 5+p for partition p.
type killLab struct {
	l         *lab.Lab
	bootstrap string
	adm       *kadm.Client
	pcl       *kgo.Client
	col       *timeline.Collector
	props     map[string]string
	m1, m2    *member
	committed map[int32]int64
}

func startKillLab(t *testing.T, ctx context.Context) *killLab {
	t.Helper()
	l, err := lab.Start(ctx, lab.Options{Brokers: 1, BrokersAs: lab.BrokersProcess, BrokerBinary: testutil.Binary(t),
		Dir: t.TempDir(), Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	k := &killLab{l: l, bootstrap: l.Bootstrap(), col: &timeline.Collector{}, committed: map[int32]int64{}}
	k.pcl, err = kgo.NewClient(kgo.SeedBrokers(k.bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.pcl.Close)
	k.adm = kadm.NewClient(k.pcl)
	if r, err := k.adm.CreateTopic(ctx, 6, 1, nil, "t"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	for p := int32(0); p < 6; p++ {
		k.produce(t, ctx, p, 0, 5+int(p))
		k.committed[p] = int64(5 + p)
	}
	// A session long enough to outlast the broker's restart (its old ZooKeeper registration must
	// expire first); no auto-commit: the test commits.
	k.props = map[string]string{"partition.assignment.strategy": "range", "enable.auto.commit": "false",
		"session.timeout.ms": "20000", "heartbeat.interval.ms": "500"}
	k.m1 = startMember(t, "m1", k.bootstrap, "t", k.col, k.props)
	k.m2 = startMember(t, "m2", k.bootstrap, "t", k.col, k.props)
	both := []*member{k.m1, k.m2}
	dumpOnFailure(t, k.col, both...)
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 6) && len(k.m1.c.Assignment()) == 3 })
	testutil.WaitFor(t, 30*time.Second, "both members at the end of their partitions", func() bool {
		return groupStable(both, 6) && consumedTo(k.m1, k.committed) && consumedTo(k.m2, k.committed)
	})
	for _, m := range both {
		if err := m.c.CommitSync(ctx, nil); err != nil {
			t.Fatalf("%s: commit: %v", m.name, err)
		}
	}
	if got, err := committedOffsets(t, k.adm, "g", "t"); err != nil || !reflect.DeepEqual(got, k.committed) {
		t.Fatalf("committed before the kill: %v (%v), want %v", got, err, k.committed)
	}
	return k
}

// produce writes values "<p>-<i>" for i in [from, to) to partition p.
func (k *killLab) produce(t *testing.T, ctx context.Context, p int32, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
	}
	if err := k.pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// snapshotDeliveries copies every member's deliveries ("partition/offset" -> times).
func snapshotDeliveries(ms ...*member) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, m := range ms {
		m.mu.Lock()
		out[m.name] = maps.Clone(m.delivered)
		m.mu.Unlock()
	}
	return out
}

// deliveriesSince counts, across ms, the deliveries of each record beyond those in before.
func deliveriesSince(before map[string]map[string]int, ms ...*member) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		m.mu.Lock()
		for key, n := range m.delivered {
			if d := n - before[m.name][key]; d > 0 {
				out[key] += d
			}
		}
		m.mu.Unlock()
	}
	return out
}

// kill9AndRestart kills the broker process with SIGKILL, starts it again, and returns the time of
// the kill (Unix ms) and the timeline's Mark just before it.
func (k *killLab) kill9AndRestart(t *testing.T, ctx context.Context) (killedAt int64, mark int) {
	t.Helper()
	b := k.l.Brokers()[0]
	pid := b.PID()
	mark = k.col.Mark()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt = time.Now().UnixMilli()
	if b.Running() {
		t.Fatalf("broker (pid %d) still running after kill -9", pid)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b.PID() == pid || b.PID() == 0 {
		t.Fatalf("broker pid %d after the restart (was %d)", b.PID(), pid)
	}
	return killedAt, mark
}

// checkNewRecordsOnce produces one record after the end of each partition (offset 5+p) and checks
// that, of everything delivered since before, exactly these 6 arrive, once each: the members resumed
// at the committed offsets.
func (k *killLab) checkNewRecordsOnce(t *testing.T, ctx context.Context, before map[string]map[string]int, ms ...*member) {
	t.Helper()
	for p := int32(0); p < 6; p++ {
		k.produce(t, ctx, p, 5+int(p), 6+int(p))
	}
	want := map[string]int{}
	for p := int32(0); p < 6; p++ {
		want[fmt.Sprintf("%d/%d", p, 5+p)] = 1
	}
	testutil.WaitFor(t, 30*time.Second, "the 6 records produced after the restart delivered", func() bool {
		got := deliveriesSince(before, ms...)
		for key := range want {
			if got[key] == 0 {
				return false
			}
		}
		return true
	})
	if got := deliveriesSince(before, ms...); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered after the restart: %v, want exactly the 6 new records once each: %v", got, want)
	}
}

// TestIntegrationBrokerKill9KeepsGroup: m1 and m2 are Stable in generation G with 5+p committed for
// partition p; their applications are busy (no Poll) while the broker process is killed with
// SIGKILL and started again; their heartbeat threads run on. The coordinator reloads
// __consumer_offsets: OffsetFetch (kadm) gives the same offsets; DescribeGroups the same state
// (Stable), protocol, member ids and assignments; the group is still in generation G (a Heartbeat at
// G from m1's member id succeeds, one at G+1 gets ILLEGAL_GENERATION) and both members go on
// heartbeating at G with no rebalance and no listener call. A third member joining then makes every
// member rejoin into generation G+1 (the generation continues from the stored one), and the members
// resume at the committed offsets: of all deliveries after the restart, only the 6 records produced
// after it, once each.
func TestIntegrationBrokerKill9KeepsGroup(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := startKillLab(t, ctx)
	m1, m2 := k.m1, k.m2
	both := []*member{m1, m2}
	gen := m1.c.Generation()
	dBefore, msBefore := describeGroupTopic(t, k.adm, "g", "t")
	if dBefore.State != "Stable" || len(msBefore) != 2 {
		t.Fatalf("before the kill: %s with %d members", dBefore.State, len(msBefore))
	}
	callsBefore := map[string][]string{}
	for _, m := range both {
		callsBefore[m.name], _ = m.snapshot()
	}
	delivered := snapshotDeliveries(m1, m2)

	// The applications are busy: holding a consumer's application lock keeps Poll out (a Poll in
	// progress finishes first), so only the heartbeat threads act while the broker is away.
	for _, m := range both {
		m.c.appMu.Lock()
	}
	frozen := true
	unfreeze := func() {
		if frozen {
			frozen = false
			for _, m := range both {
				m.c.appMu.Unlock()
			}
		}
	}
	defer unfreeze()

	_, killMark := k.kill9AndRestart(t, ctx)
	var got map[int32]int64
	testutil.WaitFor(t, 60*time.Second, "committed offsets readable after the restart", func() bool {
		var err error
		got, err = committedOffsets(t, k.adm, "g", "t")
		return err == nil && len(got) > 0
	})
	if !reflect.DeepEqual(got, k.committed) {
		t.Fatalf("committed after the restart: %v, want %v", got, k.committed)
	}
	dAfter, msAfter := describeGroupTopic(t, k.adm, "g", "t")
	if dAfter.State != "Stable" || dAfter.Protocol != "range" || !reflect.DeepEqual(msAfter, msBefore) {
		t.Fatalf("DescribeGroups after the restart: %s/%s %+v, want Stable/range %+v", dAfter.State, dAfter.Protocol, msAfter, msBefore)
	}
	// The generation came back: the coordinator accepts G from m1's member id, not G+1.
	conn, err := wire.Dial(ctx, nil, k.bootstrap, "generation-probe")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	heartbeat := func(g int32) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = "g", m1.c.MemberID(), g
		r, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.HeartbeatResponse).ErrorCode
	}
	if e := heartbeat(gen); e != 0 {
		t.Fatalf("Heartbeat at generation %d after the restart: %s", gen, errName(e))
	}
	if e := heartbeat(gen + 1); e != kerr.IllegalGeneration.Code {
		t.Fatalf("Heartbeat at generation %d after the restart: %s, want ILLEGAL_GENERATION", gen+1, errName(e))
	}
	// Both members' heartbeat threads reconnect and heartbeat at G: no rebalance, no listener call.
	testutil.WaitFor(t, 60*time.Second, "both members heartbeating after the restart", func() bool {
		for _, m := range both {
			ok := false
			for _, r := range groupRequestsSince(k.col, m.name, "Heartbeat", killMark) {
				ok = ok || r.Err == ""
			}
			if !ok {
				return false
			}
		}
		return true
	})
	for _, m := range both {
		calls, _ := m.snapshot()
		if m.c.Generation() != gen || !reflect.DeepEqual(calls, callsBefore[m.name]) {
			t.Fatalf("%s after the restart: generation %d (want %d), listener calls %v -> %v", m.name, m.c.Generation(), gen, callsBefore[m.name], calls)
		}
		if rb := recordsSince(k.col, m.name, timeline.RebalanceBegin, killMark); len(rb) != 0 {
			t.Fatalf("%s rebalanced after the restart", m.name)
		}
	}
	unfreeze()

	// A member joining: everyone rejoins into generation G+1 and resumes at the committed offsets.
	m3 := startMember(t, "m3", k.bootstrap, "t", k.col, k.props)
	all := []*member{m1, m2, m3}
	testutil.WaitFor(t, 60*time.Second, "a stable group of 3", func() bool { return groupStable(all, 6) && len(m3.c.Assignment()) == 2 })
	if g := m1.c.Generation(); g != gen+1 {
		t.Fatalf("generation after a member joined: %d, want %d (G+1 from the reloaded G=%d)", g, gen+1, gen)
	}
	k.checkNewRecordsOnce(t, ctx, delivered, all...)
}

// TestIntegrationBrokerKill9MembersRunning: the same kill -9 and restart with both members polling
// throughout. Whatever they do meanwhile (the leader's metadata shows the topic unavailable while
// the restarted broker has not caught up, so it rejoins, as Java's ConsumerCoordinator does), the
// group ends Stable with every partition owned once, the members resume at the committed offsets
// (only the 6 records produced after the restart are delivered, once each), and every retry is paced
// by retry.backoff.ms: while the coordinator is unreachable or unavailable, each member sends at most
// a few FindCoordinator requests per retry.backoff.ms, not a burst per Poll.
func TestIntegrationBrokerKill9MembersRunning(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := startKillLab(t, ctx)
	both := []*member{k.m1, k.m2}
	delivered := snapshotDeliveries(k.m1, k.m2)
	killedAt, killMark := k.kill9AndRestart(t, ctx)
	testutil.WaitFor(t, 60*time.Second, "a stable group of 2 after the restart", func() bool {
		return groupStable(both, 6) && len(k.m1.c.Assignment()) == 3
	})
	if got, err := committedOffsets(t, k.adm, "g", "t"); err != nil || !reflect.DeepEqual(got, k.committed) {
		t.Fatalf("committed after the restart: %v (%v), want %v", got, err, k.committed)
	}
	k.checkNewRecordsOnce(t, ctx, delivered, both...)

	// Retries are paced: from the kill to each member's first FindCoordinator answered without an
	// error, its Poll and heartbeat threads each try at most once per retry.backoff.ms (100).
	for _, m := range both {
		var tries int
		var until int64
		for _, r := range groupRequestsSince(k.col, m.name, "FindCoordinator", killMark) {
			tries++
			if r.Err == "" {
				until = r.TsMs
				break
			}
		}
		if until == 0 {
			t.Fatalf("%s: no successful FindCoordinator after the restart", m.name)
		}
		limit := 2*int((until-killedAt)/100) + 6
		if tries > limit {
			t.Fatalf("%s sent %d FindCoordinator requests in the %d ms the coordinator was away (at most %d with retry.backoff.ms=100)",
				m.name, tries, until-killedAt, limit)
		}
		t.Logf("%s: %d FindCoordinator requests in %d ms", m.name, tries, until-killedAt)
	}
}
