package newconsumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file is the pure part of the group member: AbstractCoordinator's member state, generation and
// response handling (3.9, clients/.../consumer/internals/AbstractCoordinator.java and the commit
// handler of ConsumerCoordinator.java), and the Heartbeat timers (internals/Heartbeat.java). No I/O,
// no clock: the Consumer calls these under its lock with the time, and performs what they decide.

// memberState is AbstractCoordinator.MemberState.
type memberState int

const (
	unjoined            memberState = iota // the client is not part of a group
	preparingRebalance                     // JoinGroup sent, no response yet
	completingRebalance                    // JoinGroup answered, SyncGroup pending
	stable                                 // joined, assignment received, heartbeating
)

func (s memberState) String() string {
	return [...]string{"UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE"}[s]
}

// generation is AbstractCoordinator.Generation: what a JoinGroup response made this member.
type generation struct {
	id       int32
	memberID string
	protocol string // the selected assignor; "" when none (Java: null)
}

// noGeneration is Generation.NO_GENERATION.
var noGeneration = generation{id: -1}

// reset is hasGenerationReset: the generation was cleared (the member id may survive ILLEGAL_GENERATION).
func (g generation) reset() bool { return g.id == noGeneration.id && g.protocol == "" }

// Errors a Consumer returns besides kerr's.
var (
	// ErrCommitFailed is CommitFailedException: the commit cannot complete because the member is not
	// (or no longer) part of the active group generation; its partitions may be someone else's now.
	ErrCommitFailed = errors.New("newconsumer: commit cannot be completed since the consumer is not part of an active group (it was likely removed from the group)")
	// ErrRebalanceInProgress is RebalanceInProgressException: the commit was refused because a
	// rebalance is running; Poll completes the rebalance, then commit again.
	ErrRebalanceInProgress = errors.New("newconsumer: offset commit cannot be completed since the consumer is undergoing a rebalance; poll, then commit again")
	// ErrClosed is returned by calls on a closed Consumer.
	ErrClosed = errors.New("newconsumer: consumer is closed")
)

// retry says what the caller does after a failed group request.
type retry int

const (
	retryNow     retry = iota // rejoin at once (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED)
	retryBackoff              // retriable: wait retry.backoff.ms
	fatal                     // give the error to the application
)

// outcome is a response handler's decision.
type outcome struct {
	err               error // nil: success
	retry             retry
	coordinatorLost   bool // markCoordinatorUnknown: forget the coordinator, close its connection
	heartbeatFatal    bool // the heartbeat thread fails (FencedInstanceIdException): Poll returns err
	heartbeatReceived bool // Heartbeat.receiveHeartbeat (else failHeartbeat, when err != nil)
	discarded         bool // a successful JoinGroup/SyncGroup answer thrown away: the member's state moved on meanwhile
}

// membership is AbstractCoordinator's state. Not safe for concurrent use: the Consumer locks it.
type membership struct {
	state            memberState
	gen              generation
	rejoinNeeded     bool
	rejoinReason     string
	needsJoinPrepare bool
	static           bool // group.instance.id is set (KIP-345)
}

func newMembership(static bool) *membership {
	return &membership{state: unjoined, gen: noGeneration, rejoinNeeded: true, needsJoinPrepare: true, static: static}
}

// requestRejoin is AbstractCoordinator.requestRejoin.
func (m *membership) requestRejoin(reason string) {
	m.rejoinReason = reason
	m.rejoinNeeded = true
}

// resetStateAndRejoin is resetStateAndRejoin: UNJOINED, generation cleared (the member id kept when
// keepMemberID: after ILLEGAL_GENERATION the id may still be valid), rejoin with a new onJoinPrepare.
func (m *membership) resetStateAndRejoin(reason string, keepMemberID bool) {
	m.state = unjoined
	if keepMemberID {
		m.gen = generation{id: noGeneration.id, memberID: m.gen.memberID}
	} else {
		m.gen = noGeneration
	}
	m.requestRejoin(reason)
	m.needsJoinPrepare = true
}

// generationIfStable is generationIfStable: the generation commits carry, or false mid-rebalance.
func (m *membership) generationIfStable() (generation, bool) {
	return m.gen, m.state == stable
}

func (m *membership) rebalanceInProgress() bool {
	return m.state == preparingRebalance || m.state == completingRebalance
}

// heartbeatEnabled: the heartbeat thread runs from the JoinGroup response until the member leaves.
func (m *membership) heartbeatEnabled() bool {
	return m.state == completingRebalance || m.state == stable
}

