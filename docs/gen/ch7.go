package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/scenarios/streams"
)

// ch7: the coordinator serves any protocol type. Two "Connect workers" (raw group requests with
// protocol_type "connect", as Kafka Connect's WorkerGroupMember sends them) form a group through
// the project's broker; a consumer that tries to join that group is refused; a "Streams thread"
// joins with protocol_type "consumer" and the assignor name "stream". Every request and answer is
// written to the transcript.
func (g *generator) ch7(ctx context.Context) error {
	l, err := startLab(ctx)
	if err != nil {
		return err
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t := &transcript{broker: l.Bootstrap()}
	const group = "connect-cluster"

	w1, err := wire.Dial(ctx, nil, l.Bootstrap(), "w1")
	if err != nil {
		return err
	}
	defer w1.Close()
	w2, err := wire.Dial(ctx, nil, l.Bootstrap(), "w2")
	if err != nil {
		return err
	}
	defer w2.Close()

	t.comment("Two Kafka Connect workers form a group. The metadata and assignments are the workers' own bytes;")
	t.comment("real Connect sends a binary struct (ConnectProtocol / IncrementalCooperativeConnectProtocol), here readable")
	t.comment("text, to show that the coordinator stores and forwards them without reading them.")
	if err := t.findCoordinator(ctx, w1, "w1", group); err != nil {
		return err
	}
	meta := func(w string) []byte {
		return []byte(fmt.Sprintf(`{"url":"http://%s:8083/","config_offset":-1}`, w))
	}
	j1, err := t.joinTwice(ctx, w1, "w1", group, "", "connect", "sessioned", meta("w1"))
	if err != nil {
		return err
	}
	if _, err := t.sync(ctx, w1, "w1", group, j1.Generation, j1.MemberID, "connect", "sessioned",
		map[string][]byte{j1.MemberID: []byte(`{"leader":"w1","connectors":["jdbc-source"],"tasks":["jdbc-source-0"]}`)}); err != nil {
		return err
	}

	t.comment("")
	t.comment("A second worker joins. Its JoinGroup is parked until every known member has rejoined;")
	t.comment("w1 learns of the rebalance from its next heartbeat.")
	type joinResult struct {
		r   *kmsg.JoinGroupResponse
		err error
	}
	w2done := make(chan joinResult, 1)
	first, err := t.join(ctx, w2, "w2", group, "", "connect", "sessioned", meta("w2"))
	if err != nil {
		return err
	}
	go func() {
		r, err := t.join(ctx, w2, "w2", group, first.MemberID, "connect", "sessioned", meta("w2"))
		w2done <- joinResult{r, err}
	}()
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	err = every100ms.UntilErr(ctx, 30*time.Second, "w1's heartbeat to answer REBALANCE_IN_PROGRESS", func() error {
		code, err := t.heartbeat(ctx, w1, "w1", group, j1.Generation, j1.MemberID)
		switch {
		case err != nil:
			return poll.Stop(err)
		case code != kerr.RebalanceInProgress.Code:
			return errors.New(errName(code))
		}
		return nil
	})
	if errors.Is(err, poll.ErrTimeout) {
		return fmt.Errorf("w1's heartbeats never answered REBALANCE_IN_PROGRESS: %w", err)
	} else if err != nil {
		return err
	}
	j1b, err := t.join(ctx, w1, "w1", group, j1.MemberID, "connect", "sessioned", meta("w1"))
	if err != nil {
		return err
	}
	var j2 *kmsg.JoinGroupResponse
	select {
	case jr := <-w2done:
		if jr.err != nil {
			return jr.err
		}
		j2 = jr.r
	case <-ctx.Done():
		return ctx.Err()
	}
	if j1b.ErrorCode != 0 || j2.ErrorCode != 0 {
		return fmt.Errorf("second round: JoinGroup answered %s / %s", errName(j1b.ErrorCode), errName(j2.ErrorCode))
	}
	leader, follower, lname := w1, w2, "w1"
	lj, fj, fname := j1b, j2, "w2"
	if j2.LeaderID == j2.MemberID {
		leader, follower, lname, fname, lj, fj = w2, w1, "w2", "w1", j2, j1b
	}
	assign := map[string][]byte{
		lj.MemberID: []byte(`{"connectors":["jdbc-source"],"tasks":[]}`),
		fj.MemberID: []byte(`{"connectors":[],"tasks":["jdbc-source-0"]}`),
	}
	if _, err := t.sync(ctx, leader, lname, group, lj.Generation, lj.MemberID, "connect", "sessioned", assign); err != nil {
		return err
	}
	if _, err := t.sync(ctx, follower, fname, group, fj.Generation, fj.MemberID, "connect", "sessioned", nil); err != nil {
		return err
	}
	state, err := t.describe(ctx, w1, "w1", group)
	if err != nil {
		return err
	}

	t.comment("")
	t.comment("A consumer (protocol_type \"consumer\") asks to join the Connect group: refused.")
	c, err := wire.Dial(ctx, nil, l.Bootstrap(), "consumer-1")
	if err != nil {
		return err
	}
	defer c.Close()
	cmeta := (&kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"orders"}}).AppendTo(nil)
	refused, err := t.join(ctx, c, "consumer-1", group, "", "consumer", "range", cmeta)
	if err != nil {
		return err
	}
	if err := t.leave(ctx, w1, "w1", group, j1.MemberID); err != nil {
		return err
	}
	if err := t.leave(ctx, w2, "w2", group, first.MemberID); err != nil {
		return err
	}

	t.comment("")
	t.comment("A Kafka Streams thread is a consumer group member: protocol_type \"consumer\", the assignor \"stream\"")
	t.comment("(StreamsPartitionAssignor), its own subscription info in the user data. Same requests again.")
	const app = "wordcount-app"
	s1, err := wire.Dial(ctx, nil, l.Bootstrap(), "wordcount-app-StreamThread-1-consumer")
	if err != nil {
		return err
	}
	defer s1.Close()
	smeta := (&kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"words"},
		UserData: []byte("<Streams SubscriptionInfo: process id, tasks, host info>")}).AppendTo(nil)
	sj, err := t.joinTwice(ctx, s1, "stream-1", app, "", "consumer", "stream", smeta)
	if err != nil {
		return err
	}
	sassign := (&kmsg.ConsumerMemberAssignment{Version: 0,
		Topics:   []kmsg.ConsumerMemberAssignmentTopic{{Topic: "words", Partitions: []int32{0, 1}}},
		UserData: []byte("<Streams AssignmentInfo: active and standby tasks>")}).AppendTo(nil)
	if _, err := t.sync(ctx, s1, "stream-1", app, sj.Generation, sj.MemberID, "consumer", "stream", map[string][]byte{sj.MemberID: sassign}); err != nil {
		return err
	}
	sstate, err := t.describe(ctx, s1, "stream-1", app)
	if err != nil {
		return err
	}
	if err := t.leave(ctx, s1, "stream-1", app, sj.MemberID); err != nil {
		return err
	}

	text := t.String()
	if err := g.out.write("ch7-connect-join.txt", []byte(text)); err != nil {
		return err
	}
	g.out.block("ch7-transcript", "```text\n"+text+"```")
	g.out.block("ch7-summary", fmt.Sprintf("In this run the two workers reached generation %d with %s as leader, and the group described itself as "+
		"state %s, protocol_type %q, protocol %q; the consumer's JoinGroup was answered **%s**. The Streams thread's group "+
		"was %s with protocol_type %q and protocol %q.",
		lj.Generation, lname, state.State, state.ProtocolType, state.Protocol, errName(refused.ErrorCode),
		sstate.State, sstate.ProtocolType, sstate.Protocol))
	return nil
}

