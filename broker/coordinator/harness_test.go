package coordinator

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memLog is an in-memory OffsetsLog (a test double for our own storage): it keeps the batches as
// appended, validates them with DecodeBatches and reads them back the same way.
type memLog struct {
	mu      sync.Mutex
	batches map[int32][][]byte
	all     [][]byte // every batch in append order, across partitions
	failing error    // when set, Append fails with it and stores nothing
}

func newMemLog() *memLog { return &memLog{batches: map[int32][][]byte{}} }

func (l *memLog) Append(p int32, batches [][]byte) []error {
	errs := make([]error, len(batches))
	for i, b := range batches {
		errs[i] = l.appendOne(p, b)
	}
	return errs
}

func (l *memLog) appendOne(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != nil {
		return l.failing
	}
	if err := DecodeBatches(batch, func(_, _ []byte) error { return nil }); err != nil {
		return err
	}
	b := append([]byte(nil), batch...)
	l.batches[p] = append(l.batches[p], b)
	l.all = append(l.all, b)
	return nil
}

func (l *memLog) ReadAll(p int32, fn func(key, value []byte) error) error {
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[p]...)
	l.mu.Unlock()
	for _, b := range bs {
		if err := DecodeBatches(b, fn); err != nil {
			return err
		}
	}
	return nil
}

// records returns every record appended, in append order.
func (l *memLog) records() []KV {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []KV
	for _, b := range l.all {
		_ = DecodeBatches(b, func(k, v []byte) error { out = append(out, KV{k, v}); return nil })
	}
	return out
}

func (l *memLog) count() int { return len(l.records()) }

// harness drives a Core with a fake clock: it carries out effects like the driver does (appends to a
// memLog, then AppendCompleted), keeps the timers and fires the due ones when time advances.
type harness struct {
	t      *testing.T
	core   *Core
	start  time.Time
	now    time.Time
	log    *memLog
	timers map[TimerID]time.Time
	resps  map[RequestID]kmsg.Response
	errs   map[RequestID]error
	nextID RequestID
	// effects is every effect the core produced, in the order the harness carried them out.
	effects []Effect
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Node = Node{ID: 1, Host: "127.0.0.1", Port: 9092}
	cfg.OffsetsTopicNumPartitions = 5
	return cfg
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessWithLog(t, cfg, newMemLog())
}

func newHarnessWithLog(t *testing.T, cfg Config, log *memLog) *harness {
	t.Helper()
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	core, err := NewCore(cfg, logrusLogger{logrus.NewEntry(l).WithField("test", t.Name())}, 42)
	if err != nil {
		t.Fatal(err)
	}
	start := time.UnixMilli(1_700_000_000_000)
	h := &harness{t: t, core: core, start: start, now: start, log: log,
		timers: map[TimerID]time.Time{}, resps: map[RequestID]kmsg.Response{}, errs: map[RequestID]error{}}
	h.apply(core.Startup(h.now))
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		if !core.BeginLoad(p) {
			t.Fatalf("BeginLoad(%d) = false", p)
		}
		var recs []KV
		if err := log.ReadAll(p, func(k, v []byte) error { recs = append(recs, KV{k, v}); return nil }); err != nil {
			t.Fatal(err)
		}
		effects, err := core.CompleteLoad(h.now, p, recs)
		if err != nil {
			t.Fatalf("load partition %d: %v", p, err)
		}
		h.apply(effects)
	}
	t.Cleanup(func() {
		if f := core.Faults(); len(f) > 0 {
			t.Errorf("core faults: %v", f)
		}
	})
	return h
}

func (h *harness) apply(effects []Effect) {
	queue := effects
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		h.effects = append(h.effects, e)
		switch e := e.(type) {
		case Respond:
			if _, dup := h.resps[e.ID]; dup {
				h.t.Fatalf("request %d answered twice", e.ID)
			}
			if _, dup := h.errs[e.ID]; dup {
				h.t.Fatalf("request %d answered twice", e.ID)
			}
			if e.Err != nil {
				h.errs[e.ID] = e.Err
			} else {
				h.resps[e.ID] = e.Response
			}
		case SetTimer:
			if want := h.now.Add(e.After); !e.At.Equal(want) {
				h.t.Fatalf("timer %+v: At %v, After %v from %v", e.Timer, e.At, e.After, h.now)
			}
			h.timers[e.Timer] = e.At
		case CancelTimer:
			delete(h.timers, e.Timer)
		case Append:
			err := h.log.appendOne(e.Partition, e.Batch)
			queue = append(h.core.Step(h.now, AppendCompleted{ID: e.ID, Err: err}), queue...)
		}
	}
}

// send hands a request to the core and returns its id; the response may come later.
func (h *harness) send(req kmsg.Request, clientID string) RequestID {
	h.nextID++
	id := h.nextID
	h.apply(h.core.Step(h.now, RequestEvent{ID: id, Request: req, ClientID: clientID, ClientHost: "/127.0.0.1"}))
	return id
}