// startJoin is initiateJoinGroup's transition, before the JoinGroup request is built.
func (m *membership) startJoin() { m.state = preparingRebalance }

func codeErr(code int16) error { return kerr.ErrorForCode(code) }

func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return true // transport errors (disconnects, timeouts) are retriable, as Java's DisconnectException
}

// joinResponse is what onJoinGroupResponse needs of a JoinGroup response.
type joinResponse struct {
	code         int16
	generation   int32
	memberID     string
	protocolType *string
	protocol     *string
}

// onJoinGroupResponse is JoinGroupResponseHandler.handle plus the failure path of joinGroupIfNeeded.
// sent is the generation the request carried. On success the state is COMPLETING_REBALANCE and the
// generation the response's: the caller sends SyncGroup (with the assignment if it is the leader).
func (m *membership) onJoinGroupResponse(sent generation, r joinResponse) outcome {
	switch r.code {
	case 0:
		if r.protocolType != nil && *r.protocolType != protocolType {
			return m.joinFailed(codeErr(kerr.InconsistentGroupProtocol.Code), fatal)
		}
		if m.state != preparingRebalance {
			// Woken or left meanwhile (UnjoinedGroupException, retriable).
			o := m.joinFailed(fmt.Errorf("newconsumer: the consumer left the group before the JoinGroup response"), retryBackoff)
			o.discarded = true
			return o
		}
		m.state = completingRebalance
		proto := ""
		if r.protocol != nil {
			proto = *r.protocol
		}
		m.gen = generation{id: r.generation, memberID: r.memberID, protocol: proto}
		return outcome{}
	case kerr.CoordinatorLoadInProgress.Code:
		return m.joinFailed(codeErr(r.code), retryBackoff)
	case kerr.UnknownMemberID.Code:
		if m.gen == sent {
			m.resetStateAndRejoin("encountered UNKNOWN_MEMBER_ID from JOIN_GROUP response", false)
		}
		return m.joinFailed(codeErr(r.code), retryNow)
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		o := m.joinFailed(codeErr(r.code), retryBackoff)
		o.coordinatorLost = true
		return o
	case kerr.MemberIDRequired.Code:
		// KIP-394: rejoin at once with the member id the coordinator chose.
		m.gen = generation{id: noGeneration.id, memberID: r.memberID}
		m.requestRejoin("need to re-join with the given member-id: " + r.memberID)
		return outcome{err: codeErr(r.code), retry: retryNow}
	case kerr.RebalanceInProgress.Code:
		return m.joinFailed(codeErr(r.code), retryNow)
	case kerr.FencedInstanceID.Code, kerr.InconsistentGroupProtocol.Code, kerr.InvalidSessionTimeout.Code,
		kerr.InvalidGroupID.Code, kerr.GroupAuthorizationFailed.Code, kerr.GroupMaxSizeReached.Code,
		kerr.UnsupportedVersion.Code:
		return m.joinFailed(codeErr(r.code), fatal)
	}
	return m.joinFailed(fmt.Errorf("newconsumer: unexpected error in join group response: %w", codeErr(r.code)), fatal)
}

// joinFailed is the failure path of joinGroupIfNeeded: rejoin, and retry as the error says. The
// state stays (after a failed SyncGroup the heartbeats go on with the JoinGroup's generation, so
// that the session does not expire while the member retries).
func (m *membership) joinFailed(err error, r retry) outcome {
	m.requestRejoin("rebalance failed due to " + err.Error())
	return outcome{err: err, retry: r}
}

// onJoinTransportError handles a JoinGroup or SyncGroup that got no response (disconnect, timeout).
func (m *membership) onJoinTransportError(err error) outcome {
	o := m.joinFailed(err, retryBackoff)
	o.coordinatorLost = true
	return o
}

// syncResponse is what onSyncGroupResponse needs of a SyncGroup response.
type syncResponse struct {
	code         int16
	protocolType *string
	protocol     *string
}

