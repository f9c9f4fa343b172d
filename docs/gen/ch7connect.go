package main

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/connect"
)

// connectFigure is chapter 7's Connect figure: the connect-workers runs' tables, sessioned then eager.
const connectFigure = "ch7-connect-workers.txt"

// ch7Connect: the connect-workers runs (real Kafka Connect 3.9 workers on this broker, read through the
// group observer) as chapter 7's Connect section: their tables in figures/ch7-connect-workers.txt, the
// sessioned run's in the block ch7-connect-table, and the sentences around it (the blocks
// ch7-connect-settings-summary, -layouts-summary, -kill-summary, -eager-summary). The eager run is
// optional (-small runs sessioned only).
func (g *generator) ch7Connect() error {
	ses := g.connectResult(connectKey(connect.Sessioned))
	if ses == nil {
		return fmt.Errorf("no %s result", connectKey(connect.Sessioned))
	}
	eager := g.connectResult(connectKey(connect.Eager))
	sesTable, err := connectTable(ses)
	if err != nil {
		return err
	}
	fig := sesTable
	if eager != nil {
		t, err := connectTable(eager)
		if err != nil {
			return err
		}
		fig += "\n" + t
	}
	if err := g.out.write(connectFigure, []byte(fig)); err != nil {
		return err
	}
	g.out.block("ch7-connect-settings-summary", connectSettingsText(ses, g.sz.connect.layouts, eager != nil))
	g.out.block("ch7-connect-table", "```text\n"+sesTable+"```")
	g.out.block("ch7-connect-layouts-summary", connectLayoutsText(ses, g.sz.connect.layouts))
	g.out.block("ch7-connect-kill-summary", connectKillText(ses))
	g.out.block("ch7-connect-eager-summary", connectEagerText(ses, eager))
	return nil
}

