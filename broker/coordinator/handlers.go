package coordinator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file ports the request handlers of kafka.coordinator.group.GroupCoordinator (Kafka 3.9)
// method by method; the names are Kafka's so the two can be read side by side. The group
// machinery they drive (membership, rebalances, heartbeats, DelayedJoin/DelayedSync) is in
// rebalance.go, the GroupMetadataManager writes in metadata_manager.go.

const errNone int16 = 0

// joinResult is GroupCoordinator.JoinGroupResult.
type joinResult struct {
	members        []kmsg.JoinGroupResponseMember
	memberID       string
	generation     int32
	protocolType   *string
	protocolName   *string
	leaderID       string
	skipAssignment bool
	err            int16
}

// joinError is JoinGroupResult(memberId, error): no generation (-1), protocol or leader.
func joinError(memberID string, err int16) joinResult {
	return joinResult{memberID: memberID, generation: -1, err: err}
}

// syncResult is GroupCoordinator.SyncGroupResult.
type syncResult struct {
	protocolType *string
	protocolName *string
	assignment   []byte
	err          int16
}

func syncError(err int16) syncResult { return syncResult{err: err} }

func (c *Core) transition(g *group, s GroupState) {
	if err := g.transitionTo(s, c.nowMs); err != nil {
		c.fail("%v", err)
		return
	}
	if s == Stable {
		c.completedRebalances++
	}
	if c.cfg.ObserveGroups {
		c.emit(observe(g, c.nowMs))
	}
}

// observe is the GroupChanged of g as it is at nowMs.
func observe(g *group, nowMs int64) GroupChanged {
	ev := GroupChanged{TimeMs: nowMs, Group: g.id, State: g.state, Generation: g.generation, Leader: g.leaderID}
	if g.protocolType != nil {
		ev.ProtocolType = *g.protocolType
	}
	if g.protocolName != nil {
		ev.Protocol = *g.protocolName
	}
	for _, m := range g.allMembers() {
		om := ObservedMember{MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, Assignment: m.assignment}
		if m.instanceID != nil {
			om.InstanceID = *m.instanceID
		}
		if ev.Protocol != "" {
			om.Metadata, _ = m.metadata(ev.Protocol)
		}
		ev.Members = append(ev.Members, om)
	}
	slices.SortFunc(ev.Members, func(a, b ObservedMember) int { return strings.Compare(a.MemberID, b.MemberID) })
	return ev
}

// maybeInvokeJoinCallback answers the member's parked JoinGroup, if any (GroupMetadata).
func (c *Core) maybeInvokeJoinCallback(g *group, m *member, r joinResult) {
	if m.awaitingJoin == nil {
		return
	}
	w := m.awaitingJoin
	m.awaitingJoin = nil
	g.numAwaitingJoin--
	c.emit(Respond{ID: w.req, Response: joinResponse(w.version, r)})
}

// maybeInvokeSyncCallback answers the member's parked SyncGroup, if any; true when there was one.
func (c *Core) maybeInvokeSyncCallback(m *member, r syncResult) bool {
	if m.awaitingSync == nil {
		return false
	}
	w := m.awaitingSync
	m.awaitingSync = nil
	c.emit(Respond{ID: w.req, Response: syncResponse(w.version, r)})
	return true
}

func (c *Core) respondJoin(w *waiter, r joinResult) {
	c.emit(Respond{ID: w.req, Response: joinResponse(w.version, r)})
}

func (c *Core) respondSync(w *waiter, r syncResult) {
	c.emit(Respond{ID: w.req, Response: syncResponse(w.version, r)})
}

// currentMemberMetadata is what the leader's JoinGroup response lists: every member with its metadata
// for the chosen protocol, in join order.
func (c *Core) currentMemberMetadata(g *group) []kmsg.JoinGroupResponseMember {
	if g.is(Dead) || g.is(PreparingRebalance) {
		c.fail("cannot obtain member metadata for group %s in state %s", g.id, g.state)
	}
	out := make([]kmsg.JoinGroupResponseMember, 0, g.size())
	for _, m := range g.allMembers() {
		md, ok := m.metadata(*g.protocolName)
		if !ok {
			c.fail("member %s of group %s does not support protocol %s", m.id, g.id, *g.protocolName)
		}
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = md
		out = append(out, jm)
	}
	return out
}

