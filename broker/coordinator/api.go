package coordinator

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the request side of the coordinator: what KafkaApis and GroupCoordinatorAdapter do
// with each group API before and after GroupCoordinator (per-version field defaults, batch shapes,
// response shapes per version).

// APIVersion is one API key with the versions Kafka 3.9 accepts for it.
type APIVersion struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
}

// APIVersions lists the APIs the coordinator answers, with Kafka 3.9's version ranges, for the
// broker's ApiVersions response.
func APIVersions() []APIVersion {
	return []APIVersion{
		{kmsg.OffsetCommit.Int16(), 0, 9},
		{kmsg.OffsetFetch.Int16(), 0, 9},
		{kmsg.FindCoordinator.Int16(), 0, 6},
		{kmsg.JoinGroup.Int16(), 0, 9},
		{kmsg.Heartbeat.Int16(), 0, 4},
		{kmsg.LeaveGroup.Int16(), 0, 5},
		{kmsg.SyncGroup.Int16(), 0, 5},
		{kmsg.DescribeGroups.Int16(), 0, 5},
		{kmsg.ListGroups.Int16(), 0, 5},
		{kmsg.DeleteGroups.Int16(), 0, 2},
		{kmsg.OffsetDelete.Int16(), 0, 0},
	}
}

func maxVersion(key int16) (int16, bool) {
	for _, a := range APIVersions() {
		if a.Key == key {
			return a.MaxVersion, true
		}
	}
	return 0, false
}

// IsGroupAPI reports whether key is one of the group APIs the coordinator answers (APIVersions): the
// one list of them, by which the broker routes a request to its GroupHandler (as KafkaApis hands
// them to GroupCoordinator).
func IsGroupAPI(key int16) bool {
	_, ok := maxVersion(key)
	return ok
}

func (c *Core) handleRequest(ev RequestEvent) {
	req := ev.Request
	if req == nil || reflect.ValueOf(req).IsNil() {
		c.emit(Respond{ID: ev.ID, Err: fmt.Errorf("%w: nil request", ErrNotGroupAPI)})
		return
	}
	max, ok := maxVersion(req.Key())
	if !ok {
		c.emit(Respond{ID: ev.ID, Err: fmt.Errorf("%w: api key %d", ErrNotGroupAPI, req.Key())})
		return
	}
	if v := req.GetVersion(); v < 0 || v > max {
		c.emit(Respond{ID: ev.ID, Err: fmt.Errorf("%w: %s v%d (Kafka 3.9 has v0-v%d)", ErrUnsupportedVersion,
			kmsg.NameForKey(req.Key()), v, max)})
		return
	}
	w := &waiter{req: ev.ID, version: req.GetVersion()}
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		c.emit(Respond{ID: ev.ID, Response: c.findCoordinator(r)})
	case *kmsg.JoinGroupRequest:
		c.joinGroup(r, ev, w)
	case *kmsg.SyncGroupRequest:
		c.syncGroup(r, w)
	case *kmsg.HeartbeatRequest:
		c.emit(Respond{ID: ev.ID, Response: c.heartbeat(r)})
	case *kmsg.LeaveGroupRequest:
		c.emit(Respond{ID: ev.ID, Response: c.leaveGroup(r)})
	case *kmsg.OffsetCommitRequest:
		c.offsetCommit(r, ev.ID)
	case *kmsg.OffsetFetchRequest:
		c.emit(Respond{ID: ev.ID, Response: c.offsetFetch(r)})
	case *kmsg.DescribeGroupsRequest:
		c.emit(Respond{ID: ev.ID, Response: c.describeGroups(r)})
	case *kmsg.ListGroupsRequest:
		c.emit(Respond{ID: ev.ID, Response: c.listGroups(r)})
	case *kmsg.DeleteGroupsRequest:
		c.emit(Respond{ID: ev.ID, Response: c.deleteGroups(r)})
	case *kmsg.OffsetDeleteRequest:
		c.emit(Respond{ID: ev.ID, Response: c.offsetDelete(r)})
	default:
		c.emit(Respond{ID: ev.ID, Err: fmt.Errorf("%w: %T", ErrNotGroupAPI, req)})
	}
}

func strPtr(s string) *string { return &s }

// ---- FindCoordinator ----

