package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// jsonLines encodes records as timeline JSON lines.
func jsonLines(recs []timeline.Record) []byte {
	var buf bytes.Buffer
	w := timeline.NewWriter(&buf)
	for _, r := range recs {
		w.Emit(r)
	}
	_ = w.Flush() // a bytes.Buffer does not fail
	return buf.Bytes()
}

// excerpt renders the records of a scenario's timeline from the first record at or after fromMs
// to the last at or before toMs as text lines, times relative to fromMs: membership, faults,
// watches, rebalances, assignments, errors, failed group requests, failed owner-znode claims and
// commits. A commit or delivery of a partition that another live member owned at that moment (the
// latest assigned record naming it, not revoked since) names that owner: a zombie at work. The
// members in detail get every commit and their deliveries (between two shown lines, one line:
// "delivered 12: p0 24..29, p1 24..29"); the others only their refused commits and those for
// another's partition. Produce, ZooKeeper requests and successful group requests are left out. At
// most maxLines lines; the rest is counted in a last line.
func excerpt(recs []timeline.Record, fromMs, toMs int64, maxLines int, detail map[string]bool) []string {
	type tp struct {
		topic string
		p     int32
	}
	owned := map[string]map[tp]bool{}
	latest := map[tp]string{}
	var lines []string
	type span struct{ lo, hi int64 }
	delivered := map[string]map[int32]*span{} // member → partition → offsets
	nDelivered := map[string]int{}
	otherOwner := map[string]map[int32]string{} // member → partition → the other member owning it during the deliveries
	var order []string
	flushDeliveries := func(ts int64) {
		for _, m := range order {
			ps := delivered[m]
			keys := make([]int32, 0, len(ps))
			for p := range ps {
				keys = append(keys, p)
			}
			sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
			parts := make([]string, len(keys))
			for i, p := range keys {
				parts[i] = fmt.Sprintf("p%d %d..%d", p, ps[p].lo, ps[p].hi)
				if o := otherOwner[m][p]; o != "" {
					parts[i] += " (" + o + "'s)"
				}
			}
			lines = append(lines, excerptLine(ts-fromMs, m, fmt.Sprintf("delivered %d: %s", nDelivered[m], strings.Join(parts, ", "))))
		}
		delivered, nDelivered, order, otherOwner = map[string]map[int32]*span{}, map[string]int{}, nil, map[string]map[int32]string{}
	}
	ownerElse := func(member string, k tp) string {
		if o := latest[k]; o != "" && o != member && owned[o][k] {
			return o
		}
		return ""
	}
	show := func(r timeline.Record, text string) {
		flushDeliveries(r.TsMs)
		lines = append(lines, excerptLine(r.TsMs-fromMs, r.Member, text))
	}
	for _, r := range recs {
		// Ownership is tracked from the start, so that the first commits are judged right.
		switch r.Kind {
		case timeline.MemberStart, timeline.MemberStop:
			owned[r.Member] = map[tp]bool{}
		case timeline.Assigned:
			set := map[tp]bool{}
			for t, ps := range r.Partitions {
				for _, p := range ps {
					set[tp{t, p}] = true
					latest[tp{t, p}] = r.Member
				}
			}
			owned[r.Member] = set
		case timeline.Revoked:
			for t, ps := range r.Partitions {
				for _, p := range ps {
					delete(owned[r.Member], tp{t, p})
				}
			}
		}
		if r.TsMs < fromMs || r.TsMs > toMs {
			continue
		}
		switch r.Kind {
		case timeline.Deliver:
			if r.Partition == nil || r.Offset == nil || !detail[r.Member] {
				continue
			}
			if delivered[r.Member] == nil {
				delivered[r.Member] = map[int32]*span{}
				otherOwner[r.Member] = map[int32]string{}
				order = append(order, r.Member)
			}
			if o := ownerElse(r.Member, tp{r.Topic, *r.Partition}); o != "" {
				otherOwner[r.Member][*r.Partition] = o
			}
			if s := delivered[r.Member][*r.Partition]; s == nil {
				delivered[r.Member][*r.Partition] = &span{*r.Offset, *r.Offset}
			} else {
				s.lo, s.hi = min(s.lo, *r.Offset), max(s.hi, *r.Offset)
			}
			nDelivered[r.Member]++
		case timeline.Trigger:
			show(r, fmt.Sprintf("trigger %q", r.Name))
		case timeline.Fault:
			if r.Phase == timeline.FaultEnd {
				show(r, fmt.Sprintf("fault over: %s %s", r.Action, r.Target))
			} else {
				show(r, fmt.Sprintf("fault: %s %s", r.Action, r.Target))
			}
		case timeline.MemberStart:
			show(r, "starts")
		case timeline.MemberStop:
			show(r, "stops ("+r.How+")")
		case timeline.ZKWatch:
			show(r, fmt.Sprintf("watch fires: %s %s", r.Type, r.Path))
		case timeline.RebalanceBegin:
			show(r, "rebalance begins")
		case timeline.RebalanceEnd:
			ok := r.OK != nil && *r.OK
			show(r, fmt.Sprintf("rebalance attempt %d ends: %s", r.Attempt, map[bool]string{true: "ok", false: "FAILED"}[ok]))
		case timeline.Assigned:
			gen := ""
			if r.Generation != nil {
				gen = fmt.Sprintf(" in generation %d", *r.Generation)
			}
			show(r, "assigned "+shortPartitions(r.Partitions)+gen)
		case timeline.Revoked:
			show(r, "revoked "+shortPartitions(r.Partitions))
		case timeline.Error:
			show(r, "error: "+r.Text)
		case timeline.ZKOp:
			if r.Result == timeline.ZKOwnerConflict {
				show(r, "claim failed (owner znode names another consumer thread): "+r.Path)
			}
		case timeline.GroupRequest:
			if r.Err != "" {
				show(r, fmt.Sprintf("%s answered %s", r.API, r.Err))
			}
		case timeline.Commit:
			if r.Partition == nil || r.Offset == nil {
				continue
			}
			other := ownerElse(r.Member, tp{r.Topic, *r.Partition})
			if !detail[r.Member] && r.Result != timeline.CommitRejected && other == "" {
				continue
			}
			text := fmt.Sprintf("commit p%d offset %d", *r.Partition, *r.Offset)
			if r.Generation != nil {
				text += fmt.Sprintf(" (generation %d)", *r.Generation)
			}
			if r.Result == timeline.CommitRejected {
				text += ": REJECTED " + r.Err
			} else {
				text += ": applied"
			}
			if other != "" {
				text += "   <- p" + fmt.Sprint(*r.Partition) + " is " + other + "'s now"
			}
			show(r, text)
		}
	}
	flushDeliveries(toMs)
	if maxLines > 0 && len(lines) > maxLines {
		more := len(lines) - maxLines
		lines = append(lines[:maxLines], fmt.Sprintf("... %d more lines in the timeline file", more))
	}
	return lines
}

// excerptLegend explains an excerpt's shorthand.
const excerptLegend = "# A \"delivered\" line counts the deliveries since the line before it; (m2's) marks a partition\n" +
	"# that another member owned meanwhile, \"<- ... now\" a commit for such a partition.\n"

func excerptLine(dt int64, member, text string) string {
	return fmt.Sprintf("%+7d ms  %-8s %s", dt, member, text)
}
