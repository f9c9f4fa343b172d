package catalog

// The relations' checking on a run's result (CheckRelations), and the timeline helpers the relations
// and the extra counters read: one era's records (eraRun, the report's EraRun) between triggers.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// eraRun is one era of a run as the relations and extras read it: report.EraRun with the timeline
// helpers below (a conversion: the same memory).
type eraRun report.EraRun

// eraOf returns run's era called name, nil when it has none.
func eraOf(run *report.RunResult, name string) *eraRun {
	for _, e := range run.Eras {
		if e.Era == name {
			return (*eraRun)(e)
		}
	}
	return nil
}

// crashed: the members run's script crashes.
func crashed(run *report.RunResult) map[string]bool {
	out := map[string]bool{}
	for _, s := range run.Script {
		if s.Action == spec.ActCrash {
			out[s.Member] = true
		}
	}
	return out
}

// CheckRelations fills every applicable era's Relations of r (each era's report.RelationResult: the
// relation's text, whether it held, was skipped, and what it found): sc's relations, and on a
// consumer-era run Kafka's consumer invariants (invariantRelations) and the fault relation, on a
// Streams run (sc.Streams) the Streams fault relation. An era that did not apply (Applies false) is
// left alone; a relation on a figure the era did not measure (Result.NotApplicable) is skipped.
func CheckRelations(sc *Scenario, r *report.RunResult) {
	for _, e := range r.Eras {
		if !e.Applies {
			continue
		}
		e.Relations = nil
		rels := append([]Relation(nil), sc.Relations...)
		if sc.Streams == nil { // Kafka's consumer invariants read the consumer eras' timelines
			rels = append(rels, invariantRelations(sc)...)
			rels = append(rels, faultRelation())
		} else {
			rels = append(rels, streamsFaultRelation())
		}
		for _, rel := range rels {
			if !rel.appliesTo(e.Era) {
				continue
			}
			if rel.Fig != "" && slices.Contains(e.Result.NotApplicable, rel.Fig) {
				e.Relations = append(e.Relations, report.RelationResult{Era: e.Era, Relation: rel.Text, Skipped: true,
					Got: "n/a (not measured with these members)"})
				continue
			}
			ok, got, skip := rel.evaluate(checkCtx{run: r, era: (*eraRun)(e), p: r.Params, t: r.Timing})
			e.Relations = append(e.Relations, report.RelationResult{Era: e.Era, Relation: rel.Text, OK: ok && !skip, Skipped: skip, Got: got})
		}
	}
}

// ---- timeline helpers for relations and extras ----

func isDeliver(r timeline.Record) bool { return r.Kind == timeline.Deliver }

func isOwnerConflict(r timeline.Record) bool {
	return r.Kind == timeline.ZKOp && r.Op == "write" && r.Result == timeline.ZKOwnerConflict
}

func isRejectedCommit(r timeline.Record) bool {
	return r.Kind == timeline.Commit && r.Result == timeline.CommitRejected
}

// triggerTs returns the ts_ms of the first trigger called name.
func (e *eraRun) triggerTs(name string) (int64, bool) {
	for _, r := range e.Records {
		if r.Kind == timeline.Trigger && r.Name == name {
			return r.TsMs, true
		}
	}
	return 0, false
}

// countBetween counts records matching pred from trigger from (inclusive) to trigger to (exclusive;
// "" = the end of the timeline).
func (e *eraRun) countBetween(from, to string, pred func(timeline.Record) bool) int64 {
	start, ok := e.triggerTs(from)
	if !ok {
		return -1
	}
	end := int64(1 << 62)
	if to != "" {
		if ts, ok := e.triggerTs(to); ok {
			end = ts
		}
	}
	var n int64
	for _, r := range e.Records {
		if r.TsMs >= start && r.TsMs < end && pred(r) {
			n++
		}
	}
	return n
}