// isValidGroupID: OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept the empty group
// id (backwards compatibility); the membership APIs need a non-empty one.
func isValidGroupID(groupID string, api int16) bool {
	switch api {
	case kmsg.OffsetCommit.Int16(), kmsg.OffsetFetch.Int16(), kmsg.DescribeGroups.Int16(), kmsg.DeleteGroups.Int16():
		return true
	}
	return groupID != ""
}

// validateGroupStatus: the group id is valid, the coordinator is active, the group's partition is
// loaded and owned here.
func (c *Core) validateGroupStatus(groupID string, api int16) int16 {
	switch {
	case !isValidGroupID(groupID, api):
		return kerr.InvalidGroupID.Code
	case !c.active:
		return kerr.CoordinatorNotAvailable.Code
	case c.isGroupLoading(groupID):
		return kerr.CoordinatorLoadInProgress.Code
	case !c.isGroupLocal(groupID):
		return kerr.NotCoordinator.Code
	}
	return errNone
}

// acceptJoiningMember: group.max.size admission.
func (c *Core) acceptJoiningMember(g *group, memberID string) bool {
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		return (g.has(memberID) && g.members[memberID].isAwaitingJoin()) || int32(g.numAwaitingJoin) < c.cfg.GroupMaxSize
	default:
		return g.has(memberID) || int32(g.size()) < c.cfg.GroupMaxSize
	}
}

type joinArgs struct {
	groupID              string
	memberID             string
	instanceID           *string
	requireKnownMemberID bool // KIP-394: JoinGroup v4+ without a group.instance.id
	supportSkipping      bool // JoinGroup v9+
	clientID, clientHost string
	rebalanceTimeoutMs   int32
	sessionTimeoutMs     int32
	protocolType         string
	protocols            []protocol
	reason               string
}

func (c *Core) handleJoinGroup(a joinArgs, w *waiter) {
	if err := c.validateGroupStatus(a.groupID, kmsg.JoinGroup.Int16()); err != errNone {
		c.respondJoin(w, joinError(a.memberID, err))
		return
	}
	if a.sessionTimeoutMs < c.cfg.GroupMinSessionTimeoutMs || a.sessionTimeoutMs > c.cfg.GroupMaxSessionTimeoutMs {
		c.respondJoin(w, joinError(a.memberID, kerr.InvalidSessionTimeout.Code))
		return
	}
	isUnknownMember := a.memberID == ""
	// the group is created if it does not exist and the member id is unknown; a known member id for
	// a group that does not exist is rejected with UNKNOWN_MEMBER_ID
	g := c.getOrMaybeCreateGroup(a.groupID, isUnknownMember)
	if g == nil {
		c.respondJoin(w, joinError(a.memberID, kerr.UnknownMemberID.Code))
		return
	}
	if !c.acceptJoiningMember(g, a.memberID) {
		g.remove(a.memberID)
		c.respondJoin(w, joinError("", kerr.GroupMaxSizeReached.Code))
	} else if isUnknownMember {
		c.doNewMemberJoinGroup(g, a, w)
	} else {
		c.doCurrentMemberJoinGroup(g, a, w)
	}
	if g.is(PreparingRebalance) {
		c.checkAndCompleteJoin(g)
	}
}

