package scenarios

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// recordedRun is the part of a recorded result JSON (RunResult.WriteJSON) the model tests read.
type recordedRun struct {
	Params struct {
		Consumers  int `json:"consumers"`
		Partitions int `json:"partitions"`
	} `json:"params"`
	Script []spec.Step `json:"script"`
	Eras   []struct {
		Era           string            `json:"era"`
		Applies       bool              `json:"applies"`
		Events        []figures.Event   `json:"events"`
		EndOwners     map[string]string `json:"end_owners"`
		NotApplicable []string          `json:"not_applicable"`
	} `json:"eras"`
}

func readTimeline(t *testing.T, path string) []timeline.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := timeline.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// The model's arithmetic on a change worked by hand: 4 members, one joins, one broker, one topic of 8
// partitions, 5 attempts, 8 offsets read, 5 fetchers: 5·(2+1+5+6) + 8 + 2·4 + 1·3 + 5·2 = 99 reads and 4
// watch events; a graceful leave from 5: 4·(2+1+4+6) + 8 + 2·(5−1) + 4·2 = 76 reads, 5 watch events.
func TestZKModelArithmetic(t *testing.T) {
	join := figures.ZKChange{Brokers: 1, Topics: 1, Partitions: 8, Registered: 4, Joined: 1, Attempts: 5, Owned: 8, Fetching: 5}
	if got := figures.ZKReads(join); got != 99 {
		t.Errorf("join reads = %d, want 99", got)
	}
	if got := figures.ZKWatchEvents(join); got != 4 {
		t.Errorf("join watch events = %d, want 4", got)
	}
	if lo, hi := figures.ZKReadsResidualBound(join); lo != -10 || hi != 0 {
		t.Errorf("join bound = %d..%d, want -10..0", lo, hi)
	}
	leave := figures.ZKChange{Brokers: 1, Topics: 1, Partitions: 8, Registered: 5, Left: 1, Attempts: 4, Owned: 8, Fetching: 4}
	if got := figures.ZKReads(leave); got != 76 {
		t.Errorf("leave reads = %d, want 76", got)
	}
	if got := figures.ZKWatchEvents(leave); got != 5 {
		t.Errorf("leave watch events = %d, want 5", got)
	}
	retry := join
	retry.Attempts, retry.FailedAttempts = 6, 1
	if lo, hi := figures.ZKReadsResidualBound(retry); lo != -10 || hi != 2 { // ⌈8/5⌉
		t.Errorf("retry bound = %d..%d, want -10..2", lo, hi)
	}
}

// The model test on a recorded sweep (testdata/herd-join-p64-sweep.json: herd-join at N = 4, 16, 64 on
// 64 partitions, 3 runs each, on the real ZooKeeper; chapter 4's sweep before it moved to P = 2·N): for every zk cell, the model evaluated on that cell's measured
// attempts and owners gives its watch events exactly and its reads within ZKReadsResidualBound
// (−(1+B)·F ≤ measured − model ≤ 0 here, no attempt having failed): the only reads of the change the
// window may miss are the fetchers' leader lookups, which run on their own thread after the rebalance.
func TestZKModelRecordedSweep(t *testing.T) {
	s := recordedSweep(t, filepath.Join("report", "testdata", "herd-join-p64-sweep.json"))
	var b strings.Builder
	if err := s.WriteModel(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{
		"  zk          N=4    zk_reads         measured 153 (153–154, 3 runs)  model 155  residual -1,-2,-2 (bound -10..+0) [inputs from the figures]",
		"  zk          N=16   zk_watch_events  measured 16 (3 runs)  model 16  residual +0,+0,+0 [inputs from the figures]",
		"  zk          N=64   zk_reads         measured 5128 (5127–5130, 3 runs)  model 5133  residual -3,-6,-5 (bound -128..+0) [inputs from the figures]",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %q in:\n%s", line, out)
		}
	}
	if strings.Contains(out, "classic") {
		t.Errorf("a coordinator era's cell without records:\n%s", out)
	}
	c, ok := s.ModelCellFor(16, "zk", figures.FigZKReads)
	if !ok || !reflect.DeepEqual(c.Measured, []int64{572, 574, 571}) || !reflect.DeepEqual(c.Model, []int64{575, 575, 575}) ||
		!reflect.DeepEqual(c.Residuals(), []int64{-3, -1, -4}) || c.Lo != -34 || c.Hi != 0 {
		t.Errorf("N=16 zk reads cell %+v, %v", c, ok)
	}
	if _, ok := s.ModelCellFor(16, "classic", figures.FigGroupRequests); ok {
		t.Error("a classic cell without records")
	}
}