// onSyncGroupResponse is SyncGroupResponseHandler.handle plus joinGroupIfNeeded's failure path. On
// success the member is STABLE and the caller runs onJoinComplete with the assignment.
func (m *membership) onSyncGroupResponse(sent generation, r syncResponse) outcome {
	switch r.code {
	case 0:
		if r.protocolType != nil && *r.protocolType != protocolType {
			return m.joinFailed(codeErr(kerr.InconsistentGroupProtocol.Code), fatal)
		}
		if m.gen.reset() || m.state != completingRebalance {
			// The heartbeat thread reset the generation meanwhile: retry at once (as ILLEGAL_GENERATION).
			o := m.joinFailed(codeErr(kerr.IllegalGeneration.Code), retryNow)
			o.discarded = true
			return o
		}
		if r.protocol != nil && *r.protocol != m.gen.protocol {
			return m.joinFailed(codeErr(kerr.InconsistentGroupProtocol.Code), fatal)
		}
		m.state = stable
		m.rejoinReason = ""
		m.rejoinNeeded = false
		return outcome{}
	case kerr.RebalanceInProgress.Code:
		return m.joinFailed(codeErr(r.code), retryNow)
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		if m.gen == sent {
			m.resetStateAndRejoin(fmt.Sprintf("encountered %s from SYNC_GROUP response", errName(r.code)),
				r.code == kerr.IllegalGeneration.Code)
		}
		return m.joinFailed(codeErr(r.code), retryNow)
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		o := m.joinFailed(codeErr(r.code), retryBackoff)
		o.coordinatorLost = true
		return o
	case kerr.FencedInstanceID.Code, kerr.GroupAuthorizationFailed.Code:
		return m.joinFailed(codeErr(r.code), fatal)
	}
	return m.joinFailed(fmt.Errorf("newconsumer: unexpected error from SyncGroup: %w", codeErr(r.code)), fatal)
}

// onHeartbeatResponse is HeartbeatResponseHandler.handle and the heartbeat thread's listener.
// A transport error is passed as code -1 with err set.
func (m *membership) onHeartbeatResponse(sent generation, code int16, transport error) outcome {
	if transport != nil {
		return outcome{err: transport, coordinatorLost: true}
	}
	switch code {
	case 0:
		return outcome{heartbeatReceived: true}
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return outcome{err: codeErr(code), coordinatorLost: true}
	case kerr.RebalanceInProgress.Code:
		// Heartbeats go on during a rebalance, so that the session does not expire meanwhile.
		if m.state == stable {
			m.requestRejoin("group is already rebalancing")
			return outcome{err: codeErr(code), heartbeatReceived: true}
		}
		return outcome{heartbeatReceived: true}
	case kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		if m.gen != sent {
			return outcome{heartbeatReceived: true} // a stale generation's heartbeat: ignored
		}
		m.resetStateAndRejoin(fmt.Sprintf("encountered %s from HEARTBEAT response", errName(code)),
			code == kerr.IllegalGeneration.Code)
		return outcome{err: codeErr(code), heartbeatFatal: code == kerr.FencedInstanceID.Code}
	case kerr.GroupAuthorizationFailed.Code:
		return outcome{err: codeErr(code), heartbeatFatal: true}
	}
	return outcome{err: fmt.Errorf("newconsumer: unexpected error in heartbeat response: %w", codeErr(code))}
}

// onCommitError is OffsetCommitResponseHandler for a partition error code (code != 0). sent is the
// generation the commit carried; an UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION of a generation the
// member has left since is stale and changes nothing. The returned outcome's err is what CommitSync reports; retryBackoff
// means CommitSync tries again after retry.backoff.ms (while its deadline allows).
func (m *membership) onCommitError(sent generation, code int16) outcome {
	switch code {
	case kerr.GroupAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code,
		kerr.OffsetMetadataTooLarge.Code, kerr.InvalidCommitOffsetSize.Code:
		return outcome{err: codeErr(code), retry: fatal}
	case kerr.CoordinatorLoadInProgress.Code, kerr.UnknownTopicOrPartition.Code:
		return outcome{err: codeErr(code), retry: retryBackoff}
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
		return outcome{err: codeErr(code), retry: retryBackoff, coordinatorLost: true}
	case kerr.FencedInstanceID.Code:
		if m.gen == sent {
			return outcome{err: codeErr(code), retry: fatal}
		}
		if m.state == preparingRebalance {
			return outcome{err: ErrRebalanceInProgress, retry: fatal}
		}
		return outcome{err: ErrCommitFailed, retry: fatal}
	case kerr.RebalanceInProgress.Code:
		m.requestRejoin("offset commit failed since group is already rebalancing")
		return outcome{err: ErrRebalanceInProgress, retry: fatal}
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		if m.gen != sent {
			// The member's generation changed after the commit was sent: the error is of the old
			// one and must not reset the new one. Java resets unless PREPARING_REBALANCE, since its
			// commits are sent by the thread that joins and so never cross a JoinGroup on the wire;
			// this consumer's asynchronous auto-commit can, and its error arrives after the
			// JoinGroup/SyncGroup answers that moved the member on.
			if m.rebalanceInProgress() {
				return outcome{err: fmt.Errorf("%w (%s for generation %d)", ErrRebalanceInProgress, errName(code), sent.id), retry: fatal}
			}
			return outcome{err: fmt.Errorf("%w (%s for generation %d)", ErrCommitFailed, errName(code), sent.id), retry: fatal}
		}
		m.resetStateAndRejoin(fmt.Sprintf("encountered %s from OFFSET_COMMIT response", errName(code)),
			code == kerr.IllegalGeneration.Code)
		return outcome{err: fmt.Errorf("%w (%s)", ErrCommitFailed, errName(code)), retry: fatal}
	}
	return outcome{err: fmt.Errorf("newconsumer: unexpected error in commit: %w", codeErr(code)), retry: fatal}
}