// findCoordinator answers for key type 0 (group) with the leader of the group's __consumer_offsets
// partition: this broker unless Config.CoordinatorFor says otherwise. There is no transaction or share
// coordinator: key type 1 and (v6+) 2 get COORDINATOR_NOT_AVAILABLE; type 2 below v6 INVALID_REQUEST;
// an unknown type fails the whole request with INVALID_REQUEST, as CoordinatorType.forId throws.
func (c *Core) findCoordinator(r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	v := r.Version
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = v
	keyType := r.CoordinatorType
	if v == 0 {
		keyType = 0
	}
	keys := r.CoordinatorKeys
	if v < 4 {
		keys = []string{r.CoordinatorKey}
	}
	lookup := func(key string) (int16, Node) {
		switch keyType {
		case 0:
			p := c.partitionFor(key)
			if c.cfg.CoordinatorFor != nil {
				n, ok := c.cfg.CoordinatorFor(p)
				if !ok {
					return kerr.CoordinatorNotAvailable.Code, noNode
				}
				return errNone, n
			}
			return errNone, c.cfg.Node
		case 2:
			if v < 6 {
				return kerr.InvalidRequest.Code, noNode
			}
			return kerr.CoordinatorNotAvailable.Code, noNode
		default:
			return kerr.CoordinatorNotAvailable.Code, noNode
		}
	}
	for _, key := range keys {
		err, node := lookup(key)
		if keyType < 0 || keyType > 2 {
			err, node = kerr.InvalidRequest.Code, noNode
		}
		if v < 4 {
			resp.ErrorCode = err
			resp.ErrorMessage = strPtr(errMessage(err))
			resp.NodeID, resp.Host, resp.Port = node.ID, node.Host, node.Port
			continue
		}
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key = key
		co.ErrorCode = err
		co.ErrorMessage = strPtr("") // unset in KafkaApis: the generated field's default, ""
		if keyType < 0 || keyType > 2 {
			co.ErrorMessage = strPtr(errMessage(err)) // FindCoordinatorResponse.prepareErrorResponse
		}
		co.NodeID, co.Host, co.Port = node.ID, node.Host, node.Port
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return resp
}

// errMessage is Errors.message(): the error's default exception message, "NONE" for no error.
func errMessage(code int16) string {
	if code == errNone {
		return "NONE"
	}
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Description
	}
	return fmt.Sprintf("error %d", code)
}

// ---- JoinGroup ----

func (c *Core) joinGroup(r *kmsg.JoinGroupRequest, ev RequestEvent, w *waiter) {
	v := r.Version
	a := joinArgs{
		groupID:            r.Group,
		memberID:           r.MemberID,
		clientID:           ev.ClientID,
		clientHost:         ev.ClientHost,
		rebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		sessionTimeoutMs:   r.SessionTimeoutMillis,
		protocolType:       r.ProtocolType,
		supportSkipping:    v >= 9,
		reason:             "not provided",
	}
	if v == 0 {
		// JoinGroup v0 has no rebalance timeout: the session timeout is used (JoinGroupRequest,
		// KIP-62; case CO-JOIN-V0-TIMEOUT)
		a.rebalanceTimeoutMs = r.SessionTimeoutMillis
	}
	if v >= 5 && r.InstanceID != nil {
		s := *r.InstanceID
		a.instanceID = &s
	}
	// KIP-394: only v4+ dynamic members are asked to rejoin with a server-given member id
	a.requireKnownMemberID = v >= 4 && a.instanceID == nil
	if v >= 8 && r.Reason != nil && *r.Reason != "" {
		a.reason = *r.Reason
	}
	for _, p := range r.Protocols {
		a.protocols = append(a.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	c.handleJoinGroup(a, w)
}

// joinResponse encodes a join result for the request's version (JoinGroupResponse: before v7 the
// protocol name is never null, from v7 an empty one is null).
func joinResponse(v int16, r joinResult) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = v
	resp.ErrorCode = r.err
	resp.Generation = r.generation
	resp.ProtocolType = r.protocolType
	resp.Protocol = r.protocolName
	if v < 7 && resp.Protocol == nil {
		resp.Protocol = strPtr("")
	}
	if v >= 7 && resp.Protocol != nil && *resp.Protocol == "" {
		resp.Protocol = nil
	}
	resp.LeaderID = r.leaderID
	resp.SkipAssignment = r.skipAssignment
	resp.MemberID = r.memberID
	resp.Members = r.members
	return resp
}

// ---- SyncGroup ----

func (c *Core) syncGroup(r *kmsg.SyncGroupRequest, w *waiter) {
	v := r.Version
	if v >= 5 && (r.ProtocolType == nil || r.Protocol == nil) {
		// from v5 protocol type and name are mandatory (KafkaApis.handleSyncGroupRequest)
		c.respondSync(w, syncError(kerr.InconsistentGroupProtocol.Code))
		return
	}
	a := syncArgs{groupID: r.Group, generation: r.Generation, memberID: r.MemberID, assignments: map[string][]byte{}}
	if v >= 3 {
		a.instanceID = r.InstanceID
	}
	if v >= 5 {
		a.protocolType, a.protocolName = r.ProtocolType, r.Protocol
	}
	for _, asg := range r.GroupAssignment {
		a.assignments[asg.MemberID] = nonNil(asg.MemberAssignment)
	}
	c.handleSyncGroup(a, w)
}

func syncResponse(v int16, r syncResult) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = v
	resp.ErrorCode = r.err
	resp.ProtocolType = r.protocolType
	resp.Protocol = r.protocolName
	resp.MemberAssignment = nonNil(r.assignment)
	return resp
}

