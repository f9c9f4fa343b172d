package figures

// The counts each era's code path gives for one change of the group (a member joins or leaves), to print
// beside the measured figures (measured − model: the residual). Each model is a pure function of
// quantities measured in the change's window — attempts, members, owned partitions — never of N alone:
// what the code does per attempt is exact, how many attempts a change takes is the run's.

import (
	"fmt"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ZKChange is what the 0.8.2 connector's ZooKeeper traffic for one change depends on, measured in the
// change's window (ZKChangeOf, ZKChangeFromFigures).
type ZKChange struct {
	Brokers    int // B: children of /brokers/ids (each one read)
	Topics     int // T: topics each member consumes, one stream each (the lab's members: 1)
	Partitions int // P: the topic's partitions (only for the residual's bound)
	Registered int // N: members registered in /consumers/<g>/ids, each subscribed to it, before the change
	Joined     int // members that registered in the window
	Left       int // members that stopped gracefully in the window (Shutdown: their session closes)
	Crashed    int // members whose session was lost in the window (a crash, an expiry)
	// Attempts: rebalance attempts in the window (rebalance_end records), FailedAttempts those with ok=false.
	Attempts, FailedAttempts int64
	// Owned: Σ over the window's successful attempts of the partitions the attempt's decision gave its
	// member (the assigned records' partitions): each one's committed offset is read once.
	Owned int64
	// NodeExists: owner-znode creates that found another thread's node (ownership_conflicts), each read back.
	NodeExists int64
	// Fetching: successful attempts that installed partitions; each starts the fetchers, whose
	// LeaderFinderThread then lists and reads /brokers/ids.
	Fetching int
}

// Members is M, the members each attempt of the change lists and reads: N + joined − left − crashed.
func (c ZKChange) Members() int { return c.Registered + c.Joined - c.Left - c.Crashed }

// ZKWatchEvents is 0.8.2's count of ZooKeeper watch notifications for the change: each registration
// that appears or goes fires the child watch on /consumers/<g>/ids of every member subscribed to it at
// that moment (ZookeeperConsumerConnector.reinitializeConsumer's subscribeChildChanges, re-armed by
// ZkClient on every read of the path): a joiner notifies the N members before it (its own subscription
// comes after its registration), a graceful leaver all N, itself included (its own session is still open
// when its registration goes), a lost session the N − 1 others:
//
//	W = N·joined + N·left + (N − 1)·crashed
//
// One change at a time: changes that overlap (a storm) share the one-shot watches, so fewer fire.
func ZKWatchEvents(c ZKChange) int64 {
	n := int64(c.Registered)
	return n*int64(c.Joined) + n*int64(c.Left) + (n-1)*int64(c.Crashed)
}

// ZKReads is 0.8.2's count of the ZooKeeper reads (getData, getChildren, exists) of all members for the
// change, from ZookeeperConsumerConnector (tag 0.8.2.2) as zkconsumer/rebalance_core.go reproduces it.
// Each attempt of ZKRebalancerListener.syncedRebalance reads:
//
//	getCluster (ZkUtils.getCluster: list /brokers/ids, read each)                    1 + B
//	rebalance: TopicCount.constructTopicCount of its own registration                  1
//	           ZkUtils.getAllBrokersInCluster (list, read each)                        1 + B
//	AssignmentContext: constructTopicCount again                                       1
//	           ZkUtils.getPartitionsForTopics (/brokers/topics/<t>, one per topic)     T
//	           ZkUtils.getConsumersPerTopic (list /consumers/<g>/ids, read each)       1 + M
//	           ZkUtils.getConsumersInGroup (list the ids again)                        1
//	fetchOffsets: fetchOffsetFromZooKeeper per partition of its decision               O_attempt
//	reflectPartitionOwnershipDecision: a create that meets NodeExists reads the node   (NodeExists)
//
// that is 2B + T + M + 6 + O_attempt per attempt. Around the attempts: each watch notification (see
// ZKWatchEvents) is answered by ZkClient's fireChildChangedEvents with exists + getChildren before
// the listener runs (2 reads), except a graceful leaver's own, which its shutdown cuts short; a
// joiner's registerConsumerInZK is followed by reinitializeConsumer's subscriptions: subscribeChildChanges
// on the ids (exists + getChildren) and subscribeDataChanges on each topic (exists): 2 + T; and each
// successful attempt that installed partitions starts the fetchers (updateFetcher), whose
// ConsumerFetcherManager.LeaderFinderThread lists and reads /brokers/ids: 1 + B. In all:
//
//	reads = A·(2B + T + M + 6) + O + NodeExists + 2·(W − left) + joined·(2 + T) + F·(1 + B)
//
// with A attempts, O = Σ O_attempt (c.Owned), W = ZKWatchEvents(c), F = c.Fetching.
func ZKReads(c ZKChange) int64 {
	b, t, m := int64(c.Brokers), int64(c.Topics), int64(c.Members())
	perAttempt := 2*b + t + m + 6
	w := ZKWatchEvents(c)
	return c.Attempts*perAttempt + c.Owned + c.NodeExists + 2*(w-int64(c.Left)) +
		int64(c.Joined)*(2+t) + int64(c.Fetching)*(1+b)
}

// ZKReadsResidualBound is the range that measured − ZKReads must lie in for the change, and why:
//   - low: −F·(1 + B). The LeaderFinderThread reads /brokers/ids on its own thread after the attempt
//     that woke it ended, so a lookup may come after the window closed (the group is stable once the
//     last member's assignment is installed): at most every lookup is outside the window.
//   - high: FailedAttempts·⌈P/M⌉. A failed attempt read the offsets of its decision but installed nothing,
//     so its partitions are not in Owned; the range assignor (one stream per member) gives it at most ⌈P/M⌉.
func ZKReadsResidualBound(c ZKChange) (lo, hi int64) {
	lo = -int64(c.Fetching) * int64(1+c.Brokers)
	if m := c.Members(); m > 0 && c.FailedAttempts > 0 {
		hi = c.FailedAttempts * int64((c.Partitions+m-1)/m)
	}
	return lo, hi
}

// ZKChangeOf measures a ZKChange in the window of ev (an Event of Compute(recs, "zk", ...)): members
// live before it, members started / stopped / crashed in it, its rebalance_end and assigned records,
// its owner-znode conflicts; brokers and topics are the distinct /brokers/ids/<id> and
// /brokers/topics/<t> read over the whole timeline (at least 1). recs must be the era's merged timeline,
// sorted by ts_ms (EraRun.Records); partitions is the topic's partition count.
func ZKChangeOf(recs []timeline.Record, ev Event, partitions int) ZKChange {
	c := ZKChange{Partitions: partitions}
	if len(recs) == 0 {
		return c
	}
	brokers, topics := map[string]bool{}, map[string]bool{}
	for _, r := range recs { // over the whole timeline
		if r.Kind == timeline.ZKOp && r.Op == "read" {
			if id, ok := strings.CutPrefix(r.Path, brokerIDsPrefix); ok && id != "" {
				brokers[id] = true
			}
			if t, ok := strings.CutPrefix(r.Path, brokerTopicsPrefix); ok && t != "" {
				topics[t] = true
			}
		}
	}
	w := membersAround(recs, ev, func(r timeline.Record) {
		switch r.Kind {
		case timeline.RebalanceEnd:
			c.Attempts++
			if r.OK == nil || !*r.OK {
				c.FailedAttempts++
			}
		case timeline.Assigned:
			n := 0
			for _, ps := range r.Partitions {
				n += len(ps)
			}
			c.Owned += int64(n)
			if n > 0 {
				c.Fetching++
			}
		case timeline.ZKOp:
			if r.Op == "write" && r.Result == ZKOwnerConflict {
				c.NodeExists++
			}
		}
	})
	c.Registered, c.Joined, c.Left, c.Crashed = w.registered, w.joined, w.left, w.crashed
	c.Brokers, c.Topics = max(len(brokers), 1), max(len(topics), 1)
	return c
}

// ZKChangeFromFigures is ZKChangeOf for a recorded result without its timeline: the window's figures
// (rebalance_attempts, ownership_conflicts), the members before it (registered), those started and
// stopped in it (the script's), the distinct members owning partitions after it (owners) and the
// topic's partitions, with one broker and one topic (the lab's single-broker runs). Owned is P, the
// partitions each member's one successful attempt installed between them: exact only when every
// participant took one attempt (attempts == rebalance_participants, no failed attempt); otherwise ok is
// false.
func ZKChangeFromFigures(f Figures, registered, joined, left, owners, partitions int) (c ZKChange, ok bool) {
	c = ZKChange{Brokers: 1, Topics: 1, Partitions: partitions, Registered: registered, Joined: joined, Left: left,
		Attempts: f.RebalanceAttempts, NodeExists: f.OwnershipConflicts, Owned: int64(partitions), Fetching: owners}
	return c, f.RebalanceAttempts == f.RebalanceParticipants && f.RebalanceFailures == 0
}

const (
	brokerIDsPrefix    = "/brokers/ids/"
	brokerTopicsPrefix = "/brokers/topics/"
)

// GroupChange is what a coordinator era's group requests for one change depend on, measured in the
// change's window (GroupChangeOf).
type GroupChange struct {
	Era        string // classic, cooperative or static
	Registered int    // N: members of the group before the change
	Joined     int    // members that joined in the window
	Left       int    // members that stopped gracefully in the window
	Crashed    int    // members that crashed in the window
	// Revokers: members that stay and revoked partitions in the window (a leaver's revocation on close
	// is not one). Cooperative: each one rejoins at once after its first-round revocation, which starts
	// the second round (0: no partition moved, no second round).
	Revokers int
}

// GroupCount is a protocol's count of group requests, by API (group_requests' APIs).
type GroupCount struct {
	JoinGroup, SyncGroup, Heartbeat, OffsetCommit, LeaveGroup int64
	Rounds                                                    int // JoinGroup rounds (generations)
}

// Total is the requests group_requests counts.
func (g GroupCount) Total() int64 {
	return g.JoinGroup + g.SyncGroup + g.Heartbeat + g.OffsetCommit + g.LeaveGroup
}

func (g GroupCount) String() string {
	return fmt.Sprintf("JoinGroup %d + SyncGroup %d + Heartbeat %d + OffsetCommit %d + LeaveGroup %d",
		g.JoinGroup, g.SyncGroup, g.Heartbeat, g.OffsetCommit, g.LeaveGroup)
}

// GroupRequests is the group protocol's count of requests for the change (Kafka 3.9's
// AbstractCoordinator / ConsumerCoordinator against the classic GroupCoordinator), with M = N + joined −
// left − crashed the members of the new generation and S = N − left − crashed the members that stay.
// Each round (generation):
//
//	JoinGroup  M, + joined in the first round for dynamic members: KIP-394's MEMBER_ID_REQUIRED answer to
//	           the first JoinGroup (a static member, KIP-345's group.instance.id, skips it)
//	SyncGroup  M
//	Heartbeat  the members that learn of the round from a Heartbeat answered REBALANCE_IN_PROGRESS:
//	           first round S (a joiner or leaver starts it itself); cooperative's second round M − revokers
//	           (the revokers rejoin by themselves)
//	OffsetCommit S: each staying member holding partitions commits before it rejoins
//	           (ConsumerCoordinator.onJoinPrepare with enable.auto.commit)
//
// plus, per graceful leaver, its commit on close and its LeaveGroup (none for a static member,
// KIP-345). Eager (classic, static) takes one round; cooperative (KIP-429) a second when the first
// revoked partitions (revokers > 0). What it leaves out is the members' periodic Heartbeats and
// auto-commits during the window: measured − model ≥ 0, growing with the window's length.
// ok=false for an era without a coordinator's classic protocol.
func GroupRequests(c GroupChange) (g GroupCount, ok bool) {
	era := spec.Era(c.Era)
	static := era.Static()
	if era.GroupProtocol() != spec.GroupProtocolClassic {
		return g, false
	}
	m := int64(c.Registered + c.Joined - c.Left - c.Crashed)
	s := int64(c.Registered - c.Left - c.Crashed)
	g.Rounds = 1
	g.JoinGroup, g.SyncGroup, g.Heartbeat, g.OffsetCommit = m, m, s, s
	if !static {
		g.JoinGroup += int64(c.Joined)
		g.LeaveGroup = int64(c.Left)
	}
	g.OffsetCommit += int64(c.Left)
	if era.Protocol() == spec.ProtocolCooperative && c.Revokers > 0 {
		g.Rounds = 2
		g.JoinGroup += m
		g.SyncGroup += m
		g.Heartbeat += m - int64(c.Revokers)
		g.OffsetCommit += s
	}
	return g, true
}

// GroupChangeOf measures a GroupChange in the window of ev (an Event of Compute(recs, era, ...)), and
// counts the window's group requests by API as measured (only group_requests' APIs; every answer, an
// error too, is a request): members live before it, started / stopped / crashed in it, and the members
// with a revoked record listing partitions in it that do not stop in it.
func GroupChangeOf(recs []timeline.Record, era string, ev Event) (GroupChange, GroupCount) {
	c := GroupChange{Era: era}
	var got GroupCount
	if len(recs) == 0 {
		return c, got
	}
	revokers := map[string]bool{}
	w := membersAround(recs, ev, func(r timeline.Record) {
		switch r.Kind {
		case timeline.Revoked:
			for _, ps := range r.Partitions {
				if len(ps) > 0 {
					revokers[r.Member] = true
				}
			}
		case timeline.GroupRequest:
			switch r.API {
			case "JoinGroup":
				got.JoinGroup++
			case "SyncGroup":
				got.SyncGroup++
			case "Heartbeat":
				got.Heartbeat++
			case "OffsetCommit":
				got.OffsetCommit++
			case "LeaveGroup":
				got.LeaveGroup++
			}
		}
	})
	for m := range revokers {
		if !w.stopped[m] {
			c.Revokers++
		}
	}
	c.Registered, c.Joined, c.Left, c.Crashed = w.registered, w.joined, w.left, w.crashed
	return c, got
}

// windowMembers is what both models read of the members around a change's window.
type windowMembers struct {
	registered            int             // members live (member_start, no member_stop) before the window
	joined, left, crashed int             // member_start, graceful member_stop, crash in the window
	stopped               map[string]bool // the members that stopped in the window
}

// membersAround walks recs (an era's merged timeline, sorted by ts_ms) around ev's window: the members
// live before it and those started, stopped and crashed in it; every record in the window is also handed
// to in.
func membersAround(recs []timeline.Record, ev Event, in func(timeline.Record)) windowMembers {
	w := windowMembers{stopped: map[string]bool{}}
	if len(recs) == 0 {
		return w
	}
	first := recs[0].TsMs
	lo, hi := first+ev.AtMs, first+ev.EndMs
	live := map[string]bool{}
	for _, r := range recs {
		if r.TsMs > hi {
			break
		}
		if r.TsMs < lo {
			switch r.Kind {
			case timeline.MemberStart:
				live[r.Member] = true
			case timeline.MemberStop:
				delete(live, r.Member)
			}
			continue
		}
		switch r.Kind {
		case timeline.MemberStart:
			w.joined++
		case timeline.MemberStop:
			w.stopped[r.Member] = true
			if r.How == "crash" {
				w.crashed++
			} else {
				w.left++
			}
		}
		in(r)
	}
	w.registered = len(live)
	return w
}
