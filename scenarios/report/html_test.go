package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// splitBrainTL is the zk split brain of TestFiguresSplitBrain plus an idle partition 1 owned by m2.
func splitBrainTL() *tlb {
	b := newTL("zk").Joined(0, "m1", 0)
	for o := int64(0); o < 10; o++ {
		b.Produce(10+o, 0, o)
	}
	return b.Deliver(20, "m1", 0, 0, 1, 2, 3, 4).
		Trigger(100, `expire-m1 <script>alert(1)</script>`).Fault(100, "stall", "m1/zookeeper").
		Start(200, "m2").Begin(200, "m2").Assign(210, "m2", 0, 1).End(210, "m2", true, 1).
		Deliver(220, "m2", 0, 3, 4, 5).Deliver(230, "m1", 0, 5, 6).
		Commit(240, "m1", 0, 7, 0, timeline.CommitApplied).
		Fault(300, "heal", "m1/zookeeper").
		Begin(400, "m1").Revoke(400, "m1", 0).Assign(410, "m1").End(410, "m1", true, 1).
		Deliver(420, "m2", 0, 6, 7, 8, 9)
}

func classicTL() *tlb {
	return newTL("classic").Joined(0, "m1", 0, 1).GroupRequest(1050, "m1", "Heartbeat").
		Trigger(1000, "join").Start(1000, "m2").Begin(1001, "m2").Begin(1002, "m1").Revoke(1002, "m1", 0, 1).
		Assign(1100, "m1", 0).End(1100, "m1", true, 1).Assign(1100, "m2", 1).End(1100, "m2", true, 1)
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}

