package figures

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// prepare filters records to era and sorts them by ts_ms (stable). The caller's records are changed
// only when it owns them (FigureOptions.OwnsRecords); else they are copied only when some must go or the
// order is not by ts_ms (a timeline of millions of records is not copied for nothing).
func prepare(records []timeline.Record, era string, owned bool) (recs []timeline.Record, warn []string) {
	skipped := 0
	for _, rec := range records {
		if rec.Era != era && rec.Era != "" {
			skipped++
		}
	}
	recs = records
	if skipped > 0 {
		warn = append(warn, fmt.Sprintf("%d records of other eras skipped", skipped))
		owned = true
		recs = make([]timeline.Record, 0, len(records)-skipped)
		for _, rec := range records {
			if rec.Era == era || rec.Era == "" {
				recs = append(recs, rec)
			}
		}
	}
	if !sort.SliceIsSorted(recs, func(i, j int) bool { return recs[i].TsMs < recs[j].TsMs }) {
		in := recs
		if owned {
			timeline.SortInPlace(in, func(i int) int64 { return in[i].TsMs })
		} else {
			recs = timeline.SortedCopy(len(in), func(i int) *timeline.Record { return &in[i] }, func(i int) int64 { return in[i].TsMs }, 0)
			owned = true
		}
		warn = append(warn, "records were not sorted by ts_ms; sorted (stable)")
	}
	if !spec.Era(era).Known() {
		warn = append(warn, fmt.Sprintf("unknown era %q: no figure marked not applicable", era))
	}
	return redateCommits(recs, era, owned), warn
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

func compute(records []timeline.Record, era string, opts FigureOptions) (Result, *Trace) {
	recs, warn := prepare(records, era, opts.OwnsRecords)
	r := &replay{
		recs: recs, giveUp: givenUp(recs), members: map[string]*memberState{}, universe: map[tp]bool{},
		claim: map[tp]int{}, latest: map[tp]string{}, Pending: map[tp]int{}, produced: map[tpo]int{},
		delivs: map[tpo]int{}, deliv: map[tp]int{}, touched: map[tp]bool{}, partsAll: map[string]bool{},
		warn: warn, tr: &Trace{Segments: map[tp][]Segment{}, MemberSpans: map[string][]MemberSpan{},
			Delivers: map[string][]int64{}, Lag: map[tp][]LagPoint{}}, openSeg: map[tp]map[string]int{},
		inv: newInvariantChecker(), openFault: map[string]int{},
	}
	res := Result{Era: era, NotApplicable: withNotMeasured(NotApplicable(era), opts.NotMeasured), Events: []Event{}, FinalOwners: map[string]string{},
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
	r.tr.FirstTs, r.tr.LastTs = first, recs[len(recs)-1].TsMs
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
	owners := make(map[tp][]string, len(r.universe)) // by member, not partition × member: 10,000 × 10,000 is 10^8
	for name, m := range r.members {
		if !m.live {
			continue
		}
		for t := range m.owned { // gain knows every owned partition: owned ⊆ universe
			owners[t] = append(owners[t], name)
		}
	}
	for t := range r.universe {
		sort.Strings(owners[t])
		res.FinalOwners[t.String()] = strings.Join(owners[t], ",")
	}
	for t := range r.universe {
		r.tr.Parts = append(r.tr.Parts, t)
	}
	sort.Slice(r.tr.Parts, func(i, j int) bool {
		a, b := r.tr.Parts[i], r.tr.Parts[j]
		return a.topic < b.topic || a.topic == b.topic && a.part < b.part
	})
	for name := range r.members {
		r.tr.Members = append(r.tr.Members, name)
	}
	sort.Strings(r.tr.Members)
	res.Warnings = r.warn
	return res, r.tr
}

// withNotMeasured is na with the names of extra it lacks appended.
func withNotMeasured(na, extra []string) []string {
	for _, n := range extra {
		if !slices.Contains(na, n) {
			na = append(na, n)
		}
	}
	return na
}
