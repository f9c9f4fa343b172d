package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// The report's opening: what the run showed, in sentences generated from the figures, and the
// scenario's relations as checked. Nothing here is typed in: every number is a figure of the run.

// summarize returns the opening sentences and the relations of every era.
func summarize(eras []EraReport, results []figures.Result, traces []*figures.Trace) ([]string, []relationView) {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	add(participationSentence(results, traces))
	add(loadSentence(results))
	add(eraList("The stop-the-world pause (paused_member_ms: ms during which a member that held partitions when its "+
		"rebalance began held none while it ran, summed over members), least first: ", results, figures.FigPausedMemberMs, true))
	add(eraList("Partitions with records waiting and no owner (unowned_partition_ms), least first: ", results, figures.FigUnownedPartitionMs, true))
	add(eraList("The longest time from a change to a stable group (time_to_stable_ms): ", results, figures.FigTimeToStableMs, false))
	add(eraList("Records delivered again (duplicates): ", results, figures.FigDuplicates, false))
	add(splitBrainSentence(results)) // split_brain.go
	add(eraList("Records produced and never delivered (lost): ", results, figures.FigLost, false))
	add(invariantSentence(results))

	var rels []relationView
	held, checked, skipped := 0, 0, 0
	var failed, errs []string
	for _, er := range eras {
		for _, msg := range er.Errors {
			errs = append(errs, er.Era+": "+msg)
		}
		for _, r := range er.Relations {
			v := relationView{Era: r.Era, Text: r.Relation, Got: r.Got, Status: "held"}
			switch {
			case r.Skipped:
				v.Status = "skipped (not measured)"
				skipped++
			case r.OK:
				held++
				checked++
			default:
				v.Status = "did not hold"
				checked++
				failed = append(failed, r.Era+": "+r.Relation)
			}
			rels = append(rels, v)
		}
	}
	switch {
	case checked == 0:
	case len(failed) == 0:
		add(fmt.Sprintf("All %d relations the scenario expects held (listed below with the values seen).", checked))
	default:
		add(fmt.Sprintf("%d of the %d relations the scenario expects held; these did not: %s.", held, checked, strings.Join(failed, "; ")))
	}
	if skipped > 0 {
		add(fmt.Sprintf("%d relations were skipped, not measured in this run (neither held nor failed).", skipped))
	}
	if len(errs) > 0 {
		add(fmt.Sprintf("The run FAILED: it recorded %d errors (a fault that could not be injected, a member that could not start...): %s.",
			len(errs), strings.Join(errs, "; ")))
	}
	return out, rels
}

// participationSentence: per era, how many of its members each change made rebalance.
func participationSentence(results []figures.Result, traces []*figures.Trace) string {
	var clauses []string
	for i, r := range results {
		if len(r.Events) == 0 {
			continue
		}
		lo, hi := r.Events[0].Figures.RebalanceParticipants, r.Events[0].Figures.RebalanceParticipants
		for _, ev := range r.Events {
			lo, hi = min(lo, ev.Figures.RebalanceParticipants), max(hi, ev.Figures.RebalanceParticipants)
		}
		m, k := int64(len(traces[i].Members)), len(r.Events)
		changes := fmt.Sprintf("each of its %d changes", k)
		if k == 1 {
			changes = "its one change"
		}
		var c string
		switch {
		case lo == hi && lo == m:
			c = fmt.Sprintf("%s made all %d members rebalance", changes, m)
		case lo == hi:
			c = fmt.Sprintf("%s made %d of its %d members rebalance", changes, lo, m)
		default:
			c = fmt.Sprintf("its %d changes made %d to %d of its %d members rebalance", k, lo, hi, m)
		}
		clauses = append(clauses, fmt.Sprintf("in the %s era %s", r.Era, c))
	}
	if len(clauses) == 0 {
		return ""
	}
	s := strings.Join(clauses, "; ")
	return "Who rebalanced (rebalance_participants of each scripted change): " + s + "."
}

// loadSentence: the coordination load after the group formed, ZooKeeper's for the zk era, the group
// coordinator's for the others.
func loadSentence(results []figures.Result) string {
	var clauses []string
	for _, r := range results {
		na := map[string]bool{}
		for _, n := range r.NotApplicable {
			na[n] = true
		}
		t := r.Totals
		switch {
		case !na[figures.FigZKReads] && na[figures.FigGroupRequests]:
			clauses = append(clauses, fmt.Sprintf("the %s members made %d ZooKeeper reads and %d writes and received %d watch events",
				r.Era, t.ZKReads, t.ZKWrites, t.ZKWatchEvents))
		case na[figures.FigZKReads] && !na[figures.FigGroupRequests]:
			clauses = append(clauses, fmt.Sprintf("the %s members sent %d group request%s", r.Era, t.GroupRequests, plural(t.GroupRequests)))
		default:
			clauses = append(clauses, fmt.Sprintf("the %s members made %d ZooKeeper reads and sent %d group requests", r.Era, t.ZKReads, t.GroupRequests))
		}
	}
	if len(clauses) == 0 {
		return ""
	}
	return "Coordination load after the group formed: " + strings.Join(clauses, "; ") +
		" (group requests: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit)."
}

