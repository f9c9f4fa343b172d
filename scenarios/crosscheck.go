package scenarios

// The zk era's figures come from the members' own records. The ZooKeeper server counts too, with its
// four-letter words: mntr (packets received, watches fired) and wchp (who watches which path). The
// runner compares the two and reports the difference; the server's side also sees what the timeline
// does not record (pings, connects, closeSession, the broker's own ZooKeeper traffic).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
)

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

// ZKCounters are one mntr snapshot per ZooKeeper node, in the order of the addresses given to
// SnapshotZK (nil: the node did not answer).
type ZKCounters []map[string]int64

var watchFiredKeys = []string{"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"}

// SnapshotZK asks every node of addrs ("host:port") for mntr (3 s each). Two snapshots around a span
// give the server's side of a cross-check (DiffCounters).
func SnapshotZK(ctx context.Context, addrs []string) ZKCounters {
	out := make(ZKCounters, len(addrs))
	for i, a := range addrs {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lab.FourLetter(c, a, "mntr")
		cancel()
		if err == nil {
			if m := lab.ParseMntr(s); len(m) > 0 {
				out[i] = m
			}
		}
	}
	return out
}

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

// watchersOf returns the sessions watching path, over every node that answers wchp.
func watchersOf(ctx context.Context, addrs []string, path string) (map[int64]bool, error) {
	out := map[int64]bool{}
	var errs []string
	for _, a := range addrs {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lab.FourLetter(c, a, "wchp")
		cancel()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, id := range lab.ParseWatchesByPath(s)[path] {
			out[id] = true
		}
	}
	if len(errs) == len(addrs) {
		return nil, fmt.Errorf("wchp: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