func errName(code int16) string {
	if code == 0 {
		return "no error"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
		return err.Error()
	}
	return fmt.Sprintf("error code %d", code)
}

// transcript records requests and answers as lines: "→ w1  JoinGroup v7 ..." / "← w1  ...". Safe for
// concurrent use (w2's parked JoinGroup runs on its own goroutine).
type transcript struct {
	broker string
	mu     sync.Mutex
	b      strings.Builder
}

func (t *transcript) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

func (t *transcript) line(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.WriteString(strings.ReplaceAll(s, t.broker, "<broker>") + "\n")
}

func (t *transcript) comment(s string) {
	if s == "" {
		t.line("")
		return
	}
	t.line("# " + s)
}

func (t *transcript) req(who, s string)  { t.line("→ " + padRight(who, 11) + s) }
func (t *transcript) resp(who, s string) { t.line("← " + padRight(who, 11) + s) }

func padRight(s string, n int) string {
	if len(s) >= n {
		return s + " "
	}
	return s + strings.Repeat(" ", n-len(s))
}

func (t *transcript) findCoordinator(ctx context.Context, c *wire.Conn, who, group string) error {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorKey = 2, group
	t.req(who, fmt.Sprintf("FindCoordinator v2 key=%s", group))
	every200ms := poll.Backoff{First: 200 * time.Millisecond, Max: 200 * time.Millisecond}
	err := every200ms.UntilErr(ctx, 30*time.Second, "FindCoordinator to name the coordinator of "+group, func() error {
		r, err := c.Request(ctx, req)
		if err != nil {
			return poll.Stop(err)
		}
		resp := r.(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 { // __consumer_offsets is being created: COORDINATOR_NOT_AVAILABLE
			return errors.New(errName(resp.ErrorCode))
		}
		t.resp(who, fmt.Sprintf("coordinator: broker %d at %s:%d", resp.NodeID, resp.Host, resp.Port))
		return nil
	})
	if errors.Is(err, poll.ErrTimeout) {
		return fmt.Errorf("FindCoordinator: %w", err)
	}
	return err
}

// join sends one JoinGroup v7 (session 10 s, rebalance 10 s) and records it.
func (t *transcript) join(ctx context.Context, c *wire.Conn, who, group, memberID, ptype, pname string, meta []byte) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID, req.ProtocolType = 7, group, memberID, ptype
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: pname, Metadata: meta}}
	t.req(who, fmt.Sprintf("JoinGroup v7 group=%s member_id=%q protocol_type=%q protocols=[%s: %d bytes of metadata]",
		group, memberID, ptype, pname, len(meta)))
	r, err := c.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s JoinGroup: %w", who, err)
	}
	resp := r.(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 {
		t.resp(who, fmt.Sprintf("JoinGroup: %s member_id=%q", errName(resp.ErrorCode), resp.MemberID))
		return resp, nil
	}
	s := fmt.Sprintf("JoinGroup: generation=%d protocol_type=%s protocol=%s leader=%s member_id=%s",
		resp.Generation, deref(resp.ProtocolType), deref(resp.Protocol), resp.LeaderID, resp.MemberID)
	if len(resp.Members) > 0 {
		s += fmt.Sprintf("\n%smembers (sent to the leader only):", strings.Repeat(" ", 13))
		for _, m := range resp.Members {
			s += fmt.Sprintf("\n%s%s  %s", strings.Repeat(" ", 15), m.MemberID, printable(m.ProtocolMetadata))
		}
	}
	t.resp(who, s)
	return resp, nil
}

