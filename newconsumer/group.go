package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the group protocol on the wire: coordinator discovery and the group requests
// (AbstractCoordinator and ConsumerCoordinator's send*/handlers). Decisions are membership's.

// recordGroup writes group_request{api, error} for one request: error is the response's error
// name, or the transport error, or "" on success.
func (c *Consumer) recordGroup(key kmsg.Key, code int16, err error) {
	r := timeline.Record{Kind: timeline.GroupRequest, API: key.Name()}
	switch {
	case err != nil:
		r.Err = err.Error()
	case code != 0:
		r.Err = errName(code)
	}
	c.emit(r)
}

// errFatal marks errors Poll must give to the application rather than retry.
type errFatal struct{ error }

func (e errFatal) Unwrap() error { return e.error }

func isFatal(err error) bool {
	var f errFatal
	return errors.As(err, &f)
}

// coordLookup is one coordinator lookup: FindCoordinator on a broker connection, then dialling the
// coordinator with the coordinator dialer. At most one runs at a time, on a goroutine of its own
// (AbstractCoordinator.lookupCoordinator and its findCoordinatorFuture), so that nothing but the
// callers that need the coordinator waits for it: Poll does not, and goes on fetching.
type coordLookup struct {
	done    chan struct{} // closed when the lookup ends
	err     error         // why it failed (errFatal: give up); nil: it set the coordinator
	retryAt time.Time     // after a failure, no new lookup before retry.backoff.ms
}

// lookupCoordinatorLocked returns the lookup in progress, or the last failed one while its backoff
// runs, or else starts a new one. Caller holds c.mu and has checked that the coordinator is unknown
// and the consumer not closed.
func (c *Consumer) lookupCoordinatorLocked() *coordLookup {
	if l := c.lookup; l != nil {
		select {
		case <-l.done:
			if l.err != nil && time.Now().Before(l.retryAt) {
				return l
			}
		default:
			return l
		}
	}
	l := &coordLookup{done: make(chan struct{})}
	c.lookup = l
	c.wg.Add(1) // under mu, with closed checked: shutdown's wg.Wait cannot have started
	go c.runLookup(l)
	return l
}

// runLookup finds and dials the coordinator, then wakes the heartbeat goroutine and Poll.
func (c *Consumer) runLookup(l *coordLookup) {
	defer c.wg.Done()
	node, addr, err := c.findCoordinator(c.ctx)
	var conn *brokerConn
	if err == nil {
		conn, err = dialBroker(c.ctx, c.cfg.CoordinatorDialer, addr, c.clientID, c.cfg.RequestTimeout)
		if err != nil {
			err = fmt.Errorf("newconsumer: connect to coordinator %d at %s: %w", node, addr, err)
		}
	}
	c.mu.Lock()
	switch {
	case err == nil && c.closed:
		err = ErrClosed
	case err == nil:
		c.coord, conn = conn, nil
		c.hb.resetSession(time.Now())
		c.log.WithField("coordinator", addr).Info("discovered group coordinator")
	default:
		l.retryAt = time.Now().Add(c.cfg.RetryBackoff)
	}
	l.err = err
	close(l.done)
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
	c.signal()
}

// ensureCoordinator returns the coordinator connection, waiting (until ctx ends) for a lookup when
// the coordinator is unknown (AbstractCoordinator.ensureCoordinatorReady). For the heartbeat
// goroutine, the join round and commits; Poll uses coordinatorReady. Errors are retriable unless
// errFatal.
func (c *Consumer) ensureCoordinator(ctx context.Context) (*brokerConn, error) {
	for {
		c.mu.Lock()
		if c.coord != nil {
			conn := c.coord
			c.mu.Unlock()
			return conn, nil
		}
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		l := c.lookupCoordinatorLocked()
		c.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err != nil {
			return nil, l.err
		}
	}
}

