package coordinator

import (
	"bytes"
	"encoding/binary"
	"sort"
)

// protocol is one (name, metadata) pair a member supports, in its preference order.
type protocol struct {
	name     string
	metadata []byte
}

// waiter is a parked request (Kafka's awaitingJoinCallback / awaitingSyncCallback): the response is
// emitted for this request id, encoded for its version.
type waiter struct {
	req     RequestID
	version int16
}

// member is kafka.coordinator.group.MemberMetadata.
type member struct {
	id         string
	instanceID *string // group.instance.id (KIP-345); nil for dynamic members
	clientID   string
	clientHost string

	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []protocol
	assignment         []byte

	awaitingJoin *waiter
	awaitingSync *waiter
	// isNew: joined in this rebalance and not yet given a generation; such a member expires after
	// NewMemberJoinTimeoutMs instead of being treated as alive while it waits (KIP-394 / KAFKA-7610).
	isNew bool
	// heartbeatSatisfied tracks the current heartbeat expectation (MemberMetadata.heartbeatSatisfied).
	heartbeatSatisfied bool
}

func (m *member) isStatic() bool       { return m.instanceID != nil }
func (m *member) isAwaitingJoin() bool { return m.awaitingJoin != nil }
func (m *member) isAwaitingSync() bool { return m.awaitingSync != nil }

// hasSatisfiedHeartbeat is MemberMetadata.hasSatisfiedHeartbeat: members parked in a join or sync
// count as alive, except new members, which must be heard from.
func (m *member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return m.heartbeatSatisfied
	}
	if m.isAwaitingJoin() || m.isAwaitingSync() {
		return true
	}
	return m.heartbeatSatisfied
}

// metadata returns the member's metadata for protocol name (MemberMetadata.metadata).
func (m *member) metadata(name string) ([]byte, bool) {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata, true
		}
	}
	return nil, false
}