// ---- Heartbeat ----

func (c *Core) heartbeat(r *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	var inst *string
	if r.Version >= 3 {
		inst = r.InstanceID
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = r.Version
	resp.ErrorCode = c.handleHeartbeat(r.Group, r.MemberID, inst, r.Generation)
	return resp
}

// ---- LeaveGroup ----

// leaveGroup: v0-v2 carry one member id (LeaveGroupRequest.normalizedData); v3+ a batch of members
// (KIP-345), answered member by member.
func (c *Core) leaveGroup(r *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	v := r.Version
	var leaving []leaveMember
	if v < 3 {
		leaving = []leaveMember{{memberID: r.MemberID}}
	} else {
		for _, m := range r.Members {
			l := leaveMember{memberID: m.MemberID, instanceID: m.InstanceID}
			if v >= 5 {
				l.reason = m.Reason
			}
			leaving = append(leaving, l)
		}
	}
	top, results := c.handleLeaveGroup(r.Group, leaving)
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = v
	if v < 3 {
		// LeaveGroupResponse(data, version): the top-level error, else the single member's
		resp.ErrorCode = top
		if top == errNone && len(results) == 1 {
			resp.ErrorCode = results[0].err
		}
		return resp
	}
	resp.ErrorCode = top
	for _, res := range results {
		m := kmsg.NewLeaveGroupResponseMember()
		m.MemberID = res.memberID
		m.InstanceID = res.instanceID
		m.ErrorCode = res.err
		resp.Members = append(resp.Members, m)
	}
	return resp
}

// ---- OffsetCommit ----

// offsetCommit: per-version fields as KafkaApis/GroupCoordinatorAdapter read them. v0 has no
// generation or member id: Kafka 3.9 writes v0 commits to ZooKeeper; here they are coordinator
// commits with generation -1 and no member id (a "simple" commit). Partitions unknown to the cluster
// (Config.PartitionExists) get UNKNOWN_TOPIC_OR_PARTITION and never reach the coordinator. The
// response is emitted once the offset records are appended.
func (c *Core) offsetCommit(r *kmsg.OffsetCommitRequest, id RequestID) {
	v := r.Version
	generation, memberID := int32(-1), ""
	if v >= 1 {
		generation, memberID = r.Generation, r.MemberID
	}
	var inst *string
	if v >= 7 {
		inst = r.InstanceID
	}
	expire := int64(-1)
	if v >= 2 && v <= 4 && r.RetentionTimeMillis != -1 {
		expire = c.nowMs + r.RetentionTimeMillis
	}
	var order []topicPartition
	pre := map[topicPartition]int16{}
	seen := map[topicPartition]int{}
	var entries []commitEntry
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			if _, dup := seen[tp]; !dup {
				order = append(order, tp)
			}
			if c.cfg.PartitionExists != nil && !c.cfg.PartitionExists(t.Topic, p.Partition) {
				pre[tp] = kerr.UnknownTopicOrPartition.Code
				seen[tp] = -1
				continue
			}
			om := offsetAndMetadata{offset: p.Offset, leaderEpoch: -1, commitTimestamp: c.nowMs, expireTimestamp: expire}
			if v >= 6 {
				om.leaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				om.metadata = *p.Metadata
			}
			if v == 1 && p.Timestamp != -1 {
				om.commitTimestamp = p.Timestamp
			}
			delete(pre, tp)
			if i, dup := seen[tp]; dup && i >= 0 {
				entries[i] = commitEntry{tp, om} // a repeated partition: the last one wins (a map in Kafka)
				continue
			}
			seen[tp] = len(entries)
			entries = append(entries, commitEntry{tp, om})
		}
	}
	respond := func(errs map[topicPartition]int16) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = v
		byTopic := map[string]int{}
		for _, tp := range order {
			err, ok := pre[tp]
			if !ok {
				err = errs[tp]
			}
			i, ok := byTopic[tp.topic]
			if !ok {
				t := kmsg.NewOffsetCommitResponseTopic()
				t.Topic = tp.topic
				resp.Topics = append(resp.Topics, t)
				i = len(resp.Topics) - 1
				byTopic[tp.topic] = i
			}
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition = tp.partition
			p.ErrorCode = err
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
		}
		c.emit(Respond{ID: id, Response: resp})
	}
	if len(entries) == 0 {
		respond(nil)
		return
	}
	c.handleCommitOffsets(r.Group, memberID, inst, generation, v, entries, respond)
}