// coordinatorReady returns the coordinator connection if the coordinator is known; else it starts a
// lookup (unless one runs or the last one's backoff does) and returns nil with the last lookup's
// error, without waiting: an unreachable coordinator does not stop Poll from fetching, as Kafka's
// poll bounds ensureCoordinatorReady by its own timer and then fetches.
func (c *Consumer) coordinatorReady() (*brokerConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.coord != nil {
		return c.coord, nil
	}
	if c.closed {
		return nil, ErrClosed
	}
	l := c.lookupCoordinatorLocked()
	select {
	case <-l.done:
		return nil, l.err
	default:
		return nil, nil
	}
}

// markCoordinatorUnknown forgets the coordinator if it is still conn (nil: whichever it is) and
// closes the connection, interrupting requests on it (markCoordinatorUnknown). Caller holds c.mu.
func (c *Consumer) markCoordinatorUnknownLocked(conn *brokerConn, cause string) {
	if c.coord == nil || (conn != nil && c.coord != conn) {
		return
	}
	c.log.WithField("cause", cause).Info("group coordinator is unavailable or invalid; will rediscover")
	_ = c.coord.Close()
	c.coord = nil
}

func (c *Consumer) markCoordinatorUnknown(conn *brokerConn, cause string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markCoordinatorUnknownLocked(conn, cause)
}

// findCoordinator asks the brokers in turn which one coordinates the group.
func (c *Consumer) findCoordinator(ctx context.Context) (int32, string, error) {
	var last error
	for _, addr := range c.brokerAddrs() {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = c.cfg.GroupID // v0-v3
		req.CoordinatorKeys = []string{c.cfg.GroupID}
		req.CoordinatorType = 0 // GROUP
		r, err := c.brokerRequest(ctx, addr, req, c.cfg.RequestTimeout)
		if err != nil {
			c.recordGroup(kmsg.FindCoordinator, 0, err)
			last = err
			continue
		}
		resp := r.(*kmsg.FindCoordinatorResponse)
		code, node, host, port := resp.ErrorCode, resp.NodeID, resp.Host, resp.Port
		if resp.Version >= 4 {
			if len(resp.Coordinators) != 1 {
				last = fmt.Errorf("newconsumer: FindCoordinator from %s: %d coordinators in the answer, want 1", addr, len(resp.Coordinators))
				c.recordGroup(kmsg.FindCoordinator, 0, last)
				continue
			}
			k := resp.Coordinators[0]
			code, node, host, port = k.ErrorCode, k.NodeID, k.Host, k.Port
		}
		c.recordGroup(kmsg.FindCoordinator, code, nil)
		if code != 0 {
			err := kerr.ErrorForCode(code)
			if code == kerr.GroupAuthorizationFailed.Code {
				return 0, "", errFatal{err}
			}
			last = fmt.Errorf("newconsumer: FindCoordinator(%s): %w", c.cfg.GroupID, err)
			continue
		}
		return node, net.JoinHostPort(host, strconv.Itoa(int(port))), nil
	}
	if last == nil {
		last = errors.New("newconsumer: no broker to ask for the coordinator")
	}
	return 0, "", last
}

// joinResult is a completed JoinGroup(+SyncGroup) round, handed from the join goroutine to Poll.
type joinResult struct {
	outcome    outcome
	assignment []byte // the member's assignment (SyncGroup response), on success
	gen        generation
	leader     bool
	snapshot   map[string]int32 // the leader's partition counts
}

