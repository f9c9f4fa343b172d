package main

// Unit tests of the generator's pure parts, on hand-written timelines. The whole generator, on real
// labs, is exercised by docs/docs_test.go through `make docs`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/connect"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

func TestParseOnly(t *testing.T) {
	all, err := parseOnly("")
	if err != nil || len(all) != 8 || !all["ch1"] || !all["ch8"] {
		t.Fatalf(`parseOnly("") = %v, %v; want the 8 chapters`, all, err)
	}
	two, err := parseOnly("ch1, ch4")
	if err != nil || len(two) != 2 || !two["ch1"] || !two["ch4"] {
		t.Fatalf(`parseOnly("ch1, ch4") = %v, %v`, two, err)
	}
	if _, err := parseOnly("ch1,ch9"); err == nil || !strings.Contains(err.Error(), `"ch9"`) {
		t.Fatalf(`parseOnly("ch1,ch9") error = %v; want one naming ch9`, err)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-small"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-out") {
		t.Errorf("no -out: error = %v, want one about -out", err)
	}
	if _, err := parseFlags([]string{"-out", "x", "extra"}, io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}
	cfg, err := parseFlags([]string{"-out", "x", "-only", "ch3", "-small", "-check"}, io.Discard)
	if err != nil || cfg.out != "x" || !cfg.small || !cfg.check || len(cfg.only) != 1 || !cfg.only["ch3"] {
		t.Fatalf("parseFlags = %+v, %v", cfg, err)
	}
	// ch3 alone still needs the zombie scenario, classic era only, for its fencing excerpt.
	runs := sizesFor(true).scenarioRuns(cfg.only)
	if len(runs) != 1 || runs[0].name != "split-brain-zombie" || strings.Join(runs[0].eras, ",") != "classic" || runs[0].report {
		t.Errorf("-only ch3 runs %+v", runs)
	}
	// ch4: the main herd run, and the herd-join sweep under make demo's rules (N = 4, 16, 64, 256 with
	// P = 2·N, 3 runs each, every era, cooperative and static cut above 64, the brokers' ZooKeeper
	// session at Kafka's 18 s); its N=256 runs in member pools, so a full-size run needs -bin.
	runs = sizesFor(false).scenarioRuns(map[string]bool{"ch4": true})
	var got []string
	for _, r := range runs {
		got = append(got, r.key)
	}
	if strings.Join(got, " ") != "herd-effect herd-sweep" {
		t.Errorf("ch4 runs %v", got)
	}
	if sw := runs[len(runs)-1]; sw.name != "herd-join" || sw.sweep.consumers() != "4,16,64,256" || sw.sweep.repeat != 3 ||
		sw.sweep.partitionsPerMember != 2 || strings.Join(sw.eras, ",") != "zk,classic,cooperative,static" ||
		sw.describe() != "herd-join --era zk,classic,cooperative,static --consumers 4,16,64,256 --partitions-per-member 2 "+
			"--broker-config zookeeper.session.timeout.ms=18000 --era-max-consumers cooperative=64,static=64 --repeat 3" {
		t.Errorf("ch4 sweep %+v: %s", sw, sw.describe())
	}
	if _, err := parseFlags([]string{"-out", "x", "-only", "ch4"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "-bin is required for ch4 (its sweep's N=256 runs its members in member pools") {
		t.Errorf("ch4 at full size without -bin: error = %v", err)
	}
	if _, err := parseFlags([]string{"-out", "x", "-only", "ch4", "-small"}, io.Discard); err != nil { // N ≤ 4: goroutines
		t.Errorf("ch4 -small without -bin: %v", err)
	}
	// ch8: its three runs on three-broker labs need the binary its brokers run as.
	if _, err := parseFlags([]string{"-out", "x", "-only", "ch8", "-small"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-bin is required for ch8") {
		t.Errorf("ch8 without -bin: error = %v", err)
	}
	runs = sizesFor(false).scenarioRuns(map[string]bool{"ch8": true})
	got = nil
	for _, r := range runs {
		got = append(got, r.key+"="+strings.Join(r.eras, ","))
		if !r.cluster || !r.report {
			t.Errorf("ch8 run %s: cluster %v, report %v; want both", r.key, r.cluster, r.report)
		}
	}
	if want := "broker-failure=zk,classic,cooperative,static coordinator-failover=classic,cooperative,static durability=zk,classic,cooperative,static"; strings.Join(got, " ") != want {
		t.Errorf("ch8 runs %v, want %s", got, want)
	}
}

// TestFiguresFromACommit: a full-size run refuses a dirty tree's version (the committed figures name
// their commit), unless -allow-dirty; -small runs (the tests') and -check (writes nothing) accept it.
func TestFiguresFromACommit(t *testing.T) {
	_, err := parseFlags([]string{"-out", "x", "-version", "6ab5349-dirty"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Errorf("full sizes from a dirty tree: error = %v, want one about uncommitted changes", err)
	}
	for _, args := range [][]string{{"-allow-dirty"}, {"-small"}, {"-check"}, {}} {
		version := "6ab5349-dirty"
		if len(args) == 0 {
			version = "6ab5349"
		}
		if args = append(args, "-bin", "bin/rebalancelab"); args[0] == "-check" {
			args = args[:1] // -check runs nothing and needs no binary
		}
		if _, err := parseFlags(append([]string{"-out", "x", "-version", version}, args...), io.Discard); err != nil {
			t.Errorf("-version %s %v: %v", version, args, err)
		}
	}
}

// TestCaptionsAndRunRecords: every figure block of a chapter ends with the caption naming the commit;
// summaries and run records do not; regenerating ch4 rewrites ch4's run record and leaves ch1's.
func TestCaptionsAndRunRecords(t *testing.T) {
	o := &output{blocks: map[string]string{}, caption: "<sub>from rebalancelab abc123</sub>"}
	o.block("ch4-table", "| a |\n| 1 |\n")
	o.block("ch4-summary", "It held.")
	o.block("ch4-runinfo", "- `ch4`: rebalancelab abc123")
	if got := o.blocks["ch4-table"]; got != "| a |\n| 1 |\n\n<sub>from rebalancelab abc123</sub>" {
		t.Errorf("figure block %q", got)
	}
	if o.blocks["ch4-summary"] != "It held." || o.blocks["ch4-runinfo"] != "- `ch4`: rebalancelab abc123" {
		t.Errorf("summary %q, run record %q: captioned", o.blocks["ch4-summary"], o.blocks["ch4-runinfo"])
	}
	md := "<!-- BEGIN GENERATED ch1-runinfo -->\n- `ch1`: rebalancelab old1\n<!-- END GENERATED ch1-runinfo -->\n" +
		"<!-- BEGIN GENERATED ch4-runinfo -->\n- `ch4`: rebalancelab old4\n<!-- END GENERATED ch4-runinfo -->\n"
	got, err := fillBlocks(md, map[string]string{"ch4-runinfo": o.blocks["ch4-runinfo"]}, map[string]bool{"ch4": true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<!-- BEGIN GENERATED ch1-runinfo -->\n- `ch1`: rebalancelab old1\n<!-- END GENERATED ch1-runinfo -->\n" +
		"<!-- BEGIN GENERATED ch4-runinfo -->\n- `ch4`: rebalancelab abc123\n<!-- END GENERATED ch4-runinfo -->\n"
	if got != want {
		t.Errorf("run records:\n%s\nwant:\n%s", got, want)
	}
}

func TestFillBlocks(t *testing.T) {
	md := "intro\n<!-- BEGIN GENERATED ch1-table -->\nold\n<!-- END GENERATED ch1-table -->\nmiddle\n" +
		"<!-- BEGIN GENERATED ch4-summary -->\nkept\n<!-- END GENERATED ch4-summary -->\nend\n"
	sel := map[string]bool{"ch1": true}
	got, err := fillBlocks(md, map[string]string{"ch1-table": "| a |\n| 1 |"}, sel)
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n<!-- BEGIN GENERATED ch1-table -->\n| a |\n| 1 |\n<!-- END GENERATED ch1-table -->\nmiddle\n" +
		"<!-- BEGIN GENERATED ch4-summary -->\nkept\n<!-- END GENERATED ch4-summary -->\nend\n"
	if got != want {
		t.Errorf("fillBlocks:\n%s\nwant:\n%s", got, want)
	}
	// A selected chapter's block that the run did not produce is an error.
	if _, err := fillBlocks(md, map[string]string{"ch1-table": "x"}, map[string]bool{"ch1": true, "ch4": true}); err == nil ||
		!strings.Contains(err.Error(), "ch4-summary") {
		t.Errorf("missing ch4-summary: error = %v", err)
	}
	// readme-* blocks belong to every run.
	if _, err := fillBlocks("<!-- BEGIN GENERATED readme-runinfo -->\n<!-- END GENERATED readme-runinfo -->", nil, sel); err == nil {
		t.Error("a missing readme block was accepted")
	}
	// Mismatched and unterminated markers.
	if _, err := fillBlocks("<!-- BEGIN GENERATED ch1-a -->\nx\n<!-- END GENERATED ch1-b -->", map[string]string{"ch1-a": "y"}, sel); err == nil {
		t.Error("BEGIN ch1-a ... END ch1-b was accepted")
	}
	if _, err := fillBlocks("<!-- BEGIN GENERATED ch1-a -->\nx\n", map[string]string{"ch1-a": "y"}, sel); err == nil {
		t.Error("an unterminated block was accepted")
	}
}

func TestFillDir(t *testing.T) {
	dir := t.TempDir()
	md := "<!-- BEGIN GENERATED ch2-tree -->\n<!-- END GENERATED ch2-tree -->\n"
	if err := os.WriteFile(filepath.Join(dir, "02.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	sel := map[string]bool{"ch2": true}
	// A produced block that no chapter shows is an error, and nothing is half-done silently.
	if err := fillDir(dir, map[string]string{"ch2-tree": "T", "ch2-extra": "E"}, sel); err == nil || !strings.Contains(err.Error(), "ch2-extra") {
		t.Errorf("unused block: error = %v", err)
	}
	if err := fillDir(dir, map[string]string{"ch2-tree": "T"}, sel); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "02.md"))
	if string(b) != "<!-- BEGIN GENERATED ch2-tree -->\nT\n<!-- END GENERATED ch2-tree -->\n" {
		t.Errorf("filled file:\n%s", b)
	}
	if err := fillDir(t.TempDir(), nil, sel); err == nil {
		t.Error("a folder without markdown was accepted")
	}
}

// rec builds a record; ts in ms.
func rec(ts int64, member string, kind timeline.Kind, mod func(*timeline.Record)) timeline.Record {
	r := timeline.Record{TsMs: ts, Era: "classic", Member: member, Kind: kind}
	if mod != nil {
		mod(&r)
	}
	return r
}

func gr(api, errName string) func(*timeline.Record) {
	return func(r *timeline.Record) { r.API, r.Err = api, errName }
}

func parts(gen int32, ps ...int32) func(*timeline.Record) {
	return func(r *timeline.Record) {
		r.Partitions = map[string][]int32{"t": ps}
		if gen > 0 {
			r.Generation = timeline.I32(gen)
		}
	}
}

func TestSequenceDiagram(t *testing.T) {
	recs := []timeline.Record{
		rec(1, "runner", timeline.Trigger, func(r *timeline.Record) { r.Name = "m1 starts" }),
		rec(2, "m1", timeline.GroupRequest, gr("FindCoordinator", "")),
		rec(3, "m1", timeline.GroupRequest, gr("JoinGroup", "MEMBER_ID_REQUIRED")),
		rec(4, "m1", timeline.GroupRequest, gr("JoinGroup", "")),
		rec(5, "m1", timeline.GroupRequest, gr("SyncGroup", "")),
		rec(5, "m1", timeline.Assigned, parts(1, 0, 1)),
		rec(6, "m1", timeline.GroupRequest, gr("Heartbeat", "")),
		rec(7, "m1", timeline.GroupRequest, gr("Heartbeat", "")),
		rec(8, "m1", timeline.GroupRequest, gr("OffsetCommit", "")),
		rec(8, "m1", timeline.Deliver, nil), // left out
		rec(9, "m1", timeline.GroupRequest, gr("Heartbeat", "REBALANCE_IN_PROGRESS")),
		rec(9, "m1", timeline.Revoked, parts(0, 0, 1)),
		rec(9, "m9", timeline.GroupRequest, gr("JoinGroup", "")), // not a listed member
		rec(10, "m2", timeline.GroupRequest, gr("Heartbeat", "")),
	}
	got := sequenceDiagram(recs, []string{"m1", "m2"}, "coordinator; broker #1")
	want := `sequenceDiagram
    participant m1
    participant m2
    participant C as coordinator, broker no. 1
    Note over m1,C: m1 starts
    m1->>C: FindCoordinator
    C-->>m1: ok
    m1->>C: JoinGroup
    C-->>m1: MEMBER_ID_REQUIRED
    m1->>C: JoinGroup
    C-->>m1: ok
    m1->>C: SyncGroup
    C-->>m1: ok
    Note over m1: generation 1: owns p0, p1
    Note over m1,C: 2 Heartbeat, 1 OffsetCommit, all answered without error
    m1->>C: Heartbeat
    C-->>m1: REBALANCE_IN_PROGRESS
    Note over m1: revokes p0, p1
    Note over m2,C: 1 Heartbeat, all answered without error
`
	if got != want {
		t.Errorf("sequenceDiagram:\n%s\nwant:\n%s", got, want)
	}
}

func zkRec(ts int64, op, path string) timeline.Record {
	return timeline.Record{TsMs: ts, Era: "zk", Member: "c1", Kind: timeline.ZKOp, Op: op, Path: path, ConsumerID: "g_c1"}
}

func TestRebalanceSteps(t *testing.T) {
	zkr := func(ts int64, k timeline.Kind, mod func(*timeline.Record)) timeline.Record {
		r := timeline.Record{TsMs: ts, Era: "zk", Member: "c1", Kind: k, ConsumerID: "g_c1"}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	recs := []timeline.Record{
		zkr(1, timeline.ZKWatch, func(r *timeline.Record) { r.Path, r.Type = "/consumers/g/ids", "NodeChildrenChanged" }),
		zkRec(2, "read", "/consumers/g/ids"),
		zkRec(2, "read", "/consumers/g/ids"),
		zkr(3, timeline.RebalanceBegin, nil),
		zkRec(3, "read", "/consumers/g/ids/g_c1"),
		zkRec(4, "read", "/brokers/ids"),
		zkRec(4, "read", "/brokers/ids/1"),
		zkRec(5, "write", "/consumers/g/offsets/t/0"),
		zkr(5, timeline.Commit, nil),
		zkr(6, timeline.Revoked, func(r *timeline.Record) { r.Partitions = map[string][]int32{"t": {0, 1}} }),
		zkRec(6, "write", "/consumers/g/owners/t/0"),
		zkRec(6, "write", "/consumers/g/owners/t/1"),
		zkRec(7, "read", "/consumers/g/ids/g_c1"),
		zkRec(7, "read", "/brokers/topics/t"),
		zkRec(8, "read", "/consumers/g/ids"),
		zkRec(8, "read", "/consumers/g/ids/g_c1"),
		zkRec(8, "read", "/consumers/g/ids/g_c2"),
		zkRec(9, "read", "/consumers/g/offsets/t/0"),
		zkRec(9, "write", "/consumers/g/owners/t/0"),
		func() timeline.Record {
			r := zkRec(9, "write", "/consumers/g/owners/t/1")
			r.Result = timeline.ZKOwnerConflict
			return r
		}(),
		zkr(10, timeline.RebalanceEnd, func(r *timeline.Record) { r.OK, r.Attempt = timeline.Bool(false), 1 }),
	}
	rows := rebalanceSteps(recs, "g")
	type row struct {
		step          string
		reads, writes int
		note          string
	}
	want := []row{
		{"a watch fires (ZkClient event thread)", 0, 0, "NodeChildrenChanged on /consumers/g/ids"},
		{"re-read the group's members, re-arming the watch (ZkClient)", 2, 0, ""},
		{"rebalance attempt begins (syncedRebalance → rebalance)", 0, 0, ""},
		{"read own subscription (TopicCount.constructTopicCount)", 1, 0, ""},
		{"read the live brokers (getAllBrokersInCluster)", 2, 0, ""},
		// the fetchers stop before the commit (closeFetchersForQueues); the revocation is recorded after it
		{"fetchers stopped, queues cleared (closeFetchersForQueues)", 0, 0, "revoked t[0, 1] (recorded after the commit)"},
		{"commit offsets before releasing (commitOffsets, auto.commit.enable)", 0, 1, ""},
		{"release ownership: delete own owner znodes (releasePartitionOwnership)", 0, 2, ""},
		{"read own subscription (TopicCount.constructTopicCount)", 1, 0, ""},
		{"read the topic's partitions (getPartitionsForTopics)", 1, 0, ""},
		{"read every member's registration (getConsumersPerTopic)", 3, 0, ""},
		{"read the committed offsets of the partitions to own (fetchOffsetFromZooKeeper)", 1, 0, ""},
		{"claim ownership: create ephemeral owner znodes (reflectPartitionOwnershipDecision)", 0, 1, ""},
		{"claim ownership: create ephemeral owner znodes (reflectPartitionOwnershipDecision)", 0, 1, "conflict: the znode exists and names another consumer thread"},
		{"rebalance attempt ends", 0, 0, "attempt 1: failed: the attempt is retried after rebalance.backoff.ms"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), stepsMarkdown(rows))
	}
	for i, w := range want {
		g := rows[i]
		if g.Step != w.step || g.Reads != w.reads || g.Writes != w.writes || g.Note != w.note {
			t.Errorf("row %d = %q reads %d writes %d note %q; want %+v", i+1, g.Step, g.Reads, g.Writes, g.Note, w)
		}
	}
	if p := rows[10].Paths; strings.Join(p, " ") != "/consumers/g/ids /consumers/g/ids/g_c1 /consumers/g/ids/g_c2" {
		t.Errorf("registration paths %v", p)
	}
}

func TestOneRebalance(t *testing.T) {
	ok := func(ts int64, v bool) timeline.Record {
		return timeline.Record{TsMs: ts, Kind: timeline.RebalanceEnd, OK: timeline.Bool(v), Attempt: 1}
	}
	recs := []timeline.Record{
		{TsMs: 1, Kind: timeline.Deliver},
		{TsMs: 2, Kind: timeline.ZKWatch},
		{TsMs: 3, Kind: timeline.RebalanceBegin},
		ok(4, false),
		{TsMs: 5, Kind: timeline.RebalanceBegin},
		ok(6, true),
		{TsMs: 6, Kind: timeline.Assigned},
		{TsMs: 7, Kind: timeline.Assigned},
	}
	got, found := oneRebalance(recs)
	if !found || len(got) != 6 || got[0].TsMs != 2 || got[5].Kind != timeline.Assigned || got[5].TsMs != 6 {
		t.Errorf("oneRebalance = %v, %v", got, found)
	}
	if _, found := oneRebalance(recs[:4]); found {
		t.Error("found a rebalance without a successful end")
	}
}

func TestExcerptMarksTheZombie(t *testing.T) {
	d := func(ts int64, m string, p int32, off int64) timeline.Record {
		return timeline.Record{TsMs: ts, Member: m, Kind: timeline.Deliver, Topic: "t", Partition: timeline.I32(p), Offset: timeline.I64(off)}
	}
	c := func(ts int64, m string, p int32, off int64, result, errName string) timeline.Record {
		return timeline.Record{TsMs: ts, Member: m, Kind: timeline.Commit, Topic: "t", Partition: timeline.I32(p), Offset: timeline.I64(off),
			Result: result, Err: errName, Generation: timeline.I32(2)}
	}
	recs := []timeline.Record{
		rec(0, "m1", timeline.Assigned, parts(2, 0)),
		rec(0, "m2", timeline.Assigned, parts(2, 1)),
		rec(1000, "runner", timeline.Fault, func(r *timeline.Record) {
			r.Action, r.Target, r.Phase = "stall", "m1/coordinator", timeline.FaultBegin
		}),
		d(1100, "m1", 0, 10),
		d(1200, "m1", 0, 11),
		d(1250, "m2", 1, 5), // not in detail: left out
		rec(1500, "m2", timeline.Revoked, parts(0, 1)),
		rec(1500, "m2", timeline.Assigned, parts(3, 0, 1)),
		d(1600, "m1", 0, 12),
		c(1700, "m1", 0, 13, timeline.CommitApplied, ""),
		c(1750, "m2", 1, 6, timeline.CommitApplied, ""), // another member's ordinary commit: left out
		c(1800, "m1", 0, 13, timeline.CommitRejected, "UNKNOWN_MEMBER_ID"),
		rec(1900, "m1", timeline.GroupRequest, gr("Heartbeat", "")), // successful: left out
		rec(1950, "runner", timeline.Fault, func(r *timeline.Record) {
			r.Action, r.Target, r.Phase = "stall", "m1/coordinator", timeline.FaultEnd
		}),
		rec(9000, "m1", timeline.Deliver, nil), // after toMs
	}
	got := excerpt(recs, 1000, 2000, 0, map[string]bool{"m1": true})
	want := []string{
		"     +0 ms  runner   fault: stall m1/coordinator",
		"   +500 ms  m1       delivered 2: p0 10..11",
		"   +500 ms  m2       revoked p1",
		"   +500 ms  m2       assigned p0, p1 in generation 3",
		"   +700 ms  m1       delivered 1: p0 12..12 (m2's)",
		"   +700 ms  m1       commit p0 offset 13 (generation 2): applied   <- p0 is m2's now",
		"   +800 ms  m1       commit p0 offset 13 (generation 2): REJECTED UNKNOWN_MEMBER_ID   <- p0 is m2's now",
		"   +950 ms  runner   fault over: stall m1/coordinator",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("excerpt:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cut := excerpt(recs, 1000, 2000, 3, map[string]bool{"m1": true}); len(cut) != 4 || cut[3] != "... 5 more lines in the timeline file" {
		t.Errorf("maxLines 3: %q", cut)
	}
}

// windowRecords must count exactly what figures.Compute counts for an event.
func TestWindowRecordsMatchCompute(t *testing.T) {
	z := func(ts int64, m string, k timeline.Kind, mod func(*timeline.Record)) timeline.Record {
		r := timeline.Record{TsMs: ts, Era: "zk", Member: m, Kind: k}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	read := func(r *timeline.Record) { r.Op, r.Path = "read", "/x" }
	own := func(ps ...int32) func(*timeline.Record) {
		return func(r *timeline.Record) { r.Partitions = map[string][]int32{"t": ps} }
	}
	ok := func(r *timeline.Record) { r.OK, r.Attempt = timeline.Bool(true), 1 }
	recs := []timeline.Record{
		z(0, "m1", timeline.MemberStart, nil),
		z(1, "m1", timeline.RebalanceBegin, nil),
		z(2, "m1", timeline.Assigned, own(0, 1)),
		z(2, "m1", timeline.RebalanceEnd, ok),
		z(3, "m1", timeline.ZKOp, read), // before the trigger
		z(10, "runner", timeline.Trigger, func(r *timeline.Record) { r.Name = "join" }),
		z(10, "m2", timeline.MemberStart, nil),
		z(11, "m1", timeline.ZKWatch, nil),
		z(11, "m1", timeline.RebalanceBegin, nil),
		z(12, "m1", timeline.ZKOp, read),
		z(12, "m2", timeline.RebalanceBegin, nil),
		z(13, "m1", timeline.Revoked, own(0, 1)),
		z(14, "m2", timeline.ZKOp, read),
		z(15, "m1", timeline.Assigned, own(0)),
		z(15, "m1", timeline.RebalanceEnd, ok),
		z(16, "m2", timeline.Assigned, own(1)),
		z(16, "m2", timeline.RebalanceEnd, ok),
		z(16, "m2", timeline.ZKOp, read), // same ms as stable: in the window
		z(17, "m1", timeline.ZKOp, read), // after stable: not
	}
	e := &report.EraRun{Era: "zk", Applies: true, Records: recs}
	e.Result = figures.Compute(recs, "zk", figures.FigureOptions{Partitions: map[string][]int32{"t": {0, 1}}})
	ev, found := event(e, "join")
	if !found || ev.End != figures.EndStable {
		t.Fatalf("join event %+v, %v", ev, found)
	}
	counts, names := countByMember(windowRecords(e, "join"))
	var reads int64
	for _, c := range counts {
		reads += int64(c.reads)
	}
	if reads != ev.Figures.ZKReads || reads != 3 {
		t.Errorf("window reads %d, Compute's zk_reads %d, want both 3", reads, ev.Figures.ZKReads)
	}
	if strings.Join(names, ",") != "m1,m2" || counts["m1"].watches != 1 || counts["m1"].revoked != 2 || counts["m2"].attempts != 1 {
		t.Errorf("per member: %v %+v %+v", names, *counts["m1"], *counts["m2"])
	}
}

func TestRunPool(t *testing.T) {
	var ran atomic.Int32
	task := func(context.Context) error { ran.Add(1); return nil }
	if err := runPool(context.Background(), 3, []func(context.Context) error{task, task, task, task, task}); err != nil || ran.Load() != 5 {
		t.Fatalf("runPool = %v, ran %d of 5", err, ran.Load())
	}
	boom := errors.New("boom")
	sawCancel := make(chan bool, 1)
	// The blocker is handed out first, so it is running when boom fails; boom's error must stop it.
	tasks := []func(context.Context) error{
		func(ctx context.Context) error { <-ctx.Done(); sawCancel <- true; return ctx.Err() },
		func(context.Context) error { return boom },
	}
	if err := runPool(context.Background(), 2, tasks); !errors.Is(err, boom) {
		t.Errorf("runPool error = %v, want boom", err)
	}
	if !<-sawCancel {
		t.Error("the other task was not cancelled")
	}
}

func TestPluralAndPartitions(t *testing.T) {
	if plural(1, "member") != "1 member" || plural(0, "member") != "0 members" || plural(5, "partition") != "5 partitions" {
		t.Error("plural")
	}
	if shortPartitions(map[string][]int32{"t": {3, 0}}) != "p0, p3" || shortPartitions(nil) != "nothing" {
		t.Error("shortPartitions")
	}
	if partitionList([]int32{2, 10, 1}) != "1, 2, 10" || partitionList(nil) != "none" {
		t.Error("partitionList")
	}
	if !naturalLess("2", "10") || naturalLess("b", "a") {
		t.Error("naturalLess")
	}
}

// TestZombieRate: the zombie's deliveries per second of its stall against the records produced to the
// partitions it last had assigned; deliveries of other partitions and other members do not count.
func TestZombieRate(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	o := func(v int64) *int64 { return &v }
	recs := []timeline.Record{
		{TsMs: 100, Kind: timeline.Assigned, Member: "m1", Partitions: map[string][]int32{"t": {0}}},
		{TsMs: 1000, Kind: timeline.Fault, Action: "stall", Target: "m1/coordinator", Phase: timeline.FaultBegin},
		{TsMs: 1100, Kind: timeline.Produce, Topic: "t", Partition: p(0), Offset: o(5)},
		{TsMs: 1100, Kind: timeline.Produce, Topic: "t", Partition: p(1), Offset: o(5)},
		{TsMs: 1150, Kind: timeline.Deliver, Member: "m1", Topic: "t", Partition: p(0), Offset: o(5)},
		{TsMs: 1150, Kind: timeline.Deliver, Member: "m1", Topic: "t", Partition: p(1), Offset: o(5)},
		{TsMs: 2100, Kind: timeline.Produce, Topic: "t", Partition: p(0), Offset: o(6)},
		{TsMs: 2200, Kind: timeline.Produce, Topic: "t", Partition: p(0), Offset: o(7)},
		{TsMs: 2300, Kind: timeline.Deliver, Member: "m1", Topic: "t", Partition: p(0), Offset: o(6)},
		{TsMs: 2300, Kind: timeline.Deliver, Member: "m2", Topic: "t", Partition: p(0), Offset: o(7)},
		{TsMs: 2500, Kind: timeline.Fault, Action: "stall", Target: "m1/coordinator", Phase: timeline.FaultEnd},
	}
	if got, want := zombieRate("classic", recs, "m1", 1000, 2500), "| classic | 1.5 s | 1 1 | 1 2 | 2 of 3 |"; got != want {
		t.Errorf("zombieRate = %q, want %q", got, want)
	}
	// A stall of 1002 ms is one second: what the last 2 ms hold counts in it.
	if got, want := zombieRate("classic", recs[:6], "m1", 1000, 2002), "| classic | 1.0 s | 1 | 1 | 1 of 1 |"; got != want {
		t.Errorf("zombieRate over 1002 ms = %q, want %q", got, want)
	}
}

// sweepOf is a hand-made herd-join sweep under the demo's rules: N = 4, 16, 64 with P = 2·N, three runs
// per size, cooperative cut above N=16. Every run's join woke all N+1 members, each taking one attempt
// and owning partitions after it (N+1 distinct end owners), so the zk model's inputs come from the
// figures (figures.ZKChangeFromFigures): reads (N+1)(N+10) + 6N + 5 with one broker and one topic
// (99, 543, 5199), watch events N. Run i measures i reads fewer than that and takes 10·i ms more than
// times gives. The coordinator eras have no records, so no model of their group requests.
func sweepOf(times map[int]map[string]int64) *report.SweepResult {
	sw := &report.SweepResult{Scenario: "herd-join", Trigger: "join", EraMaxN: map[string]int{"cooperative": 16}}
	for _, n := range []int{4, 16, 64} {
		z := &report.SweepSize{N: n}
		owners := map[string]string{}
		for p := 0; p < 2*n; p++ {
			owners[fmt.Sprintf("t/%d", p)] = fmt.Sprintf("m%d", p%(n+1)+1)
		}
		for i := 0; i < 3; i++ {
			r := &report.RunResult{Scenario: "herd-join", Params: spec.Params{Consumers: n, Partitions: 2 * n},
				Script: []spec.Step{{Action: spec.ActTrigger, Name: "join"}, {Action: spec.ActStart, Member: fmt.Sprintf("m%d", n+1)}}}
			for _, era := range allEras {
				if era == "cooperative" && n > 16 {
					continue
				}
				f := figures.Figures{TimeToStableMs: times[n][era] + int64(10*i), RebalanceParticipants: int64(n + 1),
					RebalanceAttempts: int64(n + 1), Revocations: int64(2 * n)}
				if era == "zk" {
					f.ZKReads, f.ZKWatchEvents = int64((n+1)*(n+10)+6*n+5-i), int64(n)
				} else {
					f.GroupRequests = int64(4 * (n + 1))
				}
				r.Eras = append(r.Eras, &report.EraRun{Era: era, Applies: true, EndOwners: owners, Result: figures.Result{Era: era,
					NotApplicable: figures.NotApplicable(era), Events: []figures.Event{{Trigger: "join", Figures: f}}}})
			}
			z.Runs = append(z.Runs, r)
		}
		sw.Sizes = append(sw.Sizes, z)
	}
	return sw
}

// TestSweepBlocks: chapter 4's growth tables, model sentence and verdict follow the sweep: medians with
// [min–max], the zk reads beside the model's count with each run's residual and its bound, `cut` for an
// era not run at a size, the verdict's crossover where the medians cross and "no crossover" where they
// do not.
func TestSweepBlocks(t *testing.T) {
	times := map[int]map[string]int64{
		4:  {"zk": 40, "classic": 300, "cooperative": 600, "static": 300},
		16: {"zk": 200, "classic": 320, "cooperative": 650, "static": 310},
		64: {"zk": 2000, "classic": 400, "static": 380},
	}
	sw := sweepOf(times)
	tables := sweepGrowthTables(sw)
	for _, want := range []string{
		"Each cell: the median of 3 runs at that size, [min–max] over them, the runs counted where fewer (`join` event: N members stable, one joins; P partitions). Eras run only so far (`cut` above): cooperative up to N=16.",
		"| 4 | 8 | 5 | 4 | 4 | 98 [97–99] | 99 | +0, -1, -2 | -10..+0 |",
		"| 64 | 128 | 65 | 64 | 64 | 5198 [5197–5199] | 5199 | +0, -1, -2 | -130..+0 |",
		"| 16 | cooperative | 17 | 17 | 32 | 68 | – | – |",
		"| 64 | static | 65 | 65 | 128 | 260 | – | – |",
		"| 4 | 50 [40–60] | 310 [300–320] | 610 [600–620] | 310 [300–320] |",
		"| 64 | 2010 [2000–2020] | 410 [400–420] | cut | 390 [380–400] |",
	} {
		if !strings.Contains(tables, want+"\n") {
			t.Errorf("growth tables lack %q:\n%s", want, tables)
		}
	}
	if strings.Contains(tables, "| 64 | cooperative |") || strings.Contains(tables, "Errors the runs recorded") {
		t.Errorf("a row for cooperative where it was cut, or errors where none were recorded:\n%s", tables)
	}
	// A run's recorded error is listed under the tables, the era's group written <g>.
	zk64 := sw.Sizes[2].Runs[0].Eras[0]
	zk64.Group, zk64.Errors = "herd-join.zk.ab12", []string{"m20 gives up: herd-join.zk.ab12_m20 can't rebalance after 4 retries:\n/consumers/herd-join.zk.ab12/owners/x/7"}
	if tables := sweepGrowthTables(sw); !strings.HasSuffix(tables, "\n\nErrors the runs recorded (`scenario run` fails the sweep on them; their figures are in the cells above):\n\n"+
		"- N=64 run 1, zk: m20 gives up: <g>_m20 can't rebalance after 4 retries: /consumers/<g>/owners/x/7\n") {
		t.Errorf("the recorded error is not listed:\n%s", tables)
	}
	zk64.Errors = nil
	s := modelSentence(sw)
	for _, want := range []string{
		"went from 98 at N=4 to 5198 at N=64 (medians; ×53 for ×16 members); log–log slope 1.23 (N=4→16), 1.63 (N=16→64) (1 is linear, 2 quadratic).",
		"The model's count, evaluated on each run's own attempts, members and owned partitions, is 99 at N=4, 543 at N=16, 5199 at N=64;",
		"measured − model lies between -2 and +0 over the 9 zk runs, each within its bound.",
		"The watch notifications equal the model's count (one per member registered before the join) in every one of them.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("model sentence lacks %q: %q", want, s)
		}
	}
	if strings.Contains(s, "group requests against") {
		t.Errorf("a coordinator model without records: %q", s)
	}
	v := verdictBlock(sw)
	for _, want := range []string{"```text\nverdict over N=4, 16, 64 (",
		"\ntime_to_stable_ms: crossover between N=16 and N=64: zk ranks before classic at N=16, after it at N=64\n",
		"\nzk_reads: only zk has this figure; no crossover in N=4..64\n"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdict block lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "time_to_stable_ms (ms): N=4") {
		t.Errorf("the verdict block repeats the rankings the tables give:\n%s", v)
	}
	// A residual outside its bound is named, with its run and the bound.
	sw.Sizes[0].Runs[1].Eras[0].Result.Events[0].Figures.ZKReads = 99 + 5
	if s := modelSentence(sw); !strings.Contains(s, "; 8 of them within its bound, these outside it: N=4 run 2: +5, bound -10..+0.") {
		t.Errorf("residual outside its bound: %q", s)
	}
}

// TestConnectTexts: chapter 7's Connect sentences read the run: a layout's generations and what each
// changed, the kill's generations and delays, the survivors' stops.
func TestConnectTexts(t *testing.T) {
	gen := func(ts int64, n int32, phase string, hs ...connect.Holding) connect.Generation {
		return connect.Generation{TsMs: ts, Generation: n, Protocol: "sessioned", Phase: phase, Workers: hs}
	}
	h := func(w string, conns, tasks []string) connect.Holding {
		return connect.Holding{Worker: w, Connectors: conns, Tasks: tasks}
	}
	l1, l2 := "layout 1: 1 worker(s), 1 source and 1 sink task(s)", "layout 2: 2 worker(s), 1 source and 1 sink task(s)"
	kill := "after worker-2 was killed (-9)"
	res := &connect.Result{Protocol: "sessioned", DelayMs: 3000, Killed: "worker-2", KilledAtMs: 1000,
		KilledTasks: []string{"src", "src-0"}, DepartureSeenMs: 3000, DepartureDelay: 3000, ReassignedMs: 6000, Rebalances: 2,
		TaskDowntimeMs: map[string]int64{"worker-1": 0, "worker-2": 5000}, TasksStopped: map[string]int{"worker-1": 0},
		Generations: []connect.Generation{
			gen(100, 1, l1, h("worker-1", nil, nil)),
			gen(200, 2, l1, h("worker-1", []string{"sink", "src"}, []string{"sink-0", "src-0"})),
			gen(300, 3, l2, h("worker-1", []string{"sink"}, []string{"sink-0"}), h("worker-2", nil, nil)),
			gen(400, 4, l2, h("worker-1", []string{"sink"}, []string{"sink-0"}), h("worker-2", []string{"src"}, []string{"src-0"})),
			gen(3000, 5, kill, h("worker-1", []string{"sink"}, []string{"sink-0"})),
			gen(6000, 6, kill, h("worker-1", []string{"sink", "src"}, []string{"sink-0", "src-0"})),
		}}
	layouts := []connect.Layout{{Workers: 1, SourceTasks: 1, SinkTasks: 1}, {Workers: 2, SourceTasks: 1, SinkTasks: 1}}
	s := connectLayoutsText(res, layouts)
	for _, want := range []string{"Layout 1, 1 worker, `tasks.max` 1 for the source and 1 for the sink: generations 1–2 (1: worker-1 joins; 2: worker-1 gets sink, src, sink-0 and src-0)",
		"Layout 2, 2 workers: generations 3–4 (3: worker-2 joins, worker-1 gives up src and src-0; 4: worker-2 gets src and src-0)"} {
		if !strings.Contains(s, want) {
			t.Errorf("connectLayoutsText = %q; want it to contain %q", s, want)
		}
	}
	s = connectKillText(res)
	for _, want := range []string{"worker-2 is killed with -9, holding src and src-0", "generation 5, 2000 ms after the kill",
		"delay** of 3000 ms", "generation 6, 3000 ms after the departure was seen (5000 ms after the kill; 2 rebalances",
		"No task of the surviving workers stopped (worker-1: 0 of its 1 task stopped, 0 ms", "task (src-0) was down 5000 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("connectKillText = %q; want it to contain %q", s, want)
		}
	}
	// -small: sessioned alone, on the least layout; full sizes: the four layouts, sessioned then eager.
	for small, want := range map[bool]string{true: "connect-workers-sessioned 2/1/1", false: "connect-workers-sessioned 1/1/1 1/2/2 2/2/2 3/2/2 connect-workers-eager 1/1/1 1/2/2 2/2/2 3/2/2"} {
		var got []string
		for _, r := range sizesFor(small).scenarioRuns(map[string]bool{"ch7": true}) {
			if r.connectProtocol != "" {
				got = append(got, r.key)
				for _, l := range r.connectLayouts {
					got = append(got, fmt.Sprintf("%d/%d/%d", l.Workers, l.SourceTasks, l.SinkTasks))
				}
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("small %v: connect runs %q, want %q", small, strings.Join(got, " "), want)
		}
	}
	if s := connectEagerText(res, nil); !strings.Contains(s, "did not include the eager protocol") || !strings.Contains(s, "sessioned: 0 produced") {
		t.Errorf("connectEagerText without an eager run = %q", s)
	}
}
