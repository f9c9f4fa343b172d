package coordinator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestID names one request handed to the core; its response comes back in a Respond effect with
// the same id, possibly many steps later (a parked JoinGroup or SyncGroup).
type RequestID uint64

// AppendID names one Append effect; the driver reports its outcome with AppendCompleted.
type AppendID uint64

// TimerKind says which of Kafka's delayed operations a timer stands for.
type TimerKind uint8

const (
	// TimerHeartbeat is DelayedHeartbeat: the member's session timeout (or NewMemberJoinTimeoutMs
	// for a member that joined but has no generation yet).
	TimerHeartbeat TimerKind = iota + 1
	// TimerPendingMember is DelayedHeartbeat(isPending=true): a KIP-394 pending member id that did
	// not come back with a JoinGroup within the session timeout.
	TimerPendingMember
	// TimerJoin is DelayedJoin (rebalance timeout) or InitialDelayedJoin
	// (group.initial.rebalance.delay.ms).
	TimerJoin
	// TimerSync is DelayedSync: members that did not send SyncGroup within the rebalance timeout.
	TimerSync
	// TimerCleanup is GroupMetadataManager's delete-expired-group-metadata task
	// (offsets.retention.check.interval.ms).
	TimerCleanup
)

func (k TimerKind) String() string {
	switch k {
	case TimerHeartbeat:
		return "heartbeat"
	case TimerPendingMember:
		return "pending-member"
	case TimerJoin:
		return "join"
	case TimerSync:
		return "sync"
	case TimerCleanup:
		return "cleanup"
	}
	return fmt.Sprintf("TimerKind(%d)", uint8(k))
}

// TimerID identifies one timer. A newer timer for the same purpose supersedes an older one; a
// superseded or cancelled timer that fires anyway is ignored by the core.
type TimerID struct {
	Kind   TimerKind
	Group  string
	Epoch  uint64 // the group incarnation the timer belongs to
	Member string
	Seq    uint64 // unique per SetTimer
}

// Event is an input to Core.Step: RequestEvent, TimerFired or AppendCompleted.
type Event interface{ isEvent() }

// RequestEvent is a decoded group-API request with the version the client sent (req.GetVersion()).
type RequestEvent struct {
	ID       RequestID
	Request  kmsg.Request
	ClientID string // the request header's client id
	// ClientHost is the client's address as Kafka prints it (InetAddress.toString, "/127.0.0.1").
	ClientHost string
}

// TimerFired reports that a timer from a SetTimer effect went off.
type TimerFired struct{ Timer TimerID }

// AppendCompleted reports the outcome of an Append effect; Err nil means the batch is in the log.
// An error that is a *kerr.Error is mapped as Kafka maps that append error; any other error counts
// as KAFKA_STORAGE_ERROR.
type AppendCompleted struct {
	ID  AppendID
	Err error
}

func (RequestEvent) isEvent()    {}
func (TimerFired) isEvent()      {}
func (AppendCompleted) isEvent() {}

// Effect is an output of Core.Step for the driver to carry out, in order.
type Effect interface{ isEffect() }

// Respond sends the response to request ID. Err is set instead of Response for a request the
// coordinator cannot answer at all (not a group API, or a version Kafka 3.9 does not have).
type Respond struct {
	ID       RequestID
	Response kmsg.Response
	Err      error
}

// SetTimer asks for TimerFired{Timer} at At (After from the step's now).
type SetTimer struct {
	Timer TimerID
	At    time.Time
	After time.Duration
}

// CancelTimer withdraws a timer; firing it anyway is harmless.
type CancelTimer struct{ Timer TimerID }

// Append asks for Batch (one v2 RecordBatch) to be appended to __consumer_offsets partition
// Partition, then for an AppendCompleted{ID}. Responses that depend on it (offset commits, the
// leader's SyncGroup) are only emitted after that event.
type Append struct {
	ID        AppendID
	Partition int32
	Batch     []byte
}

