package scenarios

// Figures from a merged timeline (docs/design.md "Scenarios, timeline and figures"), pure functions of the
// records: no clock, no I/O. The rules a member must follow when emitting are replay's doc; each figure's
// definition is FigureTable's (figure_table.go).

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
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
	panic("scenarios: unknown figure " + name)
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
}

// Eras the figures know about (docs/design.md "Eras").
var knownEras = map[string]bool{"zk": true, "classic": true, "cooperative": true, "static": true, "kip848": true}

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
	switch era {
	case "zk":
		return []string{FigGroupRequests, FigStaleCommitsRejected}
	case "classic", "cooperative", "static", "kip848":
		return []string{FigZKReads, FigZKWrites, FigZKOffsetWrites, FigZKWatchEvents, FigOwnershipConflicts}
	}
	return nil
}

var groupAPIs = map[string]bool{
	"JoinGroup": true, "SyncGroup": true, "Heartbeat": true, "LeaveGroup": true, "OffsetCommit": true,
	"ConsumerGroupHeartbeat": true,
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
// What the members must emit, the rules the replay reads, is replay's doc; what each figure counts is
// FigureTable's.
func Compute(records []timeline.Record, era string, opts FigureOptions) Result {
	res, _ := compute(records, era, opts)
	return res
}

// tp is one partition; tpo one offset of it.
type tp struct {
	topic string
	part  int32
}

func (t tp) String() string { return fmt.Sprintf("%s-%d", t.topic, t.part) }

type tpo struct {
	tp
	off int64
}

type memberState struct {
	live        bool
	joining     bool // member_start seen, no assigned since
	rebalancing bool // a rebalance is running
	heldAtBegin bool // the member owned partitions when its running rebalance began
	owned       map[tp]bool
	delivering  map[tp]bool
}

func (m *memberState) busy() bool { return m.live && (m.joining || m.rebalancing) }

// paused: a member that was consuming holds nothing while its rebalance runs (PausedMemberMs).
func (m *memberState) paused() bool {
	return m.live && m.rebalancing && m.heldAtBegin && len(m.owned) == 0
}

// window accumulates one event's figures.
type window struct {
	startIdx, endIdx int
	startTs, endTs   int64
	trigger          string
	end              string
	implicit         bool // the formation window: reported as Result.Start, not as an event
	open             bool
	seenUnstable     bool
	stableAt         int64
	participants     map[string]bool
	f                Figures
}

// trace is what the HTML report draws; compute fills it as it replays.
type trace struct {
	firstTs, lastTs int64
	parts           []tp                    // every known partition, by topic then partition
	segments        map[tp][]segment        // ownership intervals, member view
	busy            []span                  // some live member rebalancing or joining
	marks           []mark                  // faults and triggers
	members         []string                // every member seen, sorted
	memberSpans     map[string][]memberSpan // each member's lane state over time, while live
	delivers        map[string][]int64      // each member's deliver records' ts_ms
	lag             map[tp][]lagPoint       // produced-but-not-delivered offsets, after each change
}

// laneState is what a member's lane in the HTML report shows at a moment.
type laneState string

const (
	laneConsuming   laneState = "consuming"   // owns partitions, no rebalance running
	laneRebalancing laneState = "rebalancing" // a rebalance runs while it still owns partitions (assigned, not fetching new work)
	lanePaused      laneState = "paused"      // held partitions when its rebalance began, holds none now (paused_member_ms)
	laneJoining     laneState = "joining"     // joining or rebalancing, never held partitions in this rebalance
	laneIdle        laneState = "idle"        // live, owns nothing, no rebalance running
)

type memberSpan struct {
	state      laneState
	start, end int64
}

type lagPoint struct {
	ts      int64
	pending int
}

func (m *memberState) laneState() laneState {
	switch {
	case !m.live:
		return ""
	case m.paused():
		return lanePaused
	case m.busy() && len(m.owned) > 0:
		return laneRebalancing
	case m.busy():
		return laneJoining
	case len(m.owned) > 0:
		return laneConsuming
	}
	return laneIdle
}

// track records a member's lane state from ts on.
func (tr *trace) track(name string, st laneState, ts int64) {
	spans := tr.memberSpans[name]
	if n := len(spans); n > 0 && spans[n-1].end < 0 {
		if spans[n-1].state == st {
			return
		}
		if spans[n-1].start == ts { // a state that lasted no ms is not drawn
			spans = spans[:n-1]
		} else {
			spans[n-1].end = ts
		}
	}
	if n := len(spans); n > 0 && spans[n-1].end == ts && spans[n-1].state == st {
		spans[n-1].end = -1 // back in the state it left in this ms
	} else if st != "" {
		spans = append(spans, memberSpan{state: st, start: ts, end: -1})
	}
	tr.memberSpans[name] = spans
}

type segment struct {
	member     string
	start, end int64 // ms, absolute
	open       bool  // still owned at the end of the timeline
}

type span struct{ start, end int64 }

type mark struct {
	ts   int64
	kind timeline.Kind
	text string
}

// replay is compute's state while it replays a timeline's records in order (apply).
//
// # What the members must emit (the rules the figures read)
//
// Ownership. Every member keeps, from its own records, a set of owned partitions:
//   - `assigned{partitions, generation}` lists the member's FULL current assignment after the change (also
//     for cooperative-sticky, where Kafka's onPartitionsAssigned gets only the added partitions: emit the
//     whole owned set). It replaces the set. Emit it after every successful rebalance, even when empty: a
//     started member counts as joining until its first `assigned`.
//   - `revoked{partitions}` lists what the member gives up (eager: everything; cooperative: the partitions
//     that move; also onPartitionsLost). Listed partitions the member does not own are ignored, so a
//     repeated revoke counts once. Emit it AFTER the commit that precedes a revocation (Kafka commits in
//     onJoinPrepare before onPartitionsRevoked; 0.8.2's syncedRebalance commits before
//     releasePartitionOwnership): a commit after the member's own revoke is stale by definition.
//   - `member_stop` (graceful or crash) ends every ownership of that member. A partition dropped by an
//     `assigned` without a `revoked` leaves the set too, but is not a revocation.
//   - A restarted member (same scenario name) emits `member_start` again. Ownership records of a stopped
//     member are ignored (with a warning); its deliveries and commits still count (they happened).
//   - Producer, runner and fault records need no member_start: only members with group records count.
//
// The group's view. The owner of record of a partition is the member whose latest `assigned` listed
// it, as long as that member still owns it (no revoke, no assigned without it, no stop since). This is
// the coordinator's generation/member fencing seen from the timeline, and for zk the owner znode: a claim
// is recorded as `assigned`. A commit is stale when its member is not the owner of record at the moment
// the commit was applied: when its request arrived (commitAppliedMs: its sent_ms, or the heal of a
// stall that held it; prepare moves the record there), not when its answer came.
// (zk: between a session expiry and the next member's claim the records cannot see the vanished
// ephemeral znode, so the old owner still counts as owner there.)
//
// Rebalances. `rebalance_begin` once when a rebalance starts (zk: entry of syncedRebalance; coordinator:
// onJoinPrepare, before the first JoinGroup); `rebalance_end{ok, attempt}` once per attempt (zk: each
// pass of the rebalance.max.retries loop; coordinator: each JoinGroup+SyncGroup round, ok=false when it
// has to rejoin). A retry inside the same rebalance emits no new `rebalance_begin`. A rebalance is GIVEN UP
// (rebalance_failures) when its last `rebalance_end` has ok=false and it is closed by the member's next
// `rebalance_begin`, a graceful `member_stop`, or the end of the timeline. A crash closes it without a
// failure (it did not give up, it died). The `error{text}` a connector writes when it gives up is for
// readers; the figures do not parse text. A rebalance is running from `rebalance_begin` until an ok end,
// the given-up end, or `member_stop`.
//
// Time. Records are taken in ts_ms order (a stable sort, so one process's records keep their order within
// a millisecond). States are compared after ALL records of a millisecond are applied: two members
// changing hands within the same ms do not count as overlapping. Resolution is 1 ms.
type replay struct {
	recs     []timeline.Record
	giveUp   map[int]bool
	members  map[string]*memberState
	universe map[tp]bool
	claim    map[tp]int    // live members owning the partition
	latest   map[tp]string // owner of record
	pending  map[tp]int    // produced offsets not yet delivered
	produced map[tpo]int   // first produce index of each offset
	delivs   map[tpo]int   // deliveries per offset
	deliv    map[tp]int    // members delivering the partition
	touched  map[tp]bool   // deliv increased in the current ms
	bad      int           // known partitions with claim != 1
	busy     int           // live members busy
	paused   int           // live members paused
	unowned  int           // known partitions with pending > 0 and claim == 0
	totals   Figures
	partsAll map[string]bool
	wins     []*window
	cur      *window
	lastEv   *window // the latest trigger's window, open or not
	warn     []string
	tr       *trace
	openSeg  map[tp]map[string]int // index into tr.segments[tp] of an open segment
	busyFrom int64
	inv      *invariantChecker
	// forming: in the group's formation (the Start window) of a timeline that has triggers: from the
	// first record until the group is first stable or the first trigger. Its costs are not in Totals.
	forming bool
	now     int64 // ts_ms of the record being applied

	faults    []FaultWindow
	openFault map[string]int // action+target → index into faults of a fault not yet ended
}

const maxWarnings = 20

func (r *replay) warnf(format string, a ...any) {
	if len(r.warn) < maxWarnings {
		r.warn = append(r.warn, fmt.Sprintf(format, a...))
	} else if len(r.warn) == maxWarnings {
		r.warn = append(r.warn, "further warnings suppressed")
	}
}

// prepare filters records to era and sorts them by ts_ms (stable).
func prepare(records []timeline.Record, era string) (recs []timeline.Record, warn []string) {
	skipped := 0
	for _, rec := range records {
		if rec.Era != era && rec.Era != "" {
			skipped++
			continue
		}
		recs = append(recs, rec)
	}
	if skipped > 0 {
		warn = append(warn, fmt.Sprintf("%d records of other eras skipped", skipped))
	}
	if !sort.SliceIsSorted(recs, func(i, j int) bool { return recs[i].TsMs < recs[j].TsMs }) {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].TsMs < recs[j].TsMs })
		warn = append(warn, "records were not sorted by ts_ms; sorted (stable)")
	}
	if !knownEras[era] {
		warn = append(warn, fmt.Sprintf("unknown era %q: no figure marked not applicable", era))
	}
	return redateCommits(recs, era), warn
}

