package figures

import (
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// FigureDef defines one figure. FigureTable is the one list of figures: FigureNames, the JSON keys of
// Figures, Figures.Get and docs/design.md's figure table (FigureTableMarkdown; a test checks the document
// against it) all follow it.
type FigureDef struct {
	Name       string // the JSON key
	Unit       string // "ms", "count" or "members"
	Definition string // what it counts, as docs/design.md's figure table says (markdown)
	// Counted says the figure is a count of records (count gives what one record adds); the others come
	// from replaying the records' ownership and rebalance state (compute; the records it reads follow
	// docs/design.md's "What the members must emit").
	Counted bool

	field func(*Figures) *int64
	count func(timeline.Record) int64
}

// FigureTable lists every figure in docs/design.md's order (the rows of RenderTable).
var FigureTable = []FigureDef{
	{Name: FigTimeToStableMs, Unit: "ms", field: func(f *Figures) *int64 { return &f.TimeToStableMs },
		Definition: "trigger → every partition owned by exactly one live member and no rebalance running (0: the group never left stability; -1: it left and never came back)"},
	{Name: FigRebalanceParticipants, Unit: "count", field: func(f *Figures) *int64 { return &f.RebalanceParticipants },
		Definition: "distinct members with a `rebalance_begin` in the window"},
	counted(FigZKReads, func(f *Figures) *int64 { return &f.ZKReads },
		"ZooKeeper reads (getData, getChildren, exists) of all members: `zk_op{op:read}`",
		func(r timeline.Record) bool { return r.Kind == timeline.ZKOp && r.Op == "read" }),
	counted(FigZKWrites, func(f *Figures) *int64 { return &f.ZKWrites },
		"ZooKeeper writes (create, setData, delete) of all members: `zk_op{op:write}`",
		func(r timeline.Record) bool { return r.Kind == timeline.ZKOp && r.Op == "write" }),
	counted(FigZKOffsetWrites, func(f *Figures) *int64 { return &f.ZKOffsetWrites },
		"the `zk_writes` that store offsets: paths at or below `/consumers/<g>/offsets` (0 with `offsets.storage=kafka` without dual commit)",
		func(r timeline.Record) bool {
			return r.Kind == timeline.ZKOp && r.Op == "write" && isOffsetPath(r.Path)
		}),
	counted(FigZKWatchEvents, func(f *Figures) *int64 { return &f.ZKWatchEvents },
		"ZooKeeper watch notifications received by all members: `zk_watch`",
		func(r timeline.Record) bool { return r.Kind == timeline.ZKWatch }),
	counted(FigGroupRequests, func(f *Figures) *int64 { return &f.GroupRequests },
		"JoinGroup + SyncGroup + Heartbeat + LeaveGroup + OffsetCommit + ConsumerGroupHeartbeat requests (`group_request`; other APIs are not counted)",
		func(r timeline.Record) bool { return r.Kind == timeline.GroupRequest && groupAPIs[r.API] }),
	counted(FigRebalanceAttempts, func(f *Figures) *int64 { return &f.RebalanceAttempts },
		"rebalance attempts: `rebalance_end` records (zk: each pass of the `rebalance.max.retries` loop; coordinator: each JoinGroup+SyncGroup round)",
		func(r timeline.Record) bool { return r.Kind == timeline.RebalanceEnd }),
	{Name: FigRebalanceFailures, Unit: "count", field: func(f *Figures) *int64 { return &f.RebalanceFailures },
		Definition: "rebalances given up: the last `rebalance_end` has ok=false and the member's next `rebalance_begin`, a graceful `member_stop` or the end of the run closes it (a crash is not a failure)"},
	{Name: FigRevocations, Unit: "count", field: func(f *Figures) *int64 { return &f.Revocations },
		Definition: "owned partitions listed in `revoked` (eager: all; cooperative: only those that move)"},
	counted(FigOwnershipConflicts, func(f *Figures) *int64 { return &f.OwnershipConflicts },
		"zk: owner-znode claims that found another consumer thread's node: `zk_op{op:write, result:conflict}` (NodeExists with the member's own thread id is a success)",
		func(r timeline.Record) bool {
			return r.Kind == timeline.ZKOp && r.Op == "write" && r.Result == ZKOwnerConflict
		}),
	{Name: FigMaxConcurrentOwners, Unit: "members", field: func(f *Figures) *int64 { return &f.MaxConcurrentOwners },
		Definition: "most members delivering the same partition at once (a member delivers a partition from its first `deliver` after `assigned` until `revoked` / `member_stop`); a maximum, not a total"},
	{Name: FigConcurrentOwnerMs, Unit: "ms", field: func(f *Figures) *int64 { return &f.ConcurrentOwnerMs },
		Definition: "split brain as time: Σ over partitions of the time during which two or more members deliver the partition at once (delivering as for `max_concurrent_owners`); a partition delivered by three members counts once"},
	{Name: FigUnownedPartitionMs, Unit: "ms", field: func(f *Figures) *int64 { return &f.UnownedPartitionMs },
		Definition: "Σ over partitions of time with produced-but-undelivered records and no live owner"},
	{Name: FigPausedMemberMs, Unit: "ms", field: func(f *Figures) *int64 { return &f.PausedMemberMs },
		Definition: "Σ over live members of time during which a member that held partitions when its rebalance began holds none while it runs: the stop-the-world pause of eager rebalancing"},
	{Name: FigDuplicates, Unit: "count", field: func(f *Figures) *int64 { return &f.Duplicates },
		Definition: "deliveries of an already-delivered (partition, offset); counted in the latest trigger's event even after its window ended"},
	{Name: FigLost, Unit: "count", field: func(f *Figures) *int64 { return &f.Lost },
		Definition: "produced offsets never delivered by the end of the run; in events, in the first window that ends at or after the produce"},
	{Name: FigStaleCommitsApplied, Unit: "count", field: func(f *Figures) *int64 { return &f.StaleCommitsApplied },
		Definition: "commits by a member for a partition of which it was not the owner of record when the commit was applied (zk: per the owner znodes; coordinator: wrong generation or member) that landed: `commit{result:applied}`; applied when its request arrived: its `sent_ms`, or the end of a stall of the link carrying it that held the request (without `sent_ms`, its answer's `ts_ms`)"},
	{Name: FigStaleCommitsRejected, Unit: "count", field: func(f *Figures) *int64 { return &f.StaleCommitsRejected },
		Definition: "the same stale commits that were refused: `commit{result:rejected}`"},
	{Name: FigInvConsumedNotMember, Unit: "count", field: func(f *Figures) *int64 { return &f.InvConsumedNotMember },
		Definition: "deliveries by a member not in the group: before its first `assigned`, after `member_stop`, between a `revoked` and the next `assigned`, and (zk) from `session_expired` until it claims again"},
	{Name: FigInvConsumedUnowned, Unit: "count", field: func(f *Figures) *int64 { return &f.InvConsumedUnowned },
		Definition: "deliveries of a partition of which the member is not the owner of record (a later claim or generation gave it to another member)"},
	{Name: FigInvOffsetsNotContiguous, Unit: "count", field: func(f *Figures) *int64 { return &f.InvOffsetsNotContiguous },
		Definition: "deliveries whose offset is not the member's previous one of that partition + 1, within one assignment"},
	{Name: FigInvCommitAheadOfPosition, Unit: "count", field: func(f *Figures) *int64 { return &f.InvCommitAheadOfPosition },
		Definition: "applied commits ahead of the committing member's position (its last delivery + 1; before any, the group's last commit)"},
	{Name: FigInvConsumedBehindCommitted, Unit: "count", field: func(f *Figures) *int64 { return &f.InvConsumedBehindCommitted },
		Definition: "deliveries below the group's last applied commit of the partition"},
	{Name: FigInvRevokedUnowned, Unit: "count", field: func(f *Figures) *int64 { return &f.InvRevokedUnowned },
		Definition: "partitions a member revoked without owning them"},
}

// counted defines a figure that counts the records for which match holds.
func counted(name string, field func(*Figures) *int64, definition string, match func(timeline.Record) bool) FigureDef {
	return FigureDef{Name: name, Unit: "count", Definition: definition, Counted: true, field: field,
		count: func(r timeline.Record) int64 {
			if match(r) {
				return 1
			}
			return 0
		}}
}

// FigureNames lists every figure in FigureTable's order.
var FigureNames = func() []string {
	out := make([]string, len(FigureTable))
	for i, d := range FigureTable {
		out[i] = d.Name
	}
	return out
}()

// countedFigures are FigureTable's Counted figures.
var countedFigures = func() []FigureDef {
	var out []FigureDef
	for _, d := range FigureTable {
		if d.Counted {
			out = append(out, d)
		}
	}
	return out
}()

// groupAPIs are the requests group_requests counts.
var groupAPIs = map[string]bool{
	"JoinGroup": true, "SyncGroup": true, "Heartbeat": true, "LeaveGroup": true, "OffsetCommit": true,
	"ConsumerGroupHeartbeat": true,
}

// isOffsetPath: path is /consumers/<group>/offsets or below it (ZkUtils' ZKGroupTopicDirs.consumerOffsetDir).
func isOffsetPath(path string) bool {
	parts := strings.SplitN(path, "/", 5) // "", consumers, <group>, offsets, rest
	return len(parts) >= 4 && parts[0] == "" && parts[1] == "consumers" && parts[2] != "" && parts[3] == "offsets"
}

// FigureTableMarkdown renders FigureTable as docs/design.md's figure table: | figure | unit | definition |.
func FigureTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| figure | unit | definition |\n|---|---|---|\n")
	for _, d := range FigureTable {
		b.WriteString("| `" + d.Name + "` | " + d.Unit + " | " + d.Definition + " |\n")
	}
	return b.String()
}
