package main

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ---- helpers over scenario results ----

// event returns the era's event window called trigger.
func event(e *scenarios.EraRun, trigger string) (scenarios.Event, bool) {
	for _, ev := range e.Result.Events {
		if ev.Trigger == trigger {
			return ev, true
		}
	}
	return scenarios.Event{}, false
}

// windowRecords returns the records of the event window called trigger exactly as Compute counts
// them: from the trigger record through the end of the millisecond in which the group became stable,
// up to the next trigger, or to the end.
func windowRecords(e *scenarios.EraRun, trigger string) []timeline.Record {
	recs := e.Records
	ev, ok := event(e, trigger)
	if !ok || len(recs) == 0 {
		return nil
	}
	start := -1
	for i, r := range recs {
		if r.Kind == timeline.Trigger && r.Name == trigger {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	endTs := recs[0].TsMs + ev.EndMs
	end := start + 1
	for ; end < len(recs); end++ {
		r := recs[end]
		if r.Kind == timeline.Trigger || (ev.End == scenarios.EndStable && r.TsMs > endTs) {
			break
		}
	}
	return recs[start:end]
}

// countedAPIs are the requests the group_requests figure counts.
var countedAPIs = map[string]bool{"JoinGroup": true, "SyncGroup": true, "Heartbeat": true, "LeaveGroup": true, "OffsetCommit": true}

// memberCounts are one member's records in a window.
type memberCounts struct {
	watches, reads, writes, groupRequests, attempts, revoked int
	begun                                                    bool
}

func countByMember(recs []timeline.Record) (map[string]*memberCounts, []string) {
	out := map[string]*memberCounts{}
	var names []string
	get := func(m string) *memberCounts {
		if out[m] == nil {
			out[m] = &memberCounts{}
			names = append(names, m)
		}
		return out[m]
	}
	for _, r := range recs {
		if r.Member == "runner" || r.Member == "producer" {
			continue
		}
		switch r.Kind {
		case timeline.ZKWatch:
			get(r.Member).watches++
		case timeline.ZKOp:
			if r.Op == "write" {
				get(r.Member).writes++
			} else {
				get(r.Member).reads++
			}
		case timeline.GroupRequest:
			if countedAPIs[r.API] {
				get(r.Member).groupRequests++
			}
		case timeline.RebalanceBegin:
			get(r.Member).begun = true
		case timeline.RebalanceEnd:
			get(r.Member).attempts++
		case timeline.Revoked:
			for _, ps := range r.Partitions {
				get(r.Member).revoked += len(ps)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return memberLess(names[i], names[j]) })
	return out, names
}

// memberLess orders m2 before m10.
func memberLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func tts(v int64) string {
	if v == scenarios.NeverStable {
		return "never stable again within the window"
	}
	return fmt.Sprintf("%d ms", v)
}

// tableText is the CLI's table (figures side by side, extras, cross-check, relations).
func tableText(res *scenarios.RunResult) (string, error) {
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// relationsSentence says whether the run passed: the scenario's expected relations held (naming
// those that did not), how many were skipped (not measured), and the errors the run recorded.
func relationsSentence(res *scenarios.RunResult) string {
	n := 0
	var failed, errs []string
	for _, e := range res.Eras {
		for _, msg := range e.Errors {
			errs = append(errs, e.Era+": "+msg)
		}
		for _, rel := range e.Relations {
			if rel.Skipped {
				continue
			}
			n++
			if !rel.OK {
				failed = append(failed, fmt.Sprintf("%s: “%s” (got %s)", e.Era, rel.Relation, rel.Got))
			}
		}
	}
	out := fmt.Sprintf("%d of the %d relations the scenario expects held in this run; these did not: %s.", n-len(failed), n, strings.Join(failed, "; "))
	if len(failed) == 0 {
		out = fmt.Sprintf("All %d relations the scenario expects held in this run (the `ok` lines under the table).", n)
	}
	if c := res.Counts(); c.Skipped > 0 {
		out += fmt.Sprintf(" %d were skipped, not measured here (the `skip` lines).", c.Skipped)
	}
	if len(errs) > 0 {
		out += fmt.Sprintf(" The run FAILED all the same: it recorded %d errors (%s).", len(errs), strings.Join(errs, "; "))
	}
	return out
}

// fig returns ev's figure name; a name that is no figure is a bug in the generator, not a 0.
func fig(ev scenarios.Event, name string) int64 {
	v, ok := ev.Figures.Get(name)
	if !ok {
		panic(fmt.Sprintf("docs/gen: unknown figure %q", name))
	}
	return v
}

// ---- chapter 4: the herd effect ----

func (g *generator) ch4() error {
	res := g.result(runHerd)
	table, err := tableText(res)
	if err != nil {
		return err
	}
	g.out.block("ch4-table", "```text\n"+table+"```")
	n, p := res.Params.Consumers, res.Params.Partitions

	var sum strings.Builder
	fmt.Fprintf(&sum, "In this run %d members shared %d partitions when a member joined (event `join`), and one left later (event `leave`).", n, p)
	if zk := eraOf(res, "zk"); zk != nil {
		if ev, ok := event(zk, "join"); ok {
			fmt.Fprintf(&sum, " In the **zk** era the join set off %d watch notifications and woke %d members into a rebalance; "+
				"together they sent %d ZooKeeper reads and %d writes, revoked %d partitions (every one), and the group was stable after %s.",
				fig(ev, scenarios.FigZKWatchEvents), fig(ev, scenarios.FigRebalanceParticipants), fig(ev, scenarios.FigZKReads),
				fig(ev, scenarios.FigZKWrites), fig(ev, scenarios.FigRevocations), tts(ev.Figures.TimeToStableMs))
		}
	}
	if cl := eraOf(res, "classic"); cl != nil {
		if ev, ok := event(cl, "join"); ok {
			fmt.Fprintf(&sum, " In the **classic** era the coordinator also made all %d members rejoin (%d group requests), they revoked %d partitions, "+
				"and the group was stable after %s — but nobody read anything from ZooKeeper, and only the coordinator had to notice the change.",
				fig(ev, scenarios.FigRebalanceParticipants), fig(ev, scenarios.FigGroupRequests), fig(ev, scenarios.FigRevocations), tts(ev.Figures.TimeToStableMs))
		}
	}
	if co := eraOf(res, "cooperative"); co != nil {
		if ev, ok := event(co, "join"); ok {
			fmt.Fprintf(&sum, " The **cooperative** era revoked %s instead (chapter 6).", plural(int(fig(ev, scenarios.FigRevocations)), "partition"))
		}
	}
	sum.WriteString(" " + relationsSentence(res))
	g.out.block("ch4-summary", sum.String())

	// Who woke up: per member, the join window.
	var pm strings.Builder
	fmt.Fprintf(&pm, "Each member's own records in the `join` window (from the trigger until the group was stable again), %d members + the one joining.\n\n", n)
	for _, era := range erasRun(res) {
		e := eraOf(res, era)
		counts, names := countByMember(windowRecords(e, "join"))
		if era == "zk" {
			pm.WriteString("**zk** | watch notifications | ZooKeeper reads | ZooKeeper writes | rebalance attempts | partitions revoked\n---|---|---|---|---|---\n")
			for _, m := range names {
				c := counts[m]
				fmt.Fprintf(&pm, "%s | %d | %d | %d | %d | %d\n", m, c.watches, c.reads, c.writes, c.attempts, c.revoked)
			}
		} else {
			fmt.Fprintf(&pm, "**%s** | group requests | rebalance attempts | partitions revoked\n---|---|---|---\n", era)
			for _, m := range names {
				c := counts[m]
				fmt.Fprintf(&pm, "%s | %d | %d | %d\n", m, c.groupRequests, c.attempts, c.revoked)
			}
		}
		pm.WriteString("\n")
	}
	if err := g.out.write("ch4-herd-per-member.md", []byte(pm.String())); err != nil {
		return err
	}
	g.out.block("ch4-per-member", pm.String())

	// Growth: make demo's herd-join sweep, every era, medians per size.
	sw := g.sweepResult(runHerdSweep)
	if sw == nil {
		return fmt.Errorf("the herd-join sweep did not run")
	}
	growth, pts := sweepGrowthTables(sw)
	if err := g.out.write("ch4-herd-growth.md", []byte(growth)); err != nil {
		return err
	}
	g.out.block("ch4-growth", growth)
	g.out.block("ch4-growth-summary", growthSentence(pts)+" "+sweepFitSentence(sw))
	g.out.block("ch4-crossover", crossoverSentence(sw))
	return nil
}

// sweepCell is the median of era's fig at size z ("n/a" where it does not apply, "stopped" where the
// size did not finish), with unit appended.
func sweepCell(sw *scenarios.SweepResult, z *scenarios.SweepSize, era, fig, unit string) string {
	if len(z.Runs) == 0 {
		return "stopped"
	}
	v, ok := sw.Median(z, era, fig)
	switch {
	case !ok:
		return "n/a"
	case fig == scenarios.FigTimeToStableMs && v < 0:
		return "never"
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

// sweepGrowthTables are the sweep's medians of its measured event (the join) per size: the
// coordination load (the zk era's woken members, watch notifications and ZooKeeper reads beside the
// algorithm's (N+1)(N+2), and each coordinator era's group requests), then the time to stable and the
// stop-the-world pause of every era. pts are the zk era's (woken members, reads) for growthSentence.
func sweepGrowthTables(sw *scenarios.SweepResult) (string, []growthPoint) {
	var b strings.Builder
	runs := max(1, func() int {
		n := 0
		for _, z := range sw.Sizes {
			n = max(n, len(z.Runs))
		}
		return n
	}())
	fmt.Fprintf(&b, "Medians of %s per size (`%s` event: N members stable, one joins; %d partitions).\n\n",
		plural(runs, "run"), sw.Trigger, sweepPartitions(sw))
	b.WriteString("| N (members before the join) | zk: members woken | zk: watch notifications | zk: ZooKeeper reads | (N+1)(N+2) | zk: reads per woken member | classic: group requests | cooperative: group requests | static: group requests |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	var pts []growthPoint
	for _, z := range sw.Sizes {
		perMember := "–"
		woken, okw := sw.Median(z, "zk", scenarios.FigRebalanceParticipants)
		reads, okr := sw.Median(z, "zk", scenarios.FigZKReads)
		if okw && okr && woken > 0 {
			perMember = fmt.Sprintf("%.1f", reads/woken)
			pts = append(pts, growthPoint{woken, reads})
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %d | %s | %s | %s | %s |\n", z.N,
			sweepCell(sw, z, "zk", scenarios.FigRebalanceParticipants, ""), sweepCell(sw, z, "zk", scenarios.FigZKWatchEvents, ""),
			sweepCell(sw, z, "zk", scenarios.FigZKReads, ""), scenarios.AlgorithmZKReads(z.N), perMember,
			sweepCell(sw, z, "classic", scenarios.FigGroupRequests, ""), sweepCell(sw, z, "cooperative", scenarios.FigGroupRequests, ""),
			sweepCell(sw, z, "static", scenarios.FigGroupRequests, ""))
	}
	b.WriteString("\n| N | time to stable: zk | classic | cooperative | static | paused member-ms: zk | classic | cooperative | static |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, z := range sw.Sizes {
		fmt.Fprintf(&b, "| %d", z.N)
		for _, fig := range []string{scenarios.FigTimeToStableMs, scenarios.FigPausedMemberMs} {
			for _, era := range allEras {
				b.WriteString(" | " + sweepCell(sw, z, era, fig, map[bool]string{true: " ms", false: ""}[fig == scenarios.FigTimeToStableMs]))
			}
		}
		b.WriteString(" |\n")
	}
	for _, z := range sw.Sizes {
		if z.Stopped != "" {
			fmt.Fprintf(&b, "\nStopped: %s.\n", z.Stopped)
		}
	}
	return b.String(), pts
}

// sweepPartitions is the partition count of the sweep's runs.
func sweepPartitions(sw *scenarios.SweepResult) int {
	for _, z := range sw.Sizes {
		for _, r := range z.Runs {
			return r.Params.Partitions
		}
	}
	return 0
}

// sweepFitSentence gives the sweep's fit of the zk era's reads, a·N² + b·N + c over the medians, and its
// growth exponent at the largest size where the fit rule allows one (five sizes), else the log–log
// slopes between consecutive sizes; and the algorithm's own count beside the measured reads.
func sweepFitSentence(sw *scenarios.SweepResult) string {
	f, ok := sw.FitZKReads()
	if !ok {
		return "The sweep has too few sizes with a zk run to fit the reads."
	}
	var b strings.Builder
	if f.Fitted {
		fmt.Fprintf(&b, "Fitted over the sizes as a whole, the reads for one join are ≈ %.2f·N² + %.1f·N + %.0f for N members "+
			"before it, growing as N^%.2f at N=%.0f (the fitted curve's log–log slope: 1 is linear, 2 quadratic).",
			f.A, f.B, f.C, f.Exponent, f.Points[len(f.Points)-1].X)
	} else {
		fmt.Fprintf(&b, "With %d sizes a quadratic fit would have too few points (it needs two more than its three coefficients); "+
			"the reads' %s (1 is linear, 2 quadratic).", len(f.Points), f.Growth)
	}
	b.WriteString(" The algorithm's own count, each of the N+1 woken members listing the group's ids and reading every registration, (N+1)(N+2), against the reads measured:")
	for i, p := range f.Points {
		sep := ","
		if i == len(f.Points)-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " N=%.0f: %d of %.0f%s", p.X, scenarios.AlgorithmZKReads(int(p.X)), p.Y, sep)
	}
	b.WriteString(" The rest are each woken member's own reads (the brokers, the topic, its partitions' offsets and owners) and its retries.")
	return b.String()
}

// crossoverSentence says from which size every coordinator era stabilised faster than the zk era
// (medians of the join's time to stable), or that none did up to the largest size the sweep finished.
func crossoverSentence(sw *scenarios.SweepResult) string {
	times := func(z *scenarios.SweepSize) string {
		var parts []string
		for _, era := range allEras {
			parts = append(parts, era+" "+sweepCell(sw, z, era, scenarios.FigTimeToStableMs, " ms"))
		}
		return strings.Join(parts, ", ")
	}
	var done []*scenarios.SweepSize
	for _, z := range sw.Sizes {
		if len(z.Runs) > 0 {
			done = append(done, z)
		}
	}
	if len(done) == 0 {
		return "The sweep finished no size, so it shows no race."
	}
	n, ok := sw.Crossover()
	if !ok {
		last := done[len(done)-1]
		return fmt.Sprintf("In this run there is no crossover up to N=%d: at no size did every coordinator era stabilise faster "+
			"than the zk era (median time to stable at N=%d: %s). On this machine the zk era's herd, at these sizes, still "+
			"costs less time than the coordinator's barrier; it costs ZooKeeper reads, as the tables show.", last.N, last.N, times(last))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "In this run the coordinator wins the race on time from N=%d: there every coordinator era stabilised faster "+
		"than the zk era (median time to stable: %s).", n, times(sw.Sizes[slices.IndexFunc(sw.Sizes, func(z *scenarios.SweepSize) bool { return z.N == n })]))
	for _, z := range done {
		if z.N < n {
			fmt.Fprintf(&b, " At N=%d the zk era had not lost yet (%s).", z.N, times(z))
		}
	}
	return b.String()
}

// growthPoint: woken members, their ZooKeeper reads for one join.
type growthPoint struct{ woken, reads float64 }

// growthSentence fits reads = woken × (a + b × woken) — a fixed part per member, and a part that
// grows with the group (every registration is read) — by least squares on reads per woken member,
// and says where the quadratic part overtakes the fixed one.
func growthSentence(pts []growthPoint) string {
	if len(pts) < 2 {
		return "This run has too few sizes to fit a growth."
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x, y := p.woken, p.reads/p.woken
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	k := float64(len(pts))
	den := k*sxx - sx*sx
	if den == 0 {
		return "This run's sizes are all equal; no growth to fit."
	}
	b := (k*sxy - sx*sy) / den
	a := (sy - b*sx) / k
	first, last := pts[0], pts[len(pts)-1]
	s := fmt.Sprintf("From %.0f to %.0f woken members the zk era's reads for one join went from %.0f to %.0f (×%.1f for ×%.1f members). "+
		"Fitted per woken member: %.1f reads whatever the size (brokers, partitions, its own offsets and claims) plus %.2f per member of the "+
		"group (reading every registration), so the total is %.1f·N + %.2f·N² for N woken members.",
		first.woken, last.woken, first.reads, last.reads, last.reads/first.reads, last.woken/first.woken, a, b, a, b)
	switch {
	case b > 0 && a > 0 && last.woken < a/b:
		s += fmt.Sprintf(" Up to this size the fixed part still dominates; the N² part overtakes it from about %.0f members on.", a/b)
	case b > 0 && a > 0:
		s += fmt.Sprintf(" The N² part overtakes the fixed part from about %.0f members on, within the sizes measured here.", a/b)
	default:
		s += " In this run the reads per member did not grow with the group, so no quadratic part shows."
	}
	return s
}

// ---- chapter 5: split brain ----

func (g *generator) ch5() error {
	zres := g.result(runZombie)
	table, err := tableText(zres)
	if err != nil {
		return err
	}
	g.out.block("ch5-zombie-table", "```text\n"+table+"```")
	var ex strings.Builder
	for _, era := range []string{"zk", "classic"} {
		e := eraOf(zres, era)
		if e == nil {
			continue
		}
		zombie, stallAt, healAt := zombieOf(zres, e)
		fmt.Fprintf(&ex, "# %s era: %s's %s link stalls at +0 ms, heals at %+d ms (<g> is the group and topic %s)\n", era, zombie,
			map[bool]string{true: "ZooKeeper", false: "coordinator"}[era == "zk"], healAt-stallAt, e.Topic)
		ex.WriteString(excerptLegend)
		for _, line := range shorten(excerpt(e.Records, stallAt, lastAssigned(e.Records), 70, map[string]bool{zombie: true}), e) {
			ex.WriteString(line + "\n")
		}
		ex.WriteString("\n")
	}
	if err := g.out.write("ch5-zombie-excerpt.txt", []byte(ex.String())); err != nil {
		return err
	}
	g.out.block("ch5-zombie-excerpt", "```text\n"+strings.TrimRight(ex.String(), "\n")+"\n```")

	var sum strings.Builder
	sum.WriteString("In this run:")
	for _, era := range erasRun(zres) {
		e := eraOf(zres, era)
		t := e.Result.Totals
		fmt.Fprintf(&sum, "\n- **%s**: at most %s delivering the same partition at once; %d duplicate deliveries; "+
			"commits for a partition another live member owned: %d applied, %d refused",
			era, plural(int(t.MaxConcurrentOwners), "member"), t.Duplicates, e.Extra["commits_applied_for_others_partitions"], e.Extra["commits_rejected_for_others_partitions"])
		if era == "zk" {
			fmt.Fprintf(&sum, "; stale commits applied: %d (ZooKeeper cannot refuse one).", t.StaleCommitsApplied)
		} else {
			fmt.Fprintf(&sum, "; stale commits refused by the coordinator: %d.", t.StaleCommitsRejected)
		}
	}
	sum.WriteString("\n\n" + relationsSentence(zres))
	g.out.block("ch5-zombie-summary", sum.String())

	rate := []string{"| era | stall | zombie's deliveries per second of the stall | produced to its partitions per second | during the stall |",
		"|---|---|---|---|---|"}
	for _, era := range erasRun(zres) {
		e := eraOf(zres, era)
		zombie, stallAt, healAt := zombieOf(zres, e)
		if stallAt == 0 || healAt == 0 {
			continue
		}
		rate = append(rate, zombieRate(era, e.Records, zombie, stallAt, healAt))
	}
	g.out.block("ch5-zombie-rate", strings.Join(rate, "\n"))

	dres := g.result(runDivergent)
	dtable, err := tableText(dres)
	if err != nil {
		return err
	}
	g.out.block("ch5-divergent-table", "```text\n"+dtable+"```")
	var dex, dshort strings.Builder
	if zk := eraOf(dres, "zk"); zk != nil {
		from, _ := triggerTs(zk.Records, "churn")
		// Faults set just before the trigger (the delayed links) belong to the story.
		for _, r := range zk.Records {
			if r.TsMs >= from-1000 && r.Kind == timeline.Fault {
				from = min(from, r.TsMs)
				break
			}
		}
		header := fmt.Sprintf("# zk era from the churn (<g> is the group and topic %s): delayed links, joins, leaves,\n"+
			"# owner-znode claims that failed, retried attempts\n", zk.Topic)
		dex.WriteString(header)
		dshort.WriteString(header)
		lines := shorten(excerpt(zk.Records, from, lastAssigned(zk.Records), 0, nil), zk)
		for i, line := range lines {
			dex.WriteString(line + "\n")
			if i < 60 {
				dshort.WriteString(line + "\n")
			}
		}
		if len(lines) > 60 {
			fmt.Fprintf(&dshort, "... %d more lines in figures/ch5-divergent-excerpt.txt\n", len(lines)-60)
		}
	}
	if err := g.out.write("ch5-divergent-excerpt.txt", []byte(dex.String())); err != nil {
		return err
	}
	g.out.block("ch5-divergent-excerpt", "```text\n"+dshort.String()+"```")
	var dsum strings.Builder
	dsum.WriteString("In this run:")
	for _, era := range erasRun(dres) {
		e := eraOf(dres, era)
		t := e.Result.Totals
		if era == "zk" {
			fmt.Fprintf(&dsum, "\n- **zk**: %d failed owner-znode claims since the churn began (%d in all), %d rebalance attempts, %d rebalances given up, "+
				"at most %s delivering one partition at once.", e.Extra["ownership_conflicts_since_churn"], t.OwnershipConflicts,
				t.RebalanceAttempts, t.RebalanceFailures, plural(int(t.MaxConcurrentOwners), "member"))
		} else {
			fmt.Fprintf(&dsum, "\n- **%s**: %d rebalance attempts, %d given up, at most %s delivering one partition at once, %d records lost.",
				era, t.RebalanceAttempts, t.RebalanceFailures, plural(int(t.MaxConcurrentOwners), "member"), t.Lost)
		}
	}
	dsum.WriteString("\n\n" + relationsSentence(dres))
	g.out.block("ch5-divergent-summary", dsum.String())
	return nil
}

// shorten writes <g> for the era's group and topic name in excerpt lines.
func shorten(lines []string, e *scenarios.EraRun) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = strings.ReplaceAll(l, e.Group, "<g>")
		out[i] = strings.ReplaceAll(l, e.Topic, "<g>")
	}
	return out
}

func triggerTs(recs []timeline.Record, name string) (int64, bool) {
	for _, r := range recs {
		if r.Kind == timeline.Trigger && r.Name == name {
			return r.TsMs, true
		}
	}
	return 0, false
}

// ---- chapter 6: cooperative rebalancing and static membership ----

func (g *generator) ch6() error {
	res := g.result(runRolling)
	table, err := tableText(res)
	if err != nil {
		return err
	}
	g.out.block("ch6-table", "```text\n"+table+"```")
	var b strings.Builder
	b.WriteString("| era | restart | members rebalancing | partitions revoked | of them, by members not restarted | time to stable | ms of unowned partitions with data waiting |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	type total struct{ revoked, others, unowned, rebalancing int64 }
	totals := map[string]*total{}
	for _, era := range erasRun(res) {
		e := eraOf(res, era)
		totals[era] = &total{}
		for _, ev := range e.Result.Events {
			m, ok := strings.CutPrefix(ev.Trigger, "restart-")
			if !ok {
				continue
			}
			others := 0
			counts, _ := countByMember(windowRecords(e, ev.Trigger))
			for name, c := range counts {
				if name != m {
					others += c.revoked
				}
			}
			f := ev.Figures
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %d |\n", era, m, f.RebalanceParticipants, f.Revocations, others, tts(f.TimeToStableMs), f.UnownedPartitionMs)
			t := totals[era]
			t.revoked += f.Revocations
			t.others += int64(others)
			t.unowned += f.UnownedPartitionMs
			t.rebalancing += f.RebalanceParticipants
		}
	}
	if err := g.out.write("ch6-restarts.md", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch6-restarts", b.String())
	var sum strings.Builder
	fmt.Fprintf(&sum, "Over the %d restarts of this run (%d members, %d partitions):", res.Params.Consumers, res.Params.Consumers, res.Params.Partitions)
	for _, era := range erasRun(res) {
		t := totals[era]
		fmt.Fprintf(&sum, "\n- **%s**: %d partitions revoked, %d of them from members that were not restarted; %d member-rebalances; %d ms of partitions unowned with data waiting.",
			era, t.revoked, t.others, t.rebalancing, t.unowned)
	}
	sum.WriteString("\n\n" + relationsSentence(res))
	g.out.block("ch6-summary", sum.String())
	return nil
}
