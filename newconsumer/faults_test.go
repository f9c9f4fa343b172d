package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
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

// Group membership under faults, end to end (lab: real ZooKeeper and broker): a static member's
// restart, a member fenced by a stalled coordinator link, and a broker killed with SIGKILL.

// committedOffsets reads group's committed offsets of topic through kadm (OffsetFetch): partition ->
// offset, only partitions with a commit.
func committedOffsets(t *testing.T, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := offs.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

// recordsOf returns member's records of kind among recs; for group requests, only those of api
// when api is not "".
func recordsOf(recs []timeline.Record, member string, kind timeline.Kind, api string) []timeline.Record {
	var out []timeline.Record
	for _, r := range recs {
		if r.Member == member && r.Kind == kind && (api == "" || r.API == api) {
			out = append(out, r)
		}
	}
	return out
}

// recordsSince returns member's timeline records of kind collected after mark (col.Mark()): "after
// this point" by arrival order, which a millisecond timestamp cannot tell apart within one millisecond.
func recordsSince(col *timeline.Collector, member string, kind timeline.Kind, mark int) []timeline.Record {
	return recordsOf(col.Since(mark), member, kind, "")
}

func groupRequestsSince(col *timeline.Collector, member, api string, mark int) []timeline.Record {
	return recordsOf(col.Since(mark), member, timeline.GroupRequest, api)
}

// stampedFrom returns the collected records stamped at or after ts (Unix ms).
func stampedFrom(col *timeline.Collector, ts int64) []timeline.Record {
	var out []timeline.Record
	for _, r := range col.Records() {
		if r.TsMs >= ts {
			out = append(out, r)
		}
	}
	return out
}

// recordsAfter returns member's timeline records of kind stamped at or after ts (Unix ms): for time
// windows ("8 s after s closed"); a point in the run's sequence of events is a Mark (recordsSince).
func recordsAfter(col *timeline.Collector, member string, kind timeline.Kind, ts int64) []timeline.Record {
	return recordsOf(stampedFrom(col, ts), member, kind, "")
}

func groupRequestsAfter(col *timeline.Collector, member, api string, ts int64) []timeline.Record {
	return recordsOf(stampedFrom(col, ts), member, timeline.GroupRequest, api)
}

// TestIntegrationStaticRestartOthersSeeNoRebalance (KIP-345): the static member s (group.instance.id
// "s1") leads a group with the dynamic member m1. s is closed (no LeaveGroup) and a new consumer
// with the same group.instance.id starts within session.timeout.ms: it gets exactly s's partitions
// back in the same generation (JoinGroup v9 tells the restarted leader to skip the assignment).
// m1 sees no rebalance, from its own side: no listener call, no rebalance_begin, no heartbeat
// answered REBALANCE_IN_PROGRESS, the same generation, and its heartbeats keep succeeding past the
// moment the old instance's session would have expired. DescribeGroups lists the new member id for
// "s1" and not the old one.
func TestIntegrationStaticRestartOthersSeeNoRebalance(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 0, 0)
	adm := newAdmin(t, bootstrap)
	col := &timeline.Collector{}
	static := map[string]string{"partition.assignment.strategy": "range", "session.timeout.ms": "6000",
		"heartbeat.interval.ms": "500", "group.instance.id": "s1"}
	s := startMember(t, "s", bootstrap, "t", col, static)
	testutil.WaitFor(t, 30*time.Second, "s alone owning 6 partitions", func() bool { return groupStable([]*member{s}, 6) })
	m1 := startMember(t, "m1", bootstrap, "t", col, map[string]string{"partition.assignment.strategy": "range",
		"session.timeout.ms": "6000"})
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool {
		return groupStable([]*member{s, m1}, 6) && len(m1.c.Assignment()) == 3
	})
	gen, owned, oldID, m1Owned := s.c.Generation(), s.c.Assignment(), s.c.MemberID(), m1.c.Assignment()
	m1Calls, _ := m1.snapshot()
	if !s.c.isLeaderNow() {
		t.Fatal("s, the first member, is not the group's leader")
	}

	closedAt, closedMark := time.Now(), col.Mark()
	s.close(t)
	if timelineHas(col, "s", func(r timeline.Record) bool { return r.Kind == timeline.GroupRequest && r.API == "LeaveGroup" }) {
		t.Fatal("the static member sent LeaveGroup on Close")
	}
	s2 := startMember(t, "s2", bootstrap, "t", col, static)
	testutil.WaitFor(t, 20*time.Second, "the restarted static member stable", func() bool { return groupStable([]*member{m1, s2}, 6) })
	if back := time.Since(closedAt); back >= 6*time.Second {
		t.Fatalf("the restarted member took %v to come back, not within session.timeout.ms 6000: the test proves nothing", back)
	}
	if got := s2.c.Assignment(); !reflect.DeepEqual(got, owned) {
		t.Fatalf("restarted static member got %v, had %v", got, owned)
	}
	if !s2.c.isLeaderNow() {
		t.Fatal("the restarted static leader was not told it leads (JoinGroup v9, SkipAssignment)")
	}
	if s2.c.Generation() != gen || s2.c.MemberID() == oldID {
		t.Fatalf("restarted static member: generation %d member %s, want generation %d and a new member id (old %s)",
			s2.c.Generation(), s2.c.MemberID(), gen, oldID)
	}
	// m1's heartbeats keep succeeding well past the old instance's session end (closedAt + 6 s):
	// the replaced member id expires without a rebalance.
	after := closedAt.Add(8 * time.Second).UnixMilli()
	testutil.WaitFor(t, 20*time.Second, "m1 heartbeating successfully 8 s after s closed", func() bool {
		for _, r := range groupRequestsAfter(col, "m1", "Heartbeat", after) {
			if r.Err == "" {
				return true
			}
		}
		return false
	})
	calls, _ := m1.snapshot()
	if !reflect.DeepEqual(calls, m1Calls) {
		t.Fatalf("m1's listener was called during the static restart: %v -> %v", m1Calls, calls)
	}
	if m1.c.Generation() != gen || !reflect.DeepEqual(m1.c.Assignment(), m1Owned) {
		t.Fatalf("m1: generation %d -> %d, partitions %v -> %v", gen, m1.c.Generation(), m1Owned, m1.c.Assignment())
	}
	if rb := recordsSince(col, "m1", timeline.RebalanceBegin, closedMark); len(rb) != 0 {
		t.Fatalf("m1 began %d rebalances after s closed", len(rb))
	}
	for _, r := range groupRequestsSince(col, "m1", "Heartbeat", closedMark) {
		if r.Err != "" {
			t.Fatalf("m1's heartbeat answered %s after s closed", r.Err)
		}
	}
	d, ms := describeGroupTopic(t, adm, "g", "t")
	if d.State != "Stable" || len(ms) != 2 {
		t.Fatalf("DescribeGroups: %s with %d members, want Stable with 2", d.State, len(ms))
	}
	if m, ok := ms[s2.c.MemberID()]; !ok || m.instanceID != "s1" || !reflect.DeepEqual(m.parts, partitionNumbers(owned)) {
		t.Fatalf("DescribeGroups: %+v, want %s (instance s1) owning %v", ms, s2.c.MemberID(), owned)
	}
	if _, ok := ms[oldID]; ok {
		t.Fatalf("DescribeGroups still lists the replaced member id %s", oldID)
	}
}