// buildJoinLocked builds the JoinGroup request (AbstractCoordinator.sendJoinGroupRequest with
// ConsumerCoordinator.metadata: one protocol per assignor, each with a v3 subscription carrying the
// owned partitions and generation). Caller holds c.mu.
func (c *Consumer) buildJoinLocked() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = c.cfg.GroupID
	req.SessionTimeoutMillis = int32(c.cfg.SessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(c.cfg.MaxPollInterval.Milliseconds())
	req.MemberID = c.m.gen.memberID
	if c.m.static {
		req.InstanceID = kmsg.StringPtr(c.cfg.GroupInstanceID)
	}
	req.ProtocolType = protocolType
	if c.m.rejoinReason != "" {
		reason := c.m.rejoinReason
		if len(reason) > 255 { // JoinGroupRequest.maybeTruncateReason
			reason = reason[:255]
		}
		req.Reason = kmsg.StringPtr(reason)
	}
	topics := make([]string, 0, len(c.topics))
	for t := range c.topics {
		topics = append(topics, t)
	}
	owned := c.ownedLocked()
	for _, a := range c.assignors {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{
			Name: a.Name(),
			Metadata: assignor.EncodeSubscription(assignor.Subscription{
				Topics:          topics,
				UserData:        a.UserData(c.prev),
				OwnedPartitions: owned,
				Generation:      c.m.gen.id,
				Rack:            c.cfg.ClientRack,
			}),
		})
	}
	return req
}

// runJoin performs one JoinGroup and SyncGroup round, as the leader computing the assignment when
// elected (AbstractCoordinator.sendJoinGroupRequest, onLeaderElected/onJoinFollower). It runs on
// the join goroutine; the state changes happen under c.mu as each response arrives.
func (c *Consumer) runJoin(ctx context.Context, req *kmsg.JoinGroupRequest, sent generation) joinResult {
	conn, err := c.ensureCoordinator(ctx)
	if err != nil {
		c.mu.Lock()
		o := c.m.joinFailed(err, retryBackoff)
		c.mu.Unlock()
		if isFatal(err) {
			o.retry = fatal
		}
		return joinResult{outcome: o}
	}
	// The JoinGroup may wait for the whole rebalance: rebalance timeout plus 5 s (JOIN_GROUP_TIMEOUT_LAPSE).
	timeout := c.cfg.MaxPollInterval + 5*time.Second
	if timeout < c.cfg.RequestTimeout {
		timeout = c.cfg.RequestTimeout
	}
	var (
		o    outcome
		resp *kmsg.JoinGroupResponse
		gen  generation
	)
	c.coordRequest(ctx, conn, req, timeout, sent, func(r kmsg.Response, err error) {
		if err != nil {
			c.recordGroup(kmsg.JoinGroup, 0, err)
			c.mu.Lock()
			o = c.m.onJoinTransportError(err)
			c.markCoordinatorUnknownLocked(conn, "JoinGroup failed: "+err.Error())
			c.mu.Unlock()
			return
		}
		resp = r.(*kmsg.JoinGroupResponse)
		c.recordGroup(kmsg.JoinGroup, resp.ErrorCode, nil)
		c.mu.Lock()
		defer c.mu.Unlock()
		o = c.m.onJoinGroupResponse(sent, joinResponse{code: resp.ErrorCode, generation: resp.Generation, memberID: resp.MemberID,
			protocolType: resp.ProtocolType, protocol: resp.Protocol})
		if o.coordinatorLost {
			c.markCoordinatorUnknownLocked(conn, "JoinGroup: "+o.err.Error())
		}
		if o.discarded {
			c.discardedLocked(kmsg.JoinGroup, resp.Generation, o.err)
		}
		gen = c.m.gen
		if o.err == nil {
			c.hb.resetTimeouts(time.Now()) // the heartbeat thread is enabled from here
			c.logLocked().Info("joined the group")
		}
	})
	if o.err != nil {
		return joinResult{outcome: o}
	}
	c.signal()

	res := joinResult{gen: gen, leader: resp.LeaderID == resp.MemberID}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = c.cfg.GroupID
	sync.Generation = gen.id
	sync.MemberID = gen.memberID
	if c.m.static {
		sync.InstanceID = kmsg.StringPtr(c.cfg.GroupInstanceID)
	}
	sync.ProtocolType = kmsg.StringPtr(protocolType)
	sync.Protocol = kmsg.StringPtr(gen.protocol)
	if res.leader && !resp.SkipAssignment {
		assignments, snapshot, err := c.assignAsLeader(ctx, gen.protocol, resp.Members)
		if err != nil {
			c.mu.Lock()
			o := c.m.joinFailed(err, retryBackoff)
			if isFatal(err) {
				o.retry = fatal
			}
			c.mu.Unlock()
			return joinResult{outcome: o}
		}
		sync.GroupAssignment = assignments
		res.snapshot = snapshot
	}
	c.coordRequest(ctx, conn, sync, c.cfg.RequestTimeout, gen, func(r kmsg.Response, err error) {
		if err != nil {
			c.recordGroup(kmsg.SyncGroup, 0, err)
			c.mu.Lock()
			res.outcome = c.m.onJoinTransportError(err)
			c.markCoordinatorUnknownLocked(conn, "SyncGroup failed: "+err.Error())
			c.mu.Unlock()
			return
		}
		sresp := r.(*kmsg.SyncGroupResponse)
		c.recordGroup(kmsg.SyncGroup, sresp.ErrorCode, nil)
		c.mu.Lock()
		defer c.mu.Unlock()
		res.outcome = c.m.onSyncGroupResponse(gen, syncResponse{code: sresp.ErrorCode, protocolType: sresp.ProtocolType, protocol: sresp.Protocol})
		if res.outcome.coordinatorLost {
			c.markCoordinatorUnknownLocked(conn, "SyncGroup: "+res.outcome.err.Error())
		}
		if res.outcome.discarded {
			c.discardedLocked(kmsg.SyncGroup, gen.id, res.outcome.err)
		}
		res.assignment = sresp.MemberAssignment
	})
	if res.outcome.err != nil {
		res.assignment = nil
	}
	return res
}

