package figures

// Figures from a merged timeline (docs/design.md "Scenarios, timeline and figures"), pure functions of the
// records: no clock, no I/O. This file is the API (Compute and what it returns); compute.go drives the
// replay (replay.go: its state; replay_apply.go: one record at a time), which also fills the report's
// trace (trace.go). The rules a member must follow when emitting are docs/design.md's "What the members
// must emit (the rules the figures read)"; each figure's definition is FigureTable's (figure_table.go).

import (
	"github.com/rebalancelab/rebalancelab/timeline"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// Figure names, the JSON keys of Figures, in docs/design.md's order.
const (
	FigTimeToStableMs        = "time_to_stable_ms"
	FigRebalanceParticipants = "rebalance_participants"
	FigZKReads               = "zk_reads"
	FigZKWrites              = "zk_writes"
	FigZKOffsetWrites        = "zk_offset_writes"
	FigZKWatchEvents         = "zk_watch_events"
	FigGroupRequests         = "group_requests"
	FigRebalanceAttempts     = "rebalance_attempts"
	FigRebalanceFailures     = "rebalance_failures"
	FigRevocations           = "revocations"
	FigOwnershipConflicts    = "ownership_conflicts"
	FigMaxConcurrentOwners   = "max_concurrent_owners"
	FigConcurrentOwnerMs     = "concurrent_owner_ms"
	FigUnownedPartitionMs    = "unowned_partition_ms"
	FigPausedMemberMs        = "paused_member_ms"
	FigDuplicates            = "duplicates"
	FigLost                  = "lost"
	FigStaleCommitsApplied   = "stale_commits_applied"
	FigStaleCommitsRejected  = "stale_commits_rejected"
)

// ZKOwnerConflict is timeline.ZKOwnerConflict, re-exported for readers of this package.
const ZKOwnerConflict = timeline.ZKOwnerConflict

// NeverStable is time_to_stable_ms when the group was disturbed and did not become stable in the window.
const NeverStable int64 = -1

// Why an event window ended (Event.End).
const (
	EndStable      = "stable"       // the group became stable: time_to_stable_ms is measured
	EndNextTrigger = "next_trigger" // the next trigger came first
	EndOfRun       = "end_of_run"   // the timeline ended first
)

// Figures are one window's figures, one field per FigureTable entry (its JSON key is the entry's name,
// its definition the entry's); every value is an integer count or ms.
type Figures struct {
	TimeToStableMs        int64 `json:"time_to_stable_ms"`
	RebalanceParticipants int64 `json:"rebalance_participants"`
	ZKReads               int64 `json:"zk_reads"`
	ZKWrites              int64 `json:"zk_writes"`
	ZKOffsetWrites        int64 `json:"zk_offset_writes"`
	ZKWatchEvents         int64 `json:"zk_watch_events"`
	GroupRequests         int64 `json:"group_requests"`
	RebalanceAttempts     int64 `json:"rebalance_attempts"`
	RebalanceFailures     int64 `json:"rebalance_failures"`
	Revocations           int64 `json:"revocations"`
	OwnershipConflicts    int64 `json:"ownership_conflicts"`
	MaxConcurrentOwners   int64 `json:"max_concurrent_owners"`
	ConcurrentOwnerMs     int64 `json:"concurrent_owner_ms"`
	UnownedPartitionMs    int64 `json:"unowned_partition_ms"`
	PausedMemberMs        int64 `json:"paused_member_ms"`
	Duplicates            int64 `json:"duplicates"`
	Lost                  int64 `json:"lost"`
	StaleCommitsApplied   int64 `json:"stale_commits_applied"`
	StaleCommitsRejected  int64 `json:"stale_commits_rejected"`

	// Kafka's consumer invariants, violations counted (invariants.go has each one's definition).
	InvConsumedNotMember       int64 `json:"invariant_consumed_not_member"`
	InvConsumedUnowned         int64 `json:"invariant_consumed_unowned"`
	InvOffsetsNotContiguous    int64 `json:"invariant_offsets_not_contiguous"`
	InvCommitAheadOfPosition   int64 `json:"invariant_commit_ahead_of_position"`
	InvConsumedBehindCommitted int64 `json:"invariant_consumed_behind_committed"`
	InvRevokedUnowned          int64 `json:"invariant_revoked_unowned"`
}

func (f *Figures) fields() []*int64 {
	out := make([]*int64, len(FigureTable))
	for i, d := range FigureTable {
		out[i] = d.field(f)
	}
	return out
}

// Get returns the figure named by its JSON key; ok=false for an unknown name.
func (f Figures) Get(name string) (v int64, ok bool) {
	for i, p := range f.fields() {
		if FigureNames[i] == name {
			return *p, true
		}
	}
	return 0, false
}

func (f *Figures) set(name string, v int64) {
	for i, p := range f.fields() {
		if FigureNames[i] == name {
			*p = v
		}
	}
}

// inc adds 1 to the figure named name (one of FigureNames).
func (f *Figures) inc(name string) {
	for i, p := range f.fields() {
		if FigureNames[i] == name {
			*p++
			return
		}
	}
	panic("figures: unknown figure " + name)
}

// Event is one trigger's window: from the trigger record until stable, the next trigger, or the end.
type Event struct {
	Trigger string  `json:"trigger"` // the trigger's name
	AtMs    int64   `json:"at_ms"`   // trigger time, ms after the timeline's first record
	EndMs   int64   `json:"end_ms"`  // window end, ms after the timeline's first record
	End     string  `json:"end"`     // EndStable | EndNextTrigger | EndOfRun
	Figures Figures `json:"figures"`
}

// Result is one era's figures.
type Result struct {
	Era    string  `json:"era"`
	Totals Figures `json:"totals"` // the run after the group's formation; time_to_stable_ms: see Compute
	Events []Event `json:"events"`
	// Start is the group's formation: from the first record until the group is first stable or the
	// first trigger, whichever comes first (nil when the timeline starts with a trigger or is empty).
	// Its costs are not in Totals.
	Start *Event `json:"start,omitempty"`
	// NotApplicable names the figures this era cannot produce (see NotApplicable); they are 0 here and
	// are no evidence of anything.
	NotApplicable []string `json:"not_applicable"`
	// FinalOwners maps every known partition, keyed "<topic>-<partition>" (Kafka's TopicPartition
	// string), to the live member(s) owning it at the end: one name, "" for none, comma-joined sorted
	// names when several members still claim it.
	FinalOwners map[string]string `json:"final_owners"`
	// Faults are the faults' windows, from their fault{phase:"begin"} and fault{phase:"end"} records
	// (when each really took effect — at the member's proxies for a link fault — not when the script
	// asked for it), in order of beginning.
	Faults []FaultWindow `json:"faults"`
	// Warnings describe records that were skipped or inconsistent (missing fields, other eras, unsorted input).
	Warnings []string `json:"warnings,omitempty"`
}

// FaultWindow is one fault from its begin record to its end record (ms after the timeline's first
// record). A fault without an end record (still in force at the end) has Open set and EndMs at the last
// record.
type FaultWindow struct {
	Action     string `json:"action"` // stall, cut, "latency <d>ms", zk-stop, broker-stop
	Target     string `json:"target"` // "<member>/<link>", "zookeeper/<i>", "broker/<id>"
	StartMs    int64  `json:"start_ms"`
	EndMs      int64  `json:"end_ms"`
	DurationMs int64  `json:"duration_ms"`
	Open       bool   `json:"open,omitempty"`
}

// FigureOptions tunes Compute.
type FigureOptions struct {
	// Partitions lists partitions known to exist from the first record (topic → partition ids), so a
	// partition nobody produced to or was assigned still has to be owned for the group to be stable. Any
	// partition named by a record joins the known set at that record anyway; do not list partitions that
	// are added during the run.
	Partitions map[string][]int32
	// NotMeasured are figures this run cannot measure beside the era's NotApplicable (e.g. with Kafka's
	// VerifiableConsumer as members, scenarios/members/kafka.go): they join the result's not_applicable (n/a).
	NotMeasured []string `json:"not_measured,omitempty"`
	// OwnsRecords: the records are the caller's own copy, to be dropped after (the settle's probe):
	// Compute may reorder and redate them in place instead of copying them.
	OwnsRecords bool `json:"-"`
}

// NotApplicable returns the figures an era cannot produce, and why:
//   - zk: group_requests (the 0.8 connector never talks to a group coordinator; its group is ZooKeeper) and
//     stale_commits_rejected (offsets are an unconditional setData of /consumers/<g>/offsets/<t>/<p>:
//     nothing can refuse a stale commit, so only stale_commits_applied exists).
//   - classic, cooperative, static, kip848: zk_reads, zk_writes, zk_offset_writes, zk_watch_events (the members never talk to
//     ZooKeeper; the broker's own ZooKeeper traffic is not a member's) and ownership_conflicts (the leader,
//     or the coordinator for kip848, computes one assignment; nobody claims partitions).
//
// An unknown era gets nil (everything counted).
func NotApplicable(era string) []string {
	switch e := spec.Era(era); {
	case e.UsesZooKeeper():
		return []string{FigGroupRequests, FigStaleCommitsRejected}
	case e.Coordinated():
		return []string{FigZKReads, FigZKWrites, FigZKOffsetWrites, FigZKWatchEvents, FigOwnershipConflicts}
	}
	return nil
}

// Compute returns era's figures from records (a merged timeline; sorted by ts_ms here if it is not).
// Records whose era is neither era nor "" are skipped (the runner's and producer's records may carry "").
//
// Events: one per `trigger` record, in order, with that window's figures (see Figures for each figure and
// Event for the window). Start: the group's formation, from the first record until the group is first
// stable or the first trigger. Totals: the figures from the first trigger to the end — the formation's
// costs are in Start, not in Totals — except time_to_stable_ms, which is the worst event's (NeverStable
// if any event never became stable). A timeline without triggers is all formation: its Totals cover it
// all, time_to_stable_ms being the formation's. duplicates, lost and the invariant figures count the
// whole timeline in Totals whatever the phase: they are correctness, not cost.
//
// Compute never fails: malformed records (a deliver without partition or offset, a commit without
// partition, ...) are skipped and described in Result.Warnings.
//
// What the members must emit, the rules the replay reads, is docs/design.md's "What the members must
// emit (the rules the figures read)"; what each figure counts is FigureTable's.
func Compute(records []timeline.Record, era string, opts FigureOptions) Result {
	res, _ := compute(records, era, opts)
	return res
}

// ComputeTrace is Compute with the Trace the HTML report draws from the same replay.
func ComputeTrace(records []timeline.Record, era string, opts FigureOptions) (Result, *Trace) {
	return compute(records, era, opts)
}
