package coordinator

import (
	"fmt"
	"unicode/utf16"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file ports kafka.coordinator.group.GroupCoordinator (Kafka 3.9) method by method; the names
// are Kafka's so the two can be read side by side.

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

func (c *Core) logGroup(g *group) *logrus.Entry {
	return c.log.WithFields(logrus.Fields{"group": g.id, "generation": g.generation})
}

func (c *Core) transition(g *group, s GroupState) {
	if err := g.transitionTo(s, c.nowMs); err != nil {
		c.fail("%v", err)
	}
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
		c.logGroup(g).WithField("member", newMemberID).Infof("static member with group.instance.id=%s and unknown member id joins in state %s; replacing previously mapped member %s",
			instanceID, g.state, oldMemberID)
		c.updateStaticMemberAndRebalance(g, oldMemberID, newMemberID, instanceID, a, w)
		return
	}
	c.logGroup(g).WithField("member", newMemberID).Infof("static member with group.instance.id=%s and unknown member id joins in state %s; new member id", instanceID, g.state)
	c.addMemberAndRebalance(g, newMemberID, a, w)
}

func (c *Core) doDynamicNewMemberJoinGroup(g *group, newMemberID string, a joinArgs, w *waiter) {
	if a.requireKnownMemberID {
		// KIP-394: register the id as pending and ask the member to rejoin with it
		c.logGroup(g).WithField("member", newMemberID).Infof("dynamic member with unknown member id joins in state %s; MEMBER_ID_REQUIRED", g.state)
		if g.has(newMemberID) {
			c.fail("attempt to add pending member %s which is already a member of group %s", newMemberID, g.id)
		}
		g.pendingMembers[newMemberID] = true
		c.addPendingMemberExpiration(g, newMemberID, int64(a.sessionTimeoutMs))
		c.respondJoin(w, joinError(newMemberID, kerr.MemberIDRequired.Code))
		return
	}
	c.logGroup(g).WithField("member", newMemberID).Infof("dynamic member with unknown member id joins in state %s; added", g.state)
	c.addMemberAndRebalance(g, newMemberID, a, w)
}

