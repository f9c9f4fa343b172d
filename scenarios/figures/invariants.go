package figures

// Kafka's own consumer-group invariants, checked on every run of every era from the merged timeline.
//
// Kafka's system tests judge a consumer group with the event checker of VerifiableConsumer
// (tests/kafkatest/services/verifiable_consumer.py, ConsumerEventHandler and its incremental variant):
// records are consumed only while the member is in the group and only from partitions it owns; within
// one assignment a member's consumed offsets of a partition are contiguous; a successful commit is never
// ahead of the member's position; nobody consumes behind the group's last committed offset; and
// (cooperative) a member never revokes a partition it does not own. Here each is a figure counting its
// violations, so that where an era breaks one by design (the zk split brain, the coordinator era's zombie
// window) the count is the measurement; everywhere else a violation fails the run (the scenarios' invariant
// relations).

import "github.com/rebalancelab/rebalancelab/timeline"

// Invariant figure names.
const (
	// FigInvConsumedNotMember: deliveries by a member that is not in the group: before its first
	// `assigned` since it started, after its `member_stop`, between a `revoked` and the next `assigned`
	// (Kafka's "consumed records should only be received when joined"), and, in the zk era, from a
	// `session_expired` (its ids znode is gone with the session) until its next `assigned`.
	FigInvConsumedNotMember = "invariant_consumed_not_member"
	// FigInvConsumedUnowned: deliveries of a partition of which the member is not the group's owner of
	// record at that moment (the latest `assigned` that listed the partition is another member's, or
	// the member lost it since). zk: the owner znode names another member's thread; coordinator eras: a
	// later generation gave the partition to another member — the zombie window.
	FigInvConsumedUnowned = "invariant_consumed_unowned"
	// FigInvOffsetsNotContiguous: deliveries whose offset is not the member's previous delivery of that
	// partition + 1, within one assignment of the partition (a partition kept across a cooperative
	// rebalance stays in the same assignment; one that is revoked or dropped starts a new one).
	FigInvOffsetsNotContiguous = "invariant_offsets_not_contiguous"
	// FigInvCommitAheadOfPosition: applied commits whose offset is ahead of the committing member's
	// position: its last delivered offset + 1 in the current assignment, or, before its first delivery
	// there (a consumer may commit the position it was handed), the group's position: the highest of
	// the last applied commit and every member's highest delivered offset + 1 (0 when none).
	FigInvCommitAheadOfPosition = "invariant_commit_ahead_of_position"
	// FigInvConsumedBehindCommitted: deliveries of an offset below the group's last applied commit of the
	// partition (whoever made it).
	FigInvConsumedBehindCommitted = "invariant_consumed_behind_committed"
	// FigInvRevokedUnowned: partitions listed in a member's `revoked` that the member did not own.
	FigInvRevokedUnowned = "invariant_revoked_unowned"
)

// InvariantNames lists the invariant figures, in the order of FigureNames.
var InvariantNames = []string{FigInvConsumedNotMember, FigInvConsumedUnowned, FigInvOffsetsNotContiguous,
	FigInvCommitAheadOfPosition, FigInvConsumedBehindCommitted, FigInvRevokedUnowned}

// invMember is one member as the event checker sees it.
type invMember struct {
	live      bool         // member_start seen, no member_stop since
	joined    bool         // an assigned since the last start, revoke or session expiry
	assigned  map[tp]bool  // the member's own view of its assignment
	position  map[tp]int64 // next offset expected, per partition delivered in the current assignment
	delivered map[tp]bool  // partitions delivered at least once in the current assignment
}

// invariantChecker replays records in order and names the invariants each one violates. The group's
// owner of record comes from the replay (observe's owner), read before the replay applies the record.
type invariantChecker struct {
	members   map[string]*invMember
	committed map[tp]int64 // the group's last applied commit per partition
	consumed  map[tp]int64 // the group's consumed position: highest delivered offset + 1 by anyone
}

func newInvariantChecker() *invariantChecker {
	return &invariantChecker{members: map[string]*invMember{}, committed: map[tp]int64{}, consumed: map[tp]int64{}}
}

func (c *invariantChecker) member(name string) *invMember {
	m := c.members[name]
	if m == nil {
		m = &invMember{live: true, assigned: map[tp]bool{}, position: map[tp]int64{}, delivered: map[tp]bool{}}
		c.members[name] = m
	}
	return m
}

// forget ends the member's current assignment of t: its position there no longer holds.
func (m *invMember) forget(t tp) {
	delete(m.position, t)
	delete(m.delivered, t)
}

// observe checks rec, then updates the checker's state with it. owner is the group's owner of record of
// a partition just before rec ("" for none). It returns the invariant figures rec violates, each once
// per violation (a revoke of two unowned partitions is two).
func (c *invariantChecker) observe(rec timeline.Record, owner func(tp) string) []string {
	var out []string
	switch rec.Kind {
	case timeline.MemberStart:
		m := c.member(rec.Member)
		*m = invMember{live: true, assigned: map[tp]bool{}, position: map[tp]int64{}, delivered: map[tp]bool{}}
	case timeline.MemberStop:
		m := c.member(rec.Member)
		m.live, m.joined = false, false
		m.assigned, m.position, m.delivered = map[tp]bool{}, map[tp]int64{}, map[tp]bool{}
	case timeline.SessionExpired:
		c.member(rec.Member).joined = false
	case timeline.Assigned:
		m := c.member(rec.Member)
		next := map[tp]bool{}
		for _, t := range parts(rec) {
			next[t] = true
		}
		for t := range m.assigned {
			if !next[t] {
				m.forget(t)
			}
		}
		m.assigned = next
		m.joined = m.live
	case timeline.Revoked:
		m := c.member(rec.Member)
		for _, t := range parts(rec) {
			if !m.assigned[t] {
				out = append(out, FigInvRevokedUnowned)
				continue
			}
			delete(m.assigned, t)
			m.forget(t)
		}
		m.joined = false
	case timeline.Deliver:
		if rec.Topic == "" || rec.Partition == nil || rec.Offset == nil {
			return nil // the replay warns about it
		}
		t, off := tp{rec.Topic, *rec.Partition}, *rec.Offset
		m := c.member(rec.Member)
		if !m.live || !m.joined {
			out = append(out, FigInvConsumedNotMember)
		}
		if owner(t) != rec.Member {
			out = append(out, FigInvConsumedUnowned)
		}
		if m.delivered[t] && off != m.position[t] {
			out = append(out, FigInvOffsetsNotContiguous)
		}
		if committed, ok := c.committed[t]; ok && off < committed {
			out = append(out, FigInvConsumedBehindCommitted)
		}
		m.delivered[t], m.position[t] = true, off+1
		c.consumed[t] = max(c.consumed[t], off+1)
	case timeline.Commit:
		if rec.Result != timeline.CommitApplied || rec.Topic == "" || rec.Partition == nil || rec.Offset == nil {
			return nil
		}
		t, off := tp{rec.Topic, *rec.Partition}, *rec.Offset
		m := c.member(rec.Member)
		pos := max(c.committed[t], c.consumed[t]) // 0 when none: the lab's topics start at offset 0
		if m.delivered[t] {
			pos = m.position[t]
		}
		if off > pos {
			out = append(out, FigInvCommitAheadOfPosition)
		}
		c.committed[t] = off
	}
	return out
}
