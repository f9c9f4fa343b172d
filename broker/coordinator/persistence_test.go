package coordinator

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// TestPersistenceReplay: everything a coordinator wrote to __consumer_offsets is replayed into a
// fresh coordinator: committed offsets, and groups with generation, protocol, leader and members
// (ids, client ids/hosts, timeouts, static instance ids, assignments) as Kafka 3.9 restores them;
// deleted groups stay deleted. Restored members keep their session: one that heartbeats stays, one
// that does not is removed when its session timeout ends.
func TestPersistenceReplay(t *testing.T) {
	cfg := cfgNoDelay()
	h1 := newHarness(t, cfg)
	o := joinOpts{version: 5, session: 9000, rebalance: 25000}
	ms := h1.stableGroup("g", 3, o)
	for p, off := range []int64{10, 20} {
		if e := commitErr(t, h1.do(commitReq(8, "g", ms[0].memberID, 1, nil, "t", int32(p), off))); e != 0 {
			t.Fatalf("commit: %d", e)
		}
	}
	st := h1.stableGroup("s", 1, joinOpts{version: 5, session: 9000, rebalance: 25000, instanceID: sp("inst-1")})
	h1.do(commitReq(5, "simple", "", -1, nil, "t", 0, 5))
	cr := commitReq(2, "simple", "", -1, nil, "t", 1, 6)
	cr.RetentionTimeMillis = 3600000
	h1.do(cr)
	// e: a group whose last member left (Empty, generation 2) after committing
	e := h1.stableGroup("e", 1, joinOpts{version: 3, session: 9000, rebalance: 25000})
	h1.do(commitReq(3, "e", e[0].memberID, 1, nil, "t", 0, 77))
	h1.do(leaveReq(1, "e", leaveMemberReq(e[0].memberID, nil)))
	// d: deleted
	h1.do(commitReq(5, "d", "", -1, nil, "t", 0, 1))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"d"}
	h1.do(del)
	want := map[string]GroupInfo{}
	for _, id := range []string{"g", "s", "e"} {
		want[id] = h1.group(id)
	}

	h2 := newHarnessWithLog(t, cfg, h1.log)
	if got := h2.core.Groups(); len(got) != 4 || got[0] != "e" || got[1] != "g" || got[2] != "s" || got[3] != "simple" {
		t.Fatalf("replayed groups %v, want [e g s simple]", got)
	}
	for id, w := range want {
		g := h2.group(id)
		if g.State != w.State || g.Generation != w.Generation || g.ProtocolType != w.ProtocolType || g.Protocol != w.Protocol ||
			g.Leader != w.Leader || len(g.Members) != len(w.Members) {
			t.Fatalf("group %s replayed as %+v, was %+v", id, g, w)
		}
		for i, m := range g.Members {
			wm := w.Members[i]
			if m.MemberID != wm.MemberID || m.ClientID != wm.ClientID || m.ClientHost != wm.ClientHost ||
				m.SessionTimeoutMs != wm.SessionTimeoutMs || m.RebalanceTimeoutMs != wm.RebalanceTimeoutMs ||
				string(m.Assignment) != string(wm.Assignment) || len(m.Protocols) != 1 || m.Protocols[0] != w.Protocol ||
				(m.GroupInstanceID == nil) != (wm.GroupInstanceID == nil) {
				t.Fatalf("group %s member %d replayed as %+v, was %+v", id, i, m, wm)
			}
		}
	}
	if g := h2.group("g"); g.State != Stable || g.Generation != 1 || g.Protocol != "range" || g.Leader != ms[0].memberID ||
		string(g.Members[2].Assignment) != "asg-2" {
		t.Fatalf("g replayed: %+v", g)
	}
	if g := h2.group("s"); *g.Members[0].GroupInstanceID != "inst-1" || g.Members[0].MemberID != st[0].memberID {
		t.Fatalf("static member replayed: %+v", g.Members[0])
	}
	if g := h2.group("e"); g.State != Empty || g.Generation != 2 || g.ProtocolType != "consumer" || g.Protocol != "" {
		t.Fatalf("e replayed: %+v", g)
	}
	if g := h2.group("simple"); g.State != Empty || g.Generation != 0 || g.ProtocolType != "" {
		t.Fatalf("simple replayed: %+v", g)
	}
	for _, c := range []struct {
		group string
		p     int32
		off   int64
	}{{"g", 0, 10}, {"g", 1, 20}, {"simple", 0, 5}, {"simple", 1, 6}, {"e", 0, 77}, {"d", 0, -1}} {
		if got := h2.fetched(c.group, "t", c.p); got != c.off {
			t.Fatalf("replayed offset %s t-%d: %d, want %d", c.group, c.p, got, c.off)
		}
	}

	// restored members are live: SyncGroup returns the stored assignment; heartbeats keep members 0
	// and 1, member 2 is silent and expires after its 9 s session
	if s := h2.do(syncReq(3, "g", ms[1].memberID, 1, nil, nil)).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || string(s.MemberAssignment) != "asg-1" {
		t.Fatalf("sync after replay: %+v", s)
	}
	for i := 0; i < 3; i++ {
		h2.advance(2999 * time.Millisecond)
		for _, m := range ms[:2] {
			if e := h2.do(heartbeatReq(3, "g", m.memberID, 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != 0 {
				t.Fatalf("heartbeat after replay: %d", e)
			}
		}
	}
	if g := h2.group("g"); g.State != Stable || len(g.Members) != 3 {
		t.Fatalf("at %v: %s with %d members", h2.elapsed(), g.State, len(g.Members))
	}
	h2.advance(3 * time.Millisecond)
	if g := h2.group("g"); g.State != PreparingRebalance || len(g.Members) != 2 {
		t.Fatalf("silent replayed member not expired at %v: %s with %d members", h2.elapsed(), g.State, len(g.Members))
	}
}

// TestRecordFormats: the records are Kafka 3.9's: offset key v1 + value v3 (v1 with an expire
// timestamp for OffsetCommit v2-v4 with a retention time), group key v2 + value v3, tombstones with
// a null value, in the group's partition abs(hashCode) % offsets.topic.num.partitions.
func TestRecordFormats(t *testing.T) {
	cfg := cfgNoDelay()
	h := newHarness(t, cfg)
	ms := h.stableGroup("grp", 1, joinOpts{version: 5, session: 9000, rebalance: 25000})
	c := commitReq(6, "grp", ms[0].memberID, 1, nil, "topic", 3, 1234)
	c.Topics[0].Partitions[0].LeaderEpoch = 7
	c.Topics[0].Partitions[0].Metadata = sp("meta")
	h.do(c)
	r := commitReq(2, "other", "", -1, nil, "topic", 0, 9)
	r.RetentionTimeMillis = 1000
	h.do(r)

	p := PartitionFor("grp", cfg.OffsetsTopicNumPartitions)
	if len(h.log.batches[p]) != 2 {
		t.Fatalf("partition %d has %d batches, want 2 (group record, offset record)", p, len(h.log.batches[p]))
	}
	var kvs []KV
	for _, b := range h.log.batches[p] {
		if b[16] != 2 { // magic
			t.Fatalf("batch magic %d", b[16])
		}
		if err := DecodeBatches(b, func(k, v []byte) error { kvs = append(kvs, KV{k, v}); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var gk kmsg.GroupMetadataKey
	var gv kmsg.GroupMetadataValue
	if err := gk.ReadFrom(kvs[0].Key); err != nil || gk.Version != 2 || gk.Group != "grp" {
		t.Fatalf("group key: %v %+v", err, gk)
	}
	if err := gv.ReadFrom(kvs[0].Value); err != nil || gv.Version != 3 || gv.ProtocolType != "consumer" || gv.Generation != 1 ||
		*gv.Protocol != "range" || *gv.Leader != ms[0].memberID || len(gv.Members) != 1 || gv.CurrentStateTimestamp != h.now.UnixMilli() {
		t.Fatalf("group value: %v %+v", err, gv)
	}
	if m := gv.Members[0]; m.MemberID != ms[0].memberID || m.ClientID != "client-a" || m.ClientHost != "/127.0.0.1" ||
		m.SessionTimeoutMillis != 9000 || m.RebalanceTimeoutMillis != 25000 || string(m.Subscription) != "md" ||
		string(m.Assignment) != "asg-0" || m.InstanceID != nil {
		t.Fatalf("group member: %+v", m)
	}
	var ok kmsg.OffsetCommitKey
	var ov kmsg.OffsetCommitValue
	if err := ok.ReadFrom(kvs[1].Key); err != nil || ok.Version != 1 || ok.Group != "grp" || ok.Topic != "topic" || ok.Partition != 3 {
		t.Fatalf("offset key: %v %+v", err, ok)
	}
	if err := ov.ReadFrom(kvs[1].Value); err != nil || ov.Version != 3 || ov.Offset != 1234 || ov.LeaderEpoch != 7 ||
		ov.Metadata != "meta" || ov.CommitTimestamp != h.now.UnixMilli() {
		t.Fatalf("offset value: %v %+v", err, ov)
	}
	var kvs2 []KV
	for _, b := range h.log.batches[PartitionFor("other", cfg.OffsetsTopicNumPartitions)] {
		_ = DecodeBatches(b, func(k, v []byte) error { kvs2 = append(kvs2, KV{k, v}); return nil })
	}
	var ov1 kmsg.OffsetCommitValue
	if err := ov1.ReadFrom(kvs2[len(kvs2)-1].Value); err != nil || ov1.Version != 1 || ov1.ExpireTimestamp != h.now.UnixMilli()+1000 {
		t.Fatalf("offset value with retention: %v %+v", err, ov1)
	}
}

// TestDecodeBatchesRejectsCorruption: bad CRC, truncation, a compression attribute over records that
// are not compressed, garbage: an error wrapping ErrCorruptBatch, never a panic. A batch compressed
// with every codec (offsets.topic.compression.codec) decodes.
func TestDecodeBatchesRejectsCorruption(t *testing.T) {
	good := EncodeBatch(5, []KV{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("k2")}})
	var got []KV
	if err := DecodeBatches(append(append([]byte(nil), good...), good...), func(k, v []byte) error {
		got = append(got, KV{k, v})
		return nil
	}); err != nil || len(got) != 4 || string(got[0].Value) != "v" || got[1].Value != nil {
		t.Fatalf("good batches: %v %d", err, len(got))
	}
	flip := append([]byte(nil), good...)
	flip[len(flip)-1] ^= 1
	compressed := append([]byte(nil), good...)
	compressed[22] |= 1 // gzip
	binary.BigEndian.PutUint32(compressed[17:], recordbatch.Checksum(compressed))
	for codec := recordbatch.CodecGzip; codec <= recordbatch.CodecZstd; codec++ {
		b, _ := recordbatch.Read(good)
		body, err := recordbatch.Compress(codec, 2, b.Records)
		if err != nil {
			t.Fatal(err)
		}
		h := b.Header
		h.Attributes |= int16(codec)
		var kvs []KV
		err = DecodeBatches(recordbatch.AppendBatch(nil, h, body), func(k, v []byte) error { kvs = append(kvs, KV{k, v}); return nil })
		if err != nil || len(kvs) != 2 || string(kvs[0].Key) != "k" || string(kvs[0].Value) != "v" || string(kvs[1].Key) != "k2" {
			t.Fatalf("%s batch: %v, %d records", codec, err, len(kvs))
		}
	}
	lying := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(lying[8:], 1<<30)
	for name, b := range map[string][]byte{
		"crc":        flip,
		"truncated":  good[:len(good)-3],
		"short":      good[:7],
		"compressed": compressed,
		"length":     lying,
		"garbage":    []byte("this is not a record batch at all, no"),
	} {
		err := DecodeBatches(b, func(_, _ []byte) error { return nil })
		if !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v, want ErrCorruptBatch", name, err)
		}
	}
}

// TestLoadSkipsUndecodableRecords: a record that cannot be decoded is reported and skipped; the rest
// of the partition loads.
func TestLoadSkipsUndecodableRecords(t *testing.T) {
	core, err := NewCore(cfgNoDelay(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1000)
	core.Startup(now)
	p := PartitionFor("g", 5)
	core.BeginLoad(p)
	recs := []KV{
		{Key: groupMetadataKey("bad"), Value: []byte{0, 3, 1}},
		{Key: []byte{0}},
		{Key: offsetCommitKey("g", "t", 0), Value: offsetCommitValue(offsetAndMetadata{offset: 8, leaderEpoch: -1, expireTimestamp: -1})},
		{Key: []byte{0, 9, 1, 2}, Value: []byte("unknown key version: ignored")},
	}
	_, err = core.CompleteLoad(now, p, recs)
	if err == nil {
		t.Fatal("no error for undecodable records")
	}
	if off, ok := core.CommittedOffset("g", "t", 0); !ok || off != 8 {
		t.Fatalf("good record not loaded: %d %v", off, ok)
	}
	if _, ok := core.Group("bad"); ok {
		t.Fatal("undecodable group loaded")
	}
	if f := core.Faults(); len(f) != 0 {
		t.Fatalf("faults: %v", f)
	}
}

// TestCoordinatorStatusErrors: before Startup COORDINATOR_NOT_AVAILABLE; while loading
// COORDINATOR_LOAD_IN_PROGRESS (but Heartbeat answers NONE and SyncGroup REBALANCE_IN_PROGRESS, as
// Kafka does; OffsetFetch v1 in each partition); for a partition not loaded here NOT_COORDINATOR; unloading answers parked joins with
// NOT_COORDINATOR.
func TestCoordinatorStatusErrors(t *testing.T) {
	core, _ := NewCore(cfgNoDelay(), nil, 1)
	h := &harness{t: t, core: core, now: time.UnixMilli(1000), log: newMemLog(), timers: map[TimerID]time.Time{},
		resps: map[RequestID]kmsg.Response{}, errs: map[RequestID]error{}}
	jo := joinOpts{version: 3, session: 10000, rebalance: 10000}
	if e := joinResp(t, h.do(joinReq("g", jo))).ErrorCode; e != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("before startup: %d", e)
	}
	lr := kmsg.NewPtrListGroupsRequest()
	if e := h.do(lr).(*kmsg.ListGroupsResponse).ErrorCode; e != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("list before startup: %d", e)
	}
	h.apply(core.Startup(h.now))
	if e := joinResp(t, h.do(joinReq("g", jo))).ErrorCode; e != codeNotCoordinator {
		t.Fatalf("partition not loaded: %d", e)
	}
	p := PartitionFor("g", 5)
	core.BeginLoad(p)
	if e := joinResp(t, h.do(joinReq("g", jo))).ErrorCode; e != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("loading join: %d", e)
	}
	if e := h.do(heartbeatReq(3, "g", "m", 1, nil)).(*kmsg.HeartbeatResponse).ErrorCode; e != 0 {
		t.Fatalf("loading heartbeat: %d, want NONE", e)
	}
	if e := h.do(syncReq(3, "g", "m", 1, nil, nil)).(*kmsg.SyncGroupResponse).ErrorCode; e != codeRebalanceInProgress {
		t.Fatalf("loading sync: %d, want REBALANCE_IN_PROGRESS", e)
	}
	if r := h.do(fetchReq(8, "g", "t", 0)).(*kmsg.OffsetFetchResponse); r.Groups[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("loading fetch v8: %+v", r)
	}
	// v1 has no top-level error code: the error is every requested partition's (getErrorResponse).
	if r := h.do(fetchReq(1, "g", "t", 0)).(*kmsg.OffsetFetchResponse); len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
		r.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code || r.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("loading fetch v1: %+v", r)
	}
	if e := h.do(lr).(*kmsg.ListGroupsResponse).ErrorCode; e != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("list while loading: %d", e)
	}
	effects, err := core.CompleteLoad(h.now, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.apply(effects)
	j := h.send(joinReq("g", jo), "c") // parked in the initial (0 ms) delay
	if h.resp(j) != nil {
		t.Fatal("join answered before the join phase ended")
	}
	h.apply(core.Unload(h.now, p))
	if r := joinResp(t, h.resp(j)); r.ErrorCode != codeNotCoordinator {
		t.Fatalf("parked join after unload: %+v", r)
	}
	if _, ok := core.Group("g"); ok {
		t.Fatal("unloaded group still cached")
	}
	h.advance(time.Second) // the unloaded group's timers are harmless
	if e := joinResp(t, h.do(joinReq("g", jo))).ErrorCode; e != codeNotCoordinator {
		t.Fatalf("after unload: %d", e)
	}
	if f := core.Faults(); len(f) != 0 {
		t.Fatalf("faults: %v", f)
	}
}