// matches: same protocols, same order, same metadata bytes (MemberMetadata.matches).
func (m *member) matches(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || !bytes.Equal(ps[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote returns the member's most preferred protocol among candidates (MemberMetadata.vote).
func (m *member) vote(candidates map[string]bool) (string, bool) {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name, true
		}
	}
	return "", false
}

// topicPartition names a committed partition.
type topicPartition struct {
	topic     string
	partition int32
}

// offsetAndMetadata is kafka.common.OffsetAndMetadata.
type offsetAndMetadata struct {
	offset          int64
	leaderEpoch     int32 // -1: none
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms, -1: none (only OffsetCommit v2-v4 with a retention time set one)
}

// commitRecord is CommitRecordMetadataAndOffset: the offset plus the position of the record that
// carried it (here: the core's append sequence, or the record's index while loading).
type commitRecord struct {
	appendedAt int64
	om         offsetAndMetadata
}

// group is kafka.coordinator.group.GroupMetadata. Members are kept in join order so that every
// choice Kafka makes by HashMap iteration order (new leader, member lists) is deterministic here.
type group struct {
	id    string
	epoch uint64 // incarnation: timers of a removed group never touch a new group of the same id

	state          GroupState
	stateTimestamp int64   // ms; -1: unknown (old records)
	protocolType   *string // nil: None
	protocolName   *string // nil: None
	generation     int32
	leaderID       string // "": none

	members          map[string]*member
	order            []string          // member ids in join order
	staticMembers    map[string]string // group.instance.id → member id
	pendingMembers   map[string]bool   // KIP-394: member ids handed out with MEMBER_ID_REQUIRED
	numAwaitingJoin  int
	supported        map[string]int // protocol name → number of members supporting it
	pendingSync      map[string]bool
	newMemberAdded   bool
	subscribedTopics map[string]bool // nil: unknown (not a consumer group or unparsable)

	offsets        map[topicPartition]commitRecord
	pendingOffsets map[topicPartition]offsetAndMetadata

	join *joinOp // the DelayedJoin/InitialDelayedJoin in purgatory, if any
	sync *syncOp // the DelayedSync in purgatory, if any
}

// joinOp is a DelayedJoin (initial=false) or an InitialDelayedJoin (initial=true).
type joinOp struct {
	initial    bool
	configured int32 // InitialDelayedJoin: group.initial.rebalance.delay.ms
	delayMs    int32
	remaining  int32
	timer      TimerID
}

// syncOp is a DelayedSync for one generation.
type syncOp struct {
	generation int32
	timer      TimerID
}

func newGroup(id string, state GroupState, epoch uint64, nowMs int64) *group {
	return &group{
		id:             id,
		epoch:          epoch,
		state:          state,
		stateTimestamp: nowMs,
		members:        map[string]*member{},
		staticMembers:  map[string]string{},
		pendingMembers: map[string]bool{},
		supported:      map[string]int{},
		pendingSync:    map[string]bool{},
		offsets:        map[topicPartition]commitRecord{},
		pendingOffsets: map[topicPartition]offsetAndMetadata{},
	}
}

func (g *group) is(s GroupState) bool { return g.state == s }
func (g *group) has(id string) bool   { _, ok := g.members[id]; return ok }
func (g *group) size() int            { return len(g.members) }
func (g *group) isLeader(id string) bool {
	return g.leaderID != "" && g.leaderID == id
}

// allMembers returns the members in join order.
func (g *group) allMembers() []*member {
	out := make([]*member, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

// transitionTo moves the group, refusing what GroupMetadata.assertValidTransition refuses.
func (g *group) transitionTo(s GroupState, nowMs int64) error {
	if !s.canFollow(g.state) {
		return &IllegalTransitionError{Group: g.id, From: g.state, To: s}
	}
	g.state = s
	g.stateTimestamp = nowMs
	return nil
}

// canRebalance: PreparingRebalance may be entered from the current state.
func (g *group) canRebalance() bool { return PreparingRebalance.canFollow(g.state) }

// add is GroupMetadata.add. The caller has checked supportsProtocols.
func (g *group) add(m *member, w *waiter) {
	if m.instanceID != nil {
		g.staticMembers[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	if g.leaderID == "" {
		g.leaderID = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	m.awaitingJoin = w
	if m.isAwaitingJoin() {
		g.numAwaitingJoin++
	}
	delete(g.pendingMembers, m.id)
}

// remove is GroupMetadata.remove: drops a member or a pending member id; a removed leader is replaced
// by the first remaining member (Kafka: members.keys.headOption).
func (g *group) remove(id string) {
	if m, ok := g.members[id]; ok {
		delete(g.members, id)
		for i, o := range g.order {
			if o == id {
				g.order = append(g.order[:i:i], g.order[i+1:]...)
				break
			}
		}
		for _, p := range m.protocols {
			g.supported[p.name]--
		}
		if m.isAwaitingJoin() {
			g.numAwaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.staticMembers, *m.instanceID)
		}
	}
	if g.isLeader(id) {
		g.leaderID = ""
		if len(g.order) > 0 {
			g.leaderID = g.order[0]
		}
	}
	delete(g.pendingMembers, id)
	delete(g.pendingSync, id)
}

// maybeElectNewJoinedLeader: if the leader did not rejoin, the first member that did becomes leader.
// False when there is no leader or nobody rejoined.
func (g *group) maybeElectNewJoinedLeader() bool {
	if g.leaderID == "" {
		return false
	}
	leader := g.members[g.leaderID]
	if leader != nil && leader.isAwaitingJoin() {
		return true
	}
	for _, m := range g.allMembers() {
		if m.isAwaitingJoin() {
			g.leaderID = m.id
			return true
		}
	}
	return false
}

// replaceStaticMember gives the static member's metadata a new member id (KIP-345). The caller fences
// the old id's parked requests first.
func (g *group) replaceStaticMember(instanceID, oldID, newID string) *member {
	m := g.members[oldID]
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, o := range g.order {
		if o == oldID {
			g.order[i] = newID
		}
	}
	if g.leaderID == oldID {
		g.leaderID = newID
	}
	g.staticMembers[instanceID] = newID
	return m
}

func (g *group) isPendingMember(id string) bool { return g.pendingMembers[id] }

func (g *group) currentStaticMemberID(instanceID string) (string, bool) {
	id, ok := g.staticMembers[instanceID]
	return id, ok
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pendingMembers) == 0
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members (0 without members).
func (g *group) rebalanceTimeoutMs() int32 {
	var t int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > t {
			t = m.rebalanceTimeoutMs
		}
	}
	return t
}

// candidateProtocols are the protocols every member supports.
func (g *group) candidateProtocols() map[string]bool {
	c := map[string]bool{}
	for name, n := range g.supported {
		if n == len(g.members) {
			c[name] = true
		}
	}
	return c
}

// selectProtocol is GroupMetadata.selectProtocol: each member votes for its most preferred candidate
// and the most votes win. Kafka breaks a tie by HashMap order; here the tied protocol voted first in
// join order wins.
func (g *group) selectProtocol() (string, bool) {
	if len(g.members) == 0 {
		return "", false
	}
	candidates := g.candidateProtocols()
	votes := map[string]int{}
	var first []string
	for _, m := range g.allMembers() {
		p, ok := m.vote(candidates)
		if !ok {
			return "", false
		}
		if votes[p] == 0 {
			first = append(first, p)
		}
		votes[p]++
	}
	best := ""
	for _, p := range first {
		if best == "" || votes[p] > votes[best] {
			best = p
		}
	}
	return best, best != ""
}

// supportsProtocols is GroupMetadata.supportsProtocols: an Empty group takes any non-empty protocol
// type with at least one protocol; otherwise the type must match and one protocol must be supported
// by every current member.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.is(Empty) {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supported[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

// updateMember is GroupMetadata.updateMember.
func (g *group) updateMember(m *member, ps []protocol, rebalanceTimeoutMs, sessionTimeoutMs int32, w *waiter) {
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	m.protocols = ps
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	m.rebalanceTimeoutMs = rebalanceTimeoutMs
	m.sessionTimeoutMs = sessionTimeoutMs
	if w != nil && !m.isAwaitingJoin() {
		g.numAwaitingJoin++
	} else if w == nil && m.isAwaitingJoin() {
		g.numAwaitingJoin--
	}
	m.awaitingJoin = w
}

func (g *group) notYetRejoinedMembers() []*member {
	var out []*member
	for _, m := range g.allMembers() {
		if !m.isAwaitingJoin() {
			out = append(out, m)
		}
	}
	return out
}

func (g *group) isConsumerGroup() bool {
	return g.protocolType != nil && *g.protocolType == "consumer"
}

// computeSubscribedTopics is GroupMetadata.computeSubscribedTopics: for protocol type "consumer",
// the union of the members' subscribed topics, read with the v0 prefix of the consumer protocol
// subscription (version int16, topics [string], ...); nil when unknown.
func (g *group) computeSubscribedTopics() map[string]bool {
	if !g.isConsumerGroup() {
		return nil
	}
	if len(g.members) == 0 {
		return map[string]bool{}
	}
	if g.protocolName == nil {
		return nil
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		md, ok := m.metadata(*g.protocolName)
		if !ok {
			return nil
		}
		ts, ok := parseSubscriptionTopics(md)
		if !ok {
			return nil
		}
		for _, t := range ts {
			topics[t] = true
		}
	}
	return topics
}

// parseSubscriptionTopics reads ConsumerProtocolSubscription's version and topics.
func parseSubscriptionTopics(b []byte) ([]string, bool) {
	if len(b) < 6 {
		return nil, false
	}
	b = b[2:] // version: v0 is the prefix of every version
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 {
		return nil, false
	}
	var out []string
	for i := int32(0); i < n; i++ {
		if len(b) < 2 {
			return nil, false
		}
		l := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if l < 0 || len(b) < int(l) {
			return nil, false
		}
		out = append(out, string(b[:l]))
		b = b[l:]
	}
	return out, true
}

func (g *group) isSubscribedToTopic(topic string) bool {
	if g.subscribedTopics == nil {
		return true
	}
	return g.subscribedTopics[topic]
}

func (g *group) hasOffsets() bool { return len(g.offsets) > 0 || len(g.pendingOffsets) > 0 }

// sortedOffsetKeys returns the committed partitions sorted by topic, then partition.
func (g *group) sortedOffsetKeys() []topicPartition {
	keys := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		keys = append(keys, tp)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	return keys
}

// removeExpiredOffsets is GroupMetadata.removeExpiredOffsets.
func (g *group) removeExpiredOffsets(nowMs, retentionMs int64) []topicPartition {
	expired := func(base func(commitRecord) int64, subscribed map[string]bool) []topicPartition {
		var out []topicPartition
		for _, tp := range g.sortedOffsetKeys() {
			cr := g.offsets[tp]
			if subscribed[tp.topic] {
				continue
			}
			if _, pending := g.pendingOffsets[tp]; pending {
				continue
			}
			if cr.om.expireTimestamp == -1 {
				if nowMs-base(cr) >= retentionMs {
					out = append(out, tp)
				}
			} else if nowMs >= cr.om.expireTimestamp {
				out = append(out, tp)
			}
		}
		return out
	}
	var out []topicPartition
	switch {
	case g.protocolType != nil && g.is(Empty):
		out = expired(func(cr commitRecord) int64 {
			if g.stateTimestamp >= 0 {
				return g.stateTimestamp
			}
			return cr.om.commitTimestamp
		}, nil)
	case g.isConsumerGroup() && g.subscribedTopics != nil && g.is(Stable):
		out = expired(func(cr commitRecord) int64 { return cr.om.commitTimestamp }, g.subscribedTopics)
	case g.protocolType == nil:
		out = expired(func(cr commitRecord) int64 { return cr.om.commitTimestamp }, nil)
	}
	for _, tp := range out {
		delete(g.offsets, tp)
	}
	return out
}

// removeOffsets is GroupMetadata.removeOffsets: drops the offsets (committed and pending) of tps and
// returns those that had a committed one.
func (g *group) removeOffsets(tps []topicPartition) []topicPartition {
	var out []topicPartition
	for _, tp := range tps {
		delete(g.pendingOffsets, tp)
		if _, ok := g.offsets[tp]; ok {
			delete(g.offsets, tp)
			out = append(out, tp)
		}
	}
	return out
}

// removeAllOffsets drops every offset (DeleteGroups) and returns the partitions that had one.
func (g *group) removeAllOffsets() []topicPartition {
	out := g.sortedOffsetKeys()
	g.offsets = map[topicPartition]commitRecord{}
	g.pendingOffsets = map[topicPartition]offsetAndMetadata{}
	return out
}