func (c *Core) doNewMemberJoinGroup(g *group, a joinArgs, w *waiter) {
	if g.is(Dead) {
		c.respondJoin(w, joinError("", kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !g.supportsProtocols(a.protocolType, a.protocols) {
		c.respondJoin(w, joinError("", kerr.InconsistentGroupProtocol.Code))
		return
	}
	newMemberID := c.newMemberID(a.clientID, a.instanceID)
	if a.instanceID != nil {
		c.doStaticNewMemberJoinGroup(g, *a.instanceID, newMemberID, a, w)
	} else {
		c.doDynamicNewMemberJoinGroup(g, newMemberID, a, w)
	}
}

func (c *Core) doStaticNewMemberJoinGroup(g *group, instanceID, newMemberID string, a joinArgs, w *waiter) {
	if oldMemberID, ok := g.currentStaticMemberID(instanceID); ok {
		c.logGroup(g, "member", newMemberID).Infof("static member with group.instance.id=%s and unknown member id joins in state %s; replacing previously mapped member %s",
			instanceID, g.state, oldMemberID)
		c.updateStaticMemberAndRebalance(g, oldMemberID, newMemberID, instanceID, a, w)
		return
	}
	c.logGroup(g, "member", newMemberID).Infof("static member with group.instance.id=%s and unknown member id joins in state %s; new member id", instanceID, g.state)
	c.addMemberAndRebalance(g, newMemberID, a, w)
}

func (c *Core) doDynamicNewMemberJoinGroup(g *group, newMemberID string, a joinArgs, w *waiter) {
	if a.requireKnownMemberID {
		// KIP-394: register the id as pending and ask the member to rejoin with it
		c.logGroup(g, "member", newMemberID).Infof("dynamic member with unknown member id joins in state %s; MEMBER_ID_REQUIRED", g.state)
		if g.has(newMemberID) {
			c.fail("attempt to add pending member %s which is already a member of group %s", newMemberID, g.id)
		}
		g.pendingMembers[newMemberID] = true
		c.addPendingMemberExpiration(g, newMemberID, int64(a.sessionTimeoutMs))
		c.respondJoin(w, joinError(newMemberID, kerr.MemberIDRequired.Code))
		return
	}
	c.logGroup(g, "member", newMemberID).Infof("dynamic member with unknown member id joins in state %s; added", g.state)
	c.addMemberAndRebalance(g, newMemberID, a, w)
}

// validateCurrentMember: a group.instance.id, if given, must map to memberID (else
// FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID when unmapped); the member id must be in the group.
func (c *Core) validateCurrentMember(g *group, memberID string, instanceID *string, operation string) int16 {
	if instanceID != nil {
		cur, ok := g.currentStaticMemberID(*instanceID)
		switch {
		case ok && cur != memberID:
			c.logGroup(g, "member", memberID).Infof("request for static member with group.instance.id=%s is fenced by current member id %s during %s",
				*instanceID, cur, operation)
			return kerr.FencedInstanceID.Code
		case ok:
			return errNone
		default:
			return kerr.UnknownMemberID.Code
		}
	}
	if !g.has(memberID) {
		return kerr.UnknownMemberID.Code
	}
	return errNone
}

func (c *Core) doCurrentMemberJoinGroup(g *group, a joinArgs, w *waiter) {
	if g.is(Dead) {
		c.respondJoin(w, joinError(a.memberID, kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !g.supportsProtocols(a.protocolType, a.protocols) {
		c.respondJoin(w, joinError(a.memberID, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if g.isPendingMember(a.memberID) {
		// a rejoining pending member is accepted; pending members are never static
		if a.instanceID != nil {
			c.fail("received JoinGroup with group.instance.id=%s for pending member %s", *a.instanceID, a.memberID)
		}
		c.addMemberAndRebalance(g, a.memberID, a, w)
		return
	}
	if err := c.validateCurrentMember(g, a.memberID, a.instanceID, "join-group"); err != errNone {
		c.respondJoin(w, joinError(a.memberID, err))
		return
	}
	m := g.members[a.memberID]
	switch g.state {
	case PreparingRebalance:
		c.updateMemberAndRebalance(g, m, a, w, fmt.Sprintf("member %s joining group during %s; client reason: %s", m.id, g.state, a.reason))
	case CompletingRebalance:
		if m.matches(a.protocols) {
			// same metadata (it probably missed the JoinGroup response): return the current generation
			r := joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType,
				protocolName: g.protocolName, leaderID: g.leaderID}
			if g.isLeader(m.id) {
				r.members = c.currentMemberMetadata(g)
			}
			c.respondJoin(w, r)
		} else {
			c.updateMemberAndRebalance(g, m, a, w, fmt.Sprintf("updating metadata for member %s during %s; client reason: %s", m.id, g.state, a.reason))
		}
	case Stable:
		if g.isLeader(m.id) {
			// the leader may rejoin to trigger a rebalance for changes the metadata does not show
			c.updateMemberAndRebalance(g, m, a, w, fmt.Sprintf("leader %s re-joining group during %s; client reason: %s", m.id, g.state, a.reason))
		} else if !m.matches(a.protocols) {
			c.updateMemberAndRebalance(g, m, a, w, fmt.Sprintf("updating metadata for member %s during %s; client reason: %s", m.id, g.state, a.reason))
		} else {
			// a follower with unchanged metadata gets the current generation and goes on to SyncGroup
			c.respondJoin(w, joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType,
				protocolName: g.protocolName, leaderID: g.leaderID})
		}
	default: // Empty, Dead
		c.logGroup(g, "member", a.memberID).Warnf("attempt to add rejoining member in unexpected group state %s", g.state)
		c.respondJoin(w, joinError(a.memberID, kerr.UnknownMemberID.Code))
	}
}

type syncArgs struct {
	groupID      string
	generation   int32
	memberID     string
	protocolType *string
	protocolName *string
	instanceID   *string
	assignments  map[string][]byte
}

func (c *Core) handleSyncGroup(a syncArgs, w *waiter) {
	switch err := c.validateGroupStatus(a.groupID, kmsg.SyncGroup.Int16()); err {
	case errNone:
	case kerr.CoordinatorLoadInProgress.Code:
		// the state of the rebalance is lost: make the member rejoin without rediscovering the
		// coordinator (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here)
		c.respondSync(w, syncError(kerr.RebalanceInProgress.Code))
		return
	default:
		c.respondSync(w, syncError(err))
		return
	}
	g := c.groups[a.groupID]
	if g == nil {
		c.respondSync(w, syncError(kerr.UnknownMemberID.Code))
		return
	}
	c.doSyncGroup(g, a, w)
}

func (c *Core) validateSyncGroup(g *group, a syncArgs) int16 {
	if g.is(Dead) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if err := c.validateCurrentMember(g, a.memberID, a.instanceID, "sync-group"); err != errNone {
		return err
	}
	switch {
	case a.generation != g.generation:
		return kerr.IllegalGeneration.Code
	case a.protocolType != nil && (g.protocolType == nil || *g.protocolType != *a.protocolType):
		return kerr.InconsistentGroupProtocol.Code
	case a.protocolName != nil && (g.protocolName == nil || *g.protocolName != *a.protocolName):
		return kerr.InconsistentGroupProtocol.Code
	}
	return errNone
}

func (c *Core) doSyncGroup(g *group, a syncArgs, w *waiter) {
	if err := c.validateSyncGroup(g, a); err != errNone {
		c.respondSync(w, syncError(err))
		return
	}
	switch g.state {
	case Empty:
		c.respondSync(w, syncError(kerr.UnknownMemberID.Code))
	case PreparingRebalance:
		c.respondSync(w, syncError(kerr.RebalanceInProgress.Code))
	case CompletingRebalance:
		m := g.members[a.memberID]
		m.awaitingSync = w
		c.removePendingSyncMember(g, a.memberID)
		if !g.isLeader(a.memberID) {
			return // followers wait for the leader's assignment
		}
		c.logGroup(g, "member", a.memberID).Infof("assignment received from leader for generation %d; the group has %d members, %d of which are static",
			g.generation, g.size(), len(g.staticMembers))
		// fill any missing members with an empty assignment
		assignment := make(map[string][]byte, len(a.assignments)+g.size())
		for id, asg := range a.assignments {
			assignment[id] = asg
		}
		for _, mm := range g.allMembers() {
			if _, ok := assignment[mm.id]; !ok {
				c.logGroup(g, "member", mm.id).Warn("setting empty assignment for member missing from the leader's assignment")
				assignment[mm.id] = []byte{}
			}
		}
		generation := a.generation
		c.storeGroup(g, assignment, func(err int16) {
			// another member may have joined while the record was being written: only a group still
			// completing this generation takes the assignment
			if !g.is(CompletingRebalance) || generation != g.generation {
				return
			}
			if err != errNone {
				c.resetAndPropagateAssignmentError(g, err)
				c.maybePrepareRebalance(g, fmt.Sprintf("error %s when storing group assignment during SyncGroup (member: %s)", errName(err), a.memberID))
				return
			}
			c.setAndPropagateAssignment(g, assignment)
			c.transition(g, Stable)
			c.logGroup(g).Infof("group is Stable at generation %d with %d members", g.generation, g.size())
		})
	case Stable:
		c.removePendingSyncMember(g, a.memberID)
		m := g.members[a.memberID]
		c.respondSync(w, syncResult{protocolType: g.protocolType, protocolName: g.protocolName, assignment: m.assignment})
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
	default:
		c.fail("reached unexpected condition for Dead group %s", g.id)
	}
}

// leaveMember is LeaveGroupRequestData.MemberIdentity.
type leaveMember struct {
	memberID   string
	instanceID *string
	reason     *string
}

type leaveMemberResult struct {
	memberID   string
	instanceID *string
	err        int16
}

func (c *Core) handleLeaveGroup(groupID string, leaving []leaveMember) (int16, []leaveMemberResult) {
	if err := c.validateGroupStatus(groupID, kmsg.LeaveGroup.Int16()); err != errNone {
		return err, nil
	}
	g := c.groups[groupID]
	if g == nil {
		out := make([]leaveMemberResult, 0, len(leaving))
		for _, l := range leaving {
			out = append(out, leaveMemberResult{l.memberID, l.instanceID, kerr.UnknownMemberID.Code})
		}
		return errNone, out
	}
	if g.is(Dead) {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	removeCurrentMember := func(memberID string, reason *string) {
		m := g.members[memberID]
		why := "not provided"
		if reason != nil {
			why = *reason
		}
		c.removeMemberAndUpdateGroup(g, m, fmt.Sprintf("removing member %s on LeaveGroup; client reason: %s", memberID, why))
		c.removeHeartbeatForLeavingMember(g, memberID)
		c.logGroup(g, "member", memberID).Infof("member has left the group through explicit LeaveGroup; client reason: %s", why)
	}
	out := make([]leaveMemberResult, 0, len(leaving))
	for _, l := range leaving {
		res := leaveMemberResult{memberID: l.memberID, instanceID: l.instanceID}
		switch {
		case l.memberID == "":
			// administrative removal by group.instance.id
			if l.instanceID != nil {
				if cur, ok := g.currentStaticMemberID(*l.instanceID); ok {
					removeCurrentMember(cur, l.reason)
					break
				}
			}
			res.err = kerr.UnknownMemberID.Code
		case g.isPendingMember(l.memberID):
			c.removePendingMemberAndUpdateGroup(g, l.memberID)
			c.logGroup(g, "member", l.memberID).Info("pending member has left the group through explicit LeaveGroup")
		default:
			if err := c.validateCurrentMember(g, l.memberID, l.instanceID, "leave-group"); err != errNone {
				res.err = err
			} else {
				removeCurrentMember(l.memberID, l.reason)
			}
		}
		out = append(out, res)
	}
	return errNone, out
}

// handleDeleteGroups returns one error per distinct group id, in request order.
func (c *Core) handleDeleteGroups(groupIDs []string) map[string]int16 {
	errs := map[string]int16{}
	var eligible []*group
	for _, id := range groupIDs {
		if err := c.validateGroupStatus(id, kmsg.DeleteGroups.Int16()); err != errNone {
			errs[id] = err
			continue
		}
		g := c.groups[id]
		notFound := func() int16 {
			if c.groupNotExists(id) {
				return kerr.GroupIDNotFound.Code
			}
			return kerr.NotCoordinator.Code
		}
		if g == nil {
			errs[id] = notFound()
			continue
		}
		switch g.state {
		case Dead:
			errs[id] = notFound()
		case Empty:
			c.transition(g, Dead)
			eligible = append(eligible, g)
		default:
			errs[id] = kerr.NonEmptyGroup.Code
		}
	}
	if len(eligible) > 0 {
		n := c.cleanupGroupMetadata(eligible, func(g *group) []topicPartition { return g.removeAllOffsets() })
		for _, g := range eligible {
			errs[g.id] = errNone
			c.logGroup(g).Infof("group deleted; %d offsets removed in total", n)
		}
	}
	return errs
}

// handleDeleteOffsets is GroupCoordinator.handleDeleteOffsets: the offsets of partitions are deleted
// when the group is Empty, or, in a consumer group that is not Empty, for the topics no member
// subscribes to (the others get GROUP_SUBSCRIBED_TO_TOPIC; every topic when the subscriptions are not
// known yet). A group error (INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
// NOT_COORDINATOR, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a group of another protocol type with
// members) comes with no partition errors. Deleting a partition without an offset succeeds. An Empty
// group left without offsets becomes Dead (cleanupGroupMetadata).
func (c *Core) handleDeleteOffsets(groupID string, partitions []topicPartition) (int16, map[topicPartition]int16) {
	if err := c.validateGroupStatus(groupID, kmsg.OffsetDelete.Int16()); err != errNone {
		return err, nil
	}
	notFound := func() int16 {
		if c.groupNotExists(groupID) {
			return kerr.GroupIDNotFound.Code
		}
		return kerr.NotCoordinator.Code
	}
	g := c.groups[groupID]
	if g == nil {
		return notFound(), nil
	}
	errs := map[topicPartition]int16{}
	var eligible []topicPartition
	switch {
	case g.is(Dead):
		return notFound(), nil
	case g.is(Empty):
		eligible = partitions
	case g.isConsumerGroup():
		for _, tp := range partitions {
			if g.isSubscribedToTopic(tp.topic) {
				errs[tp] = kerr.GroupSubscribedToTopic.Code
			} else {
				eligible = append(eligible, tp)
			}
		}
	default:
		return kerr.NonEmptyGroup.Code, nil
	}
	if len(eligible) > 0 {
		n := c.cleanupGroupMetadata([]*group{g}, func(g *group) []topicPartition { return g.removeOffsets(eligible) })
		for _, tp := range eligible {
			errs[tp] = errNone
		}
		c.logGroup(g).Infof("offsets deleted for %d partitions; %d offsets removed", len(eligible), n)
	}
	return errNone, errs
}

func (c *Core) validateHeartbeat(g *group, generation int32, memberID string, instanceID *string) int16 {
	if g.is(Dead) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if err := c.validateCurrentMember(g, memberID, instanceID, "heartbeat"); err != errNone {
		return err
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	return errNone
}

func (c *Core) handleHeartbeat(groupID, memberID string, instanceID *string, generation int32) int16 {
	switch err := c.validateGroupStatus(groupID, kmsg.Heartbeat.Int16()); err {
	case errNone:
	case kerr.CoordinatorLoadInProgress.Code:
		return errNone // the group is still loading, so respond just blindly
	default:
		return err
	}
	g := c.groups[groupID]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if err := c.validateHeartbeat(g, generation, memberID, instanceID); err != errNone {
		return err
	}
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID.Code
	case CompletingRebalance, Stable:
		// heartbeats after the JoinGroup response count as normal heartbeats
		c.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
		return errNone
	case PreparingRebalance:
		c.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
		return kerr.RebalanceInProgress.Code
	}
	c.fail("reached unexpected condition for Dead group %s", groupID)
	return 0
}

// commitEntry is one partition of an OffsetCommit, in request order.
type commitEntry struct {
	tp topicPartition
	om offsetAndMetadata
}

type commitCallback func(map[topicPartition]int16)

// handleCommitOffsets ports GroupCoordinator.handleCommitOffsets. For a group the coordinator does
// not know, a commit with generation >= 0 is rejected with ILLEGAL_GENERATION below OffsetCommit v9
// (GroupCoordinator.scala) and with GROUP_ID_NOT_FOUND from v9 (Kafka 3.9's
// OffsetMetadataManager.validateOffsetCommit; case CO-UNKNOWN-GROUP-COMMIT, KAFKA-2596). A commit
// with a negative generation creates the group and is stored ("simple" consumers, manual assignment).
func (c *Core) handleCommitOffsets(groupID, memberID string, instanceID *string, generation int32, version int16,
	entries []commitEntry, cb commitCallback) {
	all := func(err int16) {
		out := make(map[topicPartition]int16, len(entries))
		for _, e := range entries {
			out[e.tp] = err
		}
		cb(out)
	}
	if err := c.validateGroupStatus(groupID, kmsg.OffsetCommit.Int16()); err != errNone {
		all(err)
		return
	}
	g := c.groups[groupID]
	if g == nil {
		if generation < 0 {
			// the group is not relying on Kafka for group management, so allow the commit
			g = c.getOrMaybeCreateGroup(groupID, true)
		} else {
			// a commit from an older generation of a group this coordinator does not know
			if version >= 9 {
				all(kerr.GroupIDNotFound.Code)
			} else {
				all(kerr.IllegalGeneration.Code)
			}
			return
		}
	}
	c.doCommitOffsets(g, memberID, instanceID, generation, entries, cb, all)
}

func (c *Core) validateOffsetCommit(g *group, generation int32, memberID string, instanceID *string) int16 {
	switch {
	case g.is(Dead):
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.is(Empty):
		// the admin client or a consumer without group management: allowed while the group is empty
		return errNone
	case generation >= 0 || memberID != "" || instanceID != nil:
		if err := c.validateCurrentMember(g, memberID, instanceID, "offset-commit"); err != errNone {
			return err
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
		return errNone
	case !g.is(Empty):
		// when the group is non-empty, only members can commit offsets
		return kerr.UnknownMemberID.Code
	}
	return errNone
}

func (c *Core) doCommitOffsets(g *group, memberID string, instanceID *string, generation int32, entries []commitEntry,
	cb commitCallback, all func(int16)) {
	if err := c.validateOffsetCommit(g, generation, memberID, instanceID); err != errNone {
		all(err)
		return
	}
	switch g.state {
	case Empty:
		c.storeOffsets(g, entries, cb)
	case Stable, PreparingRebalance:
		// commits are still allowed while preparing a rebalance: the heartbeat response tells the
		// member to rejoin (KAFKA-2557)
		c.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
		c.storeOffsets(g, entries, cb)
	case CompletingRebalance:
		// the member already has the new generation from its JoinGroup response: make it finish the
		// rebalance first
		all(kerr.RebalanceInProgress.Code)
	default:
		c.fail("logic error: unexpected group state %s", g.state)
	}
}

// fetchedOffset is one partition of an OffsetFetch answer.
type fetchedOffset struct {
	tp          topicPartition
	offset      int64
	leaderEpoch int32
	metadata    string
	err         int16
}

// handleFetchOffsets returns offsets "blindly" whatever the group state (the group may use Kafka
// only to store offsets). partitions nil means every committed partition (sorted).
func (c *Core) handleFetchOffsets(groupID string, requireStable bool, partitions []topicPartition) (int16, []fetchedOffset) {
	if err := c.validateGroupStatus(groupID, kmsg.OffsetFetch.Int16()); err != errNone {
		return err, nil
	}
	return errNone, c.getOffsets(groupID, requireStable, partitions)
}

// getOffsets is GroupMetadataManager.getOffsets.
func (c *Core) getOffsets(groupID string, requireStable bool, partitions []topicPartition) []fetchedOffset {
	none := func(tp topicPartition) fetchedOffset {
		return fetchedOffset{tp: tp, offset: -1, leaderEpoch: -1}
	}
	g := c.groups[groupID]
	if g == nil || g.is(Dead) {
		out := make([]fetchedOffset, 0, len(partitions))
		for _, tp := range partitions {
			out = append(out, none(tp))
		}
		return out
	}
	if partitions == nil {
		partitions = g.sortedOffsetKeys()
	}
	out := make([]fetchedOffset, 0, len(partitions))
	for _, tp := range partitions {
		if _, pending := g.pendingOffsets[tp]; requireStable && pending {
			f := none(tp)
			f.err = kerr.UnstableOffsetCommit.Code
			out = append(out, f)
			continue
		}
		cr, ok := g.offsets[tp]
		if !ok {
			out = append(out, none(tp))
			continue
		}
		out = append(out, fetchedOffset{tp: tp, offset: cr.om.offset, leaderEpoch: cr.om.leaderEpoch, metadata: cr.om.metadata})
	}
	return out
}

// groupSummary is GroupCoordinator.GroupSummary.
type groupSummary struct {
	state        string
	protocolType string
	protocol     string
	members      []kmsg.DescribeGroupsResponseGroupMember
}

func (c *Core) handleDescribeGroup(groupID string) (int16, groupSummary) {
	if err := c.validateGroupStatus(groupID, kmsg.DescribeGroups.Int16()); err != errNone {
		return err, groupSummary{} // EmptyGroup: no state
	}
	g := c.groups[groupID]
	if g == nil {
		return errNone, groupSummary{state: Dead.String()} // DeadGroup
	}
	s := groupSummary{state: g.state.String()}
	if g.protocolType != nil {
		s.protocolType = *g.protocolType
	}
	stable := g.is(Stable)
	if stable {
		if g.protocolName == nil {
			c.fail("invalid null group protocol for stable group %s", g.id)
		}
		s.protocol = *g.protocolName
	}
	for _, m := range g.allMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if stable {
			md, _ := m.metadata(s.protocol)
			dm.ProtocolMetadata = nonNil(md)
			dm.MemberAssignment = nonNil(m.assignment)
		}
		s.members = append(s.members, dm)
	}
	return errNone, s
}