// GroupChanged reports a group's state transition (emitted when Config.ObserveGroups is set), with
// the group as it is after it: the broker's view of a generation that Kafka logs as "Preparing to
// rebalance group", "Stabilized group ... generation" and "Assignment received from leader". In
// CompletingRebalance the members carry the chosen protocol's metadata (their subscriptions) and no
// assignment yet; in Stable, the assignment the leader sent. Members are in member id order. The
// byte slices are the core's and must not be modified.
type GroupChanged struct {
	TimeMs       int64 // the step's time (Unix ms) at which the transition happened
	Group        string
	State        GroupState
	Generation   int32
	ProtocolType string // "consumer", "connect", ...; "" for a group that never had members
	Protocol     string // the chosen protocol (assignor) name; "" until one is chosen
	Leader       string // the leader's member id; "" when none
	Members      []ObservedMember
}

// ObservedMember is one member of a GroupChanged.
type ObservedMember struct {
	MemberID   string
	InstanceID string // group.instance.id; "" for a dynamic member
	ClientID   string
	ClientHost string // as Kafka prints it: "/127.0.0.1"
	Metadata   []byte // the chosen protocol's metadata (for consumers, the subscription); nil before a choice
	Assignment []byte // what the leader assigned it (for consumers, a ConsumerMemberAssignment); nil before
}

func (Respond) isEffect()      {}
func (SetTimer) isEffect()     {}
func (CancelTimer) isEffect()  {}
func (Append) isEffect()       {}
func (GroupChanged) isEffect() {}

// ErrUnsupportedVersion is returned (in Respond.Err) for a request version Kafka 3.9 does not have.
var ErrUnsupportedVersion = errors.New("unsupported request version")

// ErrNotGroupAPI is returned (in Respond.Err) for a request that is not one of the group APIs.
var ErrNotGroupAPI = errors.New("not a group coordinator API")

// NewMemberJoinTimeoutMs is GroupCoordinator.NewMemberJoinTimeoutMs: a member that joined but was not
// yet given a generation is dropped after this long without a heartbeat (5 minutes).
const NewMemberJoinTimeoutMs = 5 * 60 * 1000

type memberKey struct {
	group  string
	epoch  uint64
	member string
}

type appendCallback func(code int16, seq int64)

// Core is the classic group coordinator as a pure state machine: Kafka 3.9's GroupCoordinator,
// GroupMetadata and the in-memory half of GroupMetadataManager. Requests, timer firings and append
// outcomes go in through Step with the current time; responses, timers and log appends come out as
// effects. It has no goroutines, sockets, clocks or randomness of its own (member ids use a seeded
// generator), so the same inputs give the same outputs. It is not safe for concurrent use.
type Core struct {
	cfg Config
	log Logger // nil: no logging
	rng *rand.Rand

	nowMs int64
	out   []Effect

	active  bool
	owned   map[int32]bool
	loading map[int32]bool
	groups  map[string]*group

	nextEpoch  uint64
	nextSeq    uint64
	nextAppend AppendID
	appendSeq  int64
	appends    map[AppendID]appendCallback

	hb        map[memberKey]TimerID
	pendingHB map[memberKey]TimerID
	cleanup   TimerID

	faults []error

	// completedRebalances counts CompletingRebalance → Stable transitions (GroupCoordinator's
	// group-completed-rebalance-count); offsetCommits counts offsets a commit stored (offset-commit-count).
	completedRebalances uint64
	offsetCommits       uint64
}

// NewCore returns a coordinator core with cfg (see DefaultConfig). log may be nil (no logging); seed
// drives member id generation. The core answers COORDINATOR_NOT_AVAILABLE until Startup and
// NOT_COORDINATOR for groups of partitions it has not loaded (BeginLoad/CompleteLoad).
func NewCore(cfg Config, log Logger, seed uint64) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Core{
		cfg:       cfg,
		log:       log,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		owned:     map[int32]bool{},
		loading:   map[int32]bool{},
		groups:    map[string]*group{},
		appends:   map[AppendID]appendCallback{},
		hb:        map[memberKey]TimerID{},
		pendingHB: map[memberKey]TimerID{},
	}, nil
}

// Config returns the configuration the core runs with.
func (c *Core) Config() Config { return c.cfg }

// Faults returns internal errors the core recovered from (a state Kafka would have thrown an
// IllegalStateException for). Each also answered the request at hand with UNKNOWN_SERVER_ERROR.
// Tests assert it stays empty.
func (c *Core) Faults() []error { return append([]error(nil), c.faults...) }

// fault aborts the current step: Step recovers it, records it and answers the request in hand.
type fault struct{ err error }