// TestChangeOfRecords: ZKChangeOf and GroupChangeOf read a change's inputs from hand-built records:
// members live before the window (m1, m2; m0 started and stopped before it), started (m3), left (m2),
// crashed (m1) in it, records after the window ignored; the zk era's attempts, failures, owned
// partitions, fetchers, NodeExists claims, brokers and topics; the group's requests by API and its
// revokers (members that revoked and did not stop).
func TestChangeOfRecords(t *testing.T) {
	yes, no := true, false
	recs := []timeline.Record{
		{TsMs: 1000, Kind: timeline.MemberStart, Member: "m0"},
		{TsMs: 1000, Kind: timeline.MemberStart, Member: "m1"},
		{TsMs: 1001, Kind: timeline.MemberStart, Member: "m2"},
		{TsMs: 1002, Kind: timeline.MemberStop, Member: "m0"},
		{TsMs: 1003, Kind: timeline.ZKOp, Op: "read", Path: "/brokers/ids/1"},
		{TsMs: 1003, Kind: timeline.ZKOp, Op: "read", Path: "/brokers/topics/t"},
		// the window: 1100..1200
		{TsMs: 1100, Kind: timeline.MemberStart, Member: "m3"},
		{TsMs: 1110, Kind: timeline.MemberStop, Member: "m2", How: "graceful"},
		{TsMs: 1120, Kind: timeline.MemberStop, Member: "m1", How: "crash"},
		{TsMs: 1130, Kind: timeline.RebalanceEnd, Member: "m3", OK: &no},
		{TsMs: 1140, Kind: timeline.RebalanceEnd, Member: "m3", OK: &yes},
		{TsMs: 1150, Kind: timeline.Assigned, Member: "m3", Partitions: map[string][]int32{"t": {0, 1, 2}}},
		{TsMs: 1150, Kind: timeline.Assigned, Member: "m4", Partitions: map[string][]int32{"t": {}}},
		{TsMs: 1160, Kind: timeline.ZKOp, Member: "m3", Op: "write", Result: figures.ZKOwnerConflict},
		{TsMs: 1170, Kind: timeline.Revoked, Member: "m3", Partitions: map[string][]int32{"t": {0}}},
		{TsMs: 1170, Kind: timeline.Revoked, Member: "m2", Partitions: map[string][]int32{"t": {1}}},
		{TsMs: 1180, Kind: timeline.GroupRequest, API: "JoinGroup"},
		{TsMs: 1181, Kind: timeline.GroupRequest, API: "JoinGroup"},
		{TsMs: 1182, Kind: timeline.GroupRequest, API: "SyncGroup"},
		{TsMs: 1183, Kind: timeline.GroupRequest, API: "LeaveGroup"},
		{TsMs: 1200, Kind: timeline.ZKOp, Op: "read", Path: "/brokers/ids/2"},
		// after the window
		{TsMs: 1300, Kind: timeline.MemberStart, Member: "m9"},
		{TsMs: 1300, Kind: timeline.GroupRequest, API: "Heartbeat"},
	}
	ev := figures.Event{AtMs: 100, EndMs: 200}
	zk := figures.ZKChangeOf(recs, ev, 3)
	want := figures.ZKChange{Brokers: 2, Topics: 1, Partitions: 3, Registered: 2, Joined: 1, Left: 1, Crashed: 1,
		Attempts: 2, FailedAttempts: 1, Owned: 3, Fetching: 1, NodeExists: 1}
	if zk != want {
		t.Errorf("ZKChangeOf:\n got %+v\nwant %+v", zk, want)
	}
	g, got := figures.GroupChangeOf(recs, "classic", ev)
	if wantG := (figures.GroupChange{Era: "classic", Registered: 2, Joined: 1, Left: 1, Crashed: 1, Revokers: 1}); g != wantG {
		t.Errorf("GroupChangeOf:\n got %+v\nwant %+v", g, wantG)
	}
	if wantC := (figures.GroupCount{JoinGroup: 2, SyncGroup: 1, LeaveGroup: 1}); got != wantC {
		t.Errorf("GroupChangeOf's requests: got %+v, want %+v", got, wantC)
	}
}

// recordedSweep is report.ReadSweep of the file at path.
func recordedSweep(t *testing.T, path string) *report.SweepResult {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := report.ReadSweep(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}