// resp returns the response to id, nil while there is none.
func (h *harness) resp(id RequestID) kmsg.Response {
	if err := h.errs[id]; err != nil {
		h.t.Fatalf("request %d failed: %v", id, err)
	}
	return h.resps[id]
}

// do sends a request that must be answered at once.
func (h *harness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	id := h.send(req, "client")
	r := h.resp(id)
	if r == nil {
		h.t.Fatalf("%T v%d was not answered at once", req, req.GetVersion())
	}
	return r
}

// elapsed is the fake time since the harness started.
func (h *harness) elapsed() time.Duration { return h.now.Sub(h.start) }

// advance moves the clock by d, firing due timers in deadline order at their deadlines.
func (h *harness) advance(d time.Duration) {
	end := h.now.Add(d)
	for {
		var next TimerID
		var at time.Time
		found := false
		for id, t := range h.timers {
			if t.After(end) {
				continue
			}
			if !found || t.Before(at) || (t.Equal(at) && id.Seq < next.Seq) {
				next, at, found = id, t, true
			}
		}
		if !found {
			break
		}
		delete(h.timers, next)
		if at.After(h.now) {
			h.now = at
		}
		h.apply(h.core.Step(h.now, TimerFired{Timer: next}))
	}
	h.now = end
}

func (h *harness) group(id string) GroupInfo {
	h.t.Helper()
	g, ok := h.core.Group(id)
	if !ok {
		h.t.Fatalf("no group %q", id)
	}
	return g
}

// ---- request builders ----

func sp(s string) *string { return &s }

type joinOpts struct {
	version      int16
	memberID     string
	instanceID   *string
	session      int32
	rebalance    int32
	protocolType string
	protocols    []kmsg.JoinGroupRequestProtocol
}

func proto(name string, md string) kmsg.JoinGroupRequestProtocol {
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = name, []byte(md)
	return p
}

func joinReq(group string, o joinOpts) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = o.version
	r.Group = group
	r.MemberID = o.memberID
	r.InstanceID = o.instanceID
	r.SessionTimeoutMillis = o.session
	r.RebalanceTimeoutMillis = o.rebalance
	r.ProtocolType = o.protocolType
	if r.ProtocolType == "" {
		r.ProtocolType = "consumer"
	}
	r.Protocols = o.protocols
	if r.Protocols == nil {
		r.Protocols = []kmsg.JoinGroupRequestProtocol{proto("range", "md")}
	}
	return r
}

func syncReq(version int16, group, memberID string, generation int32, instanceID *string, assignments map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = version
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, generation, instanceID
	if version >= 5 {
		r.ProtocolType, r.Protocol = sp("consumer"), sp("range")
	}
	var ids []string
	for id := range assignments {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, []byte(assignments[id])
		r.GroupAssignment = append(r.GroupAssignment, a)
	}
	return r
}

func heartbeatReq(version int16, group, memberID string, generation int32, instanceID *string) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = version
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, generation, instanceID
	return r
}

func commitReq(version int16, group, memberID string, generation int32, instanceID *string, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = version
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, memberID, generation, instanceID
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// commitErr returns the single partition error of an OffsetCommit response.
func commitErr(t *testing.T, r kmsg.Response) int16 {
	t.Helper()
	cr := r.(*kmsg.OffsetCommitResponse)
	if len(cr.Topics) != 1 || len(cr.Topics[0].Partitions) != 1 {
		t.Fatalf("commit response shape: %+v", cr)
	}
	return cr.Topics[0].Partitions[0].ErrorCode
}

func fetchReq(version int16, group, topic string, partitions ...int32) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = version
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.Partitions = topic, partitions
		g.Topics = append(g.Topics, t)
		r.Groups = append(r.Groups, g)
		return r
	}
	r.Group = group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = topic, partitions
	r.Topics = append(r.Topics, t)
	return r
}

// fetched returns the committed offset of one partition from an OffsetFetch (v1+).
func (h *harness) fetched(group, topic string, partition int32) int64 {
	h.t.Helper()
	r := h.do(fetchReq(5, group, topic, partition)).(*kmsg.OffsetFetchResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		h.t.Fatalf("offset fetch: %+v", r)
	}
	return r.Topics[0].Partitions[0].Offset
}

func leaveReq(version int16, group string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupRequest {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = version
	r.Group = group
	if version < 3 && len(members) == 1 {
		r.MemberID = members[0].MemberID
	} else {
		r.Members = members
	}
	return r
}

func leaveMemberReq(memberID string, instanceID *string) kmsg.LeaveGroupRequestMember {
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = memberID, instanceID
	return m
}

// joined is a member that completed JoinGroup.
type joined struct {
	memberID   string
	generation int32
	leader     string
	members    []kmsg.JoinGroupResponseMember
}

func joinResp(t *testing.T, r kmsg.Response) *kmsg.JoinGroupResponse {
	t.Helper()
	if r == nil {
		t.Fatal("no JoinGroup response yet")
	}
	return r.(*kmsg.JoinGroupResponse)
}

var errTest = errors.New("disk on fire")