func (c *Core) fail(format string, args ...any) {
	panic(fault{fmt.Errorf(format, args...)})
}

// Startup is GroupCoordinator.startup: the core becomes active and schedules the periodic offset
// expiration (offsets.retention.check.interval.ms).
func (c *Core) Startup(now time.Time) []Effect {
	c.begin(now)
	c.active = true
	c.scheduleCleanup()
	return c.flush()
}

// Shutdown is GroupCoordinator.shutdown: every request afterwards gets COORDINATOR_NOT_AVAILABLE.
// Parked requests are not answered (the driver fails them).
func (c *Core) Shutdown() { c.active = false }

func (c *Core) begin(now time.Time) {
	c.nowMs = now.UnixMilli()
	c.out = nil
}

func (c *Core) flush() []Effect {
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(e Effect) { c.out = append(c.out, e) }

// Step feeds one event at time now and returns the effects to carry out, in order.
func (c *Core) Step(now time.Time, ev Event) (effects []Effect) {
	c.begin(now)
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(fault)
			var e error
			if ok {
				e = err.err
			} else {
				e = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
			c.faults = append(c.faults, e)
			c.logWith("error", e).Error("group coordinator internal error")
			if re, ok := ev.(RequestEvent); ok && !c.answered(re.ID) {
				c.emit(c.faultResponse(re))
			}
			effects = c.flush()
		}
	}()
	switch ev := ev.(type) {
	case RequestEvent:
		c.handleRequest(ev)
	case TimerFired:
		c.handleTimer(ev.Timer)
	case AppendCompleted:
		c.handleAppendCompleted(ev)
	}
	return c.flush()
}

// faultResponse answers a request whose handling failed with UNKNOWN_SERVER_ERROR, as KafkaApis
// does for an unexpected exception; a request that cannot even be answered gets an error instead.
func (c *Core) faultResponse(re RequestEvent) (r Respond) {
	r = Respond{ID: re.ID, Err: fmt.Errorf("group coordinator internal error handling %T", re.Request)}
	defer func() { _ = recover() }()
	if resp := errorResponse(re.Request, kerr.UnknownServerError.Code); resp != nil {
		r = Respond{ID: re.ID, Response: resp}
	}
	return r
}

func (c *Core) answered(id RequestID) bool {
	for _, e := range c.out {
		if r, ok := e.(Respond); ok && r.ID == id {
			return true
		}
	}
	return false
}

// ---- timers ----

func (c *Core) newTimer(kind TimerKind, g *group, memberID string, afterMs int64) TimerID {
	if afterMs < 0 {
		afterMs = 0
	}
	c.nextSeq++
	id := TimerID{Kind: kind, Member: memberID, Seq: c.nextSeq}
	if g != nil {
		id.Group, id.Epoch = g.id, g.epoch
	}
	c.emit(SetTimer{Timer: id, At: time.UnixMilli(c.nowMs + afterMs), After: time.Duration(afterMs) * time.Millisecond})
	return id
}

func (c *Core) cancelTimer(id TimerID) {
	if id.Seq != 0 {
		c.emit(CancelTimer{Timer: id})
	}
}

func (c *Core) scheduleCleanup() {
	c.cancelTimer(c.cleanup)
	c.cleanup = c.newTimer(TimerCleanup, nil, "", c.cfg.OffsetsRetentionCheckIntervalMs)
}

// groupFor returns the live group a timer belongs to, or nil when it is gone or replaced.
func (c *Core) groupFor(id TimerID) *group {
	g := c.groups[id.Group]
	if g == nil || g.epoch != id.Epoch {
		return nil
	}
	return g
}

func (c *Core) handleTimer(id TimerID) {
	switch id.Kind {
	case TimerCleanup:
		if id != c.cleanup {
			return
		}
		c.cleanup = TimerID{}
		c.cleanupExpiredOffsets()
		c.scheduleCleanup()
	case TimerHeartbeat:
		k := memberKey{id.Group, id.Epoch, id.Member}
		if c.hb[k] != id {
			return
		}
		delete(c.hb, k)
		if g := c.groupFor(id); g != nil {
			c.onExpireHeartbeat(g, id.Member, false)
		}
	case TimerPendingMember:
		k := memberKey{id.Group, id.Epoch, id.Member}
		if c.pendingHB[k] != id {
			return
		}
		delete(c.pendingHB, k)
		if g := c.groupFor(id); g != nil {
			c.onExpireHeartbeat(g, id.Member, true)
		}
	case TimerJoin:
		g := c.groupFor(id)
		if g == nil || g.join == nil || g.join.timer != id {
			return
		}
		op := g.join
		g.join = nil
		c.onJoinOpComplete(g, op)
	case TimerSync:
		g := c.groupFor(id)
		if g == nil || g.sync == nil || g.sync.timer != id {
			return
		}
		op := g.sync
		g.sync = nil
		c.onExpirePendingSync(g, op.generation)
	}
}

