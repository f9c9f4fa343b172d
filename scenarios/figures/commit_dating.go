package figures

// When a commit was applied: the replay judges a commit record at the moment its request reached the
// coordinator (zk: ZooKeeper), not at its answer (docs/design.md, "What the members must emit").

import (
	"math"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// redateCommits returns recs (sorted by ts_ms) with every commit record that carries sent_ms moved,
// stably, to the moment its request was applied (commitAppliedMs): the replay judges a commit there,
// against the owner of record of that moment, not at its answer.
func redateCommits(recs []timeline.Record, era string, owned bool) []timeline.Record {
	stalls := stallWindows(recs)
	applied := func(i int) int64 {
		if recs[i].Kind != timeline.Commit || recs[i].SentMs == 0 {
			return recs[i].TsMs
		}
		return commitAppliedMs(recs[i], era, stalls)
	}
	moved := false
	for i := range recs {
		if applied(i) != recs[i].TsMs {
			moved = true
			break
		}
	}
	if !moved {
		return recs
	}
	if owned { // the caller's own copy: redated in place
		timeline.SortInPlace(recs, applied)
		return recs
	}
	// a copy: the caller's records stay as they were
	return timeline.SortedCopy(len(recs), func(i int) *timeline.Record { return &recs[i] }, applied, 0)
}

// stallWindows are the stall faults' windows by target ("<member>/<link>"), from their begin and end
// records in order; a stall without an end lasts to math.MaxInt64.
func stallWindows(recs []timeline.Record) map[string][]Span {
	out := map[string][]Span{}
	for _, rec := range recs {
		if rec.Kind != timeline.Fault || rec.Action != timeline.FaultStall {
			continue
		}
		ws := out[rec.Target]
		switch rec.Phase {
		case timeline.FaultBegin:
			out[rec.Target] = append(ws, Span{rec.TsMs, math.MaxInt64})
		case timeline.FaultEnd:
			if n := len(ws); n > 0 && ws[n-1].End == math.MaxInt64 {
				ws[n-1].End = rec.TsMs
			}
		}
	}
	return out
}

// commitLink is the member's link that carries a commit record's request in era: the
// coordinator link for the coordinator eras; in the zk era ZooKeeper for a write of its offsets znode
// (api ""), the broker connections (timeline.LinkFetch) for 0.8.2's OffsetCommit to Kafka.
func commitLink(era, api string) timeline.Link {
	switch {
	case !spec.Era(era).UsesZooKeeper():
		return timeline.LinkCoordinator
	case api == "":
		return timeline.LinkZooKeeper
	}
	return timeline.LinkFetch
}

// commitAppliedMs is when the coordinator (zk: ZooKeeper) applied a commit record's request, as far
// as the timeline can tell: it checks the member and generation, and applies the commit, when the
// request arrives, which is its sent_ms, unless the link that carries it (CommitLink) was stalled then
// — a stall holds the bytes and its heal delivers them, so the request arrived at the stall's end. A
// request sent in the millisecond a stall began counts as through (the begin record is stamped once
// the stall took effect). Never after the answer (ts_ms), which bounds it; without sent_ms, ts_ms.
// stalls is stallWindows' result. (The answer of a commit applied before a stall comes only after the
// heal: dated by its answer, such a commit would be judged against the owners of after the stall.)
func commitAppliedMs(rec timeline.Record, era string, stalls map[string][]Span) int64 {
	sent := rec.SentMs
	if sent <= 0 || sent > rec.TsMs {
		return rec.TsMs
	}
	at := sent
	for _, w := range stalls[rec.Member+"/"+string(commitLink(era, rec.API))] {
		if w.Start < sent && sent < w.End {
			at = w.End
			break
		}
	}
	return min(at, rec.TsMs)
}