// isLeaderNow reports whether the member computed (or, restarted static, was told it leads) the
// group's assignment in its current generation.
func (c *Consumer) isLeaderNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isLeader
}

func partitionNumbers(ps []TopicPartition) []int32 {
	var out []int32
	for _, tp := range ps {
		out = append(out, tp.Partition)
	}
	return out
}

type describedTopicMember struct {
	instanceID string
	parts      []int32
}

// describeGroupTopic is DescribeGroups through kadm: member id -> instance id and its partitions of
// topic (decoded from the consumer-protocol assignment).
func describeGroupTopic(t *testing.T, adm *kadm.Client, group, topic string) (kadm.DescribedGroup, map[string]describedTopicMember) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, nil
	}
	d := ds[group]
	ms := map[string]describedTopicMember{}
	for _, m := range d.Members {
		var dm describedTopicMember
		if m.InstanceID != nil {
			dm.instanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == topic {
					dm.parts = append(dm.parts, tp.Partitions...)
				}
			}
		}
		sortInt32(dm.parts)
		ms[m.MemberID] = dm
	}
	return d, ms
}

// TestIntegrationStalledCoordinatorLateCommitRejected: m2's coordinator link stalls (its fetch link
// stays up) past session.timeout.ms; the coordinator removes it and m1 takes all 6 partitions. m2,
// healed, commits with its old member id and generation: OffsetCommit answers UNKNOWN_MEMBER_ID for
// every partition (the consumer's CommitSync reports ErrCommitFailed, its timeline the rejected
// commits), the same commit sent on the wire at v8 and v9 is refused the same way, and the committed
// offsets (read with kadm's OffsetFetch) stay what m2 committed while it was a member. m2 then loses
// its partitions (OnPartitionsLost), rejoins with a new member id, and the group is whole again.
func TestIntegrationStalledCoordinatorLateCommitRejected(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 6, 5, 0)
	adm := newAdmin(t, bootstrap)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "range", "enable.auto.commit": "false"}
	links := lab.NewMemberLinks("m2")
	t.Cleanup(func() { links.Close() })
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	// retry.backoff.ms 1000: after the heal, m2's heartbeat thread waits 1 s before it reconnects,
	// so the commit below is the first request m2 sends to the coordinator with its old identity.
	m2props := maps.Clone(props)
	m2props["retry.backoff.ms"], m2props["retry.backoff.max.ms"] = "1000", "1000"
	m2 := startMember(t, "m2", bootstrap, "t", col, m2props, func(c *Config) {
		c.CoordinatorDialer = links.Dialer(lab.LinkCoordinator)
		c.FetchDialer = links.Dialer(lab.LinkFetch)
	})
	both := []*member{m1, m2}
	dumpOnFailure(t, col, both...)
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 6) && len(m1.c.Assignment()) == 3 })
	owned, oldID, oldGen := m2.c.Assignment(), m2.c.MemberID(), m2.c.Generation()
	ends := map[int32]int64{0: 5, 1: 5, 2: 5, 3: 5, 4: 5, 5: 5}
	testutil.WaitFor(t, 20*time.Second, "m2 consuming its partitions to the end", func() bool { return consumedTo(m2, ends) })
	// While m2 is a member, it commits 3 for each of its partitions.
	commitAt := func(off int64) map[TopicPartition]int64 {
		out := map[TopicPartition]int64{}
		for _, tp := range owned {
			out[tp] = off
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m2.c.CommitSync(ctx, commitAt(3)); err != nil {
		t.Fatalf("m2's commit as a member: %v", err)
	}
	want := map[int32]int64{}
	for _, tp := range owned {
		want[tp.Partition] = 3
	}
	if got, err := committedOffsets(t, adm, "g", "t"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("committed offsets %v (%v), want %v", got, err, want)
	}

	m2.pause() // the application polls no more: nothing but the heartbeat thread acts
	stalledMark := col.Mark()
	if err := links.Stall(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "m1 owning all 6 partitions", func() bool { return groupStable([]*member{m1}, 6) })
	if m1.c.Generation() <= oldGen {
		t.Fatalf("m1's generation %d, want above %d", m1.c.Generation(), oldGen)
	}
	// m2's heartbeat thread has given up on the coordinator (no answer within the session) and is
	// looking for it again: it holds the lookup, dialling through the stalled link.
	testutil.WaitFor(t, 20*time.Second, "m2 looking for the coordinator again", func() bool {
		failed := false
		for _, r := range recordsSince(col, "m2", timeline.GroupRequest, stalledMark) {
			switch {
			case r.API == "Heartbeat" && r.Err != "":
				failed = true
			case failed && r.API == "FindCoordinator" && r.Err == "":
				return true
			}
		}
		return false
	})
	if m2.c.MemberID() != oldID || m2.c.Generation() != oldGen {
		t.Fatalf("m2 forgot its identity before learning it was removed: %s/%d", m2.c.MemberID(), m2.c.Generation())
	}
	commitErr := make(chan error, 1)
	go func() { commitErr <- m2.c.CommitSync(ctx, commitAt(1)) }() // waits for the coordinator lookup
	if err := links.Heal(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-commitErr:
	case <-ctx.Done():
		t.Fatal("m2's late CommitSync did not return")
	}
	if !errors.Is(err, ErrCommitFailed) || !strings.Contains(err.Error(), "UNKNOWN_MEMBER_ID") {
		t.Fatalf("m2's late CommitSync: %v, want ErrCommitFailed (UNKNOWN_MEMBER_ID)", err)
	}
	commits := recordsSince(col, "m2", timeline.Commit, stalledMark)
	if len(commits) != len(owned) {
		t.Fatalf("m2's late commit: %d commit records, want %d (one per partition): %+v", len(commits), len(owned), commits)
	}
	for _, r := range commits {
		if r.Result != timeline.CommitRejected || r.Err != "UNKNOWN_MEMBER_ID" || r.MemberID != oldID || r.Generation == nil || *r.Generation != oldGen {
			t.Fatalf("m2's late commit record %+v: want rejected UNKNOWN_MEMBER_ID for %s generation %d", r, oldID, oldGen)
		}
	}
	// The same late commit on the wire, at the versions on both sides of KIP-447's v9 change.
	conn, err := wire.Dial(ctx, nil, bootstrap, "late-committer")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, v := range []int16{8, 9} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = v
		req.Group, req.MemberID, req.Generation = "g", oldID, oldGen
		rt := kmsg.OffsetCommitRequestTopic{Topic: "t"}
		for _, tp := range owned {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: tp.Partition, Offset: 1, LeaderEpoch: -1})
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		r, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownMemberID.Code {
				t.Fatalf("OffsetCommit v%d from removed member %s, partition %d: %s, want UNKNOWN_MEMBER_ID", v, oldID, p.Partition, errName(p.ErrorCode))
			}
		}
	}
	if got, err := committedOffsets(t, adm, "g", "t"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("committed offsets after the late commits: %v (%v), want %v unchanged", got, err, want)
	}

	m2.resume()
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 again", func() bool { return groupStable(both, 6) && len(m2.c.Assignment()) == 3 })
	if m2.c.MemberID() == oldID {
		t.Fatalf("m2 kept member id %s after being removed", oldID)
	}
	if calls, _ := m2.snapshot(); !containsString(calls, fmt.Sprint("lost ", owned)) {
		t.Fatalf("m2's listener calls %v: no OnPartitionsLost(%v)", calls, owned)
	}
}

