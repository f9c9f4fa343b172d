package figures

// apply: one record of the timeline replayed, one method per record kind. What each kind means is
// docs/design.md's "What the members must emit (the rules the figures read)".

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// apply replays record i: its counted figures and invariants, then what its kind changes (applyKind).
func (r *replay) apply(i int) {
	rec := r.recs[i]
	r.now = rec.TsMs
	r.observe(rec)
	fn, known := applyKind[rec.Kind]
	if !known {
		r.warnf("%s: unknown kind, skipped", r.where(i))
		return
	}
	if fn != nil {
		fn(r, i, rec)
	}
}

// applyKind is what each record kind changes in the replay; nil for a kind that is only counted
// (FigureTable) or only read by the invariants.
var applyKind = map[timeline.Kind]func(r *replay, i int, rec timeline.Record){
	timeline.MemberStart:    (*replay).applyMemberStart,
	timeline.MemberStop:     (*replay).applyMemberStop,
	timeline.RebalanceBegin: (*replay).applyRebalanceBegin,
	timeline.RebalanceEnd:   (*replay).applyRebalanceEnd,
	timeline.Assigned:       (*replay).applyAssigned,
	timeline.Revoked:        (*replay).applyRevoked,
	timeline.Deliver:        (*replay).applyDeliver,
	timeline.Produce:        (*replay).applyProduce,
	timeline.Commit:         (*replay).applyCommit,
	timeline.ZKOp:           (*replay).applyZKOp,
	timeline.Fault:          (*replay).applyFault,
	timeline.Trigger:        (*replay).applyTrigger,
	timeline.ZKWatch:        nil,
	timeline.GroupRequest:   nil,
	timeline.Error:          nil,
	timeline.SessionExpired: nil,
}

// observe counts rec in the invariants and in FigureTable's Counted figures, whatever its kind.
func (r *replay) observe(rec timeline.Record) {
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
}

// where names record i in a warning.
func (r *replay) where(i int) string {
	rec := r.recs[i]
	return fmt.Sprintf("record %d (%s, member %q, ts_ms %d)", i, rec.Kind, rec.Member, rec.TsMs)
}

// recordTP is record i's partition; ok=false (with a warning) when it names none.
func (r *replay) recordTP(i int, rec timeline.Record) (t tp, ok bool) {
	if rec.Topic == "" || rec.Partition == nil {
		r.warnf("%s: no topic/partition, skipped", r.where(i))
		return tp{}, false
	}
	return tp{rec.Topic, *rec.Partition}, true
}

// recordTPO is record i's partition and offset; ok=false (with a warning) when it lacks either.
func (r *replay) recordTPO(i int, rec timeline.Record) (k tpo, ok bool) {
	t, ok := r.recordTP(i, rec)
	if !ok {
		return tpo{}, false
	}
	if rec.Offset == nil {
		r.warnf("%s: no offset, skipped", r.where(i))
		return tpo{}, false
	}
	return tpo{t, *rec.Offset}, true
}

// stoppedIgnored reports (with a warning) that record i's member has stopped, so the ownership change
// it records is ignored.
func (r *replay) stoppedIgnored(i int, rec timeline.Record) bool {
	if m := r.members[rec.Member]; m != nil && !m.live {
		r.warnf("%s: member already stopped, ownership change ignored", r.where(i))
		return true
	}
	return false
}

// parts lists a record's partitions, by topic then in the record's order.
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

// loseAll ends every ownership of member name.
func (r *replay) loseAll(name string, m *memberState, ts int64) {
	for t := range m.owned {
		r.lose(name, m, t, ts)
	}
}

// applyMemberStart: a (re)started member owns nothing and joins.
func (r *replay) applyMemberStart(_ int, rec timeline.Record) {
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		r.loseAll(rec.Member, m, rec.TsMs)
		m.live, m.joining, m.rebalancing = true, true, false
	})
}

// applyMemberStop: a stopped member (graceful or crash) owns and delivers nothing.
func (r *replay) applyMemberStop(_ int, rec timeline.Record) {
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		r.loseAll(rec.Member, m, rec.TsMs)
		for t := range m.delivering {
			r.stopDelivering(m, t)
		}
		m.live, m.joining, m.rebalancing = false, false, false
	})
}

// applyRebalanceBegin: the member takes part in a rebalance, which runs until an ok end, the given-up
// end or member_stop.
func (r *replay) applyRebalanceBegin(i int, rec timeline.Record) {
	if !r.forming {
		r.partsAll[rec.Member] = true
	}
	if r.cur != nil {
		r.cur.participants[rec.Member] = true
	}
	if r.stoppedIgnored(i, rec) {
		return
	}
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		if !m.rebalancing {
			m.heldAtBegin = len(m.owned) > 0
		}
		m.rebalancing = true
	})
}

// applyRebalanceEnd: one attempt ended; an ok one, or the last of a given-up rebalance (givenUp), ends
// the rebalance.
func (r *replay) applyRebalanceEnd(i int, rec timeline.Record) {
	if rec.OK == nil {
		r.warnf("%s: no ok field, taken as a failed attempt", r.where(i))
	}
	ok := rec.OK != nil && *rec.OK
	gaveUp := r.giveUp[i]
	if gaveUp {
		r.each(func(f *Figures) { f.RebalanceFailures++ })
	}
	if r.stoppedIgnored(i, rec) {
		return
	}
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		m.rebalancing = !ok && !gaveUp
		if gaveUp {
			m.joining = false
		}
	})
}

