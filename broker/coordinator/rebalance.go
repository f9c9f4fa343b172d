package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file ports the group machinery of kafka.coordinator.group.GroupCoordinator (Kafka 3.9) that
// the request handlers (handlers.go) and the timers drive: loading and unloading, assignment
// propagation, heartbeats (DelayedHeartbeat), membership changes and rebalances (DelayedJoin,
// InitialDelayedJoin), DelayedSync.

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
			c.logGroup(g, "member", m.id).Warn("sending empty assignment with no error")
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
		c.logGroup(g, "member", memberID).Info("heartbeat expiration after the group was unloaded or deleted")
	case isPending:
		c.logGroup(g, "member", memberID).Info("pending member has been removed after session timeout expiration")
		c.removePendingMemberAndUpdateGroup(g, memberID)
	case !g.has(memberID):
		c.logGroup(g, "member", memberID).Debug("member has already been removed from the group")
	default:
		m := g.members[memberID]
		if !m.hasSatisfiedHeartbeat() {
			c.logGroup(g, "member", memberID).Info("member has failed (session timeout), removing it from the group")
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
			c.logGroup(g, "member", newMemberID).Info("static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance")
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
