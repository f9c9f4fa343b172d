package report

// The data a run hands to the report besides the figures: the test hosts, the side producers'
// checks, the ZooKeeper cross-check, the member processes' ends and the relations as checked. The
// runner (package scenarios) fills them; their JSON is the result JSON's.

import (
	"fmt"
	"strings"
)

// RelationResult is a relation as checked on one era of a run.
type RelationResult struct {
	Era      string `json:"era"`
	Relation string `json:"relation"`
	OK       bool   `json:"ok"`
	Skipped  bool   `json:"skipped,omitempty"` // could not be checked (e.g. the other era did not run)
	Got      string `json:"got"`
}

// ClockSample is a host's clock against the runner's (lab.ClockSample's fields: the runner converts).
type ClockSample struct {
	OffsetMs float64 `json:"offset_ms"` // host clock − local clock at the midpoint of the round trip
	RTTMs    float64 `json:"rtt_ms"`    // the round trip of the best sample
	Samples  int     `json:"samples"`
}

// HostCapabilities is what the kernel offered for test hosts (lab.Capabilities' fields: the runner
// converts).
type HostCapabilities struct {
	Netns  bool `json:"netns"`
	Veth   bool `json:"veth"`
	Bridge bool `json:"bridge"`
	Netem  bool `json:"netem"`
	// NetemReason says why Netem is false ("" when it is true).
	NetemReason string `json:"netem_reason,omitempty"`
}

// HostInfo is one test host of a run (the result JSON's "hosts").
type HostInfo struct {
	Name      string   `json:"name"` // "h1"
	Addr      string   `json:"addr"`
	Namespace string   `json:"namespace"`
	Runs      []string `json:"runs"` // "zookeeper", "broker", and the members placed there
	// Clock is the host's clock against the runner's, measured at the start: offset (host − runner)
	// and the round trip of the best of the samples; the offset is known to ± RTT/2.
	Clock ClockSample `json:"clock"`
}

// ProducerCheck is one side producer's outcome, read back from the side topic after the run.
type ProducerCheck struct {
	Producer string `json:"producer"`
	Acks     string `json:"acks"`
	Acked    int64  `json:"acked"` // records acknowledged
	// AckedAfterDown: of those, acknowledged after the first broker stop or kill.
	AckedAfterDown int64 `json:"acked_after_down"`
	Failed         int64 `json:"failed"` // records never acknowledged (their produce failed or did not finish)
	// FirstError is the first failed record's error, "" when none failed.
	FirstError string `json:"first_error,omitempty"`
	Lost       int64  `json:"lost"` // acknowledged, and not in the side topic at the end
	// LostElsewhere: of the lost, those on partitions that the broker taken down did not lead when it
	// went down. acks=1 can lose what a dying leader acknowledged, nothing else.
	LostElsewhere int64 `json:"lost_elsewhere"`
	// Duplicates: acknowledged records in the side topic more than once (a retry that the log kept twice).
	Duplicates int64 `json:"duplicates"`
	// MaxAckGapMs is the longest time, in ms, between two consecutive acknowledgments of any of the
	// producer's records: how long the broker's death held the whole producer up. acks=all waits on
	// every partition that had the dead broker in its ISR until the controller takes it out.
	MaxAckGapMs int64 `json:"max_ack_gap_ms"`
	// MaxPartitionAckGapMs is the same on one partition, the longest over the partitions: acks=1 waits
	// there for the dead leader's successor.
	MaxPartitionAckGapMs int64 `json:"max_partition_ack_gap_ms"`
	// LostPartitions are the partitions of the lost records, ascending.
	LostPartitions []int32 `json:"lost_partitions,omitempty"`
	// DownLedPartitions are the side topic's partitions that the brokers taken down led when they
	// went down, ascending.
	DownLedPartitions []int32 `json:"down_led_partitions"`
}