// TestFindCoordinator: this broker for group keys, per version shape; no transaction or share
// coordinator; an unknown key type is INVALID_REQUEST.
func TestFindCoordinator(t *testing.T) {
	h := newHarness(t, testConfig())
	for v := int16(0); v <= 6; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorKey = "g"
		r.CoordinatorKeys = []string{"g", "h"}
		resp := h.do(r).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != 9092 {
				t.Fatalf("v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "h" || resp.Coordinators[1].ErrorCode != 0 ||
			resp.Coordinators[1].NodeID != 1 || resp.Coordinators[1].Port != 9092 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	cases := []struct {
		v       int16
		keyType int8
		want    int16
	}{{3, 1, kerr.CoordinatorNotAvailable.Code}, {5, 2, kerr.InvalidRequest.Code}, {6, 2, kerr.CoordinatorNotAvailable.Code},
		{4, 7, kerr.InvalidRequest.Code}, {2, -1, kerr.InvalidRequest.Code}}
	for _, c := range cases {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = c.v, c.keyType, "k", []string{"k"}
		resp := h.do(r).(*kmsg.FindCoordinatorResponse)
		got := resp.ErrorCode
		if c.v >= 4 {
			got = resp.Coordinators[0].ErrorCode
			if resp.Coordinators[0].NodeID != -1 {
				t.Fatalf("v%d type %d: node %d", c.v, c.keyType, resp.Coordinators[0].NodeID)
			}
		} else if resp.NodeID != -1 {
			t.Fatalf("v%d type %d: node %d", c.v, c.keyType, resp.NodeID)
		}
		if got != c.want {
			t.Fatalf("v%d key type %d: %d, want %d", c.v, c.keyType, got, c.want)
		}
	}
	// another broker leads the group's partition
	cfg := testConfig()
	cfg.CoordinatorFor = func(p int32) (Node, bool) { return Node{ID: 7, Host: "b7", Port: 7777}, p != 0 }
	h2 := newHarness(t, cfg)
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKeys = 4, []string{"abc", ""} // partitions 4 and 0 of 5
	resp := h2.do(r).(*kmsg.FindCoordinatorResponse)
	if c := resp.Coordinators; c[0].NodeID != 7 || c[0].Host != "b7" || c[1].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("with CoordinatorFor: %+v", resp.Coordinators)
	}
}

// TestOffsetExpiration: the periodic task (offsets.retention.check.interval.ms) drops offsets older
// than offsets.retention.minutes: for a simple group from their commit time, for an Empty consumer
// group from when it became Empty; an Empty group left without offsets is removed and tombstoned.
// Offsets of a Stable group's subscribed topics are kept.
func TestOffsetExpiration(t *testing.T) {
	cfg := cfgNoDelay()
	cfg.OffsetsRetentionMinutes = 1
	cfg.OffsetsRetentionCheckIntervalMs = 10000
	h := newHarness(t, cfg)
	h.do(commitReq(5, "simple", "", -1, nil, "t", 0, 5))
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Topics = []string{"t"}
	o := joinOpts{version: 3, session: 100000, rebalance: 100000,
		protocols: []kmsg.JoinGroupRequestProtocol{proto("range", string(sub.AppendTo(nil)))}}
	st := h.stableGroup("stable", 1, o)
	h.do(commitReq(5, "stable", st[0].memberID, 1, nil, "t", 0, 7))
	h.do(commitReq(5, "stable", st[0].memberID, 1, nil, "other", 0, 8))
	h.advance(30 * time.Second)
	e := h.stableGroup("empty", 1, o)
	h.do(commitReq(5, "empty", e[0].memberID, 1, nil, "t", 0, 9))
	h.do(leaveReq(1, "empty", leaveMemberReq(e[0].memberID, nil))) // Empty since t=30 s
	for i := 0; i < 9; i++ {                                       // stable's member stays alive
		h.advance(10 * time.Second)
		h.do(heartbeatReq(3, "stable", st[0].memberID, 1, nil))
	}
	// t=90 s: simple's offset (60 s old at the t=60 s check) and stable's unsubscribed one are gone;
	// empty's (Empty for 60 s at t=90 s) too
	if h.fetched("simple", "t", 0) != -1 {
		t.Fatal("simple offset not expired")
	}
	if _, ok := h.core.Group("simple"); ok {
		t.Fatal("simple group without offsets not removed")
	}
	if h.fetched("stable", "t", 0) != 7 || h.fetched("stable", "other", 0) != -1 {
		t.Fatalf("stable: subscribed %d (want 7), unsubscribed %d (want -1)", h.fetched("stable", "t", 0), h.fetched("stable", "other", 0))
	}
	if _, ok := h.core.Group("empty"); ok || h.fetched("empty", "t", 0) != -1 {
		t.Fatal("empty group not expired")
	}
	// the log says so too: a fresh coordinator replays the same state
	h2 := newHarnessWithLog(t, cfg, h.log)
	if got := h2.core.Groups(); len(got) != 1 || got[0] != "stable" {
		t.Fatalf("replayed groups after expiration: %v", got)
	}
	if h2.fetched("stable", "t", 0) != 7 || h2.fetched("stable", "other", 0) != -1 {
		t.Fatal("replayed offsets after expiration differ")
	}
}

// TestCommitAfterLoadReplacesLoadedOffset: a coordinator that takes a partition over (a new leader
// after a failover, which has appended nothing itself) loads a log of many commits, then takes a
// commit: the new offset is the one fetched — its append orders after every loaded record, as Kafka
// orders commits by log offset. (The first appends of a fresh coordinator used to be numbered below
// the loaded records, so the loaded, older offset stayed.)
func TestCommitAfterLoadReplacesLoadedOffset(t *testing.T) {
	cfg := cfgNoDelay()
	h1 := newHarness(t, cfg)
	ms := h1.stableGroup("g", 1, joinOpts{version: 5, session: 9000, rebalance: 25000})
	for off := int64(1); off <= 20; off++ {
		if e := commitErr(t, h1.do(commitReq(8, "g", ms[0].memberID, 1, nil, "t", 0, off))); e != 0 {
			t.Fatalf("commit %d: %d", off, e)
		}
	}
	h2 := newHarnessWithLog(t, cfg, h1.log)
	if got := h2.fetched("g", "t", 0); got != 20 {
		t.Fatalf("loaded offset %d, want 20", got)
	}
	if e := commitErr(t, h2.do(commitReq(8, "g", ms[0].memberID, 1, nil, "t", 0, 21))); e != 0 {
		t.Fatalf("commit on the new coordinator: %d", e)
	}
	if got := h2.fetched("g", "t", 0); got != 21 {
		t.Fatalf("after a commit on the new coordinator: fetched %d, want 21", got)
	}
}