// applyAssigned: the member's full assignment replaces what it owned, and makes it the owner of record
// of each listed partition.
func (r *replay) applyAssigned(i int, rec timeline.Record) {
	if r.stoppedIgnored(i, rec) {
		return
	}
	next := map[tp]bool{}
	for _, t := range parts(rec) {
		next[t] = true
		r.know(t)
	}
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		for t := range m.owned {
			if !next[t] {
				r.lose(rec.Member, m, t, rec.TsMs)
			}
		}
		for _, t := range parts(rec) {
			r.gain(rec.Member, m, t, rec.TsMs)
			r.latest[t] = rec.Member
		}
		m.joining = false
	})
}

// applyRevoked: the member gives up the listed partitions; each one it owned is a revocation.
func (r *replay) applyRevoked(_ int, rec timeline.Record) {
	r.mutate(rec.Member, rec.TsMs, func(m *memberState) {
		for _, t := range parts(rec) {
			r.know(t)
			if m.owned[t] {
				r.each(func(f *Figures) { f.Revocations++ })
			}
			r.lose(rec.Member, m, t, rec.TsMs)
		}
	})
}

// applyDeliver: a duplicate, or the delivery of a produced offset; a live member delivers the partition
// from now on (max_concurrent_owners, concurrent_owner_ms).
func (r *replay) applyDeliver(i int, rec timeline.Record) {
	k, ok := r.recordTPO(i, rec)
	if !ok {
		return
	}
	t := k.tp
	r.know(t)
	if r.delivs[k] > 0 {
		r.totals.Duplicates++
		if r.lastEv != nil {
			r.lastEv.f.Duplicates++
		}
	} else if _, produced := r.produced[k]; produced {
		r.adjust(t, 0, -1)
	}
	r.delivs[k]++
	r.tr.Delivers[rec.Member] = append(r.tr.Delivers[rec.Member], rec.TsMs)
	if m := r.member(rec.Member); m.live && !m.delivering[t] {
		m.delivering[t] = true
		r.addDeliv(t, 1)
		r.touched[t] = true
	}
}

// applyProduce: an offset produced (its first record counts), pending until delivered.
func (r *replay) applyProduce(i int, rec timeline.Record) {
	k, ok := r.recordTPO(i, rec)
	if !ok {
		return
	}
	r.know(k.tp)
	if _, seen := r.produced[k]; seen {
		return
	}
	r.produced[k] = i
	if r.delivs[k] == 0 {
		r.adjust(k.tp, 0, 1)
	}
}

// applyCommit: a commit by anyone but the partition's owner of record is stale, applied or rejected.
func (r *replay) applyCommit(i int, rec timeline.Record) {
	t, ok := r.recordTP(i, rec)
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
}

// applyZKOp: counted (FigureTable); only its op is checked here.
func (r *replay) applyZKOp(i int, rec timeline.Record) {
	if rec.Op != "read" && rec.Op != "write" {
		r.warnf("%s: op %q is neither read nor write", r.where(i), rec.Op)
	}
}

// applyTrigger: the trigger's mark in the report (compute opens its window).
func (r *replay) applyTrigger(_ int, rec timeline.Record) {
	r.tr.Marks = append(r.tr.Marks, Mark{Ts: rec.TsMs, Kind: rec.Kind, Text: rec.Name})
}

// applyFault: a fault's phase (its window) and its mark in the report.
func (r *replay) applyFault(i int, rec timeline.Record) {
	r.faultPhase(i, rec)
	text := strings.TrimSpace(rec.Action + " " + rec.Target + " " + rec.Phase)
	r.tr.Marks = append(r.tr.Marks, Mark{Ts: rec.TsMs, Kind: rec.Kind, Text: text})
}

// faultPhase opens a fault window at a begin record and closes it at the matching end record.
func (r *replay) faultPhase(i int, rec timeline.Record) {
	key := rec.Action + "\x00" + rec.Target
	ts := rec.TsMs
	switch rec.Phase {
	case "":
	case timeline.FaultBegin:
		if _, ok := r.openFault[key]; ok {
			r.warnf("%s: %s %s begins again before it ended", r.where(i), rec.Action, rec.Target)
			return
		}
		r.openFault[key] = len(r.faults)
		r.faults = append(r.faults, FaultWindow{Action: rec.Action, Target: rec.Target, StartMs: ts - r.tr.FirstTs, Open: true})
	case timeline.FaultEnd:
		w, ok := r.openFault[key]
		if !ok {
			r.warnf("%s: %s %s ends without a begin", r.where(i), rec.Action, rec.Target)
			return
		}
		delete(r.openFault, key)
		f := &r.faults[w]
		f.EndMs, f.DurationMs, f.Open = ts-r.tr.FirstTs, ts-r.tr.FirstTs-f.StartMs, false
	default:
		r.warnf("%s: fault phase %q is neither begin nor end", r.where(i), rec.Phase)
	}
}