// joinTwice joins as a new member: JoinGroup v4+ without a member id is answered
// MEMBER_ID_REQUIRED with the id to use (KIP-394), then joins with it.
func (t *transcript) joinTwice(ctx context.Context, c *wire.Conn, who, group, memberID, ptype, pname string, meta []byte) (*kmsg.JoinGroupResponse, error) {
	r, err := t.join(ctx, c, who, group, memberID, ptype, pname, meta)
	if err != nil {
		return nil, err
	}
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		r, err = t.join(ctx, c, who, group, r.MemberID, ptype, pname, meta)
		if err != nil {
			return nil, err
		}
	}
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("%s JoinGroup: %s", who, errName(r.ErrorCode))
	}
	return r, nil
}

func (t *transcript) sync(ctx context.Context, c *wire.Conn, who, group string, gen int32, memberID, ptype, pname string, assign map[string][]byte) (*kmsg.SyncGroupResponse, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 5, group, gen, memberID
	req.ProtocolType, req.Protocol = &ptype, &pname
	for m, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: a})
	}
	what := "no assignments (a follower)"
	if len(assign) > 0 {
		what = fmt.Sprintf("assignments for %d member(s) (the leader's)", len(assign))
	}
	t.req(who, fmt.Sprintf("SyncGroup v5 generation=%d %s", gen, what))
	r, err := c.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s SyncGroup: %w", who, err)
	}
	resp := r.(*kmsg.SyncGroupResponse)
	if resp.ErrorCode != 0 {
		t.resp(who, "SyncGroup: "+errName(resp.ErrorCode))
		return nil, fmt.Errorf("%s SyncGroup: %s", who, errName(resp.ErrorCode))
	}
	t.resp(who, "SyncGroup: its assignment "+printable(resp.MemberAssignment))
	return resp, nil
}