// leaveGroup is maybeLeaveGroup's decision: whether to send LeaveGroup (a dynamic member that is in
// the group and knows its coordinator; static members never do, KIP-345), and the reset that follows
// either way. It returns the member id to leave with.
func (m *membership) leaveGroup(coordinatorKnown bool, reason string) (send bool, memberID string) {
	send = !m.static && coordinatorKnown && m.state != unjoined && m.gen.memberID != ""
	memberID = m.gen.memberID
	m.resetStateAndRejoin("consumer pro-actively leaving the group: "+reason, false)
	return send, memberID
}

// backoff is ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms) without jitter.
func backoff(initial, max time.Duration, attempts int) time.Duration {
	d := initial
	for i := 0; i < attempts && d < max; i++ {
		d *= 2
	}
	if d > max && max > 0 {
		d = max
	}
	return d
}

// heartbeatTimers is internals.Heartbeat: when to heartbeat, and whether the session (no
// successful heartbeat) or the poll interval (no Poll) ran out. Times are passed in.
type heartbeatTimers struct {
	interval, session, maxPoll time.Duration
	backoffMin, backoffMax     time.Duration

	nextHeartbeat time.Time // heartbeatTimer's deadline
	sessionEnd    time.Time // sessionTimer's deadline
	pollEnd       time.Time // pollTimer's deadline
	attempts      int       // failed heartbeats in a row
}

func newHeartbeatTimers(cfg *Config, now time.Time) *heartbeatTimers {
	h := &heartbeatTimers{interval: cfg.HeartbeatInterval, session: cfg.SessionTimeout, maxPoll: cfg.MaxPollInterval,
		backoffMin: cfg.RetryBackoff, backoffMax: cfg.RetryBackoffMax}
	h.resetTimeouts(now)
	return h
}

// poll records a Poll (Heartbeat.poll).
func (h *heartbeatTimers) poll(now time.Time) { h.pollEnd = now.Add(h.maxPoll) }

// sent records a heartbeat sent (sentHeartbeat).
func (h *heartbeatTimers) sent(now time.Time) { h.nextHeartbeat = now.Add(h.interval) }

// failed records a failed heartbeat: retry after an exponential backoff (failHeartbeat).
func (h *heartbeatTimers) failed(now time.Time) {
	h.nextHeartbeat = now.Add(backoff(h.backoffMin, h.backoffMax, h.attempts))
	h.attempts++
}

// received records a successful heartbeat: the session starts over (receiveHeartbeat).
func (h *heartbeatTimers) received(now time.Time) {
	h.attempts = 0
	h.sessionEnd = now.Add(h.session)
}

// resetTimeouts is resetTimeouts, when the heartbeat thread is enabled after a JoinGroup response.
func (h *heartbeatTimers) resetTimeouts(now time.Time) {
	h.sessionEnd = now.Add(h.session)
	h.pollEnd = now.Add(h.maxPoll)
	h.nextHeartbeat = now.Add(h.interval)
}

// resetSession is resetSessionTimeout, when a coordinator is found.
func (h *heartbeatTimers) resetSession(now time.Time) { h.sessionEnd = now.Add(h.session) }

func (h *heartbeatTimers) shouldHeartbeat(now time.Time) bool { return !now.Before(h.nextHeartbeat) }
func (h *heartbeatTimers) sessionExpired(now time.Time) bool  { return !now.Before(h.sessionEnd) }
func (h *heartbeatTimers) pollExpired(now time.Time) bool     { return !now.Before(h.pollEnd) }

// next is the earliest moment one of the timers fires.
func (h *heartbeatTimers) next() time.Time {
	t := h.nextHeartbeat
	for _, u := range []time.Time{h.sessionEnd, h.pollEnd} {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

// errName is a Kafka error code's name (REBALANCE_IN_PROGRESS, ...).
func errName(code int16) string {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return fmt.Sprintf("UNKNOWN_SERVER_ERROR(%d)", code)
}
