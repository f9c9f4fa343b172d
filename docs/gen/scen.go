package main

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/sweep"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ---- helpers over scenario results ----

// event returns the era's event window called trigger.
func event(e *report.EraRun, trigger string) (figures.Event, bool) {
	for _, ev := range e.Result.Events {
		if ev.Trigger == trigger {
			return ev, true
		}
	}
	return figures.Event{}, false
}

// windowRecords returns the records of the event window called trigger exactly as Compute counts
// them: from the trigger record through the end of the millisecond in which the group became stable,
// up to the next trigger, or to the end.
func windowRecords(e *report.EraRun, trigger string) []timeline.Record {
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
		if r.Kind == timeline.Trigger || (ev.End == figures.EndStable && r.TsMs > endTs) {
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
	if v == figures.NeverStable {
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
func fig(ev figures.Event, name string) int64 {
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
	if zk := eraOf(res, spec.ZK); zk != nil {
		if ev, ok := event(zk, "join"); ok {
			fmt.Fprintf(&sum, " In the **zk** era the join set off %d watch notifications and woke %d members into a rebalance; "+
				"together they sent %d ZooKeeper reads and %d writes, revoked %d partitions (every one), and the group was stable after %s.",
				fig(ev, figures.FigZKWatchEvents), fig(ev, figures.FigRebalanceParticipants), fig(ev, figures.FigZKReads),
				fig(ev, figures.FigZKWrites), fig(ev, figures.FigRevocations), tts(ev.Figures.TimeToStableMs))
		}
	}
	if cl := eraOf(res, spec.Classic); cl != nil {
		if ev, ok := event(cl, "join"); ok {
			fmt.Fprintf(&sum, " In the **classic** era the coordinator also made all %d members rejoin (%d group requests), they revoked %d partitions, "+
				"and the group was stable after %s — but nobody read anything from ZooKeeper, and only the coordinator had to notice the change.",
				fig(ev, figures.FigRebalanceParticipants), fig(ev, figures.FigGroupRequests), fig(ev, figures.FigRevocations), tts(ev.Figures.TimeToStableMs))
		}
	}
	if co := eraOf(res, spec.Cooperative); co != nil {
		if ev, ok := event(co, "join"); ok {
			fmt.Fprintf(&sum, " The **cooperative** era revoked %s instead (chapter 6).", plural(int(fig(ev, figures.FigRevocations)), "partition"))
		}
	}
	sum.WriteString(" " + relationsSentence(res))
	g.out.block("ch4-summary", sum.String())

	// Who woke up: per member, the join window.
	var pm strings.Builder
	fmt.Fprintf(&pm, "Each member's own records in the `join` window (from the trigger until the group was stable again), %d members + the one joining.\n\n", n)
	for _, era := range erasRun(res) {
		e := eraOf(res, spec.Era(era))
		counts, names := countByMember(windowRecords(e, "join"))
		if spec.Era(era).UsesZooKeeper() {
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

	// Growth: the herd-join sweep under make demo's rules, every era, medians with min–max per size.
	sw := g.sweepResult(runHerdSweep)
	if sw == nil {
		return fmt.Errorf("the herd-join sweep did not run")
	}
	growth := sweepGrowthTables(sw)
	if err := g.out.write("ch4-herd-growth.md", []byte(growth)); err != nil {
		return err
	}
	g.out.block("ch4-growth", growth)
	g.out.block("ch4-model-summary", modelSentence(sw))
	g.out.block("ch4-verdict", verdictBlock(sw))
	return nil
}

// sweepCellText is era's cell of fig at size z as the sweep's table prints it (sweep.Cell.String: the
// median, [min–max] over the runs, the number of runs when fewer than three, `never`); "stopped" where
// the size did not finish, "cut" where the era did not run at that size (SweepResult.EraMaxN), "n/a"
// where the figure does not apply.
func sweepCellText(sw *report.SweepResult, z *report.SweepSize, era, fig string) string {
	if c, ok := sw.Cell(z, era, fig); ok {
		return c.String()
	}
	if len(z.Runs) == 0 {
		return "stopped"
	}
	if m, ok := sw.EraMaxN[era]; ok && z.N > m {
		return "cut"
	}
	return "n/a"
}

// medianRange is a model's counts over a cell's runs: the median, [min–max] when they differ.
func medianRange(v []int64) string {
	c := sweep.Cell{}
	for _, x := range v {
		c.Values = append(c.Values, float64(x))
	}
	s := sweep.Sig(c.Median())
	if c.Min() != c.Max() {
		s += " [" + sweep.Sig(c.Min()) + "–" + sweep.Sig(c.Max()) + "]"
	}
	return s
}

// signed is the residuals of a cell's runs: "-3, +0, -5".
func signed(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%+d", x)
	}
	return strings.Join(parts, ", ")
}

// modelCells indexes the sweep's ModelCells by era, figure and N.
func modelCells(sw *report.SweepResult) map[string]report.ModelCell {
	out := map[string]report.ModelCell{}
	for _, c := range sw.ModelCells() {
		out[fmt.Sprintf("%s/%s/%d", c.Era, c.Figure, c.N)] = c
	}
	return out
}

func modelOf(cells map[string]report.ModelCell, era, fig string, n int) (report.ModelCell, bool) {
	c, ok := cells[fmt.Sprintf("%s/%s/%d", era, fig, n)]
	return c, ok
}

// sweepRuns is the most runs any size of the sweep has.
func sweepRuns(sw *report.SweepResult) int {
	n := 0
	for _, z := range sw.Sizes {
		n = max(n, len(z.Runs))
	}
	return n
}

// sweepGrowthTables are the sweep's cells of its measured event (the join) per size, each the median
// with [min–max] over the runs: the zk era's woken members, watch notifications and ZooKeeper reads
// beside the model's counts (figures.ZKWatchEvents, ZKReads, evaluated on each run's measured inputs)
// and the residuals; the coordinator eras' group requests beside their protocol's count
// (figures.GroupRequests), with their rebalance attempts and revocations; then every era's time to
// stable and stop-the-world pause.
func sweepGrowthTables(sw *report.SweepResult) string {
	var b strings.Builder
	if runs := sweepRuns(sw); runs > 1 {
		fmt.Fprintf(&b, "Each cell: the median of %d runs at that size, [min–max] over them, the runs counted where fewer", runs)
	} else {
		b.WriteString("Each cell: the one run at that size")
	}
	fmt.Fprintf(&b, " (`%s` event: N members stable, one joins; P partitions).", sw.Trigger)
	var cut []string
	for _, era := range allEras {
		if m, ok := sw.EraMaxN[era]; ok {
			cut = append(cut, fmt.Sprintf("%s up to N=%d", era, m))
		}
	}
	if len(cut) > 0 {
		fmt.Fprintf(&b, " Eras run only so far (`cut` above): %s.", strings.Join(cut, ", "))
	}
	b.WriteString("\n\n")
	cells := modelCells(sw)
	b.WriteString("| N | P | zk: members woken | watch notifications | model | ZooKeeper reads | model | measured − model, per run | bound |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, z := range sw.Sizes {
		w, r := "–", "–"
		res, bound := "–", "–"
		if c, ok := modelOf(cells, string(spec.ZK), figures.FigZKWatchEvents, z.N); ok {
			w = medianRange(c.Model)
		}
		if c, ok := modelOf(cells, string(spec.ZK), figures.FigZKReads, z.N); ok {
			r, res, bound = medianRange(c.Model), signed(c.Residuals()), fmt.Sprintf("%+d..%+d", c.Lo, c.Hi)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", z.N, sizePartitions(z),
			sweepCellText(sw, z, string(spec.ZK), figures.FigRebalanceParticipants), sweepCellText(sw, z, string(spec.ZK), figures.FigZKWatchEvents), w,
			sweepCellText(sw, z, string(spec.ZK), figures.FigZKReads), r, res, bound)
	}
	b.WriteString("\n| N | era | members woken | rebalance attempts | partitions revoked | group requests | model | measured − model, per run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, z := range sw.Sizes {
		for _, era := range allEras[1:] {
			if _, ok := sw.Cell(z, era, figures.FigGroupRequests); !ok {
				continue // cut, stopped or not run: the zk table and the header say
			}
			m, res := "–", "–"
			if c, ok := modelOf(cells, era, figures.FigGroupRequests, z.N); ok {
				m, res = medianRange(c.Model), signed(c.Residuals())
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", z.N, era,
				sweepCellText(sw, z, era, figures.FigRebalanceParticipants), sweepCellText(sw, z, era, figures.FigRebalanceAttempts),
				sweepCellText(sw, z, era, figures.FigRevocations), sweepCellText(sw, z, era, figures.FigGroupRequests), m, res)
		}
	}
	for _, t := range []struct{ fig, title string }{
		{figures.FigTimeToStableMs, "time to stable (ms)"}, {figures.FigPausedMemberMs, "paused member-ms"}} {
		fmt.Fprintf(&b, "\n| N | %s: zk | classic | cooperative | static |\n|---|---|---|---|---|\n", t.title)
		for _, z := range sw.Sizes {
			fmt.Fprintf(&b, "| %d", z.N)
			for _, era := range allEras {
				b.WriteString(" | " + sweepCellText(sw, z, era, t.fig))
			}
			b.WriteString(" |\n")
		}
	}
	for _, z := range sw.Sizes {
		if z.Stopped != "" {
			fmt.Fprintf(&b, "\nStopped: %s.\n", z.Stopped)
		}
	}
	if errs := sweepErrors(sw); len(errs) > 0 {
		fmt.Fprintf(&b, "\nErrors the runs recorded (`scenario run` fails the sweep on them; their figures are in the cells above):\n\n")
		for _, e := range errs {
			b.WriteString("- " + e + "\n")
		}
	}
	return b.String()
}

// sweepErrors are the errors the sweep's runs recorded (a member that gave up, a fault that could not be
// injected), as the CLI's FAIL lines name them: "N=256 run 1, zk: m20 gives up: ...", the era's group
// and topic written <g>.
func sweepErrors(sw *report.SweepResult) []string {
	var out []string
	for _, z := range sw.Sizes {
		for i, r := range z.Runs {
			for _, e := range r.Eras {
				for _, msg := range e.Errors {
					msg = strings.ReplaceAll(msg, "\n", " ")
					if e.Group != "" {
						msg = strings.ReplaceAll(msg, e.Group, "<g>")
					}
					if e.Topic != "" {
						msg = strings.ReplaceAll(msg, e.Topic, "<g>")
					}
					out = append(out, fmt.Sprintf("N=%d run %d, %s: %s", z.N, i+1, e.Era, msg))
				}
			}
		}
	}
	return out
}

// sizePartitions is the topic's partitions at size z (its first run's).
func sizePartitions(z *report.SweepSize) string {
	if len(z.Runs) == 0 {
		return "–"
	}
	return fmt.Sprint(z.Runs[0].Params.Partitions)
}

// growthOf is the verdict's growth of era's medians of fig (the fit rule: log–log slopes between
// consecutive sizes below five sizes); ok=false when the verdict has none.
func growthOf(v sweep.Verdict, fig, era string) (sweep.Growth, bool) {
	for _, fv := range v.Figures {
		if fv.Figure != fig {
			continue
		}
		for _, g := range fv.Growth {
			if g.Era == era {
				return g, true
			}
		}
	}
	return sweep.Growth{}, false
}

// modelSentence says what the sweep's zk reads did over N (first and last medians, their growth under
// the fit rule), how far they lay from the model's count (the residuals over every run, and whether
// each lay within its bound), whether the watch notifications matched the model, and the coordinator
// eras' group requests against their protocol's count — every number read from the sweep.
func modelSentence(sw *report.SweepResult) string {
	v := sw.Verdict()
	var b strings.Builder
	var zkSizes []*report.SweepSize
	for _, z := range sw.Sizes {
		if _, ok := sw.Cell(z, string(spec.ZK), figures.FigZKReads); ok {
			zkSizes = append(zkSizes, z)
		}
	}
	if len(zkSizes) == 0 {
		return "The sweep has no zk run, so it shows no ZooKeeper reads."
	}
	first, last := zkSizes[0], zkSizes[len(zkSizes)-1]
	fc, _ := sw.Cell(first, string(spec.ZK), figures.FigZKReads)
	lc, _ := sw.Cell(last, string(spec.ZK), figures.FigZKReads)
	fmt.Fprintf(&b, "The zk era's ZooKeeper reads for one join went from %s at N=%d to %s at N=%d (medians; ×%s for ×%s members)",
		sweep.Sig(fc.Median()), first.N, sweep.Sig(lc.Median()), last.N, sweep.Sig(lc.Median()/fc.Median()), sweep.Sig(float64(last.N)/float64(first.N)))
	if g, ok := growthOf(v, figures.FigZKReads, string(spec.ZK)); ok && len(zkSizes) > 1 {
		fmt.Fprintf(&b, "; %s (1 is linear, 2 quadratic)", g)
	}
	b.WriteString(".")
	cells := modelCells(sw)
	var runs, within int
	lo, hi := int64(0), int64(0)
	var outside []string
	var model []string
	for _, z := range zkSizes {
		c, ok := modelOf(cells, string(spec.ZK), figures.FigZKReads, z.N)
		if !ok {
			continue
		}
		model = append(model, fmt.Sprintf("%s at N=%d", medianRange(c.Model), z.N))
		for i, r := range c.Residuals() {
			if runs == 0 || r < lo {
				lo = r
			}
			if runs == 0 || r > hi {
				hi = r
			}
			runs++
			if r >= c.Lo && r <= c.Hi {
				within++
			} else {
				outside = append(outside, fmt.Sprintf("N=%d run %d: %+d, bound %+d..%+d", z.N, i+1, r, c.Lo, c.Hi))
			}
		}
	}
	if runs == 0 {
		b.WriteString(" The model could not be evaluated on these runs (their inputs were not measured).")
		return b.String()
	}
	fmt.Fprintf(&b, " The model's count, evaluated on each run's own attempts, members and owned partitions, is %s;", strings.Join(model, ", "))
	fmt.Fprintf(&b, " measured − model lies between %+d and %+d over the %s", lo, hi, plural(runs, "zk run"))
	if len(outside) == 0 {
		b.WriteString(", each within its bound.")
	} else {
		fmt.Fprintf(&b, "; %d of them within its bound, these outside it: %s.", within, strings.Join(outside, "; "))
	}
	var wRuns, wEqual int
	for _, z := range zkSizes {
		if c, ok := modelOf(cells, string(spec.ZK), figures.FigZKWatchEvents, z.N); ok {
			for _, r := range c.Residuals() {
				wRuns++
				if r == 0 {
					wEqual++
				}
			}
		}
	}
	if wRuns > 0 {
		if wEqual == wRuns {
			fmt.Fprintf(&b, " The watch notifications equal the model's count (one per member registered before the join) in every one of them.")
		} else {
			fmt.Fprintf(&b, " The watch notifications equal the model's count in %d of the %s.", wEqual, plural(wRuns, "run"))
		}
	}
	var coord []string
	for _, era := range allEras[1:] {
		var rs []int64
		var ns []int
		for _, z := range sw.Sizes {
			if c, ok := modelOf(cells, era, figures.FigGroupRequests, z.N); ok {
				rs = append(rs, c.Residuals()...)
				ns = append(ns, z.N)
			}
		}
		if len(rs) == 0 {
			continue
		}
		s := fmt.Sprintf("%s %+d..%+d (N=%d..%d)", era, slices.Min(rs), slices.Max(rs), ns[0], ns[len(ns)-1])
		if g, ok := growthOf(v, figures.FigGroupRequests, era); ok && len(ns) > 1 {
			s += fmt.Sprintf(", its requests' %s", g)
		}
		coord = append(coord, s)
	}
	if len(coord) > 0 {
		fmt.Fprintf(&b, " The coordinator eras' group requests against their protocol's count, measured − model over their runs: %s.", strings.Join(coord, "; "))
	}
	return b.String()
}

// verdictBlock is the sweep's verdict as make demo prints it at the top of its report: the header
// naming the sizes, the notation and the timings, then per figure who ranks best where and its
// crossovers or "no crossover in N=a..b", then what each era wins and loses (sweep.Verdict's Lines
// without the rankings, which the tables above and figures/ch4-herd-sweep.txt give).
func verdictBlock(sw *report.SweepResult) string {
	v := sw.Verdict()
	if len(v.Lines) == 0 {
		return "The sweep finished no size, so it has no verdict."
	}
	return "```text\n" + strings.Join(append([]string{v.Lines[0]}, v.Conclusions...), "\n") + "\n```"
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
	for _, era := range spec.Names([]spec.Era{spec.ZK, spec.Classic}) {
		e := eraOf(zres, spec.Era(era))
		if e == nil {
			continue
		}
		zombie, stallAt, healAt := zombieOf(zres, e)
		fmt.Fprintf(&ex, "# %s era: %s's %s link stalls at +0 ms, heals at %+d ms (<g> is the group and topic %s)\n", era, zombie,
			map[bool]string{true: "ZooKeeper", false: "coordinator"}[spec.Era(era).UsesZooKeeper()], healAt-stallAt, e.Topic)
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
		e := eraOf(zres, spec.Era(era))
		t := e.Result.Totals
		fmt.Fprintf(&sum, "\n- **%s**: at most %s delivering the same partition at once; %d duplicate deliveries; "+
			"commits for a partition another live member owned: %d applied, %d refused",
			era, plural(int(t.MaxConcurrentOwners), "member"), t.Duplicates, e.Extra["commits_applied_for_others_partitions"], e.Extra["commits_rejected_for_others_partitions"])
		if spec.Era(era).UsesZooKeeper() {
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
		e := eraOf(zres, spec.Era(era))
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
	if zk := eraOf(dres, spec.ZK); zk != nil {
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
		e := eraOf(dres, spec.Era(era))
		t := e.Result.Totals
		if spec.Era(era).UsesZooKeeper() {
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
func shorten(lines []string, e *report.EraRun) []string {
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
		e := eraOf(res, spec.Era(era))
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