// ZKCrosscheck compares an era's ZooKeeper figures with the server's own counters.
type ZKCrosscheck struct {
	// Comparable is false when a node did not answer or restarted during the era (its counters
	// started again from zero): the packet and watch differences are then partial.
	Comparable bool `json:"comparable"`
	// ServerPacketsReceived: Σ over the nodes of mntr zk_packets_received, after the members stopped
	// minus before the era's producer started.
	ServerPacketsReceived int64 `json:"server_packets_received"`
	// TimelineZKOps: the members' zk_reads + zk_writes (the zk_op records) over the era.
	TimelineZKOps int64 `json:"timeline_zk_ops"`
	// PacketsNotInTimeline = server − timeline: pings, connect requests, closeSession, setWatches after
	// a reconnect, and the broker's own ZooKeeper traffic. Negative would mean recorded ops that never
	// reached the server (e.g. requests failed on a cut or stalled link).
	PacketsNotInTimeline int64 `json:"packets_not_in_timeline"`
	// ServerWatchesFired: Σ over the nodes of the growth of mntr zk_sum_node_{created,deleted,changed,
	// children}_watch_count (watchers triggered, one per session and path).
	ServerWatchesFired int64 `json:"server_watches_fired"`
	// TimelineWatchEvents: the members' zk_watch_events over the era.
	TimelineWatchEvents int64 `json:"timeline_watch_events"`
	// WatchesNotInTimeline = server − timeline: the broker's watches (and notifications lost with a
	// session that expired before they were read).
	WatchesNotInTimeline int64 `json:"watches_not_in_timeline"`
	// ServerSessionsExpired: Σ over the nodes of the growth of mntr zk_stale_sessions_expired, the
	// sessions the server expired (their owner's heartbeats did not come within the timeout).
	ServerSessionsExpired int64 `json:"server_sessions_expired"`
	// At the end of the script (wchp): sessions watching /consumers/<group>/ids, and the live members
	// whose current session should be among them.
	IdsPath             string   `json:"ids_path"`
	IdsWatchersServer   int      `json:"ids_watchers_server"`
	IdsWatchersExpected int      `json:"ids_watchers_expected"`
	MembersWithoutWatch []string `json:"members_without_watch,omitempty"`
	Notes               []string `json:"notes,omitempty"`
}

// Summary is the cross-check on one line.
func (c *ZKCrosscheck) Summary() string {
	s := fmt.Sprintf("server packets %d vs timeline zk ops %d (%+d not in timeline); server watches fired %d vs timeline %d (%+d); sessions expired by the server %d; %s watchers %d, live members %d",
		c.ServerPacketsReceived, c.TimelineZKOps, c.PacketsNotInTimeline, c.ServerWatchesFired, c.TimelineWatchEvents,
		c.WatchesNotInTimeline, c.ServerSessionsExpired, c.IdsPath, c.IdsWatchersServer, c.IdsWatchersExpected)
	if !c.Comparable {
		s += " (partial: " + strings.Join(c.Notes, "; ") + ")"
	}
	return s
}

// MemberProcess is how one member process ended (EraRun.Processes, the result JSON's "processes").
type MemberProcess struct {
	Member string `json:"member"`
	Host   string `json:"host,omitempty"` // the test host it ran in (--hosts)
	PID    int    `json:"pid"`
	// Stop is how the runner ended it: "sigterm" (graceful stop), "stop" (graceful stop by a "stop"
	// line on its stdin: the 0.8.2.2 connector's harness, which has no shutdown hook), "sigkill"
	// (crash, Ctrl-C), or "" when the process ended by itself (a member that gave up).
	Stop     string `json:"stop,omitempty"`
	Status   string `json:"status"`           // os.ProcessState's text: "exit status 0", "signal: killed"
	ExitCode int    `json:"exit_code"`        // -1 when a signal ended it
	Signal   string `json:"signal,omitempty"` // the signal that ended it: "SIGKILL", "SIGTERM", ...
}

// ZKCounters are one mntr snapshot per ZooKeeper node, in the order of the addresses given to
// the runner's scenarios.SnapshotZK (nil: the node did not answer).
type ZKCounters []map[string]int64

var watchFiredKeys = []string{"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"}

// DiffCounters fills the server side of c from two snapshots of addrs (SnapshotZK) and compares it
// with the timeline side, which the caller has set (TimelineZKOps, TimelineWatchEvents) for the same
// span. Comparable ends false when a node did not answer or restarted in between.
func (c *ZKCrosscheck) DiffCounters(addrs []string, before, after ZKCounters) {
	c.Comparable = true
	for i := range addrs {
		b, a := before[i], after[i]
		if b == nil || a == nil {
			c.Comparable = false
			c.Notes = append(c.Notes, fmt.Sprintf("node %s did not answer mntr", addrs[i]))
			continue
		}
		dp := a["zk_packets_received"] - b["zk_packets_received"]
		var dw int64
		for _, k := range watchFiredKeys {
			dw += a[k] - b[k]
		}
		if dp < 0 || dw < 0 {
			c.Comparable = false
			c.Notes = append(c.Notes, fmt.Sprintf("node %s restarted during the era (counters reset)", addrs[i]))
			continue
		}
		c.ServerPacketsReceived += dp
		c.ServerWatchesFired += dw
		c.ServerSessionsExpired += a["zk_stale_sessions_expired"] - b["zk_stale_sessions_expired"]
	}
	c.PacketsNotInTimeline = c.ServerPacketsReceived - c.TimelineZKOps
	c.WatchesNotInTimeline = c.ServerWatchesFired - c.TimelineWatchEvents
}