// cancelGroupTimers drops every timer of a group leaving the cache: the members' heartbeat timers,
// then the pending members', each in member id order (not map order: same inputs, same effects).
func (c *Core) cancelGroupTimers(g *group) {
	for _, timers := range []map[memberKey]TimerID{c.hb, c.pendingHB} {
		var keys []memberKey
		for k := range timers {
			if k.group == g.id && k.epoch == g.epoch {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].member < keys[j].member })
		for _, k := range keys {
			c.cancelTimer(timers[k])
			delete(timers, k)
		}
	}
	if g.join != nil {
		c.cancelTimer(g.join.timer)
		g.join = nil
	}
	if g.sync != nil {
		c.cancelTimer(g.sync.timer)
		g.sync = nil
	}
}

// ---- appends ----

// appendRecords emits an Append of recs to the group's partition; cb runs on AppendCompleted with
// the Kafka error code (0 on success) and the append's sequence number. cb may be nil (acks=0).
func (c *Core) appendRecords(partition int32, recs []KV, cb appendCallback) {
	c.nextAppend++
	id := c.nextAppend
	if cb != nil {
		c.appends[id] = cb
	}
	c.emit(Append{ID: id, Partition: partition, Batch: EncodeBatch(c.nowMs, recs)})
}

func (c *Core) handleAppendCompleted(ev AppendCompleted) {
	cb, ok := c.appends[ev.ID]
	if !ok {
		return
	}
	delete(c.appends, ev.ID)
	c.appendSeq++
	cb(appendErrorCode(ev.Err), c.appendSeq)
}

// appendErrorCode turns an OffsetsLog error into the Kafka error the append would have produced.
func appendErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// ---- partitions and loading (GroupMetadataManager) ----

func (c *Core) partitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.OffsetsTopicNumPartitions)
}

func (c *Core) isGroupLocal(groupID string) bool   { return c.owned[c.partitionFor(groupID)] }
func (c *Core) isGroupLoading(groupID string) bool { return c.loading[c.partitionFor(groupID)] }

// groupNotExists: this coordinator owns the group's partition and has no live group of that id.
func (c *Core) groupNotExists(groupID string) bool {
	if !c.isGroupLocal(groupID) {
		return false
	}
	g := c.groups[groupID]
	return g == nil || g.is(Dead)
}

func (c *Core) newEpoch() uint64 {
	c.nextEpoch++
	return c.nextEpoch
}

func (c *Core) getOrMaybeCreateGroup(groupID string, create bool) *group {
	if g := c.groups[groupID]; g != nil {
		return g
	}
	if !create {
		return nil
	}
	g := newGroup(groupID, Empty, c.newEpoch(), c.nowMs)
	c.groups[groupID] = g
	return g
}

// BeginLoad marks __consumer_offsets partition p as loading (requests for its groups get
// COORDINATOR_LOAD_IN_PROGRESS) and reports whether the caller should load it: false when p is
// already owned or loading (GroupMetadataManager.addLoadingPartition).
func (c *Core) BeginLoad(p int32) bool {
	if c.owned[p] || c.loading[p] {
		return false
	}
	c.loading[p] = true
	return true
}