// redateCommits returns recs (sorted by ts_ms) with every commit record that carries sent_ms moved,
// stably, to the moment its request was applied (commitAppliedMs): the replay judges a commit there,
// against the owner of record of that moment, not at its answer.
func redateCommits(recs []timeline.Record, era string) []timeline.Record {
	stalls := stallWindows(recs)
	moved := false
	for i := range recs {
		if recs[i].Kind != timeline.Commit || recs[i].SentMs == 0 {
			continue
		}
		if at := commitAppliedMs(recs[i], era, stalls); at != recs[i].TsMs {
			if !moved {
				recs = slices.Clone(recs) // the caller's records stay as they were
				moved = true
			}
			recs[i].TsMs = at
		}
	}
	if moved {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].TsMs < recs[j].TsMs })
	}
	return recs
}

// stallWindows are the stall faults' windows by target ("<member>/<link>"), from their begin and end
// records in order; a stall without an end lasts to math.MaxInt64.
func stallWindows(recs []timeline.Record) map[string][]span {
	out := map[string][]span{}
	for _, rec := range recs {
		if rec.Kind != timeline.Fault || rec.Action != lab.FaultStall {
			continue
		}
		ws := out[rec.Target]
		switch rec.Phase {
		case timeline.FaultBegin:
			out[rec.Target] = append(ws, span{rec.TsMs, math.MaxInt64})
		case timeline.FaultEnd:
			if n := len(ws); n > 0 && ws[n-1].end == math.MaxInt64 {
				ws[n-1].end = rec.TsMs
			}
		}
	}
	return out
}

