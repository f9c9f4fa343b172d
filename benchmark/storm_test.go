package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// One small cell group per era (N=3), for real: every cell completes with every figure, the counts
// the cases fix, the zk join's watch checks against the server, and the kgo peer measured beside ours.
func TestStormSmallEveryEra(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress []StormProgress
	res, err := RunStorm(ctx, StormOptions{Eras: []string{"all"}, Consumers: []int{n}, Deadline: 60 * time.Second,
		Seed: 1, Peer: true, Version: "test", LabLog: quietLog(), Progress: func(p StormProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = res.WriteTable(&table, false)
	t.Logf("\n%s", table.String())

	if want := len(spec.Names(spec.Eras())) * len(StormCases); len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	participants := map[string]int64{CaseStorm: n, CaseJoin: n + 1, CaseLeave: n}
	for i, c := range res.Cells {
		name := c.Era + "/" + c.Case
		if wantEra, wantCase := spec.Names(spec.Eras())[i/3], StormCases[i%3]; c.Era != wantEra || c.Case != wantCase || c.N != n || c.Partitions != n {
			t.Errorf("cell %d is %s N=%d P=%d, want %s/%s N=%d P=%d", i, name, c.N, c.Partitions, wantEra, wantCase, n, n)
		}
		if c.StoppedReason != "" {
			t.Errorf("%s stopped: %s (errors %v)", name, c.StoppedReason, c.Errors)
			continue
		}
		if len(c.Figures) != len(CellFigureNames) {
			t.Errorf("%s: %d figures, want %d", name, len(c.Figures), len(CellFigureNames))
		}
		for _, f := range CellFigureNames {
			if _, ok := c.Figure(f); !ok {
				t.Errorf("%s: figure %s missing", name, f)
			}
		}
		if c.WindowEnd != figures.EndStable {
			t.Errorf("%s: window ended %q", name, c.WindowEnd)
		}
		tts, _ := c.Figure(figures.FigTimeToStableMs)
		if tts <= 0 || tts > 60000 {
			t.Errorf("%s: time_to_stable_ms %d", name, tts)
		}
		if got, _ := c.Figure(figures.FigRebalanceParticipants); got != participants[c.Case] {
			t.Errorf("%s: rebalance_participants %d, want %d", name, got, participants[c.Case])
		}
		// (duplicates may happen: a partition that moves before its new offsets were committed is
		// delivered again from the last commit, at least once by design)
		for _, f := range []string{figures.FigLost, figures.FigRebalanceFailures} {
			if got, _ := c.Figure(f); got != 0 {
				t.Errorf("%s: %s = %d, want 0", name, f, got)
			}
		}
		// A storm window may end (stable) before the first delivery: 0 or 1, never two at once.
		if got, _ := c.Figure(figures.FigMaxConcurrentOwners); got > 1 || (c.Case != CaseStorm && got != 1) {
			t.Errorf("%s: max_concurrent_owners %d", name, got)
		}
		if rss, _ := c.Figure(FigPeakRSSBytes); rss < 1<<20 {
			t.Errorf("%s: peak_rss_bytes %d", name, rss)
		}
		if g, _ := c.Figure(FigGoroutinesPeak); g < 10 {
			t.Errorf("%s: goroutines_peak %d", name, g)
		}
		if cpu, _ := c.Figure(FigCPUMs); cpu <= 0 {
			t.Errorf("%s: cpu_ms %d", name, cpu)
		}
		// The coordination traffic goes where the era says: ZooKeeper for zk, the coordinator otherwise.
		zkOps, _ := c.Figure(figures.FigZKReads)
		groupReqs, _ := c.Figure(figures.FigGroupRequests)
		if (c.Era == "zk") != (zkOps > 0) || (c.Era == "zk") == (groupReqs > 0) {
			t.Errorf("%s: zk_reads %d, group_requests %d", name, zkOps, groupReqs)
		}
		for _, ch := range c.Checks {
			if !ch.OK {
				t.Errorf("%s: check %q: %s", name, ch.Check, ch.Got)
			}
		}
		if c.Era == "zk" {
			if c.ZKCrosscheck == nil || !c.ZKCrosscheck.Comparable {
				t.Errorf("%s: zk cross-check %+v", name, c.ZKCrosscheck)
			}
		}
		wantPeer := c.Case == CaseStorm && (c.Era == "classic" || c.Era == "cooperative")
		switch p := c.Peer; {
		case wantPeer && p == nil:
			t.Errorf("%s: no kgo peer", name)
		case !wantPeer && p != nil:
			t.Errorf("%s: unexpected peer %+v", name, p)
		case p != nil:
			if p.StoppedReason != "" || p.NewconsumerStoppedReason != "" || p.TimeToStableMs <= 0 || p.NewconsumerTimeToStableMs <= 0 || p.Ratio <= 0 {
				t.Errorf("%s: peer %+v", name, p)
			}
			// (a test binary carries no module versions: "(unknown version)")
			if !strings.HasPrefix(p.Client, "franz-go kgo ") || p.Figures[FigCPUMs] <= 0 {
				t.Errorf("%s: peer client %q, figures %v", name, p.Client, p.Figures)
			}
		}
	}
	// zk join: the N members that watch the ids path are woken, and the server counted it too.
	join := res.cell("zk", n, CaseJoin)
	if w, _ := join.Figure(figures.FigZKWatchEvents); w < n {
		t.Errorf("zk join: zk_watch_events %d, want >= %d", w, n)
	}
	if cc := join.ZKCrosscheck; cc == nil || cc.ServerWatchesFired < n || cc.IdsWatchersServer != n+1 || len(join.Checks) != 3 {
		t.Errorf("zk join: cross-check %+v, checks %v", cc, join.Checks)
	}

	// The JSON has docs/design.md's shape.
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Params map[string]any `json:"params"`
		Cells  []struct {
			Era           string            `json:"era"`
			N             *int              `json:"n"`
			Case          string            `json:"case"`
			Figures       map[string]*int64 `json:"figures"`
			StoppedReason *string           `json:"stopped_reason"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Params["cell_deadline_ms"] != float64(60000) || len(doc.Cells) != len(res.Cells) {
		t.Errorf("params %v, %d cells", doc.Params, len(doc.Cells))
	}
	for _, c := range doc.Cells {
		if c.Era == "" || c.N == nil || *c.N != n || c.Case == "" || c.StoppedReason == nil || *c.StoppedReason != "" {
			t.Errorf("JSON cell %+v", c)
		}
		for _, f := range CellFigureNames {
			if c.Figures[f] == nil {
				t.Errorf("JSON cell %s/%s: figure %s missing", c.Era, c.Case, f)
			}
		}
	}
	// Progress: every cell announced in order, then done.
	last := progress[len(progress)-1]
	if last.Done != len(res.Cells) || last.Total != len(res.Cells) || last.Case != "" {
		t.Errorf("last progress %+v", last)
	}
}

// A 1 ms deadline cannot be met: the storm cell records why it stopped, the cells after it say they
// did not run, and the whole thing returns promptly.
// TestStormStaticLeaveOfAnOwner: with more members than partitions most static members own nothing;
// the leave cell's leaver (m1) owns one whatever the seed, so its leave — no LeaveGroup, a rebalance
// only when its session expires — makes the window unstable and then stable again. When the leaver
// was the seed's pick, a leaver that owned nothing left a window that never became unstable, which
// the bench reports as "not stable" (README: N=3,000 and 4,000 with Kafka's defaults).
func TestStormStaticLeaveOfAnOwner(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, seed := range []int64{1, 2, 3} {
		res, err := RunStorm(ctx, StormOptions{Eras: []string{"static"}, Consumers: []int{6}, Partitions: 2,
			Deadline: 60 * time.Second, Seed: seed, Version: "test", LabLog: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		leave := res.Cells[2]
		if leave.Case != CaseLeave || leave.StoppedReason != "" {
			t.Fatalf("seed %d: %s/%s stopped: %q", seed, leave.Era, leave.Case, leave.StoppedReason)
		}
		// The leaver's session (the lab's 2 s, from its last heartbeat, at most 500 ms before it
		// stopped) has to expire before the group rebalances.
		if ms, ok := leave.Figure(figures.FigTimeToStableMs); !ok || ms < 1500 {
			t.Fatalf("seed %d: the static leave was stable after %v ms (ok %v): want at least the session less a heartbeat interval, 1500 ms", seed, ms, ok)
		}
	}
}

func TestStormImpossibleDeadline(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := RunStorm(ctx, StormOptions{Eras: []string{"zk", "classic"}, Consumers: []int{3}, Deadline: time.Millisecond,
		Seed: 1, Peer: true, Version: "test", LabLog: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("took %s", d)
	}
	if len(res.Cells) != 6 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		name := c.Era + "/" + c.Case
		t.Logf("%s: %s", name, c.StoppedReason)
		if c.Case == CaseStorm {
			if !strings.HasPrefix(c.StoppedReason, "storm: ") || !strings.Contains(c.StoppedReason, "1ms deadline") {
				t.Errorf("%s: stopped_reason %q", name, c.StoppedReason)
			}
			// It ran: its figures are there, up to where it stopped.
			for _, f := range CellFigureNames {
				if _, ok := c.Figure(f); !ok {
					t.Errorf("%s: figure %s missing", name, f)
				}
			}
			if c.Era == "classic" && (c.Peer == nil || !strings.Contains(c.Peer.StoppedReason, "not stable within the 1ms deadline")) {
				t.Errorf("%s: peer %+v", name, c.Peer)
			}
			continue
		}
		if c.StoppedReason != "not run: storm stopped" {
			t.Errorf("%s: stopped_reason %q", name, c.StoppedReason)
		}
		if len(c.Figures) != len(CellFigureNames) {
			t.Errorf("%s: %d figure keys", name, len(c.Figures))
		}
		if _, ok := c.Figure(figures.FigTimeToStableMs); ok {
			t.Errorf("%s: a cell that did not run has figures", name)
		}
	}
}

func TestStormBadOptions(t *testing.T) {
	for _, c := range []struct {
		o    StormOptions
		want string
	}{
		{StormOptions{}, "no consumer counts"},
		{StormOptions{Consumers: []int{10, 0}}, "--consumers 0"},
		{StormOptions{Consumers: []int{10}, Partitions: 10001}, "--partitions 10001"},
		{StormOptions{Consumers: []int{10}, Eras: []string{"kafka"}}, `unknown era "kafka"`},
		{StormOptions{Consumers: []int{10}, Deadline: -time.Second}, "deadline -1s"},
		{StormOptions{Consumers: []int{10}, Eras: []string{"all"}, Bootstrap: "127.0.0.1:1"}, "needs its ZooKeeper: --zk"},
	} {
		_, err := RunStorm(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
	}
}

func TestStableView(t *testing.T) {
	a := func(ps ...int32) *kmsg.ConsumerMemberAssignment {
		return &kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}}
	}
	for _, c := range []struct {
		name  string
		state string
		as    []*kmsg.ConsumerMemberAssignment
		ok    bool
		want  string
	}{
		{"stable", "Stable", []*kmsg.ConsumerMemberAssignment{a(0, 2), a(1)}, true, "Stable with 2 members"},
		{"rebalancing", "PreparingRebalance", []*kmsg.ConsumerMemberAssignment{a(0, 2), a(1)}, false, "PreparingRebalance with 2 members"},
		{"fewer members", "Stable", []*kmsg.ConsumerMemberAssignment{a(0, 1, 2)}, false, "Stable with 1 members"},
		{"unassigned", "Stable", []*kmsg.ConsumerMemberAssignment{a(0), a(1)}, false, "1 partitions unassigned, 0 assigned more than once"},
		{"twice", "Stable", []*kmsg.ConsumerMemberAssignment{a(0, 1), a(1, 2)}, false, "0 partitions unassigned, 1 assigned more than once"},
		{"unknown partition", "Stable", []*kmsg.ConsumerMemberAssignment{a(0, 1), a(2, 3)}, false, "unknown partition t-3"},
		{"not a consumer", "Stable", []*kmsg.ConsumerMemberAssignment{a(0, 1, 2), nil}, false, "member 1 has no consumer assignment"},
	} {
		ok, got := stableView(c.state, c.as, "t", 3, 2)
		if ok != c.ok || !strings.Contains(got, c.want) {
			t.Errorf("%s: (%v, %q), want (%v, containing %q)", c.name, ok, got, c.ok, c.want)
		}
	}
}

// The plot: valid XML, one polyline per era per figure in each case's panel, a point per completed
// cell, on log-log axes.
func TestStormSVG(t *testing.T) {
	fig := func(v int64) *int64 { return &v }
	res := &StormResult{Params: map[string]any{}}
	for _, n := range []int{10, 100, 1000} {
		for _, era := range []string{"zk", "classic", "cooperative"} {
			for _, cs := range StormCases {
				c := &StormCell{Era: era, N: n, Case: cs, Figures: nullFigures(), NotApplicable: figures.NotApplicable(era)}
				for _, f := range CellFigureNames {
					c.Figures[f] = fig(int64(n)) // y = N: a straight diagonal on log-log axes
				}
				c.Figures[figures.FigRevocations] = fig(0)
				if era == "cooperative" && n == 1000 {
					c.StoppedReason = "storm: not stable within the 2m0s deadline"
				}
				res.Cells = append(res.Cells, c)
			}
		}
	}
	var buf bytes.Buffer
	if err := res.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	type polyline struct {
		Era    string `xml:"data-era,attr"`
		Figure string `xml:"data-figure,attr"`
		Case   string `xml:"data-case,attr"`
		Fit    string `xml:"data-fit,attr"`
		Points string `xml:"points,attr"`
	}
	fits := map[string]string{}
	dec := xml.NewDecoder(&buf)
	lines := map[string]polyline{}
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		if se.Name.Local != "polyline" {
			continue
		}
		var p polyline
		if err := dec.DecodeElement(&p, &se); err != nil {
			t.Fatal(err)
		}
		key := p.Era + "/" + p.Figure + "/" + p.Case
		if p.Fit != "" { // the fitted power law, dashed
			fits[key] = p.Fit
			continue
		}
		if _, dup := lines[key]; dup {
			t.Errorf("two polylines for %s", key)
		}
		lines[key] = p
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	// y = N fits as N^1.00; cooperative's stopped cell leaves two sizes, still a fit.
	for _, key := range []string{"classic/time_to_stable_ms/storm", "cooperative/cpu_ms/join"} {
		if f := fits[key]; !strings.HasSuffix(f, "·N^1.00") {
			t.Errorf("fit of %s: %q, want ≈ k·N^1.00", key, f)
		}
	}
	if want := 3 * len(PlotFigures) * len(StormCases); len(lines) != want {
		t.Errorf("%d polylines, want %d", len(lines), want)
	}
	parse := func(pts string) [][2]float64 {
		var out [][2]float64
		for _, p := range strings.Fields(pts) {
			x, y, _ := strings.Cut(p, ",")
			fx, err1 := strconv.ParseFloat(x, 64)
			fy, err2 := strconv.ParseFloat(y, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad point %q", p)
			}
			out = append(out, [2]float64{fx, fy})
		}
		return out
	}
	for _, era := range []string{"zk", "classic", "cooperative"} {
		for _, f := range PlotFigures {
			for _, cs := range StormCases {
				p, ok := lines[era+"/"+f+"/"+cs]
				if !ok {
					t.Errorf("no polyline for %s/%s/%s", era, f, cs)
					continue
				}
				pts := parse(p.Points)
				want := 3
				if era == "cooperative" { // its N=1000 cells stopped
					want = 2
				}
				if len(pts) != want {
					t.Errorf("%s/%s/%s: %d points, want %d", era, f, cs, len(pts), want)
					continue
				}
				// Log-log and y = N (or 0 for revocations): equal steps per decade on both axes.
				dx := pts[1][0] - pts[0][0]
				if dx <= 0 {
					t.Errorf("%s/%s/%s: x not increasing: %v", era, f, cs, pts)
				}
				if want == 3 && abs(pts[2][0]-pts[1][0]-dx) > 0.2 {
					t.Errorf("%s/%s/%s: x not logarithmic: %v", era, f, cs, pts)
				}
				dy := pts[0][1] - pts[1][1]
				if f == figures.FigRevocations {
					if dy != 0 {
						t.Errorf("%s/%s/%s: zeros not on one line: %v", era, f, cs, pts)
					}
				} else if dy <= 0 || (want == 3 && abs(pts[1][1]-pts[2][1]-dy) > 0.2) {
					t.Errorf("%s/%s/%s: y not logarithmic: %v", era, f, cs, pts)
				}
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestStormFDShortage: N members whose connections would pass RLIMIT_NOFILE are not run (the broker
// would fail on EMFILE, not the protocol): every cell says so, at once.
func TestStormFDShortage(t *testing.T) {
	lowerNoFile(t, 3000)
	res, err := RunStorm(context.Background(), StormOptions{Eras: []string{"classic"}, Consumers: []int{1000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 3 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		if !strings.Contains(c.StoppedReason, "file descriptors") || !strings.Contains(c.StoppedReason, "RLIMIT_NOFILE is 3000") {
			t.Errorf("%s: stopped_reason %q", c.Case, c.StoppedReason)
		}
	}
}

// TestStormMaxRSS: a cell whose processes pass the memory bound stops with that reason, not a kill
// by the machine; in the zk era the reason carries what the ZooKeeper server counted over the cell
// (packets received, sessions expired, watches fired) and the CPU used, and the cells after it do
// not run.
func TestStormMaxRSS(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	res, err := RunStorm(context.Background(), StormOptions{Eras: []string{"zk"}, Consumers: []int{3}, Deadline: 60 * time.Second,
		Seed: 1, Version: "test", LabLog: quietLog(), MaxRSS: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 3 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	storm := res.Cells[0]
	for _, want := range []string{"storm: stopped at ", "GiB resident", "past the 0.0 GiB bound (--max-rss)",
		"the ZooKeeper server over the cell: ", " packets received (", " sessions expired, ", " watches fired", "; CPU "} {
		if !strings.Contains(storm.StoppedReason, want) {
			t.Errorf("storm stopped_reason %q lacks %q", storm.StoppedReason, want)
		}
	}
	if cc := storm.ZKCrosscheck; cc == nil || !cc.Comparable || cc.ServerPacketsReceived <= 0 {
		t.Errorf("storm zk cross-check %+v: want the server's packets counted", cc)
	}
	for _, c := range res.Cells[1:] {
		if c.StoppedReason != "not run: storm stopped" {
			t.Errorf("%s: stopped_reason %q", c.Case, c.StoppedReason)
		}
	}
	if res.Params["max_rss_bytes"] != int64(1<<20) {
		t.Errorf("params max_rss_bytes %v", res.Params["max_rss_bytes"])
	}
}

// lowerNoFile sets this process's RLIMIT_NOFILE soft limit to cur for the test (restored after it).
func lowerNoFile(t *testing.T, cur uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = cur
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
}
