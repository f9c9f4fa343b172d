package scenarios

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// splitBrainTL is the zk split brain of TestFiguresSplitBrain plus an idle partition 1 owned by m2.
func splitBrainTL() *tlb {
	b := newTL("zk").joined(0, "m1", 0)
	for o := int64(0); o < 10; o++ {
		b.produce(10+o, 0, o)
	}
	return b.deliver(20, "m1", 0, 0, 1, 2, 3, 4).
		trigger(100, `expire-m1 <script>alert(1)</script>`).fault(100, "stall", "m1/zookeeper").
		start(200, "m2").begin(200, "m2").assign(210, "m2", 0, 1).end(210, "m2", true, 1).
		deliver(220, "m2", 0, 3, 4, 5).deliver(230, "m1", 0, 5, 6).
		commit(240, "m1", 0, 7, 0, timeline.CommitApplied).
		fault(300, "heal", "m1/zookeeper").
		begin(400, "m1").revoke(400, "m1", 0).assign(410, "m1").end(410, "m1", true, 1).
		deliver(420, "m2", 0, 6, 7, 8, 9)
}

func classicTL() *tlb {
	return newTL("classic").joined(0, "m1", 0, 1).greq(5, "m1", "Heartbeat").
		trigger(1000, "join").start(1000, "m2").begin(1001, "m2").begin(1002, "m1").revoke(1002, "m1", 0, 1).
		assign(1100, "m1", 0).end(1100, "m1", true, 1).assign(1100, "m2", 1).end(1100, "m2", true, 1)
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
	zkRes := Compute(zk.recs, "zk", FigureOptions{Partitions: map[string][]int32{"t": {0, 1, 2}}})
	coRes := Compute(co.recs, "classic", FigureOptions{})
	var buf bytes.Buffer
	err := RenderHTML(&buf, Report{Scenario: "split-brain", Seed: 7, Params: map[string]any{"consumers": 2},
		Versions: map[string]string{"zookeeper": "3.8.0"}, Eras: []EraReport{
			{Era: "zk", Records: zk.recs, Options: FigureOptions{Partitions: map[string][]int32{"t": {0, 1, 2}}}, Timeline: "timeline-zk.jsonl"},
			{Era: "classic", Records: co.recs},
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
	figures := map[string]string{} // era/figure -> data-value
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
			figures[era+"/"+fig] = v
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
	if !strings.HasPrefix(segStyles[0], "left:0.000%;width:95.238%") { // 0..400 of 420 ms
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
		if figures[key] != want {
			t.Errorf("%s = %q, want %q", key, figures[key], want)
		}
	}
	if len(figures) != 2*len(FigureNames) {
		t.Errorf("%d figure cells, want %d", len(figures), 2*len(FigureNames))
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
	zk := Compute(splitBrainTL().recs, "zk", FigureOptions{})
	co := Compute(newTL("classic").joined(0, "m1", 0).trigger(10, "crash").stop(10, "m1", "crash").recs, "classic", FigureOptions{})
	var buf bytes.Buffer
	if err := RenderTable(&buf, zk, co); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"figure                   zk  classic",
		"time_to_stable_ms       310    never",
		"rebalance_participants    2        1",
		"zk_reads                  0      n/a",
		"zk_writes                 0      n/a",
		"zk_offset_writes          0      n/a",
		"zk_watch_events           0      n/a",
		"group_requests          n/a        0",
		"rebalance_attempts        3        1",
		"rebalance_failures        0        0",
		"revocations               1        0",
		"ownership_conflicts       0      n/a",
		"max_concurrent_owners     2        0",
		"unowned_partition_ms      0        0",
		"duplicates                4        0",
		"lost                      0        0",
		"stale_commits_applied     1        0",
		"stale_commits_rejected  n/a        0",
		""}, "\n")
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}