// commitLink is the member's link (lab.Link) that carries a commit record's request in era: the
// coordinator link for the coordinator eras; in the zk era ZooKeeper for a write of its offsets znode
// (api ""), the broker connections (lab.LinkFetch) for 0.8.2's OffsetCommit to Kafka.
func commitLink(era, api string) lab.Link {
	switch {
	case era != "zk":
		return lab.LinkCoordinator
	case api == "":
		return lab.LinkZooKeeper
	}
	return lab.LinkFetch
}

// commitAppliedMs is when the coordinator (zk: ZooKeeper) applied a commit record's request, as far
// as the timeline can tell: it checks the member and generation, and applies the commit, when the
// request arrives, which is its sent_ms, unless the link that carries it (CommitLink) was stalled then
// — a stall holds the bytes and its heal delivers them, so the request arrived at the stall's end. A
// request sent in the millisecond a stall began counts as through (the begin record is stamped once
// the stall took effect). Never after the answer (ts_ms), which bounds it; without sent_ms, ts_ms.
// stalls is stallWindows' result. (The answer of a commit applied before a stall comes only after the
// heal: dated by its answer, such a commit would be judged against the owners of after the stall.)
func commitAppliedMs(rec timeline.Record, era string, stalls map[string][]span) int64 {
	sent := rec.SentMs
	if sent <= 0 || sent > rec.TsMs {
		return rec.TsMs
	}
	at := sent
	for _, w := range stalls[rec.Member+"/"+string(commitLink(era, rec.API))] {
		if w.start < sent && sent < w.end {
			at = w.end
			break
		}
	}
	return min(at, rec.TsMs)
}