func connectTable(res *connect.Result) (string, error) {
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// layoutText describes layout l: in full after no layout ("1 worker, `tasks.max` 1 for the source and
// 1 for the sink"), else what changed from prev ("2 workers"; "`tasks.max` 2 for the source and 2 for
// the sink").
func layoutText(prev *connect.Layout, l connect.Layout) string {
	tasks := fmt.Sprintf("`tasks.max` %d for the source and %d for the sink", l.SourceTasks, l.SinkTasks)
	if prev == nil {
		return plural(l.Workers, "worker") + ", " + tasks
	}
	var parts []string
	if l.Workers != prev.Workers {
		parts = append(parts, plural(l.Workers, "worker"))
	}
	if l.SourceTasks != prev.SourceTasks || l.SinkTasks != prev.SinkTasks {
		parts = append(parts, tasks)
	}
	if len(parts) == 0 {
		return "the same again"
	}
	return strings.Join(parts, ", ")
}

// layoutTexts describes each layout as layoutText does.
func layoutTexts(layouts []connect.Layout) []string {
	var out []string
	for i, l := range layouts {
		var prev *connect.Layout
		if i > 0 {
			prev = &layouts[i-1]
		}
		out = append(out, layoutText(prev, l))
	}
	return out
}

// andList: "a", "a and b", "a, b and c".
func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// connectSettingsText introduces the run behind the section: protocol, layouts, the lab's timings.
func connectSettingsText(ses *connect.Result, layouts []connect.Layout, withEager bool) string {
	also := ""
	if withEager {
		also = ", which has the eager run after it"
	}
	return fmt.Sprintf("The run behind this section: `connect.protocol=%s` through %s (%s), then the last worker killed, on the lab's "+
		"timings (`session.timeout.ms=%s`, `heartbeat.interval.ms=%s`, `scheduled.rebalance.max.delay.ms=%d`). Each Stable generation "+
		"as `worker{connectors | tasks}` ([`figures/%s`](figures/%s)%s):",
		ses.Protocol, plural(len(layouts), "layout"), strings.Join(layoutTexts(layouts), "; then "), lab.ConnectLabSettings["session.timeout.ms"],
		lab.ConnectLabSettings["heartbeat.interval.ms"], ses.DelayMs, connectFigure, connectFigure, also)
}

// holdings maps each worker of g to what it holds (connectors and tasks).
func holdings(g connect.Generation) map[string][]string {
	out := map[string][]string{}
	for _, h := range g.Workers {
		out[h.Worker] = append(slices.Clone(h.Connectors), h.Tasks...)
	}
	return out
}

func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// genChange says what changed from prev to cur, worker by worker: "worker-2 joins, worker-1 gives up
// verifiable-sink and verifiable-sink-0"; "no change" when nothing did.
func genChange(prev, cur connect.Generation) string {
	p, c := holdings(prev), holdings(cur)
	var parts []string
	for _, w := range slices.Sorted(maps.Keys(c)) {
		if _, ok := p[w]; !ok {
			parts = append(parts, w+" joins")
		}
	}
	for _, w := range slices.Sorted(maps.Keys(p)) {
		if _, ok := c[w]; !ok {
			parts = append(parts, w+" is gone")
			continue
		}
		if lost := without(p[w], c[w]); len(lost) > 0 {
			parts = append(parts, w+" gives up "+andList(lost))
		}
	}
	for _, w := range slices.Sorted(maps.Keys(c)) {
		if got := without(c[w], p[w]); len(got) > 0 {
			parts = append(parts, w+" gets "+andList(got))
		}
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

// genRange: "generation 3", "generations 1–5".
func genRange(gens []connect.Generation) string {
	if len(gens) == 1 {
		return fmt.Sprintf("generation %d", gens[0].Generation)
	}
	return fmt.Sprintf("generations %d–%d", gens[0].Generation, gens[len(gens)-1].Generation)
}

// connectLayoutsText reads the table down, layout by layout: its generations and what each changed.
func connectLayoutsText(res *connect.Result, layouts []connect.Layout) string {
	var items []string
	var prev connect.Generation
	idx := 0
	texts := layoutTexts(layouts)
	for i := range layouts {
		prefix := fmt.Sprintf("layout %d:", i+1)
		var gens []connect.Generation
		for idx < len(res.Generations) && strings.HasPrefix(res.Generations[idx].Phase, prefix) {
			gens = append(gens, res.Generations[idx])
			idx++
		}
		if len(gens) == 0 {
			items = append(items, fmt.Sprintf("Layout %d, %s: no generation of its own", i+1, texts[i]))
			continue
		}
		var changes []string
		for _, g := range gens {
			changes = append(changes, fmt.Sprintf("%d: %s", g.Generation, genChange(prev, g)))
			prev = g
		}
		items = append(items, fmt.Sprintf("Layout %d, %s: %s (%s)", i+1, texts[i], genRange(gens), strings.Join(changes, "; ")))
	}
	topics := slices.Sorted(maps.Keys(res.InternalTopics))
	var tp []string
	for _, t := range topics {
		tp = append(tp, fmt.Sprintf("`%s` %s", t, res.InternalTopics[t]))
	}
	return fmt.Sprintf("Read down the layouts. %s. Connect's internal topics were created with replication factor %s; their "+
		"`cleanup.policy`, as DescribeConfigs shows it: %s.", strings.Join(items, ". "),
		lab.ConnectLabSettings["config.storage.replication.factor"], andList(tp))
}

// atKill returns what each worker held in the last generation before the kill.
func atKill(res *connect.Result) map[string]connect.Holding {
	out := map[string]connect.Holding{}
	for _, g := range res.Generations {
		if g.TsMs > res.KilledAtMs {
			break
		}
		out = map[string]connect.Holding{}
		for _, h := range g.Workers {
			out[h.Worker] = h
		}
	}
	return out
}

// genAt returns the generation observed at tsMs (0 when none).
func genAt(res *connect.Result, tsMs int64) int32 {
	for _, g := range res.Generations {
		if g.TsMs == tsMs {
			return g.Generation
		}
	}
	return 0
}

// survivorsText: "worker-1: 2 of its 2 tasks stopped, 2401 ms of task downtime in all; worker-2: ..."
// for every surviving worker that ran tasks at the kill.
func survivorsText(res *connect.Result) (string, int) {
	held := atKill(res)
	var parts []string
	stopped := 0
	for _, w := range slices.Sorted(maps.Keys(res.TaskDowntimeMs)) {
		if w == res.Killed {
			continue
		}
		stopped += res.TasksStopped[w]
		parts = append(parts, fmt.Sprintf("%s: %d of its %s stopped, %d ms of task downtime in all", w, res.TasksStopped[w],
			plural(len(held[w].Tasks), "task"), res.TaskDowntimeMs[w]))
	}
	return strings.Join(parts, "; "), stopped
}

// killedTasks are the killed worker's tasks (not its connectors) at the kill.
func killedTasks(res *connect.Result) []string {
	return atKill(res)[res.Killed].Tasks
}

// connectKillText is the sessioned run's kill: the departure, the scheduled delay, the reassignment,
// the task downtime.
func connectKillText(res *connect.Result) string {
	held := "nothing"
	if len(res.KilledTasks) > 0 {
		held = andList(res.KilledTasks)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Then %s is killed with -9, holding %s. Its session expires (`session.timeout.ms=%s`) and the leader sees it gone: "+
		"generation %d, %d ms after the kill. Under `%s` that generation does not hand its work to the others: its assignment carries a "+
		"**scheduled delay** of %d ms (`scheduled.rebalance.max.delay.ms=%d`), during which the lost worker's connectors and tasks stay "+
		"unassigned, in case it comes back. Only when the delay runs out does a rebalance place them: generation %d, %d ms after the "+
		"departure was seen (%d ms after the kill; %s since the kill in all). ",
		res.Killed, held, lab.ConnectLabSettings["session.timeout.ms"], genAt(res, res.DepartureSeenMs), res.DepartureSeenMs-res.KilledAtMs,
		res.Protocol, res.DepartureDelay, res.DelayMs, genAt(res, res.ReassignedMs), res.ReassignedMs-res.DepartureSeenMs,
		res.ReassignedMs-res.KilledAtMs, plural(res.Rebalances, "rebalance"))
	surv, stopped := survivorsText(res)
	switch {
	case surv == "":
		b.WriteString("No surviving worker ran a task at the kill")
	case stopped == 0:
		fmt.Fprintf(&b, "No task of the surviving workers stopped (%s)", surv)
	default:
		fmt.Fprintf(&b, "The surviving workers stopped tasks (%s)", surv)
	}
	tasks := killedTasks(res)
	fmt.Fprintf(&b, "; the dead worker's %s (%s) %s down %d ms in all, from the kill until %s restart elsewhere.",
		map[bool]string{true: "task", false: "tasks"}[len(tasks) == 1], andList(tasks),
		map[bool]string{true: "was", false: "were"}[len(tasks) == 1], res.TaskDowntimeMs[res.Killed],
		map[bool]string{true: "its", false: "their"}[len(tasks) == 1])
	return b.String()
}

// connectEagerText is the eager run's kill (when it ran) and both runs' records and relations.
func connectEagerText(ses, eager *connect.Result) string {
	var b strings.Builder
	runs := []*connect.Result{ses}
	if eager == nil {
		fmt.Fprintf(&b, "This run did not include the eager protocol (`-small` runs `%s` only); `rebalancelab scenario run %s "+
			"--connect-protocol eager` shows it. ", ses.Protocol, connect.Scenario)
	} else {
		runs = append(runs, eager)
		surv, stopped := survivorsText(eager)
		how := "and no surviving worker stopped a task"
		if stopped > 0 {
			how = "but the surviving workers stopped their tasks"
		}
		which := "the first rebalance after the kill"
		if eager.Rebalances != 1 {
			which = fmt.Sprintf("%s after the kill", plural(eager.Rebalances, "rebalance"))
		}
		fmt.Fprintf(&b, "In this run's eager counterpart (after the sessioned table in [`figures/%s`](figures/%s)) %s was killed "+
			"holding %s. What it held was assigned again in generation %d, %s, %d ms after it, with a scheduled delay of %d ms, "+
			"%s (%s). ", connectFigure, connectFigure, eager.Killed, andList(eager.KilledTasks), genAt(eager, eager.ReassignedMs),
			which, eager.ReassignedMs-eager.KilledAtMs, eager.DepartureDelay, how, surv)
	}
	var recs []string
	dups := false
	for _, r := range runs {
		missing := "none missing"
		if r.Missing > 0 {
			missing = fmt.Sprintf("**%d missing**", r.Missing)
		}
		recs = append(recs, fmt.Sprintf("%s: %d produced, %d consumed, %s, %s", r.Protocol, r.Produced, r.Consumed, missing, plural(int(r.Duplicates), "duplicate")))
		dups = dups || r.Duplicates > 0
	}
	fmt.Fprintf(&b, "Records the source produced (acknowledged by the broker) and the sink consumed — %s.", strings.Join(recs, "; "))
	if dups {
		fmt.Fprintf(&b, " A duplicate is a record consumed twice: a task that restarts elsewhere resumes from its last committed offset "+
			"(a source task's offsets are committed every `offset.flush.interval.ms`, %s ms here) and does again what it did after it.",
			lab.ConnectLabSettings["offset.flush.interval.ms"])
	}
	b.WriteString(" " + connectRelationsSentence(runs))
	return b.String()
}

// connectRelationsSentence says whether every relation of the runs held, naming those that did not.
func connectRelationsSentence(runs []*connect.Result) string {
	n := 0
	var failed []string
	for _, r := range runs {
		for _, rel := range r.Relations {
			if rel.Skipped {
				continue
			}
			n++
			if !rel.OK {
				failed = append(failed, fmt.Sprintf("%s: “%s” (got %s)", r.Protocol, rel.Relation, rel.Got))
			}
		}
	}
	if len(failed) == 0 {
		return fmt.Sprintf("All %d relations the scenario checks held (the `ok` lines of the tables).", n)
	}
	return fmt.Sprintf("Of the %d relations the scenario checks, these did **not** hold in this run: %s.", n, strings.Join(failed, "; "))
}