func (t *transcript) heartbeat(ctx context.Context, c *wire.Conn, who, group string, gen int32, memberID string) (int16, error) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 3, group, gen, memberID
	t.req(who, fmt.Sprintf("Heartbeat v3 generation=%d", gen))
	r, err := c.Request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("%s Heartbeat: %w", who, err)
	}
	code := r.(*kmsg.HeartbeatResponse).ErrorCode
	t.resp(who, "Heartbeat: "+errName(code))
	return code, nil
}

func (t *transcript) leave(ctx context.Context, c *wire.Conn, who, group, memberID string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID}}
	t.req(who, "LeaveGroup v3")
	r, err := c.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("%s LeaveGroup: %w", who, err)
	}
	t.resp(who, "LeaveGroup: "+errName(r.(*kmsg.LeaveGroupResponse).ErrorCode))
	return nil
}

func (t *transcript) describe(ctx context.Context, c *wire.Conn, who, group string) (kmsg.DescribeGroupsResponseGroup, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 3, []string{group}
	t.req(who, "DescribeGroups v3 "+group)
	r, err := c.Request(ctx, req)
	if err != nil {
		return kmsg.DescribeGroupsResponseGroup{}, fmt.Errorf("%s DescribeGroups: %w", who, err)
	}
	resp := r.(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		return kmsg.DescribeGroupsResponseGroup{}, fmt.Errorf("DescribeGroups: %d groups in the answer", len(resp.Groups))
	}
	gr := resp.Groups[0]
	s := fmt.Sprintf("DescribeGroups: state=%s protocol_type=%s protocol=%s", gr.State, gr.ProtocolType, gr.Protocol)
	for _, m := range gr.Members {
		s += fmt.Sprintf("\n%smember %s (client %s)", strings.Repeat(" ", 15), m.MemberID, m.ClientID)
	}
	t.resp(who, s)
	return gr, nil
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// printable shows bytes as text when they are, else as a length.
func printable(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("<%d bytes, binary>", len(b))
		}
	}
	return string(b)
}

// ch7Streams: the streams-threads run (Kafka Streams 3.9.2 instances on this broker, read through the
// group observer) as chapter 7's Streams section: its table in figures/ch7-streams-threads.txt and the
// chapter's blocks ch7-streams-table and ch7-streams-summary.
func (g *generator) ch7Streams() error {
	res := g.result(runStreams)
	if res == nil || res.Streams == nil {
		return fmt.Errorf("no %s result", runStreams)
	}
	table, err := tableText(res)
	if err != nil {
		return err
	}
	if err := g.out.write("ch7-streams-threads.txt", []byte(table)); err != nil {
		return err
	}
	g.out.block("ch7-streams-table", "```text\n"+table+"```")
	s := streams.Of(res)
	ev := map[string]streams.Event{}
	for _, e := range s.Events {
		ev[e.Trigger] = e
	}
	first := "no stable generation"
	if len(s.Lanes) > 0 {
		first = fmt.Sprintf("generation %d", s.Lanes[0].Generation)
	}
	t := s.Totals
	held := "did not hold"
	if res.Counts().Failed == 0 {
		held = "held"
	}
	if !res.Passed() {
		held += " — but the run did not pass: " + strings.Join(res.Failures(), "; ")
	}
	g.out.block("ch7-streams-summary", fmt.Sprintf("In this run the first instance's 3 threads were stable %d ms after its start (%s, "+
		"2 tasks each); removing a thread moved %d tasks in %d ms, adding one back %d in %d ms; the second instance's "+
		"join took %d ms (%d rebalances) and moved %d tasks, its kill -9 %d ms — about the 2 s session timeout — and moved %d. "+
		"Of %d records in, %d came out: %d distinct, %d duplicates, %d lost; the instances processed %d records a second time "+
		"(%d of them after the kill). Every relation of the scenario %s.",
		ev["start"].TimeToStableMs, first, ev["remove-thread"].TasksMoved, ev["remove-thread"].TimeToStableMs,
		ev["add-thread"].TasksMoved, ev["add-thread"].TimeToStableMs, ev["join"].TimeToStableMs, ev["join"].Rebalances,
		ev["join"].TasksMoved, ev["crash"].TimeToStableMs, ev["crash"].TasksMoved,
		t.RecordsIn, t.RecordsOut, t.DistinctOut, t.Duplicates, t.Lost, t.RecordsReprocessed, ev["crash"].RecordsReprocessed, held))
	return nil
}