// givenUp marks the rebalance_end records that end a given-up rebalance (see Compute).
func givenUp(recs []timeline.Record) map[int]bool {
	type open struct {
		active, hasEnd, lastOK bool
		lastEnd                int
	}
	st := map[string]*open{}
	out := map[int]bool{}
	closeUp := func(o *open) {
		if o.active && o.hasEnd && !o.lastOK {
			out[o.lastEnd] = true
		}
		*o = open{}
	}
	for i, rec := range recs {
		o := st[rec.Member]
		if o == nil {
			o = &open{}
			st[rec.Member] = o
		}
		switch rec.Kind {
		case timeline.RebalanceBegin:
			closeUp(o)
			o.active = true
		case timeline.RebalanceEnd:
			ok := rec.OK != nil && *rec.OK
			o.active, o.hasEnd, o.lastOK, o.lastEnd = !ok, true, ok, i
		case timeline.MemberStart:
			closeUp(o)
		case timeline.MemberStop:
			if rec.How == "crash" {
				*o = open{}
			} else {
				closeUp(o)
			}
		}
	}
	for _, o := range st {
		closeUp(o)
	}
	return out
}

func compute(records []timeline.Record, era string, opts FigureOptions) (Result, *trace) {
	recs, warn := prepare(records, era)
	r := &replay{
		recs: recs, giveUp: givenUp(recs), members: map[string]*memberState{}, universe: map[tp]bool{},
		claim: map[tp]int{}, latest: map[tp]string{}, pending: map[tp]int{}, produced: map[tpo]int{},
		delivs: map[tpo]int{}, deliv: map[tp]int{}, touched: map[tp]bool{}, partsAll: map[string]bool{},
		warn: warn, tr: &trace{segments: map[tp][]segment{}, memberSpans: map[string][]memberSpan{},
			delivers: map[string][]int64{}, lag: map[tp][]lagPoint{}}, openSeg: map[tp]map[string]int{},
		inv: newInvariantChecker(), openFault: map[string]int{},
	}
	res := Result{Era: era, NotApplicable: NotApplicable(era), Events: []Event{}, FinalOwners: map[string]string{},
		Faults: []FaultWindow{}}
	if len(recs) == 0 {
		res.Warnings = append(r.warn, "no records")
		if res.NotApplicable == nil {
			res.NotApplicable = []string{}
		}
		return res, r.tr
	}
	for topic, parts := range opts.Partitions {
		for _, p := range parts {
			r.know(tp{topic, p})
		}
	}
	hasTrigger := false
	for _, rec := range recs {
		if rec.Kind == timeline.Trigger {
			hasTrigger = true
			break
		}
	}
	first := recs[0].TsMs
	r.tr.firstTs, r.tr.lastTs = first, recs[len(recs)-1].TsMs
	if recs[0].Kind != timeline.Trigger {
		r.openWindow(0, first, "start", true)
	}
	r.forming = hasTrigger && recs[0].Kind != timeline.Trigger

	prevTs := first
	for i := 0; i < len(recs); {
		ts := recs[i].TsMs
		r.integrate(prevTs, ts)
		j := i
		for ; j < len(recs) && recs[j].TsMs == ts; j++ {
			if recs[j].Kind == timeline.Trigger {
				if r.cur != nil {
					r.closeWindow(j-1, ts, EndNextTrigger)
				}
				r.endFormation()
				r.openWindow(j, ts, recs[j].Name, false)
			}
			r.apply(j)
		}
		r.msEnd(j-1, ts)
		prevTs, i = ts, j
	}
	last := recs[len(recs)-1].TsMs
	if r.cur != nil {
		r.closeWindow(len(recs)-1, last, EndOfRun)
	}
	r.finish(last)

	// Lost: never delivered by the end; in events, counted in the first window ending at/after the produce.
	for k, idx := range r.produced {
		if r.delivs[k] > 0 {
			continue
		}
		r.totals.Lost++
		for _, w := range r.wins {
			if !w.implicit && w.endIdx >= idx {
				w.f.Lost++
				break
			}
		}
	}

	totalTTS := int64(0)
	for _, w := range r.wins {
		tts := int64(0)
		switch {
		case w.end == EndStable:
			tts = w.stableAt - w.startTs
		case w.seenUnstable:
			tts = NeverStable
		}
		if w.implicit {
			if !hasTrigger {
				totalTTS = tts
			}
			w.f.TimeToStableMs = tts
			w.f.RebalanceParticipants = int64(len(w.participants))
			res.Start = &Event{Trigger: w.trigger, AtMs: 0, EndMs: w.endTs - first, End: w.end, Figures: w.f}
			continue
		}
		w.f.TimeToStableMs = tts
		w.f.RebalanceParticipants = int64(len(w.participants))
		if totalTTS != NeverStable && (tts == NeverStable || tts > totalTTS) {
			totalTTS = tts
		}
		res.Events = append(res.Events, Event{Trigger: w.trigger, AtMs: w.startTs - first,
			EndMs: w.endTs - first, End: w.end, Figures: w.f})
	}
	r.totals.TimeToStableMs = totalTTS
	r.totals.RebalanceParticipants = int64(len(r.partsAll))
	res.Totals = r.totals
	res.Faults = append(res.Faults, r.faults...)
	for _, name := range res.NotApplicable {
		res.Totals.set(name, 0)
		for i := range res.Events {
			res.Events[i].Figures.set(name, 0)
		}
		if res.Start != nil {
			res.Start.Figures.set(name, 0)
		}
	}
	if res.NotApplicable == nil {
		res.NotApplicable = []string{}
	}
	for t := range r.universe {
		var owners []string
		for name, m := range r.members {
			if m.live && m.owned[t] {
				owners = append(owners, name)
			}
		}
		sort.Strings(owners)
		res.FinalOwners[t.String()] = strings.Join(owners, ",")
	}
	for t := range r.universe {
		r.tr.parts = append(r.tr.parts, t)
	}
	sort.Slice(r.tr.parts, func(i, j int) bool {
		a, b := r.tr.parts[i], r.tr.parts[j]
		return a.topic < b.topic || a.topic == b.topic && a.part < b.part
	})
	for name := range r.members {
		r.tr.members = append(r.tr.members, name)
	}
	sort.Strings(r.tr.members)
	res.Warnings = r.warn
	return res, r.tr
}