func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func TestRenderHTML(t *testing.T) {
	zk, co := splitBrainTL(), classicTL()
	zkRes := figures.Compute(zk.Recs, "zk", figures.FigureOptions{Partitions: map[string][]int32{"t": {0, 1, 2}}})
	coRes := figures.Compute(co.Recs, "classic", figures.FigureOptions{})
	var buf bytes.Buffer
	err := RenderHTML(&buf, Report{Scenario: "split-brain", Seed: 7, Params: map[string]any{"consumers": 2},
		Versions: map[string]string{"zookeeper": "3.8.0"}, Eras: []EraReport{
			{Era: "zk", Records: zk.Recs, Options: figures.FigureOptions{Partitions: map[string][]int32{"t": {0, 1, 2}}}, Timeline: "timeline-zk.jsonl"},
			{Era: "classic", Records: co.Recs},
		}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	type laneKey struct{ era, topic, part string }
	lanes := map[laneKey]*html.Node{}
	var order []laneKey
	scripts, externals := 0, 0
	cells := map[string]string{} // era/figure -> data-value
	walk(doc, func(n *html.Node) {
		switch n.Data {
		case "script", "link", "img", "iframe":
			scripts++
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || a.Key == "href") && a.Val != "" {
				externals++
			}
		}
		if hasClass(n, "lane") {
			era, _ := attr(n, "data-era")
			topic, _ := attr(n, "data-topic")
			part, _ := attr(n, "data-partition")
			k := laneKey{era, topic, part}
			lanes[k] = n
			order = append(order, k)
		}
		if fig, ok := attr(n, "data-figure"); ok {
			era, _ := attr(n, "data-era")
			v, _ := attr(n, "data-value")
			cells[era+"/"+fig] = v
		}
	})
	if scripts != 0 || externals != 0 {
		t.Errorf("page is not self-contained: %d script/link/img elements, %d src/href (the trigger name must be escaped)", scripts, externals)
	}
	wantOrder := []laneKey{{"zk", "t", "0"}, {"zk", "t", "1"}, {"zk", "t", "2"}, {"classic", "t", "0"}, {"classic", "t", "1"}}
	if len(order) != len(wantOrder) {
		t.Fatalf("lanes %v, want %v", order, wantOrder)
	}
	for i, k := range wantOrder {
		if order[i] != k {
			t.Fatalf("lane %d = %v, want %v", i, order[i], k)
		}
	}
	// data-final-owner equals the JSON's final_owners.
	for k, n := range lanes {
		res := zkRes
		if k.era == "classic" {
			res = coRes
		}
		got, ok := attr(n, "data-final-owner")
		if !ok || got != res.FinalOwners[k.topic+"-"+k.part] {
			t.Errorf("lane %v: data-final-owner %q, JSON %q", k, got, res.FinalOwners[k.topic+"-"+k.part])
		}
	}
	for k, want := range map[laneKey]string{{"zk", "t", "0"}: "m2", {"zk", "t", "1"}: "m2", {"zk", "t", "2"}: "",
		{"classic", "t", "0"}: "m1", {"classic", "t", "1"}: "m2"} {
		if got, _ := attr(lanes[k], "data-final-owner"); got != want {
			t.Errorf("lane %v: final owner %q, want %q", k, got, want)
		}
	}

	// zk p0: m1 0..400 ms on row 0, m2 from 210 ms stacked on row 1; one rebalance shading per busy
	// interval, two fault marks and one trigger mark.
	var segs []string
	var segStyles []string
	faults, triggers, rebalances := 0, 0, 0
	walk(lanes[laneKey{"zk", "t", "0"}], func(n *html.Node) {
		switch {
		case hasClass(n, "seg"):
			o, _ := attr(n, "data-owner")
			s, _ := attr(n, "style")
			segs, segStyles = append(segs, o), append(segStyles, s)
		case hasClass(n, "fault"):
			faults++
		case hasClass(n, "trigger"):
			triggers++
		case hasClass(n, "rebalance"):
			rebalances++
		}
	})
	if strings.Join(segs, ",") != "m1,m2" {
		t.Fatalf("zk t-0 segments %v", segs)
	}
	if !strings.Contains(segStyles[0], "top:0px") || !strings.Contains(segStyles[1], "top:14px") {
		t.Errorf("concurrent owners not stacked: %q", segStyles)
	}
	// 0..400 ms on the shared axis, which spans the longest era (classic's 1100 ms), not zk's own 420 ms
	if !strings.HasPrefix(segStyles[0], "left:0.000%;width:36.364%") {
		t.Errorf("m1 segment geometry: %q", segStyles[0])
	}
	// busy: 200..210 (m2 joining), 400..410 (m1); m1's join at 0 took no time and is not drawn
	if faults != 2 || triggers != 1 || rebalances != 2 {
		t.Errorf("zk t-0: %d faults, %d triggers, %d rebalance shadings; want 2, 1, 2", faults, triggers, rebalances)
	}

	// Figure cells carry the JSON's values; n/a where the era cannot produce the figure.
	for key, want := range map[string]string{
		"zk/duplicates": "4", "zk/stale_commits_applied": "1", "zk/group_requests": "n/a",
		"zk/stale_commits_rejected": "n/a", "zk/max_concurrent_owners": "2", "zk/time_to_stable_ms": "-1", // t-2 is never owned
		"classic/zk_reads": "n/a", "classic/group_requests": "1", "classic/revocations": "2",
		"classic/time_to_stable_ms": "100",
	} {
		if cells[key] != want {
			t.Errorf("%s = %q, want %q", key, cells[key], want)
		}
	}
	if len(cells) != 2*len(figures.FigureNames) {
		t.Errorf("%d figure cells, want %d", len(cells), 2*len(figures.FigureNames))
	}
	page := buf.String()
	for _, s := range []string{"timeline-zk.jsonl", "consumers=2", "zookeeper 3.8.0", "expire-m1 &lt;script&gt;"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func TestRenderHTMLEmptyEra(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderHTML(&buf, Report{Scenario: "nothing", Eras: []EraReport{{Era: "zk"}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "warning: no records") {
		t.Errorf("empty era not reported:\n%s", buf.String())
	}
}

func TestRenderTable(t *testing.T) {
	zk := figures.Compute(splitBrainTL().Recs, "zk", figures.FigureOptions{})
	co := figures.Compute(newTL("classic").Joined(0, "m1", 0).Trigger(10, "crash").Stop(10, "m1", "crash").Recs, "classic", figures.FigureOptions{})
	var buf bytes.Buffer
	if err := RenderTable(&buf, zk, co); err != nil {
		t.Fatal(err)
	}
	// Totals leave the formation (m1 joining at 0) out: zk's participants are m2 (200 ms) and m1 (400 ms);
	// m1 held t-0 when its rebalance began at 400 ms and held nothing until 410 ms (paused 10 ms); the
	// zombie m1 delivered offsets 5 and 6 of t-0 while m2 owned it, and m2 delivered 6 after m1 committed 7.
	want := strings.Join([]string{
		"figure                                zk  classic",
		"time_to_stable_ms (worst event)      310    never",
		"rebalance_participants                 2        0",
		"zk_reads                               0      n/a",
		"zk_writes                              0      n/a",
		"zk_offset_writes                       0      n/a",
		"zk_watch_events                        0      n/a",
		"group_requests                       n/a        0",
		"rebalance_attempts                     2        0",
		"rebalance_failures                     0        0",
		"revocations                            1        0",
		"ownership_conflicts                    0      n/a",
		"max_concurrent_owners                  2        0",
		"concurrent_owner_ms                  180        0",
		"unowned_partition_ms                   0        0",
		"paused_member_ms                      10        0",
		"duplicates                             4        0",
		"lost                                   0        0",
		"stale_commits_applied                  1        0",
		"stale_commits_rejected               n/a        0",
		"invariant_consumed_not_member          0        0",
		"invariant_consumed_unowned             2        0",
		"invariant_offsets_not_contiguous       0        0",
		"invariant_commit_ahead_of_position     0        0",
		"invariant_consumed_behind_committed    1        0",
		"invariant_revoked_unowned              0        0",
		""}, "\n")
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// eagerTL and cooperativeTL: m2 joins a group where m1 owns t-0 and t-1. Eager: m1 revokes both at once
// and is paused until the single round assigns t-0 back (1002..1100 ms). Cooperative: m1 keeps both
// through the first round, gives t-1 up after it, and a second round gives t-1 to m2.
func eagerTL() *tlb {
	return newTL("classic").Joined(0, "m1", 0, 1).Produce(10, 0, 0, 1, 2, 3, 4).Deliver(20, "m1", 0, 0, 1).
		Trigger(1000, "join").Start(1000, "m2").Begin(1001, "m2").Begin(1002, "m1").Revoke(1002, "m1", 0, 1).
		Assign(1100, "m1", 0).End(1100, "m1", true, 1).Assign(1100, "m2", 1).End(1100, "m2", true, 1).
		Deliver(1200, "m1", 0, 2, 3, 4)
}

func cooperativeTL() *tlb {
	return newTL("cooperative").Joined(0, "m1", 0, 1).Produce(10, 0, 0, 1, 2, 3, 4).Deliver(20, "m1", 0, 0, 1).
		Trigger(1000, "join").Start(1000, "m2").Begin(1001, "m2").Begin(1002, "m1").
		Assign(1100, "m1", 0).End(1100, "m1", true, 1).Assign(1100, "m2").End(1100, "m2", true, 1).
		Begin(1101, "m1").Begin(1101, "m2").Assign(1150, "m1", 0).End(1150, "m1", true, 2).
		Assign(1150, "m2", 1).End(1150, "m2", true, 2).Deliver(1200, "m1", 0, 2, 3, 4).GroupRequest(1500, "m2", "Heartbeat")
}

// TestRenderHTMLTimeline: one axis for every era (each x is ms·100/axis), partition lanes labelled by
// number with their lag, per-member lanes whose paused spans add up to paused_member_ms, the opening
// sentences generated from the figures, the cooperative section and the embedded plot.
func TestRenderHTMLTimeline(t *testing.T) {
	eager, coop := eagerTL(), cooperativeTL()
	eagerRes := figures.Compute(eager.Recs, "classic", figures.FigureOptions{})
	coopRes := figures.Compute(coop.Recs, "cooperative", figures.FigureOptions{})
	if eagerRes.Totals.PausedMemberMs != 98 || coopRes.Totals.PausedMemberMs != 0 {
		t.Fatalf("paused_member_ms: classic %d, cooperative %d; want 98, 0", eagerRes.Totals.PausedMemberMs, coopRes.Totals.PausedMemberMs)
	}
	svg := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg"><g data-figure="zk_reads"></g></svg>`
	var buf bytes.Buffer
	err := RenderHTML(&buf, Report{Scenario: "join", Eras: []EraReport{
		{Era: "classic", Records: eager.Recs, Relations: []RelationResult{{Era: "classic", Relation: "join: paused_member_ms > 0", OK: true, Got: "98"}}},
		{Era: "cooperative", Records: coop.Recs, Relations: []RelationResult{{Era: "cooperative", Relation: "join: revocations == 0", OK: false, Got: "1"}}},
	}, Plots: []Plot{{Title: "herd-effect sweep", File: "sweep.svg", SVG: []byte(svg)}}})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var axes, plots []*html.Node
	var eraGroups []string
	labels := map[string]string{} // era/partition -> label
	maxLag := map[string]string{} // era/partition -> data-max-lag
	delivers := map[string]string{}
	states := map[string][]string{} // era/member -> states in order
	paused := map[string]int64{}    // era -> paused ms after the first trigger (1000 ms)
	var triggerLefts []string
	walk(doc, func(n *html.Node) {
		era, _ := attr(n, "data-era")
		part, _ := attr(n, "data-partition")
		switch {
		case hasClass(n, "axis"):
			axes = append(axes, n)
		case hasClass(n, "plot"):
			plots = append(plots, n)
		case hasClass(n, "era-lanes"):
			eraGroups = append(eraGroups, era)
		case hasClass(n, "lane"):
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if hasClass(c, "label") {
					labels[era+"/"+part] = c.FirstChild.Data
				}
			}
		case hasClass(n, "lag-lane"):
			maxLag[era+"/"+part], _ = attr(n, "data-max-lag")
		case hasClass(n, "member-lane"):
			m, _ := attr(n, "data-member")
			delivers[era+"/"+m], _ = attr(n, "data-delivers")
			walk(n, func(s *html.Node) {
				if !hasClass(s, "ms") {
					return
				}
				st, _ := attr(s, "data-state")
				d, _ := attr(s, "data-delivers")
				states[era+"/"+m] = append(states[era+"/"+m], st+":"+d)
				if st == "paused" { // st is the state alone here
					from, _ := attr(s, "data-from-ms")
					to, _ := attr(s, "data-to-ms")
					f, _ := strconv.ParseInt(from, 10, 64)
					e, _ := strconv.ParseInt(to, 10, 64)
					paused[era] += max(0, e-max(f, 1000))
				}
			})
		case hasClass(n, "trigger"):
			at, _ := attr(n, "data-at-ms")
			st, _ := attr(n, "style")
			triggerLefts = append(triggerLefts, at+" "+st)
		}
	})
	if len(axes) != 1 {
		t.Fatalf("%d time axes, want one for every era", len(axes))
	}
	if v, _ := attr(axes[0], "data-axis-ms"); v != "1500" { // classic spans 0..1200 ms, cooperative 0..1500 ms
		t.Errorf("axis spans %s ms, want 1500", v)
	}
	if strings.Join(eraGroups, ",") != "classic,cooperative" {
		t.Errorf("era groups under the axis: %v", eraGroups)
	}
	for _, tl := range triggerLefts { // 1000 ms of the axis' 1500, in every lane of both eras
		if tl != "1000 left:66.667%" {
			t.Errorf("trigger mark %q, want at 1000 ms, left:66.667%%", tl)
		}
	}
	if len(triggerLefts) != 4 {
		t.Errorf("%d trigger marks, want 4 (2 partitions × 2 eras)", len(triggerLefts))
	}
	for k, want := range map[string]string{"classic/0": "partition 0", "classic/1": "partition 1", "cooperative/1": "partition 1"} {
		if labels[k] != want {
			t.Errorf("lane %s labelled %q, want %q", k, labels[k], want)
		}
	}
	if maxLag["classic/0"] != "5" || maxLag["classic/1"] != "0" {
		t.Errorf("max lag: %v, want classic/0 5 (offsets 0..4 produced at 10 ms), classic/1 0", maxLag)
	}
	if delivers["classic/m1"] != "5" || delivers["classic/m2"] != "0" {
		t.Errorf("delivers: %v", delivers)
	}
	for k, want := range map[string]string{
		// state:deliveries within it (m1 delivered 2 records at 20 ms and 3 at 1200 ms)
		"classic/m1":     "consuming:2,paused:0,consuming:3",
		"classic/m2":     "joining:0,consuming:0",
		"cooperative/m1": "consuming:2,rebalancing:0,consuming:0,rebalancing:0,consuming:3",
		"cooperative/m2": "joining:0,idle:0,joining:0,consuming:0",
	} {
		if got := strings.Join(states[k], ","); got != want {
			t.Errorf("%s states %s, want %s", k, got, want)
		}
	}
	if paused["classic"] != eagerRes.Totals.PausedMemberMs || paused["cooperative"] != 0 {
		t.Errorf("paused spans after the trigger: %v, want classic %d (paused_member_ms), cooperative 0", paused, eagerRes.Totals.PausedMemberMs)
	}
	for _, s := range []string{
		"Who rebalanced (rebalance_participants of each scripted change): in the classic era its one change made all 2 members rebalance; in the cooperative era its one change made all 2 members rebalance.",
		"Coordination load after the group formed: the classic members sent 0 group requests; the cooperative members sent 1 group request (group requests",
		"summed over members), least first: cooperative 0 ms, classic 98 ms.",
		"The longest time from a change to a stable group (time_to_stable_ms): classic 100 ms, cooperative 150 ms.",
		"Records produced and never delivered (lost): 0 in every era.",
		"Kafka&#39;s consumer invariants (the invariant_* figures) held in every era.",
		"1 of the 2 relations the scenario expects held; these did not: cooperative: join: revocations == 0.",
		`<section id="cooperative-rounds">`,
		"rebalance_attempts: cooperative 4, classic (eager) 2",
		"time_to_stable_ms: cooperative 150, classic (eager) 100",
		"Rebalance attempts per participating member over the run&#39;s changes: cooperative 2.0, classic 1.0.",
		"paused_member_ms: cooperative 0 ms, classic 98 ms",
		`<svg xmlns="http://www.w3.org/2000/svg"><g data-figure="zk_reads"></g></svg>`,
		`<a href="sweep.svg">sweep.svg</a>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if len(plots) != 1 || strings.Contains(page, "<?xml") {
		t.Errorf("%d plots (want 1), XML declaration dropped: %v", len(plots), !strings.Contains(page, "<?xml"))
	}

	// Without a cooperative cost (classic alone) there is no cooperative section.
	buf.Reset()
	if err := RenderHTML(&buf, Report{Scenario: "join", Eras: []EraReport{{Era: "classic", Records: eager.Recs}}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "cooperative-rounds") || strings.Contains(buf.String(), `id="sweep"`) {
		t.Errorf("classic alone, no plots: the page has a cooperative or a sweep section")
	}
}

// TestCooperativeCost: the two-rounds section appears only for a cost a second round explains.
func TestCooperativeCost(t *testing.T) {
	res := func(era string, f figures.Figures) figures.Result {
		return figures.Result{Era: era, Totals: f, NotApplicable: figures.NotApplicable(era)}
	}
	if v := cooperativeCost([]figures.Result{res("classic", figures.Figures{RebalanceAttempts: 4}), res("cooperative", figures.Figures{RebalanceAttempts: 4, Duplicates: 3})}); v != nil {
		t.Errorf("more duplicates alone: section %+v, want none", v)
	}
	v := cooperativeCost([]figures.Result{res("classic", figures.Figures{TimeToStableMs: 100, UnownedPartitionMs: 10}),
		res("cooperative", figures.Figures{TimeToStableMs: figures.NeverStable, UnownedPartitionMs: 30})})
	if v == nil || strings.Join(v.Costs, "; ") != "time_to_stable_ms: cooperative never, classic (eager) 100; unowned_partition_ms: cooperative 30, classic (eager) 10" {
		t.Errorf("costs %+v", v)
	}
	if v := cooperativeCost([]figures.Result{res("cooperative", figures.Figures{RebalanceAttempts: 9})}); v != nil {
		t.Errorf("no classic era: section %+v", v)
	}
}

// TestRenderHTMLSaysSkippedAndErrors: the page's opening counts a skipped relation apart (neither held
// nor failed, its row "skipped (not measured)") and says the run failed on the errors it recorded, even
// with every checked relation held.
func TestRenderHTMLSaysSkippedAndErrors(t *testing.T) {
	eager := eagerTL()
	var buf bytes.Buffer
	err := RenderHTML(&buf, Report{Scenario: "join", Eras: []EraReport{{Era: "classic", Records: eager.Recs,
		Relations: []RelationResult{
			{Era: "classic", Relation: "join: paused_member_ms > 0", OK: true, Got: "98"},
			{Era: "classic", Relation: "join: rebalance_attempts == 2", Skipped: true, Got: "n/a (not measured with these members)"},
		},
		Errors: []string{"crash m2: not running"}}}})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, s := range []string{
		"All 1 relations the scenario expects held (listed below with the values seen).",
		"1 relations were skipped, not measured in this run (neither held nor failed).",
		"The run FAILED: it recorded 1 errors (a fault that could not be injected, a member that could not start...): classic: crash m2: not running.",
		`data-status="skipped (not measured)"`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}