// CompleteLoad replays partition p's records (in log order, as OffsetsLog.ReadAll yields them) and
// makes the core the coordinator of its groups: GroupMetadataManager.doLoadGroupsAndOffsets followed
// by GroupCoordinator.onGroupLoaded. Groups come back Stable (with members) or Empty with their
// generation, protocol, leader, members and assignments; committed offsets come back; every loaded
// member must heartbeat within its session timeout. Records that cannot be decoded are skipped and
// reported in the returned error; everything decodable is loaded regardless.
func (c *Core) CompleteLoad(now time.Time, p int32, records []KV) (effects []Effect, err error) {
	c.begin(now)
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fault)
			if !ok {
				f = fault{fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
			c.faults = append(c.faults, f.err)
			err = errors.Join(err, f.err)
			effects = c.flush()
		}
		delete(c.loading, p)
		c.owned[p] = true
	}()
	type groupTP struct {
		group string
		tp    topicPartition
	}
	loadedOffsets := map[groupTP]commitRecord{}
	loadedGroups := map[string]*group{}
	var groupOrder []string
	removedGroups := map[string]bool{}
	var errs []error
	for i, r := range records {
		k, kerr := readRecordKey(r.Key)
		if kerr != nil {
			errs = append(errs, fmt.Errorf("%s-%d record %d: %w", OffsetsTopic, p, i, kerr))
			continue
		}
		switch k.kind {
		case keyOffset:
			gtp := groupTP{k.group, topicPartition{k.topic, k.partition}}
			if r.Value == nil {
				delete(loadedOffsets, gtp)
				continue
			}
			om, verr := readOffsetValue(r.Value)
			if verr != nil {
				errs = append(errs, fmt.Errorf("%s-%d record %d (group %s): %w", OffsetsTopic, p, i, k.group, verr))
				continue
			}
			loadedOffsets[gtp] = commitRecord{appendedAt: int64(i), om: om}
		case keyGroup:
			if r.Value == nil {
				delete(loadedGroups, k.group)
				removedGroups[k.group] = true
				continue
			}
			g, gerr := readGroupValue(k.group, r.Value, 0, c.nowMs)
			if gerr != nil {
				errs = append(errs, fmt.Errorf("%s-%d record %d: %w", OffsetsTopic, p, i, gerr))
				continue
			}
			delete(removedGroups, k.group)
			if _, seen := loadedGroups[k.group]; !seen {
				groupOrder = append(groupOrder, k.group)
			}
			loadedGroups[k.group] = g
		default:
			c.logWith("partition", p).Warnf("unknown message key version %d while loading offsets and group metadata; ignoring it", k.version)
		}
	}

	// Loaded commits are ordered by their place in the log (record i); appends completed from now
	// on must order after every one of them, as Kafka compares log offsets
	// (CommitRecordMetadataAndOffset.appendedBatchOffset). A coordinator that has appended less
	// than this partition holds — a new leader after a failover — would otherwise number its first
	// commits below the loaded ones, and onOffsetCommitAppend would keep the loaded, older offsets.
	c.appendSeq = max(c.appendSeq, int64(len(records)))

	offsetsByGroup := map[string]map[topicPartition]commitRecord{}
	var offsetGroups []string
	for gtp, cr := range loadedOffsets {
		m := offsetsByGroup[gtp.group]
		if m == nil {
			m = map[topicPartition]commitRecord{}
			offsetsByGroup[gtp.group] = m
			offsetGroups = append(offsetGroups, gtp.group)
		}
		m[gtp.tp] = cr
	}
	sort.Strings(offsetGroups)

	load := func(g *group) {
		for tp, cr := range offsetsByGroup[g.id] {
			g.offsets[tp] = cr
		}
		if cur := c.groups[g.id]; cur != nil {
			c.logGroup(g).Debug("group already cached; keeping the cached one")
			return
		}
		g.epoch = c.newEpoch()
		c.groups[g.id] = g
		c.logGroup(g, "partition", p).Infof("loaded group %s in state %s with %d members and %d offsets", g.id, g.state, g.size(), len(g.offsets))
		c.onGroupLoaded(g)
	}
	for _, id := range groupOrder {
		if g, ok := loadedGroups[id]; ok {
			load(g)
		}
	}
	// groups that only store offsets (no group metadata in the log) come back Empty
	for _, id := range offsetGroups {
		if _, ok := loadedGroups[id]; ok {
			continue
		}
		load(newGroup(id, Empty, 0, c.nowMs))
	}
	removed := make([]string, 0, len(removedGroups))
	for id := range removedGroups {
		removed = append(removed, id)
	}
	sort.Strings(removed)
	for _, id := range removed {
		if _, hasOffsets := offsetsByGroup[id]; c.groups[id] != nil && !hasOffsets {
			errs = append(errs, fmt.Errorf("unexpected unload of active group %s while loading partition %d", id, p))
		}
	}
	return c.flush(), errors.Join(errs...)
}