// endFormation starts the totals, with the concurrency the formation left.
func (r *replay) endFormation() {
	if !r.forming {
		return
	}
	r.forming = false
	for _, n := range r.deliv {
		r.totals.MaxConcurrentOwners = max(r.totals.MaxConcurrentOwners, int64(n))
	}
}

// each applies fn to the totals (after the formation) and, when a window is open, to its figures.
func (r *replay) each(fn func(f *Figures)) {
	if !r.forming {
		fn(&r.totals)
	}
	if r.cur != nil {
		fn(&r.cur.f)
	}
}

func (r *replay) openWindow(idx int, ts int64, name string, implicit bool) {
	r.cur = &window{startIdx: idx, startTs: ts, trigger: name, implicit: implicit, open: true,
		participants: map[string]bool{}}
	r.wins = append(r.wins, r.cur)
	if !implicit {
		r.lastEv = r.cur
	}
	// A window starts with the concurrency it inherits.
	for _, n := range r.deliv {
		if int64(n) > r.cur.f.MaxConcurrentOwners {
			r.cur.f.MaxConcurrentOwners = int64(n)
		}
	}
}

func (r *replay) closeWindow(idx int, ts int64, why string) {
	r.cur.endIdx, r.cur.endTs, r.cur.end, r.cur.open = idx, ts, why, false
	if why == EndStable {
		r.cur.stableAt = ts
	}
	r.cur = nil
}

// integrate adds [from, to) of the current state to the time-based figures.
func (r *replay) integrate(from, to int64) {
	if to <= from {
		return
	}
	if r.unowned > 0 {
		d := int64(r.unowned) * (to - from)
		r.each(func(f *Figures) { f.UnownedPartitionMs += d })
	}
	if r.paused > 0 {
		d := int64(r.paused) * (to - from)
		r.each(func(f *Figures) { f.PausedMemberMs += d })
	}
}