// restartRevocationsOfOthers: partitions revoked, during the restart-<m> and rejoin-<m> windows (from
// the trigger to the next trigger or the end of the script), by members other than <m>.
func (e *eraRun) restartRevocationsOfOthers() int64 {
	type win struct {
		member     string
		start, end int64
	}
	var wins []win
	scriptEnd := int64(1 << 62)
	for _, r := range e.Records {
		if r.Kind == timeline.Trigger {
			if len(wins) > 0 && wins[len(wins)-1].end == 0 {
				wins[len(wins)-1].end = r.TsMs
			}
			if m, ok := restartMember(r.Name); ok {
				wins = append(wins, win{member: m, start: r.TsMs})
			}
		}
		if r.Kind == timeline.Trigger && r.Name == report.ScriptEndTrigger {
			scriptEnd = r.TsMs
		}
	}
	var n int64
	for _, w := range wins {
		end := w.end
		if end == 0 {
			end = scriptEnd
		}
		for _, r := range e.Records {
			if r.Kind == timeline.Revoked && r.TsMs >= w.start && r.TsMs < end && r.Member != w.member {
				for _, ps := range r.Partitions {
					n += int64(len(ps))
				}
			}
		}
	}
	return n
}

// restartWindow is one restart-<member> or rejoin-<member> window of rolling-restart.
type restartWindow struct {
	trigger, member string
	paused          int // other members that revoked everything they held in the window
}

// restartMember returns <m> of a restart-<m> or rejoin-<m> trigger.
func restartMember(trigger string) (string, bool) {
	if m, ok := strings.CutPrefix(trigger, "restart-"); ok {
		return m, true
	}
	return strings.CutPrefix(trigger, "rejoin-")
}

// restartPausedOthers returns, per restart-<m> and rejoin-<m> window (from its trigger to the next
// trigger or the end of the script), how many members other than <m> gave up every partition they
// held: an eager rebalance's stop-the-world pause.
func (e *eraRun) restartPausedOthers() []restartWindow {
	var out []restartWindow
	owned := map[string]map[string]bool{} // member -> "<topic>-<p>"
	var cur *restartWindow
	pausedIn := map[string]bool{}
	closeWin := func() {
		if cur != nil {
			cur.paused = len(pausedIn)
			out = append(out, *cur)
			cur, pausedIn = nil, map[string]bool{}
		}
	}
	for _, r := range e.Records {
		switch r.Kind {
		case timeline.Trigger:
			closeWin()
			if m, ok := restartMember(r.Name); ok {
				cur = &restartWindow{trigger: r.Name, member: m}
			}
		case timeline.MemberStart, timeline.MemberStop:
			owned[r.Member] = map[string]bool{}
		case timeline.Assigned:
			set := map[string]bool{}
			for topic, ps := range r.Partitions {
				for _, p := range ps {
					set[fmt.Sprintf("%s-%d", topic, p)] = true
				}
			}
			owned[r.Member] = set
		case timeline.Revoked:
			held := len(owned[r.Member])
			for topic, ps := range r.Partitions {
				for _, p := range ps {
					delete(owned[r.Member], fmt.Sprintf("%s-%d", topic, p))
				}
			}
			if cur != nil && r.Member != cur.member && held > 0 && len(owned[r.Member]) == 0 {
				pausedIn[r.Member] = true
			}
		}
	}
	closeWin()
	return out
}

// commitsForOthers counts commit records with the given result made by a member for a partition whose
// owner of record (the latest live member whose assigned listed it and who still owns it) is another
// member: a zombie's commits. Unlike stale_commits_*, a commit a member makes just after its own revoke
// (before anyone else is assigned the partition) does not count.
func (e *eraRun) commitsForOthers(result string) int64 {
	type tp struct {
		topic string
		p     int32
	}
	owned := map[string]map[tp]bool{}
	latest := map[tp]string{}
	var n int64
	for _, r := range e.Records {
		switch r.Kind {
		case timeline.MemberStart, timeline.MemberStop:
			owned[r.Member] = map[tp]bool{}
		case timeline.Assigned:
			set := map[tp]bool{}
			for topic, ps := range r.Partitions {
				for _, p := range ps {
					set[tp{topic, p}] = true
					latest[tp{topic, p}] = r.Member
				}
			}
			owned[r.Member] = set
		case timeline.Revoked:
			for topic, ps := range r.Partitions {
				for _, p := range ps {
					delete(owned[r.Member], tp{topic, p})
				}
			}
		case timeline.Commit:
			if r.Partition == nil || r.Result != result {
				continue
			}
			k := tp{r.Topic, *r.Partition}
			if o := latest[k]; o != "" && o != r.Member && owned[o][k] {
				n++
			}
		}
	}
	return n
}