// validateCurrentMember: a group.instance.id, if given, must map to memberID (else
// FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID when unmapped); the member id must be in the group.
func (c *Core) validateCurrentMember(g *group, memberID string, instanceID *string, operation string) int16 {
	if instanceID != nil {
		cur, ok := g.currentStaticMemberID(*instanceID)
		switch {
		case ok && cur != memberID:
			c.logGroup(g).WithField("member", memberID).Infof("request for static member with group.instance.id=%s is fenced by current member id %s during %s",
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
		c.logGroup(g).WithField("member", a.memberID).Warnf("attempt to add rejoining member in unexpected group state %s", g.state)
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
		c.logGroup(g).WithField("member", a.memberID).Infof("assignment received from leader for generation %d; the group has %d members, %d of which are static",
			g.generation, g.size(), len(g.staticMembers))
		// fill any missing members with an empty assignment
		assignment := make(map[string][]byte, len(a.assignments)+g.size())
		for id, asg := range a.assignments {
			assignment[id] = asg
		}
		for _, mm := range g.allMembers() {
			if _, ok := assignment[mm.id]; !ok {
				c.logGroup(g).WithField("member", mm.id).Warn("setting empty assignment for member missing from the leader's assignment")
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
		c.logGroup(g).WithField("member", memberID).Infof("member has left the group through explicit LeaveGroup; client reason: %s", why)
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
			c.logGroup(g).WithField("member", l.memberID).Info("pending member has left the group through explicit LeaveGroup")
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

// ---- group loading/unloading ----

func (c *Core) onGroupUnloaded(g *group) {
	c.logGroup(g).Info("unloading group metadata")
	prev := g.state
	c.transition(g, Dead)
	switch prev {
	case PreparingRebalance:
		for _, m := range g.allMembers() {
			c.maybeInvokeJoinCallback(g, m, joinError(m.id, kerr.NotCoordinator.Code))
		}
	case Stable, CompletingRebalance:
		for _, m := range g.allMembers() {
			c.maybeInvokeSyncCallback(m, syncError(kerr.NotCoordinator.Code))
		}
	}
	c.removeSyncExpiration(g)
}

func (c *Core) onGroupLoaded(g *group) {
	if !g.is(Stable) && !g.is(Empty) {
		c.fail("loaded group %s in state %s", g.id, g.state)
	}
	if int32(g.size()) > c.cfg.GroupMaxSize {
		c.prepareRebalance(g, fmt.Sprintf("freshly-loaded group is over capacity (%d); rebalancing in order to give a chance for consumers to commit offsets", c.cfg.GroupMaxSize))
	}
	for _, m := range g.allMembers() {
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
	}
}

// ---- assignment propagation ----

func (c *Core) setAndPropagateAssignment(g *group, assignment map[string][]byte) {
	if !g.is(CompletingRebalance) {
		c.fail("group %s: setting assignment in state %s", g.id, g.state)
	}
	for _, m := range g.allMembers() {
		m.assignment = nonNil(assignment[m.id])
	}
	c.propagateAssignment(g, errNone)
}

func (c *Core) resetAndPropagateAssignmentError(g *group, err int16) {
	if !g.is(CompletingRebalance) {
		c.fail("group %s: resetting assignment in state %s", g.id, g.state)
	}
	for _, m := range g.allMembers() {
		m.assignment = []byte{}
	}
	c.propagateAssignment(g, err)
}

func (c *Core) propagateAssignment(g *group, err int16) {
	var pt, pn *string
	if err == errNone {
		pt, pn = g.protocolType, g.protocolName
	}
	for _, m := range g.allMembers() {
		if len(m.assignment) == 0 && err == errNone {
			c.logGroup(g).WithField("member", m.id).Warn("sending empty assignment with no error")
		}
		if c.maybeInvokeSyncCallback(m, syncResult{protocolType: pt, protocolName: pn, assignment: m.assignment, err: err}) {
			// restart the session after propagating: an expiry that fell while the member waited for
			// the leader or the store was ignored
			c.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
	}
}

// ---- heartbeats (DelayedHeartbeat) ----

func (c *Core) completeAndScheduleNextHeartbeatExpiration(g *group, m *member) {
	c.completeAndScheduleNextExpiration(g, m, int64(m.sessionTimeoutMs))
}

// completeAndScheduleNextExpiration satisfies the member's current heartbeat expectation and sets the
// next one; like DelayedHeartbeat in the purgatory, no timer is kept while the member is parked in a
// join or sync (it counts as alive), except for a new member.
func (c *Core) completeAndScheduleNextExpiration(g *group, m *member, timeoutMs int64) {
	k := memberKey{g.id, g.epoch, m.id}
	m.heartbeatSatisfied = true
	if id, ok := c.hb[k]; ok {
		c.cancelTimer(id)
		delete(c.hb, k)
	}
	if id, ok := c.pendingHB[k]; ok && g.has(m.id) { // a pending expiration completes once the member joined
		c.cancelTimer(id)
		delete(c.pendingHB, k)
	}
	m.heartbeatSatisfied = false
	if m.hasSatisfiedHeartbeat() {
		return // completes at once in Kafka's purgatory
	}
	c.hb[k] = c.newTimer(TimerHeartbeat, g, m.id, timeoutMs)
}

func (c *Core) addPendingMemberExpiration(g *group, memberID string, timeoutMs int64) {
	k := memberKey{g.id, g.epoch, memberID}
	if id, ok := c.pendingHB[k]; ok {
		c.cancelTimer(id)
	}
	c.pendingHB[k] = c.newTimer(TimerPendingMember, g, memberID, timeoutMs)
}

func (c *Core) removeHeartbeatForLeavingMember(g *group, memberID string) {
	k := memberKey{g.id, g.epoch, memberID}
	if id, ok := c.hb[k]; ok {
		c.cancelTimer(id)
		delete(c.hb, k)
	}
}

func (c *Core) onExpireHeartbeat(g *group, memberID string, isPending bool) {
	switch {
	case g.is(Dead):
		c.logGroup(g).WithField("member", memberID).Info("heartbeat expiration after the group was unloaded or deleted")
	case isPending:
		c.logGroup(g).WithField("member", memberID).Info("pending member has been removed after session timeout expiration")
		c.removePendingMemberAndUpdateGroup(g, memberID)
	case !g.has(memberID):
		c.logGroup(g).WithField("member", memberID).Debug("member has already been removed from the group")
	default:
		m := g.members[memberID]
		if !m.hasSatisfiedHeartbeat() {
			c.logGroup(g).WithField("member", memberID).Info("member has failed (session timeout), removing it from the group")
			c.removeMemberAndUpdateGroup(g, m, fmt.Sprintf("removing member %s on heartbeat expiration", memberID))
		}
	}
}

// ---- membership changes ----

func (c *Core) addMemberAndRebalance(g *group, memberID string, a joinArgs, w *waiter) {
	var instanceID *string
	if a.instanceID != nil {
		s := *a.instanceID
		instanceID = &s
	}
	m := &member{
		id:                 memberID,
		instanceID:         instanceID,
		clientID:           a.clientID,
		clientHost:         a.clientHost,
		rebalanceTimeoutMs: a.rebalanceTimeoutMs,
		sessionTimeoutMs:   a.sessionTimeoutMs,
		protocolType:       a.protocolType,
		protocols:          a.protocols,
		isNew:              true,
	}
	// a new member during the first rebalance may delay it further (InitialDelayedJoin)
	if g.is(PreparingRebalance) && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, w)
	// the session timeout does not protect new members (they cannot heartbeat yet, and their socket
	// is muted while the JoinGroup is parked): they expire after NewMemberJoinTimeoutMs
	c.completeAndScheduleNextExpiration(g, m, NewMemberJoinTimeoutMs)
	var inst string
	if instanceID != nil {
		inst = *instanceID
	}
	c.maybePrepareRebalance(g, fmt.Sprintf("adding new member %s with group instance id %q; client reason: %s", memberID, inst, a.reason))
}

func (c *Core) updateStaticMemberAndRebalance(g *group, oldMemberID, newMemberID, instanceID string, a joinArgs, w *waiter) {
	currentLeader := g.leaderID
	m := g.members[oldMemberID]
	// fence the old member id's parked requests at once (KAFKA-8500: a duplicate instance must stop)
	c.maybeInvokeJoinCallback(g, m, joinError(oldMemberID, kerr.FencedInstanceID.Code))
	c.maybeInvokeSyncCallback(m, syncError(kerr.FencedInstanceID.Code))
	m = g.replaceStaticMember(instanceID, oldMemberID, newMemberID)
	// the old id's heartbeat expires without effect since the group no longer has that id
	c.completeAndScheduleNextHeartbeatExpiration(g, m)

	oldRebalanceTimeoutMs, oldSessionTimeoutMs := m.rebalanceTimeoutMs, m.sessionTimeoutMs
	g.updateMember(m, a.protocols, a.rebalanceTimeoutMs, a.sessionTimeoutMs, w)
	// Kafka reads the "old" protocols after updateMember, so a failed store reverts to the new ones;
	// kept as is
	oldProtocols := m.protocols

	switch g.state {
	case Stable:
		// if the group's protocol for the next generation would not change, just persist the new
		// member id; otherwise rebalance so that protocol and assignment stay consistent
		next, ok := g.selectProtocol()
		if ok && g.protocolName != nil && *g.protocolName == next {
			c.logGroup(g).WithField("member", newMemberID).Info("static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance")
			assignment := map[string][]byte{}
			for _, mm := range g.allMembers() {
				assignment[mm.id] = nonNil(mm.assignment)
			}
			c.storeGroup(g, assignment, func(err int16) {
				if err != errNone {
					c.logGroup(g).Warnf("failed to persist metadata: %s", errName(err))
					// revert the static member to its old member id
					g.updateMember(m, oldProtocols, oldRebalanceTimeoutMs, oldSessionTimeoutMs, nil)
					old := g.replaceStaticMember(instanceID, newMemberID, oldMemberID)
					c.completeAndScheduleNextHeartbeatExpiration(g, old)
					c.respondJoin(w, joinResult{memberID: "", generation: g.generation, protocolType: g.protocolType,
						protocolName: g.protocolName, leaderID: currentLeader, err: err})
					return
				}
				if a.supportSkipping {
					// JoinGroup v9+: tell the leader it leads, but that it must skip the assignor
					isLeader := g.isLeader(newMemberID)
					r := joinResult{memberID: newMemberID, generation: g.generation, protocolType: g.protocolType,
						protocolName: g.protocolName, leaderID: g.leaderID, skipAssignment: isLeader}
					if isLeader {
						r.members = c.currentMemberMetadata(g)
					}
					c.maybeInvokeJoinCallback(g, m, r)
					return
				}
				// before v9: return the old leader id so that a rejoining leader does not compute an
				// assignment a Stable group would not propagate
				c.maybeInvokeJoinCallback(g, m, joinResult{memberID: newMemberID, generation: g.generation,
					protocolType: g.protocolType, protocolName: g.protocolName, leaderID: currentLeader})
			})
		} else {
			c.maybePrepareRebalance(g, fmt.Sprintf("group's selectedProtocol will change because static member %s with instance id %s joined with change of protocol; client reason: %s",
				newMemberID, instanceID, a.reason))
		}
	case CompletingRebalance:
		// the old member id may already be in the leader's assignment: rebalance so that the new id
		// gets one
		c.prepareRebalance(g, fmt.Sprintf("updating metadata for static member %s with instance id %s; client reason: %s", newMemberID, instanceID, a.reason))
	case PreparingRebalance:
	default:
		c.fail("group %s was not supposed to be in state %s when the unknown static member %s rejoins", g.id, g.state, instanceID)
	}
}

func (c *Core) updateMemberAndRebalance(g *group, m *member, a joinArgs, w *waiter, reason string) {
	g.updateMember(m, a.protocols, a.rebalanceTimeoutMs, a.sessionTimeoutMs, w)
	c.maybePrepareRebalance(g, reason)
}

func (c *Core) maybePrepareRebalance(g *group, reason string) {
	if g.canRebalance() {
		c.prepareRebalance(g, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance and parks a DelayedJoin (rebalance timeout)
// or, for an Empty group, an InitialDelayedJoin (group.initial.rebalance.delay.ms).
func (c *Core) prepareRebalance(g *group, reason string) {
	// members awaiting sync are told to rejoin
	if g.is(CompletingRebalance) {
		c.resetAndPropagateAssignmentError(g, kerr.RebalanceInProgress.Code)
	}
	c.removeSyncExpiration(g)
	var op *joinOp
	if g.is(Empty) {
		delay := c.cfg.GroupInitialRebalanceDelayMs
		remaining := g.rebalanceTimeoutMs() - delay
		if remaining < 0 {
			remaining = 0
		}
		op = &joinOp{initial: true, configured: delay, delayMs: delay, remaining: remaining}
	} else {
		op = &joinOp{delayMs: g.rebalanceTimeoutMs()}
	}
	c.transition(g, PreparingRebalance)
	c.logGroup(g).Infof("preparing to rebalance group in state %s with old generation %d (%s-%d) (reason: %s)",
		g.state, g.generation, OffsetsTopic, c.partitionFor(g.id), reason)
	c.watchJoin(g, op)
}

// watchJoin is rebalancePurgatory.tryCompleteElseWatch for a join operation.
func (c *Core) watchJoin(g *group, op *joinOp) {
	if g.join != nil {
		c.cancelTimer(g.join.timer)
		g.join = nil
	}
	if !op.initial && g.hasAllMembersJoined() {
		c.onCompleteJoin(g)
		return
	}
	op.timer = c.newTimer(TimerJoin, g, "", int64(op.delayMs))
	g.join = op
}

// checkAndCompleteJoin is rebalancePurgatory.checkAndComplete(GroupJoinKey): a DelayedJoin completes
// as soon as every member rejoined (an InitialDelayedJoin only on its timer).
func (c *Core) checkAndCompleteJoin(g *group) {
	if g.join == nil || g.join.initial || !g.hasAllMembersJoined() {
		return
	}
	c.cancelTimer(g.join.timer)
	g.join = nil
	c.onCompleteJoin(g)
}

// onJoinOpComplete runs when a join operation's timer fires: InitialDelayedJoin.onComplete (wait
// again while new members keep arriving and rebalance time remains) or DelayedJoin.onComplete.
func (c *Core) onJoinOpComplete(g *group, op *joinOp) {
	if op.initial && g.newMemberAdded && op.remaining != 0 {
		g.newMemberAdded = false
		delay := op.configured
		if op.remaining < delay {
			delay = op.remaining
		}
		remaining := op.remaining - op.delayMs
		if remaining < 0 {
			remaining = 0
		}
		c.watchJoin(g, &joinOp{initial: true, configured: op.configured, delayMs: delay, remaining: remaining})
		return
	}
	c.onCompleteJoin(g)
}

func (c *Core) removeMemberAndUpdateGroup(g *group, m *member, reason string) {
	// a new member may time out with a parked JoinGroup: answer it first so that the client retries
	c.maybeInvokeJoinCallback(g, m, joinError("", kerr.UnknownMemberID.Code))
	g.remove(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		c.maybePrepareRebalance(g, reason)
	case PreparingRebalance:
		c.checkAndCompleteJoin(g)
	}
}

func (c *Core) removePendingMemberAndUpdateGroup(g *group, memberID string) {
	g.remove(memberID)
	if g.is(PreparingRebalance) {
		c.checkAndCompleteJoin(g)
	}
}

// onCompleteJoin ends the join phase: members that did not rejoin are dropped (dynamic ones), the
// next generation starts, every parked JoinGroup is answered (the leader gets the members' metadata)
// and a DelayedSync waits for their SyncGroups.
func (c *Core) onCompleteJoin(g *group) {
	var dropped []string
	for _, m := range g.notYetRejoinedMembers() {
		if m.isStatic() {
			continue
		}
		dropped = append(dropped, m.id)
		g.remove(m.id)
		c.removeHeartbeatForLeavingMember(g, m.id)
	}
	if len(dropped) > 0 {
		c.logGroup(g).Infof("removed dynamic members who haven't joined: %v", dropped)
	}
	if g.is(Dead) {
		c.logGroup(g).Info("group is dead, skipping rebalance stage")
		return
	}
	if !g.maybeElectNewJoinedLeader() && g.size() > 0 {
		// nobody rejoined: wait another rebalance timeout until session timeouts remove the
		// non-responsive members
		c.logGroup(g).Error("could not complete rebalance because no members rejoined")
		c.watchJoin(g, &joinOp{delayMs: g.rebalanceTimeoutMs()})
		return
	}
	c.initNextGeneration(g)
	if g.is(Empty) {
		c.logGroup(g).Infof("group with generation %d is now empty (%s-%d)", g.generation, OffsetsTopic, c.partitionFor(g.id))
		c.storeGroup(g, map[string][]byte{}, func(err int16) {
			if err != errNone {
				// the previous generation in the log may come back after a failover; it has no
				// active members, so this is only a warning
				c.logGroup(g).Warnf("failed to write empty metadata: %s", errName(err))
			}
		})
		return
	}
	c.logGroup(g).Infof("stabilized group generation %d (%s-%d) with %d members", g.generation, OffsetsTopic, c.partitionFor(g.id), g.size())
	for _, m := range g.allMembers() {
		r := joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType,
			protocolName: g.protocolName, leaderID: g.leaderID}
		if g.isLeader(m.id) {
			r.members = c.currentMemberMetadata(g)
		}
		c.maybeInvokeJoinCallback(g, m, r)
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	c.schedulePendingSync(g)
}

// initNextGeneration is GroupMetadata.initNextGeneration.
func (c *Core) initNextGeneration(g *group) {
	g.generation++
	if g.size() > 0 {
		p, ok := g.selectProtocol()
		if !ok {
			c.fail("group %s: no protocol supported by every member", g.id)
		}
		g.protocolName = &p
		g.subscribedTopics = g.computeSubscribedTopics()
		c.transition(g, CompletingRebalance)
	} else {
		g.protocolName = nil
		g.subscribedTopics = g.computeSubscribedTopics()
		c.transition(g, Empty)
	}
	g.pendingSync = map[string]bool{}
}

// ---- DelayedSync ----

func (c *Core) removePendingSyncMember(g *group, memberID string) {
	delete(g.pendingSync, memberID)
	c.maybeCompleteSyncExpiration(g)
}

func (c *Core) removeSyncExpiration(g *group) {
	g.pendingSync = map[string]bool{}
	c.maybeCompleteSyncExpiration(g)
}

// maybeCompleteSyncExpiration is checkAndComplete(GroupSyncKey) with DelayedSync.tryComplete.
func (c *Core) maybeCompleteSyncExpiration(g *group) {
	if g.sync == nil || !c.tryCompletePendingSync(g, g.sync.generation) {
		return
	}
	c.cancelTimer(g.sync.timer)
	g.sync = nil
}

func (c *Core) schedulePendingSync(g *group) {
	if g.sync != nil {
		c.cancelTimer(g.sync.timer)
		g.sync = nil
	}
	op := &syncOp{generation: g.generation}
	if c.tryCompletePendingSync(g, op.generation) {
		return
	}
	op.timer = c.newTimer(TimerSync, g, "", int64(g.rebalanceTimeoutMs()))
	g.sync = op
}

func (c *Core) tryCompletePendingSync(g *group, generation int32) bool {
	if generation != g.generation {
		return true
	}
	switch g.state {
	case Dead, Empty, PreparingRebalance:
		return true
	}
	return len(g.pendingSync) == 0
}

// onExpirePendingSync removes the members that did not send SyncGroup within the rebalance timeout
// and rebalances.
func (c *Core) onExpirePendingSync(g *group, generation int32) {
	if generation != g.generation {
		c.logGroup(g).Errorf("received unexpected notification of sync expiration with an old generation %d", generation)
		return
	}
	switch g.state {
	case Dead, Empty, PreparingRebalance:
		c.logGroup(g).Errorf("received unexpected notification of sync expiration after the group transitioned to %s", g.state)
		return
	}
	if len(g.pendingSync) == 0 {
		return
	}
	var pending []string
	for _, m := range g.allMembers() {
		if g.pendingSync[m.id] {
			pending = append(pending, m.id)
		}
	}
	for _, id := range pending {
		g.remove(id)
		c.removeHeartbeatForLeavingMember(g, id)
	}
	c.logGroup(g).Infof("removed members who haven't sent their sync request: %v", pending)
	c.prepareRebalance(g, fmt.Sprintf("removing %v on pending sync request expiration", pending))
}

// ---- GroupMetadataManager writes ----

// storeGroup appends the group's metadata record (GroupMetadataManager.storeGroup) and calls cb with
// the Kafka error the write ended with, mapped as Kafka maps it for group metadata.
func (c *Core) storeGroup(g *group, assignment map[string][]byte, cb func(int16)) {
	p := c.partitionFor(g.id)
	if !c.owned[p] {
		cb(kerr.NotCoordinator.Code)
		return
	}
	value, err := groupMetadataValue(g, assignment)
	if err != nil {
		c.fail("%v", err)
	}
	c.appendRecords(p, []KV{{Key: groupMetadataKey(g.id), Value: value}}, func(code int16, _ int64) {
		cb(mapStoreGroupError(code))
	})
}

func mapStoreGroupError(code int16) int16 {
	switch code {
	case errNone:
		return errNone
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.RequestTimedOut.Code:
		return kerr.RebalanceInProgress.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// maybeConvertOffsetCommitError is GroupMetadataManager.maybeConvertOffsetCommitError.
func maybeConvertOffsetCommitError(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return code
}

func (c *Core) validOffsetMetadataLength(md string) bool {
	return len(utf16.Encode([]rune(md))) <= int(c.cfg.OffsetMetadataMaxBytes)
}

// storeOffsets is GroupMetadataManager.storeOffsets: the offsets are staged as pending, appended, and
// only on a successful append become the committed offsets; cb gets every partition's error after
// the append (OFFSET_METADATA_TOO_LARGE for oversized metadata, which is never written).
func (c *Core) storeOffsets(g *group, entries []commitEntry, cb commitCallback) {
	var filtered []commitEntry
	for _, e := range entries {
		if c.validOffsetMetadataLength(e.om.metadata) {
			filtered = append(filtered, e)
		}
	}
	status := func(err int16) map[topicPartition]int16 {
		out := make(map[topicPartition]int16, len(entries))
		for _, e := range entries {
			if !c.validOffsetMetadataLength(e.om.metadata) {
				out[e.tp] = kerr.OffsetMetadataTooLarge.Code
			} else {
				out[e.tp] = err
			}
		}
		return out
	}
	if len(filtered) == 0 {
		cb(status(kerr.OffsetMetadataTooLarge.Code))
		return
	}
	p := c.partitionFor(g.id)
	if !c.owned[p] {
		cb(status(kerr.NotCoordinator.Code))
		return
	}
	recs := make([]KV, 0, len(filtered))
	for _, e := range filtered {
		recs = append(recs, KV{Key: offsetCommitKey(g.id, e.tp.topic, e.tp.partition), Value: offsetCommitValue(e.om)})
		g.pendingOffsets[e.tp] = e.om
	}
	c.appendRecords(p, recs, func(code int16, seq int64) {
		if code == errNone {
			if !g.is(Dead) {
				for _, e := range filtered {
					c.onOffsetCommitAppend(g, e.tp, commitRecord{appendedAt: seq, om: e.om})
				}
			}
		} else {
			if !g.is(Dead) {
				for _, e := range filtered {
					if staged, ok := g.pendingOffsets[e.tp]; ok && staged == e.om {
						delete(g.pendingOffsets, e.tp)
					}
				}
			}
			c.logGroup(g).Debugf("offset commit failed when appending to log: %s", errName(code))
			code = maybeConvertOffsetCommitError(code)
		}
		cb(status(code))
	})
}

// onOffsetCommitAppend is GroupMetadata.onOffsetCommitAppend.
func (c *Core) onOffsetCommitAppend(g *group, tp topicPartition, cr commitRecord) {
	if _, ok := g.pendingOffsets[tp]; ok {
		if cur, ok := g.offsets[tp]; !ok || cur.appendedAt < cr.appendedAt {
			g.offsets[tp] = cr
		}
	}
	if staged, ok := g.pendingOffsets[tp]; ok && staged == cr.om {
		delete(g.pendingOffsets, tp)
	}
}

// cleanupGroupMetadata is GroupMetadataManager.cleanupGroupMetadata: selector removes offsets; an
// Empty group without offsets becomes Dead and leaves the cache; tombstones for the removed offsets
// (and for the group, unless it never had a generation) are appended without waiting for them
// (Kafka appends with acks=0). Returns the number of offsets removed.
func (c *Core) cleanupGroupMetadata(groups []*group, selector func(*group) []topicPartition) int {
	n := 0
	for _, g := range groups {
		removed := selector(g)
		if g.is(Empty) && !g.hasOffsets() {
			c.logGroup(g).Info("group transitioned to Dead")
			c.transition(g, Dead)
		}
		dead := g.is(Dead)
		p := c.partitionFor(g.id)
		if !c.owned[p] {
			continue
		}
		var tombstones []KV
		for _, tp := range removed {
			tombstones = append(tombstones, KV{Key: offsetCommitKey(g.id, tp.topic, tp.partition)})
		}
		if dead && c.groups[g.id] == g {
			delete(c.groups, g.id)
			c.cancelGroupTimers(g)
			// a group that only stored offsets (generation 0) never had a metadata record
			if g.generation > 0 {
				tombstones = append(tombstones, KV{Key: groupMetadataKey(g.id)})
			}
		}
		if len(tombstones) > 0 {
			c.appendRecords(p, tombstones, nil)
			n += len(removed)
		}
	}
	return n
}

// cleanupExpiredOffsets is the periodic delete-expired-group-metadata task.
func (c *Core) cleanupExpiredOffsets() {
	groups := make([]*group, 0, len(c.groups))
	for _, id := range c.Groups() {
		groups = append(groups, c.groups[id])
	}
	retentionMs := int64(c.cfg.OffsetsRetentionMinutes) * 60 * 1000
	n := c.cleanupGroupMetadata(groups, func(g *group) []topicPartition { return g.removeExpiredOffsets(c.nowMs, retentionMs) })
	if n > 0 {
		c.log.Infof("removed %d expired offsets", n)
	}
}

// errName gives a Kafka error code's name.
func errName(code int16) string {
	if code == errNone {
		return "NONE"
	}
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return fmt.Sprintf("error %d", code)
}