// discardedLocked counts a successful JoinGroup/SyncGroup answer of generation gen that the member
// threw away because its state had moved on meanwhile (reset by another answer, or left), and writes
// an error record saying so: a round the group completed and this member lost. Caller holds c.mu.
func (c *Consumer) discardedLocked(key kmsg.Key, gen int32, why error) {
	c.discarded++
	text := fmt.Sprintf("discarded the %s result of generation %d: %v", key.Name(), gen, why)
	c.logLocked().Warn(text)
	c.emit(timeline.Record{Kind: timeline.Error, Text: text})
}

// assignAsLeader computes the group's assignment (ConsumerCoordinator.onLeaderElected): the
// partition counts of every member's topics from fresh metadata, the selected assignor, one
// encoded assignment per member.
func (c *Consumer) assignAsLeader(ctx context.Context, protocol string, members []kmsg.JoinGroupResponseMember) ([]kmsg.SyncGroupRequestGroupAssignment, map[string]int32, error) {
	var a assignor.Assignor
	for _, x := range c.assignors {
		if x.Name() == protocol {
			a = x
		}
	}
	if a == nil {
		return nil, nil, errFatal{fmt.Errorf("newconsumer: coordinator selected invalid assignment protocol %q", protocol)}
	}
	topics := subscribedTopics(members)
	meta, err := c.refreshMetadata(ctx, topics)
	if err != nil {
		return nil, nil, fmt.Errorf("newconsumer: leader metadata for %v: %w", topics, err)
	}
	counts := meta.partitionCounts(topics)
	assignments, plan, bad := leaderAssignment(a, members, counts)
	for _, err := range bad {
		c.log.WithError(err).Error("leader: member subscription cannot be decoded; it gets no partitions")
		c.emit(timeline.Record{Kind: timeline.Error, Text: err.Error()})
	}
	c.log.WithField("assignor", a.Name()).Infof("finished assignment for %d members: %v", len(members), plan)
	return assignments, counts, nil
}

