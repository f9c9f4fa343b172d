package figures

import (
	"fmt"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// tp is one partition; tpo one offset of it.
type tp struct {
	topic string
	part  int32
}

// TopicPartition is a partition as the figures key it (Trace's lanes): Kafka's TopicPartition.
type TopicPartition = tp

// Topic is the partition's topic.
func (t tp) Topic() string { return t.topic }

// Partition is the partition's number.
func (t tp) Partition() int32 { return t.part }

// String is Kafka's TopicPartition string, "<topic>-<partition>" (Result.FinalOwners' keys).
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

// replay is compute's state while it replays a timeline's records in order, one at a time (apply,
// replay_apply.go), comparing states after every millisecond (msEnd). The records it reads follow the rules
// of docs/design.md "What the members must emit (the rules the figures read)": ownership, the group's view,
// rebalances and time.
type replay struct {
	recs     []timeline.Record
	giveUp   map[int]bool
	members  map[string]*memberState
	universe map[tp]bool
	claim    map[tp]int    // live members owning the partition
	latest   map[tp]string // owner of record
	Pending  map[tp]int    // produced offsets not yet delivered
	produced map[tpo]int   // first produce index of each offset
	delivs   map[tpo]int   // deliveries per offset
	deliv    map[tp]int    // members delivering the partition
	twice    int           // partitions with deliv >= 2 (concurrent_owner_ms)
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
	tr       *Trace
	openSeg  map[tp]map[string]int // index into tr.Segments[tp] of an open segment
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
	if r.twice > 0 {
		d := int64(r.twice) * (to - from)
		r.each(func(f *Figures) { f.ConcurrentOwnerMs += d })
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
	if r.Pending[t] > 0 && r.claim[t] == 0 {
		r.unowned++
	}
}

// adjust changes the claim or pending count of a known partition, keeping bad and unowned exact.
func (r *replay) adjust(t tp, dClaim, dPending int) {
	r.know(t)
	wasBad, wasUnowned := r.claim[t] != 1, r.Pending[t] > 0 && r.claim[t] == 0
	r.claim[t] += dClaim
	r.Pending[t] += dPending
	isBad, isUnowned := r.claim[t] != 1, r.Pending[t] > 0 && r.claim[t] == 0
	r.bad += b2i(isBad) - b2i(wasBad)
	r.unowned += b2i(isUnowned) - b2i(wasUnowned)
	if dPending != 0 {
		pts := r.tr.Lag[t]
		if n := len(pts); n > 0 && pts[n-1].Ts == r.now {
			pts[n-1].Pending = r.Pending[t]
		} else {
			pts = append(pts, LagPoint{Ts: r.now, Pending: r.Pending[t]})
		}
		r.tr.Lag[t] = pts
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
			r.tr.Busy = append(r.tr.Busy, Span{r.busyFrom, ts})
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
	r.openSeg[t][name] = len(r.tr.Segments[t])
	r.tr.Segments[t] = append(r.tr.Segments[t], Segment{Member: name, Start: ts, Open: true})
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
		r.tr.Segments[t][i].End, r.tr.Segments[t][i].Open = ts, false
		delete(r.openSeg[t], name)
	}
}

func (r *replay) stopDelivering(m *memberState, t tp) {
	if m.delivering[t] {
		delete(m.delivering, t)
		r.addDeliv(t, -1)
	}
}

// addDeliv changes the number of members delivering t by d, keeping twice (the partitions two or more
// members deliver) exact.
func (r *replay) addDeliv(t tp, d int) {
	was := r.deliv[t] >= 2
	r.deliv[t] += d
	r.twice += b2i(r.deliv[t] >= 2) - b2i(was)
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

// finish closes the report's open intervals at the last record.
func (r *replay) finish(last int64) {
	for _, i := range r.openFault {
		w := &r.faults[i]
		w.EndMs = last - r.tr.FirstTs
		w.DurationMs = w.EndMs - w.StartMs
	}
	for t, open := range r.openSeg {
		for _, i := range open {
			r.tr.Segments[t][i].End = last
		}
	}
	if r.busy > 0 {
		r.tr.Busy = append(r.tr.Busy, Span{r.busyFrom, last})
	}
	for name, spans := range r.tr.MemberSpans {
		if n := len(spans); n > 0 && spans[n-1].End < 0 {
			spans[n-1].End = last
		}
		r.tr.MemberSpans[name] = spans
	}
}
