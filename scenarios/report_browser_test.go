package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// TestReportInChromium: the HTML report of a real run, loaded in headless Chromium (Debian's
// `chromium`, which make test installs), has one lane per partition per era, each lane's final owner
// the owner the result JSON gives for that partition; one time axis for both eras, on which every
// trigger sits at its event's ms; a lane per member with its deliveries; and a reduced sweep (N=2, 4,
// one run each) through the whole path, figures → verdict → table, SVG and HTML: the verdict's lines
// in the table and on the page, its crossovers or "no crossover" on the plot, the plot's panels embedded.
func TestReportInChromium(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Chromium)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (scripts/deps.sh installs Debian's chromium): %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const partitions = 3
	res, err := Run(ctx, Options{Scenario: "storm", Eras: []string{"zk", "classic"}, Params: spec.Params{Consumers: 2, Partitions: partitions},
		ReportDir: dir, Log: quietLog(), LabLog: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Eras []struct {
			Era       string            `json:"era"`
			EndOwners map[string]string `json:"end_owners"`
		} `json:"eras"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}

	doc := dumpDOM(ctx, t, browser, filepath.Join(dir, "index.html"))
	type lane struct{ topic, partition, owner string }
	lanes := map[string][]lane{}              // era -> lanes, in page order
	members := map[string]map[string]string{} // era -> member -> data-delivers
	triggers := map[string][]string{}         // era -> "at left%" of each trigger mark
	spans := map[string][][2]string{}         // era -> (data-from-ms, style) of each member-lane span
	var axes []string
	walk(doc, func(n *html.Node) {
		a := map[string]string{}
		for _, at := range n.Attr {
			a[at.Key] = at.Val
		}
		switch {
		case hasClass(n, "lane"):
			lanes[a["data-era"]] = append(lanes[a["data-era"]], lane{a["data-topic"], a["data-partition"], a["data-final-owner"]})
		case hasClass(n, "member-lane"):
			if members[a["data-era"]] == nil {
				members[a["data-era"]] = map[string]string{}
			}
			members[a["data-era"]][a["data-member"]] = a["data-delivers"]
			walk(n, func(c *html.Node) {
				if hasClass(c, "ms") {
					from, _ := attr(c, "data-from-ms")
					style, _ := attr(c, "style")
					spans[a["data-era"]] = append(spans[a["data-era"]], [2]string{from, style})
				}
			})
		case hasClass(n, "axis"):
			axes = append(axes, a["data-axis-ms"])
		case hasClass(n, "trigger"):
			for p := n.Parent; p != nil; p = p.Parent {
				if hasClass(p, "lane") {
					era, _ := attr(p, "data-era")
					triggers[era] = append(triggers[era], a["data-at-ms"]+" "+a["style"])
					break
				}
			}
		}
	})

	if len(parsed.Eras) != 2 {
		t.Fatalf("JSON has %d eras, want 2", len(parsed.Eras))
	}
	for _, e := range parsed.Eras {
		got := lanes[e.Era]
		if len(got) != partitions {
			t.Fatalf("era %s: %d lanes in the rendered page, want %d (one per partition)", e.Era, len(got), partitions)
		}
		for _, l := range got {
			want, ok := e.EndOwners[l.topic+"-"+l.partition]
			if !ok || want == "" {
				t.Fatalf("era %s: the JSON names no owner for %s-%s (end_owners %v)", e.Era, l.topic, l.partition, e.EndOwners)
			}
			if l.owner != want {
				t.Errorf("era %s, lane %s-%s: final owner %q in the page, %q in the JSON", e.Era, l.topic, l.partition, l.owner, want)
			}
		}
	}

	// One time axis for every era: it spans the longest era, and every era's trigger marks and member
	// states sit at ms·100/axis from the left, whatever the era's own length (the eras' lengths differ).
	axisMs := int64(0)
	for _, e := range res.Eras {
		axisMs = max(axisMs, e.Records[len(e.Records)-1].TsMs-e.Records[0].TsMs)
	}
	if len(axes) != 1 || axes[0] != strconv.FormatInt(axisMs, 10) {
		t.Fatalf("time axes %v, want one of %d ms for both eras", axes, axisMs)
	}
	for _, e := range res.Eras {
		var want []string
		for _, ev := range e.Result.Events {
			want = append(want, fmt.Sprintf("%d left:%.3f%%", ev.AtMs, float64(ev.AtMs)*100/float64(axisMs)))
		}
		for _, got := range triggers[e.Era] {
			if !slices.Contains(want, got) {
				t.Errorf("era %s: trigger mark %q is not at an event's ms on the shared axis (events: %v)", e.Era, got, want)
			}
		}
		if len(triggers[e.Era]) != partitions*len(want) {
			t.Errorf("era %s: %d trigger marks, want %d (each event in each partition lane)", e.Era, len(triggers[e.Era]), partitions*len(want))
		}

		for _, sp := range spans[e.Era] {
			from, err := strconv.ParseInt(sp[0], 10, 64)
			if want := fmt.Sprintf("left:%.3f%%;", float64(from)*100/float64(axisMs)); err != nil || !strings.HasPrefix(sp[1], want) {
				t.Errorf("era %s: member state from %s ms drawn at %q, want %q on the shared axis", e.Era, sp[0], sp[1], want)
				break
			}
		}
		if len(spans[e.Era]) == 0 {
			t.Errorf("era %s: no member states drawn", e.Era)
		}

		// A lane per member, with its deliveries counted from the timeline.
		want2 := map[string]string{}
		n := map[string]int{}
		for _, r := range e.Records {
			switch r.Kind {
			case timeline.MemberStart:
				want2[r.Member] = ""
			case timeline.Deliver:
				n[r.Member]++
			}
		}
		for m := range want2 {
			want2[m] = strconv.Itoa(n[m])
		}
		if len(want2) == 0 || !maps.Equal(members[e.Era], want2) {
			t.Errorf("era %s: member lanes (member → deliveries) %v, want %v", e.Era, members[e.Era], want2)
		}
	}

	// A reduced sweep of the same scenario, the whole path a sweep takes (make demo's, at N=2 and 4,
	// one run each, P = 2·N): figures → verdict → table, SVG and HTML. The table ends with every
	// verdict line, the SVG carries each plotted figure's crossover or "no crossover", the page embeds
	// the plot beside the verdict, and still has the largest run's lanes.
	sdir := t.TempDir()
	sw, err := RunSweep(ctx, SweepOptions{Options: Options{Scenario: "storm", Eras: []string{"zk", "classic"},
		Params: spec.Params{Partitions: 1}, Log: quietLog(), LabLog: quietLog()}, Sizes: []int{2, 4}, PartitionsPerMember: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range sw.Sizes {
		if z.Stopped != "" || len(z.Runs) != 1 {
			t.Fatalf("sweep N=%d: stopped %q, %d runs (want 1)", z.N, z.Stopped, len(z.Runs))
		}
		if p := z.Runs[0].Params.Partitions; p != 2*z.N {
			t.Errorf("sweep N=%d: %d partitions, want P = 2·N = %d", z.N, p, 2*z.N)
		}
	}
	if len(sw.Sizes) != 2 {
		t.Fatalf("sweep: %d sizes, want 2", len(sw.Sizes))
	}
	if err := sw.WriteReport(sdir); err != nil {
		t.Fatal(err)
	}
	var tbl bytes.Buffer
	if err := sw.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	sv := sw.Verdict()
	if !strings.HasPrefix(sv.Lines[0], "verdict over N=2, 4 (") || !strings.Contains(sv.Lines[0], "timings: the lab's short sessions") ||
		!strings.HasSuffix(strings.TrimSpace(tbl.String()), strings.Join(sv.Lines, "\n")) {
		t.Errorf("sweep table: want it to end with the verdict's %d lines, its header naming N=2, 4 and the timings:\n%s", len(sv.Lines), tbl.String())
	}
	svg, err := os.ReadFile(filepath.Join(sdir, report.SweepPlotFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("; timings: the lab&#39;s short sessions</text>")) {
		t.Errorf("sweep plot: its title does not name the timings")
	}
	notes := 0
	for _, fv := range sv.Figures {
		if len(fv.Eras) < 2 || fv.Figure == figures.FigZKReads || fv.Figure == figures.FigZKWatchEvents {
			continue
		}
		var want []string
		for _, x := range fv.Crossovers {
			want = append(want, fmt.Sprintf("%s: crossover between N=%d and N=%d", fv.Figure, x.FromN, x.ToN))
		}
		if fv.NoCrossover != "" {
			want = append(want, fv.Figure+": no crossover in "+fv.NoCrossover)
		}
		for _, w := range want {
			notes++
			if !bytes.Contains(svg, []byte(w)) {
				t.Errorf("sweep plot: no note %q of the verdict", w)
			}
		}
	}
	if notes < 4 {
		t.Errorf("sweep plot: %d verdict notes checked, want one per plotted figure (at least 4)", notes)
	}
	sdoc := dumpDOM(ctx, t, browser, filepath.Join(sdir, "index.html"))
	panels, memberLanes := map[string]bool{}, 0
	var order []string // the verdict, the plot and the run's summary, in page order
	var verdict []string
	rankings := 0
	walk(sdoc, func(n *html.Node) {
		if id, _ := attr(n, "id"); id == "verdict" || id == "showed" || id == "verdict-rankings" {
			order = append(order, id)
		}
		if n.Type == html.ElementNode && n.Data == "li" {
			for p := n.Parent; p != nil; p = p.Parent {
				if id, _ := attr(p, "id"); id == "verdict-rankings" {
					rankings++
				}
			}
		}
		if hasClass(n, "plot") {
			order = append(order, "plot")
		}
		if n.Type == html.ElementNode && n.Data == "li" && n.Parent != nil {
			if id, _ := attr(n.Parent, "id"); id == "verdict" && n.FirstChild != nil {
				verdict = append(verdict, n.FirstChild.Data)
			}
		}
		if hasClass(n, "panel") {
			for p := n.Parent; p != nil; p = p.Parent {
				if id, _ := attr(p, "id"); id == "sweep" {
					fig, _ := attr(n, "data-figure")
					panels[fig] = true
				}
			}
		}
		if hasClass(n, "member-lane") {
			memberLanes++
		}
	})
	for _, fig := range []string{"coordination", figures.FigTimeToStableMs, figures.FigRebalanceParticipants, figures.FigPausedMemberMs, figures.FigUnownedPartitionMs} {
		if !panels[fig] {
			t.Errorf("sweep page: no %s panel of the plot in its sweep section (panels %v)", fig, panels)
		}
	}
	if memberLanes == 0 {
		t.Errorf("sweep page: no member lanes")
	}
	// The verdict heads the page beside the plot: its header and conclusions, one sentence a line; its
	// rankings folded under the plot.
	v := sw.Verdict()
	if want := append([]string{v.Lines[0]}, v.Conclusions...); len(v.Conclusions) == 0 || !slices.Equal(verdict, want) {
		t.Errorf("sweep page: verdict %q, want %q", verdict, want)
	}
	if rankings != len(v.Rankings) || rankings == 0 {
		t.Errorf("sweep page: %d ranking lines, want %d", rankings, len(v.Rankings))
	}
	if !slices.Equal(order, []string{"verdict", "plot", "verdict-rankings", "showed"}) {
		t.Errorf("sweep page: order %v, want the verdict, the plot, the rankings, then the run's summary", order)
	}
}

// dumpDOM loads a page in headless Chromium (Debian's `chromium`, which make test installs) and
// returns the DOM it built.
func dumpDOM(ctx context.Context, t *testing.T, browser, page string) *html.Node {
	t.Helper()
	// The flags headless Chromium needs as root on a machine with no network to speak of.
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The DOM helpers of the report's tests (scenarios/report/html_test.go).

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