// dumpOnFailure logs, if the test fails, what the members did: generation, partitions, listener
// calls, deliveries, and every timeline record but deliveries.
func dumpOnFailure(t *testing.T, col *timeline.Collector, ms ...*member) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, m := range ms {
			calls, _ := m.snapshot()
			m.mu.Lock()
			t.Logf("%s: generation %d, owns %v, listener %v, delivered %v", m.name, m.c.Generation(), m.c.Assignment(), calls, m.delivered)
			m.mu.Unlock()
		}
		for _, r := range col.Records() {
			if r.Kind != timeline.Deliver {
				t.Logf("%d %s %s %s %q %v %s", r.TsMs, r.Member, r.Kind, r.API, r.Err, r.Partitions, r.Result)
			}
		}
	})
}

// consumedTo reports whether m owns partitions and has handed every record of each to the
// application: its position (the offset a commit of what it consumed carries) is ends[partition].
func consumedTo(m *member, ends map[int32]int64) bool {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.owned) == 0 {
		return false
	}
	for tp, st := range c.owned {
		if st.position != ends[tp.Partition] {
			return false
		}
	}
	return true
}

// TestFIDZombieFetchStalledCoordinatorKeepsDelivering (FID-ZOMBIE-FETCH): z's coordinator link
// stalls for twice the session timeout plus a second while its fetch link stays up and records keep
// coming to every partition. As Kafka 3.9's consumer, z goes on delivering its partitions throughout
// the stall — an unreachable coordinator only makes the heartbeat thread mark it unknown, and poll's
// coordinator work is bounded by the poll, not waited for — so every second of the stall holds
// deliveries by z, and they are at least 80% of what was produced to z's partitions meanwhile. Its
// offset commits of the old generation are refused once the link heals (UNKNOWN_MEMBER_ID: the
// coordinator removed it), none lands, and z then loses its partitions and rejoins.
func TestFIDZombieFetchStalledCoordinatorKeepsDelivering(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bootstrap := startCluster(t, "t", 4, 0, 0)
	col := &timeline.Collector{}
	props := map[string]string{"partition.assignment.strategy": "range", "auto.commit.interval.ms": "300"}
	links := lab.NewMemberLinks("z")
	t.Cleanup(func() { links.Close() })
	m1 := startMember(t, "m1", bootstrap, "t", col, props)
	z := startMember(t, "z", bootstrap, "t", col, props, func(c *Config) {
		c.CoordinatorDialer = links.Dialer(lab.LinkCoordinator)
		c.FetchDialer = links.Dialer(lab.LinkFetch)
	})
	both := []*member{m1, z}
	dumpOnFailure(t, col, both...)
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2", func() bool { return groupStable(both, 4) && len(z.c.Assignment()) == 2 })
	owned, oldID, oldGen := z.c.Assignment(), z.c.MemberID(), z.c.Generation()
	zParts := map[int32]bool{}
	for _, tp := range owned {
		zParts[tp.Partition] = true
	}

	// A producer writes one record to each partition every 20 ms, noting when each was acknowledged.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var prodMu sync.Mutex
	var acked []int64 // Unix ms of each acknowledged record to one of z's partitions
	stopProducing := make(chan struct{})
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			case <-tick.C:
			}
			var recs []*kgo.Record
			for p := int32(0); p < 4; p++ {
				recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res := cl.ProduceSync(ctx, recs...)
			cancel()
			now := time.Now().UnixMilli()
			prodMu.Lock()
			for _, r := range res {
				if r.Err == nil && zParts[r.Record.Partition] {
					acked = append(acked, now)
				}
			}
			prodMu.Unlock()
		}
	}()
	defer func() { close(stopProducing); <-producing }()
	testutil.WaitFor(t, 20*time.Second, "z delivering the new records", func() bool {
		return len(recordsAfter(col, "z", timeline.Deliver, time.Now().Add(-time.Second).UnixMilli())) > 0
	})

	stall := 2*2*time.Second + time.Second // twice session.timeout.ms 2000, plus a second
	stalledAt := time.Now()
	if err := links.Stall(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	// The coordinator removes z and gives m1 every partition, while z is cut off.
	testutil.WaitFor(t, 20*time.Second, "m1 owning all 4 partitions", func() bool { return groupStable([]*member{m1}, 4) })
	if d := time.Until(stalledAt.Add(stall)); d > 0 {
		time.Sleep(d) // the stall's length is the fault itself, not a synchronisation
	}
	healedAt := time.Now()
	if err := links.Heal(lab.LinkCoordinator); err != nil {
		t.Fatal(err)
	}
	from, to := stalledAt.UnixMilli(), healedAt.UnixMilli()
	var delivered []int64
	for _, r := range recordsAfter(col, "z", timeline.Deliver, from) {
		if r.TsMs < to && r.Partition != nil && zParts[*r.Partition] {
			delivered = append(delivered, r.TsMs)
		}
	}
	prodMu.Lock()
	produced := 0
	for _, ts := range acked {
		if ts >= from && ts < to {
			produced++
		}
	}
	prodMu.Unlock()
	var perSecond []int
	for s := from; s+1000 <= to; s += 1000 {
		n := 0
		for _, ts := range delivered {
			if ts >= s && ts < s+1000 {
				n++
			}
		}
		perSecond = append(perSecond, n)
	}
	t.Logf("stall of %v: z delivered %d records of its partitions %v, %d were produced to them; per second %v",
		healedAt.Sub(stalledAt).Round(time.Millisecond), len(delivered), owned, produced, perSecond)
	for i, n := range perSecond {
		if n == 0 {
			t.Errorf("second %d of the stall: z delivered nothing (per second %v)", i, perSecond)
		}
	}
	if produced == 0 || float64(len(delivered)) < 0.8*float64(produced) {
		t.Errorf("z delivered %d records during the stall, %d were produced to its partitions: want at least 80%%", len(delivered), produced)
	}

	// After the heal z learns it was removed: its commits of the old generation are refused.
	testutil.WaitFor(t, 30*time.Second, "a stable group of 2 again", func() bool { return groupStable(both, 4) && len(z.c.Assignment()) == 2 })
	var refused int
	for _, r := range recordsAfter(col, "z", timeline.Commit, from) {
		if r.MemberID != oldID {
			continue
		}
		if r.Result != timeline.CommitRejected || r.Generation == nil || *r.Generation != oldGen {
			t.Errorf("z's commit of member %s after the stall began: %+v, want rejected with generation %d", oldID, r, oldGen)
		}
		if r.Err == "UNKNOWN_MEMBER_ID" {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("no commit of z's old member %s was refused with UNKNOWN_MEMBER_ID", oldID)
	}
	if calls, _ := z.snapshot(); !containsString(calls, fmt.Sprint("lost ", owned)) {
		t.Errorf("z's listener calls %v: no OnPartitionsLost(%v)", calls, owned)
	}
}