// msEnd evaluates the state after every record of millisecond ts (last index idx).
func (r *replay) msEnd(idx int, ts int64) {
	for t := range r.touched {
		n := int64(r.deliv[t])
		r.each(func(f *Figures) {
			if n > f.MaxConcurrentOwners {
				f.MaxConcurrentOwners = n
			}
		})
		delete(r.touched, t)
	}
	if r.cur == nil {
		return
	}
	switch {
	case !r.stable():
		r.cur.seenUnstable = true
	case r.cur.implicit && r.forming:
		// The formation ends the first time the group is stable, even within its first millisecond.
		r.cur.seenUnstable = true
		r.closeWindow(idx, ts, EndStable)
		r.endFormation()
	case r.cur.seenUnstable:
		r.closeWindow(idx, ts, EndStable)
	}
}

func (r *replay) stable() bool { return r.bad == 0 && r.busy == 0 }

// know adds a partition to the known set.
func (r *replay) know(t tp) {
	if r.universe[t] {
		return
	}
	r.universe[t] = true
	if r.claim[t] != 1 {
		r.bad++
	}
	if r.pending[t] > 0 && r.claim[t] == 0 {
		r.unowned++
	}
}

// adjust changes the claim or pending count of a known partition, keeping bad and unowned exact.
func (r *replay) adjust(t tp, dClaim, dPending int) {
	r.know(t)
	wasBad, wasUnowned := r.claim[t] != 1, r.pending[t] > 0 && r.claim[t] == 0
	r.claim[t] += dClaim
	r.pending[t] += dPending
	isBad, isUnowned := r.claim[t] != 1, r.pending[t] > 0 && r.claim[t] == 0
	r.bad += b2i(isBad) - b2i(wasBad)
	r.unowned += b2i(isUnowned) - b2i(wasUnowned)
	if dPending != 0 {
		pts := r.tr.lag[t]
		if n := len(pts); n > 0 && pts[n-1].ts == r.now {
			pts[n-1].pending = r.pending[t]
		} else {
			pts = append(pts, lagPoint{ts: r.now, pending: r.pending[t]})
		}
		r.tr.lag[t] = pts
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *replay) member(name string) *memberState {
	m := r.members[name]
	if m == nil {
		m = &memberState{live: true, owned: map[tp]bool{}, delivering: map[tp]bool{}}
		r.members[name] = m
	}
	return m
}

// mutate runs fn on a member, keeping the busy and paused counts and the rebalance shading exact.
func (r *replay) mutate(name string, ts int64, fn func(m *memberState)) {
	m := r.member(name)
	was, wasPaused := m.busy(), m.paused()
	fn(m)
	r.paused += b2i(m.paused()) - b2i(wasPaused)
	r.tr.track(name, m.laneState(), ts)
	now := m.busy()
	if was == now {
		return
	}
	if now {
		if r.busy == 0 {
			r.busyFrom = ts
		}
		r.busy++
	} else {
		r.busy--
		if r.busy == 0 {
			r.tr.busy = append(r.tr.busy, span{r.busyFrom, ts})
		}
	}
}

// gain and lose change one member's ownership of one partition.
func (r *replay) gain(name string, m *memberState, t tp, ts int64) {
	if m.owned[t] {
		return
	}
	m.owned[t] = true
	r.adjust(t, 1, 0)
	if r.openSeg[t] == nil {
		r.openSeg[t] = map[string]int{}
	}
	r.openSeg[t][name] = len(r.tr.segments[t])
	r.tr.segments[t] = append(r.tr.segments[t], segment{member: name, start: ts, open: true})
}

func (r *replay) lose(name string, m *memberState, t tp, ts int64) {
	r.stopDelivering(m, t)
	if !m.owned[t] {
		return
	}
	delete(m.owned, t)
	r.adjust(t, -1, 0)
	if r.latest[t] == name {
		delete(r.latest, t)
	}
	if i, ok := r.openSeg[t][name]; ok {
		r.tr.segments[t][i].end, r.tr.segments[t][i].open = ts, false
		delete(r.openSeg[t], name)
	}
}

func (r *replay) stopDelivering(m *memberState, t tp) {
	if m.delivering[t] {
		delete(m.delivering, t)
		r.deliv[t]--
	}
}

func parts(rec timeline.Record) []tp {
	var out []tp
	topics := make([]string, 0, len(rec.Partitions))
	for topic := range rec.Partitions {
		topics = append(topics, topic)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		for _, p := range rec.Partitions[topic] {
			out = append(out, tp{topic, p})
		}
	}
	return out
}

// ownerOfRecord is the group's owner of record of t now: the member whose latest assigned listed t,
// while it still owns t; "" for none.
func (r *replay) ownerOfRecord(t tp) string {
	name := r.latest[t]
	if m := r.members[name]; name == "" || m == nil || !m.live || !m.owned[t] {
		return ""
	}
	return name
}

// apply replays record i.
func (r *replay) apply(i int) {
	rec := r.recs[i]
	ts := rec.TsMs
	r.now = ts
	where := func() string { return fmt.Sprintf("record %d (%s, member %q, ts_ms %d)", i, rec.Kind, rec.Member, ts) }
	needTP := func() (tp, bool) {
		if rec.Topic == "" || rec.Partition == nil {
			r.warnf("%s: no topic/partition, skipped", where())
			return tp{}, false
		}
		return tp{rec.Topic, *rec.Partition}, true
	}
	stoppedSkip := func() bool {
		if m := r.members[rec.Member]; m != nil && !m.live {
			r.warnf("%s: member already stopped, ownership change ignored", where())
			return true
		}
		return false
	}
	// Like duplicates, a violation counts in the latest trigger's event even after that window ended
	// at stable: what a change sets off (a zombie's deliveries) may come after the group looks stable.
	for _, name := range r.inv.observe(rec, r.ownerOfRecord) {
		r.totals.inc(name)
		if r.lastEv != nil {
			r.lastEv.f.inc(name)
		}
	}
	for _, d := range countedFigures {
		if n := d.count(rec); n != 0 {
			r.each(func(f *Figures) { *d.field(f) += n })
		}
	}
	switch rec.Kind {
	case timeline.MemberStart:
		r.mutate(rec.Member, ts, func(m *memberState) {
			for t := range m.owned {
				r.lose(rec.Member, m, t, ts)
			}
			m.live, m.joining, m.rebalancing = true, true, false
		})
	case timeline.MemberStop:
		r.mutate(rec.Member, ts, func(m *memberState) {
			for t := range m.owned {
				r.lose(rec.Member, m, t, ts)
			}
			for t := range m.delivering {
				r.stopDelivering(m, t)
			}
			m.live, m.joining, m.rebalancing = false, false, false
		})
	case timeline.RebalanceBegin:
		if !r.forming {
			r.partsAll[rec.Member] = true
		}
		if r.cur != nil {
			r.cur.participants[rec.Member] = true
		}
		if stoppedSkip() {
			return
		}
		r.mutate(rec.Member, ts, func(m *memberState) {
			if !m.rebalancing {
				m.heldAtBegin = len(m.owned) > 0
			}
			m.rebalancing = true
		})
	case timeline.RebalanceEnd:
		if rec.OK == nil {
			r.warnf("%s: no ok field, taken as a failed attempt", where())
		}
		ok := rec.OK != nil && *rec.OK
		gaveUp := r.giveUp[i]
		if gaveUp {
			r.each(func(f *Figures) { f.RebalanceFailures++ })
		}
		if stoppedSkip() {
			return
		}
		r.mutate(rec.Member, ts, func(m *memberState) {
			m.rebalancing = !ok && !gaveUp
			if gaveUp {
				m.joining = false
			}
		})
	case timeline.Assigned:
		if stoppedSkip() {
			return
		}
		next := map[tp]bool{}
		for _, t := range parts(rec) {
			next[t] = true
			r.know(t)
		}
		r.mutate(rec.Member, ts, func(m *memberState) {
			for t := range m.owned {
				if !next[t] {
					r.lose(rec.Member, m, t, ts)
				}
			}
			for _, t := range parts(rec) {
				r.gain(rec.Member, m, t, ts)
				r.latest[t] = rec.Member
			}
			m.joining = false
		})
	case timeline.Revoked:
		r.mutate(rec.Member, ts, func(m *memberState) {
			for _, t := range parts(rec) {
				r.know(t)
				if m.owned[t] {
					r.each(func(f *Figures) { f.Revocations++ })
				}
				r.lose(rec.Member, m, t, ts)
			}
		})
	case timeline.Deliver:
		t, ok := needTP()
		if !ok {
			return
		}
		if rec.Offset == nil {
			r.warnf("%s: no offset, skipped", where())
			return
		}
		r.know(t)
		k := tpo{t, *rec.Offset}
		if r.delivs[k] > 0 {
			r.totals.Duplicates++
			if r.lastEv != nil {
				r.lastEv.f.Duplicates++
			}
		} else if _, produced := r.produced[k]; produced {
			r.adjust(t, 0, -1)
		}
		r.delivs[k]++
		r.tr.delivers[rec.Member] = append(r.tr.delivers[rec.Member], ts)
		if m := r.member(rec.Member); m.live && !m.delivering[t] {
			m.delivering[t] = true
			r.deliv[t]++
			r.touched[t] = true
		}
	case timeline.Produce:
		t, ok := needTP()
		if !ok {
			return
		}
		if rec.Offset == nil {
			r.warnf("%s: no offset, skipped", where())
			return
		}
		k := tpo{t, *rec.Offset}
		r.know(t)
		if _, seen := r.produced[k]; seen {
			return
		}
		r.produced[k] = i
		if r.delivs[k] == 0 {
			r.adjust(t, 0, 1)
		}
	case timeline.Commit:
		t, ok := needTP()
		if !ok {
			return
		}
		r.know(t)
		m := r.member(rec.Member)
		if m.live && m.owned[t] && r.latest[t] == rec.Member {
			return
		}
		switch rec.Result {
		case timeline.CommitApplied:
			r.each(func(f *Figures) { f.StaleCommitsApplied++ })
		case timeline.CommitRejected:
			r.each(func(f *Figures) { f.StaleCommitsRejected++ })
		}
	case timeline.ZKOp: // counted (FigureTable)
		if rec.Op != "read" && rec.Op != "write" {
			r.warnf("%s: op %q is neither read nor write", where(), rec.Op)
		}
	case timeline.ZKWatch, timeline.GroupRequest: // counted (FigureTable)
	case timeline.Fault, timeline.Trigger:
		text := rec.Name
		if rec.Kind == timeline.Fault {
			text = strings.TrimSpace(rec.Action + " " + rec.Target + " " + rec.Phase)
			r.faultPhase(rec, ts, where)
		}
		r.tr.marks = append(r.tr.marks, mark{ts: ts, kind: rec.Kind, text: text})
	case timeline.Error, timeline.SessionExpired:
	default:
		r.warnf("%s: unknown kind, skipped", where())
	}
}

// faultPhase opens a fault window at a begin record and closes it at the matching end record.
func (r *replay) faultPhase(rec timeline.Record, ts int64, where func() string) {
	key := rec.Action + "\x00" + rec.Target
	switch rec.Phase {
	case "":
	case timeline.FaultBegin:
		if _, ok := r.openFault[key]; ok {
			r.warnf("%s: %s %s begins again before it ended", where(), rec.Action, rec.Target)
			return
		}
		r.openFault[key] = len(r.faults)
		r.faults = append(r.faults, FaultWindow{Action: rec.Action, Target: rec.Target, StartMs: ts - r.tr.firstTs, Open: true})
	case timeline.FaultEnd:
		i, ok := r.openFault[key]
		if !ok {
			r.warnf("%s: %s %s ends without a begin", where(), rec.Action, rec.Target)
			return
		}
		delete(r.openFault, key)
		w := &r.faults[i]
		w.EndMs, w.DurationMs, w.Open = ts-r.tr.firstTs, ts-r.tr.firstTs-w.StartMs, false
	default:
		r.warnf("%s: fault phase %q is neither begin nor end", where(), rec.Phase)
	}
}

// isOffsetPath: path is /consumers/<group>/offsets or below it (ZkUtils' ZKGroupTopicDirs.consumerOffsetDir).
func isOffsetPath(path string) bool {
	parts := strings.SplitN(path, "/", 5) // "", consumers, <group>, offsets, rest
	return len(parts) >= 4 && parts[0] == "" && parts[1] == "consumers" && parts[2] != "" && parts[3] == "offsets"
}

// finish closes the report's open intervals at the last record.
func (r *replay) finish(last int64) {
	for _, i := range r.openFault {
		w := &r.faults[i]
		w.EndMs = last - r.tr.firstTs
		w.DurationMs = w.EndMs - w.StartMs
	}
	for t, open := range r.openSeg {
		for _, i := range open {
			r.tr.segments[t][i].end = last
		}
	}
	if r.busy > 0 {
		r.tr.busy = append(r.tr.busy, span{r.busyFrom, last})
	}
	for name, spans := range r.tr.memberSpans {
		if n := len(spans); n > 0 && spans[n-1].end < 0 {
			spans[n-1].end = last
		}
		r.tr.memberSpans[name] = spans
	}
}