// ---- OffsetFetch ----

type fetchGroup struct {
	groupID    string
	partitions []topicPartition // nil: all
}

func (c *Core) offsetFetch(r *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	v := r.Version
	requireStable := v >= 7 && r.RequireStable
	var groups []fetchGroup
	if v < 8 {
		fg := fetchGroup{groupID: r.Group}
		if r.Topics != nil || v < 2 { // null topics (v2+) means every partition
			fg.partitions = []topicPartition{}
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					fg.partitions = append(fg.partitions, topicPartition{t.Topic, p})
				}
			}
		}
		groups = append(groups, fg)
	} else {
		for _, g := range r.Groups {
			fg := fetchGroup{groupID: g.Group}
			if g.Topics != nil {
				fg.partitions = []topicPartition{}
				for _, t := range g.Topics {
					for _, p := range t.Partitions {
						fg.partitions = append(fg.partitions, topicPartition{t.Topic, p})
					}
				}
			}
			groups = append(groups, fg)
		}
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = v
	for _, fg := range groups {
		err, offsets := c.handleFetchOffsets(fg.groupID, requireStable, fg.partitions)
		if v >= 8 {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = fg.groupID
			rg.ErrorCode = err
			byTopic := map[string]int{}
			for _, o := range offsets {
				i, ok := byTopic[o.tp.topic]
				if !ok {
					t := kmsg.NewOffsetFetchResponseGroupTopic()
					t.Topic = o.tp.topic
					rg.Topics = append(rg.Topics, t)
					i = len(rg.Topics) - 1
					byTopic[o.tp.topic] = i
				}
				p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = o.tp.partition, o.offset, o.leaderEpoch
				p.Metadata = strPtr(o.metadata)
				p.ErrorCode = o.err
				rg.Topics[i].Partitions = append(rg.Topics[i].Partitions, p)
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		// v0-v7: one group; a group error is top-level from v2, and before v2 (no top-level error
		// code) it is every requested partition's, as OffsetFetchRequest.getErrorResponse answers
		resp.ErrorCode = err
		if err != 0 && v < 2 {
			offsetFetchPartitionErrors(resp, r, err)
			continue
		}
		byTopic := map[string]int{}
		for _, o := range offsets {
			i, ok := byTopic[o.tp.topic]
			if !ok {
				t := kmsg.NewOffsetFetchResponseTopic()
				t.Topic = o.tp.topic
				resp.Topics = append(resp.Topics, t)
				i = len(resp.Topics) - 1
				byTopic[o.tp.topic] = i
			}
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = o.tp.partition, o.offset, o.leaderEpoch
			p.Metadata = strPtr(o.metadata)
			p.ErrorCode = o.err
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
		}
	}
	return resp
}

// ---- DescribeGroups, ListGroups, DeleteGroups ----

// groupAuthorizedOperations is what Kafka reports without an authorizer: every operation a group
// supports (READ, DELETE, DESCRIBE) as a bit field.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

func (c *Core) describeGroups(r *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = r.Version
	for _, id := range r.Groups {
		err, s := c.handleDescribeGroup(id)
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.ErrorCode = err
		g.Group = id
		g.State = s.state
		g.ProtocolType = s.protocolType
		g.Protocol = s.protocol
		g.Members = s.members
		if r.Version >= 3 && r.IncludeAuthorizedOperations && err == errNone {
			g.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// listGroups is GroupCoordinator.handleListGroups: every group the coordinator holds (sorted by id),
// filtered by state (v4+, case-insensitive) and type (v5+; all groups here are "classic").
func (c *Core) listGroups(r *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = r.Version
	if !c.active {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if len(c.loading) > 0 {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	states := map[string]bool{}
	if r.Version >= 4 {
		for _, s := range r.StatesFilter {
			states[strings.ToLower(s)] = true
		}
	}
	classicOK := true
	if r.Version >= 5 && len(r.TypesFilter) > 0 {
		classicOK = false
		for _, t := range r.TypesFilter {
			if strings.ToLower(t) == "classic" {
				classicOK = true
			}
		}
	}
	if !classicOK {
		return resp
	}
	for _, id := range c.Groups() {
		g := c.groups[id]
		if len(states) > 0 && !states[strings.ToLower(g.state.String())] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.id
		if g.protocolType != nil {
			lg.ProtocolType = *g.protocolType
		}
		lg.GroupState = g.state.String()
		lg.GroupType = "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

func (c *Core) deleteGroups(r *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	var ids []string
	seen := map[string]bool{}
	for _, id := range r.Groups {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	errs := c.handleDeleteGroups(ids)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = r.Version
	for _, id := range ids {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		g.ErrorCode = errs[id]
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// ---- OffsetDelete ----

// offsetDelete is KafkaApis.handleOffsetDeleteRequest with GroupCoordinatorAdapter.deleteOffsets:
// partitions of a topic or partition the cluster does not have get UNKNOWN_TOPIC_OR_PARTITION
// (Config.PartitionExists) and are not passed on; the rest go to handleDeleteOffsets. A group error
// is the whole answer (OffsetDeleteRequest.getErrorResponse: the error code and no topics). Topics and
// partitions are answered in request order, each once (Kafka's response collections are keyed by name
// and index).
func (c *Core) offsetDelete(r *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = r.Version
	var order []topicPartition
	seen := map[topicPartition]bool{}
	pre := map[topicPartition]int16{}
	var valid []topicPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			if seen[tp] {
				continue
			}
			seen[tp] = true
			order = append(order, tp)
			if c.cfg.PartitionExists != nil && !c.cfg.PartitionExists(t.Topic, p.Partition) {
				pre[tp] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			valid = append(valid, tp)
		}
	}
	groupErr, errs := c.handleDeleteOffsets(r.Group, valid)
	if groupErr != errNone {
		resp.ErrorCode = groupErr
		return resp
	}
	byTopic := map[string]int{}
	for _, tp := range order {
		code, ok := pre[tp]
		if !ok {
			if code, ok = errs[tp]; !ok {
				continue
			}
		}
		i, ok := byTopic[tp.topic]
		if !ok {
			t := kmsg.NewOffsetDeleteResponseTopic()
			t.Topic = tp.topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			byTopic[tp.topic] = i
		}
		p := kmsg.NewOffsetDeleteResponseTopicPartition()
		p.Partition, p.ErrorCode = tp.partition, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp
}

// offsetFetchPartitionErrors answers every partition r asks for with code, no offset (-1) and no
// metadata: how OffsetFetch v0-v1, which has no top-level error code, carries a group's error
// (OffsetFetchRequest.getErrorResponse for version < 2).
func offsetFetchPartitionErrors(resp *kmsg.OffsetFetchResponse, r *kmsg.OffsetFetchRequest, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, strPtr(""), code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// errorResponse is the request's getErrorResponse: every part of the answer carries code.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	v := req.GetVersion()
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return joinResponse(v, joinError("", code))
	case *kmsg.SyncGroupRequest:
		return syncResponse(v, syncError(code))
	case *kmsg.HeartbeatRequest:
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.LeaveGroupRequest:
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = v
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = v
		if v >= 8 {
			for _, g := range r.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, code
				resp.Groups = append(resp.Groups, rg)
			}
		} else {
			resp.ErrorCode = code
			if v < 2 {
				offsetFetchPartitionErrors(resp, r, code)
			}
		}
		return resp
	case *kmsg.DescribeGroupsRequest:
		resp := kmsg.NewPtrDescribeGroupsResponse()
		resp.Version = v
		for _, id := range r.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.ListGroupsRequest:
		resp := kmsg.NewPtrListGroupsResponse()
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.DeleteGroupsRequest:
		resp := kmsg.NewPtrDeleteGroupsResponse()
		resp.Version = v
		for _, id := range r.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.OffsetDeleteRequest:
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.Version, resp.ErrorCode = v, code
		return resp
	case *kmsg.FindCoordinatorRequest:
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.Version = v
		if v < 4 {
			resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
			resp.ErrorMessage = strPtr(errMessage(code))
		}
		for _, k := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.ErrorCode, co.NodeID, co.Port = k, code, -1, -1
			co.ErrorMessage = strPtr(errMessage(code))
			resp.Coordinators = append(resp.Coordinators, co)
		}
		return resp
	}
	return nil
}