// eraList lists one figure per era ("zk 12 ms, classic 3 ms"), sorted ascending when sorted; "0 in
// every era" when all are 0; eras where the figure does not apply are left out.
func eraList(prefix string, results []figures.Result, name string, sorted bool) string {
	type item struct {
		era  string
		v    int64
		text string
	}
	var items []item
	allZero := true
	for _, r := range results {
		c := cell(r.Era, r.Totals, r.NotApplicable, name)
		if c.Value == "n/a" {
			continue
		}
		v, _ := r.Totals.Get(name)
		text := c.Text
		if strings.HasSuffix(name, "_ms") && text != "never" {
			text += " ms"
		}
		if text == "never" {
			text = "never stable again"
		}
		items = append(items, item{r.Era, v, text})
		allZero = allZero && v == 0
	}
	if len(items) == 0 {
		return ""
	}
	if allZero && len(items) > 1 {
		return prefix + "0 in every era."
	}
	if sorted {
		sort.SliceStable(items, func(i, j int) bool { return items[i].v < items[j].v })
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.era + " " + it.text
	}
	return prefix + strings.Join(parts, ", ") + "."
}

// invariantSentence: whether Kafka's consumer invariants held, naming each break.
func invariantSentence(results []figures.Result) string {
	var broken []string
	for _, r := range results {
		for _, name := range figures.InvariantNames {
			if v, _ := r.Totals.Get(name); v > 0 {
				broken = append(broken, fmt.Sprintf("%s %s %d", r.Era, name, v))
			}
		}
	}
	if len(results) == 0 {
		return ""
	}
	if len(broken) == 0 {
		return "Kafka's consumer invariants (the invariant_* figures) held in every era."
	}
	return "Kafka's consumer invariants were broken: " + strings.Join(broken, ", ") +
		" (where an era breaks one by design, the scenario's relations say so)."
}

// cooperativeCost compares the cooperative era with the classic (eager) one of the same run; nil when
// either is missing or cooperative costs no more in any figure a second round explains
// (rebalance_attempts, group_requests, time_to_stable_ms, unowned_partition_ms).
func cooperativeCost(results []figures.Result) *coopView {
	var eager, coop *figures.Result
	for i := range results {
		switch spec.Era(results[i].Era) {
		case spec.Classic:
			eager = &results[i]
		case spec.Cooperative:
			coop = &results[i]
		}
	}
	if eager == nil || coop == nil {
		return nil
	}
	v := &coopView{}
	// The costs a second round explains: more attempts and requests, a later stable group, and the moving
	// partitions unowned between the rounds.
	for _, name := range []string{figures.FigRebalanceAttempts, figures.FigGroupRequests, figures.FigTimeToStableMs, figures.FigUnownedPartitionMs} {
		c, _ := coop.Totals.Get(name)
		e, _ := eager.Totals.Get(name)
		worse := c > e
		if name == figures.FigTimeToStableMs {
			worse = c == figures.NeverStable && e != figures.NeverStable || e != figures.NeverStable && c > e
		}
		if worse {
			v.Costs = append(v.Costs, fmt.Sprintf("%s: cooperative %s, classic (eager) %s", name,
				cell(coop.Era, coop.Totals, coop.NotApplicable, name).Text, cell(eager.Era, eager.Totals, eager.NotApplicable, name).Text))
		}
	}
	if len(v.Costs) == 0 {
		return nil
	}
	rounds := func(r *figures.Result) string {
		var a, p int64
		for _, ev := range r.Events {
			a += ev.Figures.RebalanceAttempts
			p += ev.Figures.RebalanceParticipants
		}
		if p == 0 {
			return "no rebalance"
		}
		return fmt.Sprintf("%.1f", float64(a)/float64(p))
	}
	v.Why = []string{
		"Why: an eager member revokes every partition it owns before it rejoins, and one JoinGroup/SyncGroup round hands " +
			"out the new assignment. A cooperative member (KIP-429, cooperative-sticky) keeps its partitions through the " +
			"first round and revokes afterwards only those the new assignment takes from it; because a partition may not " +
			"move while its old owner still holds it, the first round leaves the moving partitions unassigned, and the " +
			"members that revoked some rejoin at once (Kafka's ConsumerCoordinator.onJoinComplete: \"need to revoke " +
			"partitions and re-join\"). A second round assigns them. A change that moves partitions costs cooperative two " +
			"rounds: more rebalance attempts and group requests, a later stable group, and the moving partitions " +
			"without an owner from their revocation after the first round until the second assigns them " +
			"(unowned_partition_ms).",
		fmt.Sprintf("Rebalance attempts per participating member over the run's changes: cooperative %s, classic %s.",
			rounds(coop), rounds(eager)),
		fmt.Sprintf("What it buys: members keep consuming the partitions they keep. paused_member_ms: cooperative %d ms, classic %d ms; "+
			"revocations: cooperative %d, classic %d.", coop.Totals.PausedMemberMs, eager.Totals.PausedMemberMs,
			coop.Totals.Revocations, eager.Totals.Revocations),
	}
	return v
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