// coordRequest sends one group request on the coordinator connection conn, bounded by timeout,
// and applies its answer (or transport error) with apply in wire order (brokerConn.ordered): every
// answer that arrived before it on conn has been applied first, so an answer is judged against the
// member's state as of its own arrival, as AbstractCoordinator's response handlers are. sent is the
// generation (and member id) the request carries; apply compares it with the member's current one
// to recognise a stale answer. The steps go to Config.coordHook.
func (c *Consumer) coordRequest(ctx context.Context, conn *brokerConn, req kmsg.Request, timeout time.Duration, sent generation, apply func(kmsg.Response, error)) {
	key := kmsg.Key(req.Key())
	c.hook(stepSend, key, sent)
	conn.ordered(ctx, req, timeout, func(r kmsg.Response, err error) {
		c.hook(stepAnswered, key, sent)
		apply(r, err)
		c.hook(stepApplied, key, sent)
	}, func() { c.hook(stepQueued, key, sent) })
}

// heartbeat sends one Heartbeat with gen and applies its answer (HeartbeatResponseHandler plus the
// heartbeat thread's bookkeeping); timeout bounds it (the session's end). It reports whether the
// member must look at its state again (a failed heartbeat: Poll may have to rejoin).
func (c *Consumer) heartbeat(ctx context.Context, conn *brokerConn, gen generation, timeout time.Duration) (failed bool) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = c.cfg.GroupID
	req.Generation = gen.id
	req.MemberID = gen.memberID
	if c.m.static {
		req.InstanceID = kmsg.StringPtr(c.cfg.GroupInstanceID)
	}
	c.coordRequest(ctx, conn, req, timeout, gen, func(r kmsg.Response, err error) {
		var code int16
		if err == nil {
			code = r.(*kmsg.HeartbeatResponse).ErrorCode
		}
		c.recordGroup(kmsg.Heartbeat, code, err)
		if ctx.Err() != nil {
			return // the consumer is stopping
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		o := c.m.onHeartbeatResponse(gen, code, err)
		switch {
		case o.heartbeatReceived:
			c.hb.received(time.Now())
		case o.err != nil:
			c.hb.failed(time.Now())
		}
		if o.coordinatorLost {
			c.markCoordinatorUnknownLocked(conn, "heartbeat: "+o.err.Error())
		}
		if o.heartbeatFatal && c.fatal == nil {
			c.fatal = o.err
		}
		if o.err != nil {
			c.logLocked().WithError(o.err).Info("heartbeat failed")
			failed = true
		}
	})
	return failed
}

// sendLeave sends LeaveGroup for memberID (a minimal effort, not retried: maybeLeaveGroup).
func (c *Consumer) sendLeave(ctx context.Context, memberID, reason string) {
	conn, err := c.ensureCoordinator(ctx)
	if err != nil {
		c.log.WithError(err).Warn("LeaveGroup not sent: no coordinator")
		return
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = c.cfg.GroupID
	req.MemberID = memberID // v0-v2
	if len(reason) > 255 {
		reason = reason[:255]
	}
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID, Reason: kmsg.StringPtr(reason)}}
	left := generation{id: noGeneration.id, memberID: memberID}
	c.coordRequest(ctx, conn, req, c.cfg.RequestTimeout, left, func(r kmsg.Response, err error) {
		if err != nil {
			c.recordGroup(kmsg.LeaveGroup, 0, err)
			c.markCoordinatorUnknown(conn, "LeaveGroup failed: "+err.Error())
			return
		}
		resp := r.(*kmsg.LeaveGroupResponse)
		code := resp.ErrorCode
		if code == 0 && len(resp.Members) == 1 {
			code = resp.Members[0].ErrorCode
		}
		c.recordGroup(kmsg.LeaveGroup, code, nil)
		if code != 0 {
			// Nothing to undo: the member reset its state before it sent the request.
			c.log.WithField("reason", reason).Warnf("LeaveGroup of %s: %s", memberID, errName(code))
			return
		}
		c.log.WithField("reason", reason).Info("left the group")
	})
}