// Unload is GroupCoordinator.onResignation: the core stops coordinating partition p's groups; parked
// JoinGroups and SyncGroups are answered NOT_COORDINATOR.
func (c *Core) Unload(now time.Time, p int32) []Effect {
	c.begin(now)
	delete(c.owned, p)
	delete(c.loading, p)
	ids := make([]string, 0)
	for id := range c.groups {
		if c.partitionFor(id) == p {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := c.groups[id]
		c.onGroupUnloaded(g)
		c.cancelGroupTimers(g)
		delete(c.groups, id)
	}
	return c.flush()
}

// ---- inspection (tests, metrics, the driver's logs) ----

// MemberInfo describes one member as the core holds it.
type MemberInfo struct {
	MemberID           string
	GroupInstanceID    *string
	ClientID           string
	ClientHost         string
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32
	Protocols          []string
	Assignment         []byte
	AwaitingJoin       bool
	AwaitingSync       bool
}

// GroupInfo is a snapshot of one group.
type GroupInfo struct {
	GroupID        string
	State          GroupState
	Generation     int32
	ProtocolType   string // "" when none
	Protocol       string // "" when none
	Leader         string
	Members        []MemberInfo // join order
	PendingMembers []string     // sorted
}

// Group returns a snapshot of group id, false when the core has no such group.
func (c *Core) Group(id string) (GroupInfo, bool) {
	g := c.groups[id]
	if g == nil {
		return GroupInfo{}, false
	}
	gi := GroupInfo{GroupID: g.id, State: g.state, Generation: g.generation, Leader: g.leaderID}
	if g.protocolType != nil {
		gi.ProtocolType = *g.protocolType
	}
	if g.protocolName != nil {
		gi.Protocol = *g.protocolName
	}
	for _, m := range g.allMembers() {
		mi := MemberInfo{MemberID: m.id, GroupInstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeoutMs: m.sessionTimeoutMs, RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			Assignment: m.assignment, AwaitingJoin: m.isAwaitingJoin(), AwaitingSync: m.isAwaitingSync()}
		for _, p := range m.protocols {
			mi.Protocols = append(mi.Protocols, p.name)
		}
		gi.Members = append(gi.Members, mi)
	}
	for id := range g.pendingMembers {
		gi.PendingMembers = append(gi.PendingMembers, id)
	}
	sort.Strings(gi.PendingMembers)
	return gi, true
}

// Stats is what the broker's metrics read from the core at a scrape: Kafka 3.9's GroupMetadataManager
// gauges (NumGroups, NumGroups<State>, NumOffsets) and GroupCoordinator's group-coordinator-metrics
// counts (group-completed-rebalance-count, offset-commit-count).
type Stats struct {
	GroupsByState       map[GroupState]int // every state, 0 included
	NumOffsets          int                // committed offsets over all groups
	CompletedRebalances uint64             // CompletingRebalance → Stable transitions since start
	OffsetCommits       uint64             // partition offsets stored by OffsetCommit since start
}

// Stats counts the groups by state and their offsets: O(groups), in memory.
func (c *Core) Stats() Stats {
	st := Stats{GroupsByState: map[GroupState]int{}, CompletedRebalances: c.completedRebalances, OffsetCommits: c.offsetCommits}
	for _, s := range []GroupState{Empty, PreparingRebalance, CompletingRebalance, Stable, Dead} {
		st.GroupsByState[s] = 0
	}
	for _, g := range c.groups {
		st.GroupsByState[g.state]++
		st.NumOffsets += len(g.offsets)
	}
	return st
}

// Groups returns the ids of the groups the core holds, sorted.
func (c *Core) Groups() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// CommittedOffset returns the committed offset of group for topic-partition, false when none.
func (c *Core) CommittedOffset(groupID, topic string, partition int32) (int64, bool) {
	g := c.groups[groupID]
	if g == nil || g.is(Dead) {
		return 0, false
	}
	cr, ok := g.offsets[topicPartition{topic, partition}]
	return cr.om.offset, ok
}

// newMemberID is GroupMetadata.generateMemberId: clientId (or group.instance.id) + "-" + a UUID.
func (c *Core) newMemberID(clientID string, instanceID *string) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := c.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + uuid
}