// commitOnce sends one OffsetCommit of offsets (next offsets to consume) with the stable
// generation (ConsumerCoordinator.sendOffsetCommitRequest and its response handler), each with its
// leader epoch from epochs (-1 when absent: OffsetAndMetadata.leaderEpoch). Retriable errors come
// back wrapped in errRetriable.
func (c *Consumer) commitOnce(ctx context.Context, offsets map[TopicPartition]int64, epochs map[TopicPartition]int32) error {
	if len(offsets) == 0 {
		return nil
	}
	c.mu.Lock()
	gen, ok := c.m.generationIfStable()
	inRebalance := c.m.rebalanceInProgress()
	c.mu.Unlock()
	if !ok {
		if inRebalance {
			return ErrRebalanceInProgress
		}
		return ErrCommitFailed
	}
	conn, err := c.ensureCoordinator(ctx)
	if err != nil {
		if isFatal(err) {
			return err
		}
		return errRetriable{err}
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = c.cfg.GroupID
	req.Generation = gen.id
	req.MemberID = gen.memberID
	if c.m.static {
		req.InstanceID = kmsg.StringPtr(c.cfg.GroupInstanceID)
	}
	byTopic := map[string]int{}
	sorted := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		sorted = append(sorted, tp)
	}
	assignor.SortPartitions(sorted)
	for _, tp := range sorted {
		if offsets[tp] < 0 {
			return fmt.Errorf("newconsumer: invalid offset %d for %s", offsets[tp], tp)
		}
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			req.Topics = append(req.Topics, kmsg.OffsetCommitRequestTopic{Topic: tp.Topic})
		}
		epoch, ok := epochs[tp]
		if !ok {
			epoch = -1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, kmsg.OffsetCommitRequestTopicPartition{
			Partition: tp.Partition, Offset: offsets[tp], LeaderEpoch: epoch,
		})
	}
	var result error
	sent := c.tl.NowMs() // the commit records' sent_ms: the coordinator applies it when it arrives
	c.coordRequest(ctx, conn, req, c.cfg.RequestTimeout, gen, func(r kmsg.Response, err error) {
		if err != nil {
			c.recordGroup(kmsg.OffsetCommit, 0, err)
			c.emit(timeline.Record{Kind: timeline.Error, Text: "OffsetCommit got no response: " + err.Error()})
			c.markCoordinatorUnknown(conn, "OffsetCommit failed: "+err.Error())
			result = errRetriable{err}
			return
		}
		resp := r.(*kmsg.OffsetCommitResponse)
		var firstCode int16
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				rec := timeline.Record{Kind: timeline.Commit, Topic: t.Topic, Partition: timeline.I32(p.Partition),
					Offset: timeline.I64(offsets[TopicPartition{Topic: t.Topic, Partition: p.Partition}]), Generation: timeline.I32(gen.id),
					Result: timeline.CommitApplied, MemberID: gen.memberID, SentMs: sent, API: "OffsetCommit"}
				if p.ErrorCode != 0 {
					rec.Result, rec.Err = timeline.CommitRejected, errName(p.ErrorCode)
					if firstCode == 0 {
						firstCode = p.ErrorCode
					}
				}
				c.emit(rec)
			}
		}
		c.recordGroup(kmsg.OffsetCommit, firstCode, nil)
		if firstCode == 0 {
			return
		}
		c.mu.Lock()
		o := c.m.onCommitError(gen, firstCode)
		if o.coordinatorLost {
			c.markCoordinatorUnknownLocked(conn, "OffsetCommit: "+o.err.Error())
		}
		c.mu.Unlock()
		result = o.err
		if o.retry == retryBackoff {
			result = errRetriable{o.err}
		}
	})
	return result
}

// errRetriable wraps an error CommitSync and the offset fetch retry after a backoff.
type errRetriable struct{ error }

func (e errRetriable) Unwrap() error { return e.error }

func isRetriable(err error) bool {
	var r errRetriable
	return errors.As(err, &r)
}

// committedOffset is a committed offset and its leader epoch (-1: none; OffsetFetch v5+).
type committedOffset struct {
	offset      int64
	leaderEpoch int32
}

// fetchCommitted returns the committed offsets of parts (OffsetFetch with require_stable; absent:
// no committed offset), as ConsumerCoordinator.fetchCommittedOffsets. Retriable errors are errRetriable,
// among them an unknown coordinator: it does not wait for the lookup (Poll calls it).
func (c *Consumer) fetchCommitted(ctx context.Context, parts []TopicPartition) (map[TopicPartition]committedOffset, error) {
	conn, err := c.coordinatorReady() // from Poll: not waited for
	switch {
	case err != nil && isFatal(err):
		return nil, err
	case err != nil:
		return nil, errRetriable{err}
	case conn == nil:
		return nil, errRetriable{errors.New("newconsumer: group coordinator unknown (lookup in progress)")}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = c.cfg.GroupID
	req.RequireStable = true
	byTopic := map[string]int{}
	for _, tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: tp.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
	}
	g := kmsg.OffsetFetchRequestGroup{Group: c.cfg.GroupID}
	for _, t := range req.Topics {
		g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g} // v8+
	var r kmsg.Response
	c.coordRequest(ctx, conn, req, c.cfg.RequestTimeout, noGeneration, func(resp kmsg.Response, e error) {
		r, err = resp, e
		if err != nil {
			c.recordGroup(kmsg.OffsetFetch, 0, err)
			c.markCoordinatorUnknown(conn, "OffsetFetch failed: "+err.Error())
		}
	})
	if err != nil {
		return nil, errRetriable{err}
	}
	resp := r.(*kmsg.OffsetFetchResponse)
	code := resp.ErrorCode
	type part struct {
		topic     string
		partition int32
		offset    int64
		epoch     int32
		code      int16
	}
	var got []part
	if resp.Version >= 8 {
		if len(resp.Groups) != 1 {
			c.recordGroup(kmsg.OffsetFetch, 0, fmt.Errorf("%d groups in the answer", len(resp.Groups)))
			return nil, errRetriable{fmt.Errorf("newconsumer: OffsetFetch answered %d groups, want 1", len(resp.Groups))}
		}
		code = resp.Groups[0].ErrorCode
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				got = append(got, part{t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode})
			}
		}
	} else {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				epoch := p.LeaderEpoch
				if resp.Version < 5 {
					epoch = -1
				}
				got = append(got, part{t.Topic, p.Partition, p.Offset, epoch, p.ErrorCode})
			}
		}
	}
	c.recordGroup(kmsg.OffsetFetch, code, nil)
	switch {
	case code == kerr.CoordinatorNotAvailable.Code || code == kerr.NotCoordinator.Code:
		c.markCoordinatorUnknown(conn, "OffsetFetch: "+errName(code))
		return nil, errRetriable{kerr.ErrorForCode(code)}
	case code == kerr.GroupAuthorizationFailed.Code:
		return nil, errFatal{kerr.ErrorForCode(code)}
	case code != 0 && retriable(kerr.ErrorForCode(code)):
		return nil, errRetriable{kerr.ErrorForCode(code)}
	case code != 0:
		return nil, errFatal{fmt.Errorf("newconsumer: unexpected error in fetch offset response: %w", kerr.ErrorForCode(code))}
	}
	out := map[TopicPartition]committedOffset{}
	for _, p := range got {
		switch {
		case p.code == kerr.UnstableOffsetCommit.Code:
			return nil, errRetriable{kerr.ErrorForCode(p.code)}
		case p.code != 0:
			return nil, errRetriable{fmt.Errorf("newconsumer: committed offset of %s-%d: %w", p.topic, p.partition, kerr.ErrorForCode(p.code))}
		case p.offset >= 0:
			out[TopicPartition{Topic: p.topic, Partition: p.partition}] = committedOffset{p.offset, p.epoch}
		}
	}
	return out, nil
}
