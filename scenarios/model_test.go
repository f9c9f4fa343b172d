package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// recordedRun is the part of a recorded result JSON (RunResult.WriteJSON) the model tests read.
type recordedRun struct {
	Params struct {
		Consumers  int `json:"consumers"`
		Partitions int `json:"partitions"`
	} `json:"params"`
	Script []Step `json:"script"`
	Eras   []struct {
		Era       string            `json:"era"`
		Applies   bool              `json:"applies"`
		Events    []Event           `json:"events"`
		EndOwners map[string]string `json:"end_owners"`
	} `json:"eras"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
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
	join := ZKChange{Brokers: 1, Topics: 1, Partitions: 8, Registered: 4, Joined: 1, Attempts: 5, Owned: 8, Fetching: 5}
	if got := ZKReads(join); got != 99 {
		t.Errorf("join reads = %d, want 99", got)
	}
	if got := ZKWatchEvents(join); got != 4 {
		t.Errorf("join watch events = %d, want 4", got)
	}
	if lo, hi := ZKReadsResidualBound(join); lo != -10 || hi != 0 {
		t.Errorf("join bound = %d..%d, want -10..0", lo, hi)
	}
	leave := ZKChange{Brokers: 1, Topics: 1, Partitions: 8, Registered: 5, Left: 1, Attempts: 4, Owned: 8, Fetching: 4}
	if got := ZKReads(leave); got != 76 {
		t.Errorf("leave reads = %d, want 76", got)
	}
	if got := ZKWatchEvents(leave); got != 5 {
		t.Errorf("leave watch events = %d, want 5", got)
	}
	retry := join
	retry.Attempts, retry.FailedAttempts = 6, 1
	if lo, hi := ZKReadsResidualBound(retry); lo != -10 || hi != 2 { // ⌈8/5⌉
		t.Errorf("retry bound = %d..%d, want -10..2", lo, hi)
	}
}

// The model test on the recorded sweep (docs/figures/ch4-herd-sweep.json: herd-join at N = 4, 16, 64,
// 3 runs each, on the real ZooKeeper): for every zk cell, the model evaluated on that cell's measured
// attempts and owners gives its watch events exactly and its reads within ZKReadsResidualBound
// (−(1+B)·F ≤ measured − model ≤ 0 here, no attempt having failed): the only reads of the change the
// window may miss are the fetchers' leader lookups, which run on their own thread after the rebalance.
func TestZKModelRecordedSweep(t *testing.T) {
	var doc struct {
		Trigger string        `json:"trigger"`
		Runs    []recordedRun `json:"runs"`
	}
	readJSON(t, filepath.Join("..", "docs", "figures", "ch4-herd-sweep.json"), &doc)
	cells := 0
	for _, run := range doc.Runs {
		joined, left := changedMembers(run.Script, doc.Trigger)
		if joined != 1 || left != 0 {
			t.Fatalf("N=%d: the %q change starts %d and stops %d members, want a join", run.Params.Consumers, doc.Trigger, joined, left)
		}
		for _, e := range run.Eras {
			if e.Era != "zk" || !e.Applies {
				continue
			}
			if len(e.Events) != 1 || e.Events[0].Trigger != doc.Trigger {
				t.Fatalf("N=%d: events %+v", run.Params.Consumers, e.Events)
			}
			f := e.Events[0].Figures
			owners := map[string]bool{}
			for _, o := range e.EndOwners {
				owners[o] = true
			}
			c, ok := ZKChangeFromFigures(f, run.Params.Consumers, joined, left, len(owners), run.Params.Partitions)
			if !ok {
				t.Fatalf("N=%d: %d attempts for %d participants: the figures do not give the owned partitions", run.Params.Consumers, f.RebalanceAttempts, f.RebalanceParticipants)
			}
			cells++
			if w := ZKWatchEvents(c); f.ZKWatchEvents != w {
				t.Errorf("N=%d: zk_watch_events %d, model %d", run.Params.Consumers, f.ZKWatchEvents, w)
			}
			model := ZKReads(c)
			lo, hi := ZKReadsResidualBound(c)
			if res := f.ZKReads - model; res < lo || res > hi {
				t.Errorf("N=%d: zk_reads %d, model %d: residual %d outside %d..%d", run.Params.Consumers, f.ZKReads, model, res, lo, hi)
			}
			t.Logf("N=%d: zk_reads %d, model %d, residual %d (bound %d..%d); watch events %d, model %d",
				run.Params.Consumers, f.ZKReads, model, f.ZKReads-model, lo, hi, f.ZKWatchEvents, ZKWatchEvents(c))
		}
	}
	if cells != 9 {
		t.Errorf("%d zk cells, want 9 (3 sizes × 3 runs)", cells)
	}
}

// The model on a recorded timeline (docs/figures/herd-effect: 4 members, one joins, then one leaves,
// 8 partitions), its inputs measured from the records (ZKChangeOf, GroupChangeOf). zk: the join's and
// the leave's watch events exactly and reads within the bound; coordinator eras: JoinGroup and SyncGroup
// exactly as the protocol's count, and every API at least it (the rest is periodic heartbeats and commits).
func TestModelHerdEffectTimelines(t *testing.T) {
	dir := filepath.Join("..", "docs", "figures", "herd-effect")
	var run recordedRun
	readJSON(t, filepath.Join(dir, "result.json"), &run)
	type want struct{ reads, watch, join, sync int64 }
	exp := map[string]map[string]want{
		"zk":          {"join": {99, 4, 0, 0}, "leave": {76, 5, 0, 0}},
		"classic":     {"join": {0, 0, 6, 5}, "leave": {0, 0, 4, 4}},
		"cooperative": {"join": {0, 0, 11, 10}, "leave": {0, 0, 4, 4}},
		"static":      {"join": {0, 0, 5, 5}, "leave": {0, 0, 4, 4}},
	}
	for _, e := range run.Eras {
		recs := readTimeline(t, filepath.Join(dir, "timeline-"+e.Era+".jsonl"))
		if len(e.Events) != 2 {
			t.Fatalf("%s: events %+v", e.Era, e.Events)
		}
		for _, ev := range e.Events {
			w := exp[e.Era][ev.Trigger]
			f := ev.Figures
			if e.Era == "zk" {
				c := ZKChangeOf(recs, ev, run.Params.Partitions)
				if got := ZKReads(c); got != w.reads {
					t.Errorf("zk %s: model reads %d, want %d (inputs %+v)", ev.Trigger, got, w.reads, c)
				}
				if got := ZKWatchEvents(c); got != w.watch || f.ZKWatchEvents != got {
					t.Errorf("zk %s: model watch events %d, measured %d, want %d", ev.Trigger, got, f.ZKWatchEvents, w.watch)
				}
				lo, hi := ZKReadsResidualBound(c)
				if res := f.ZKReads - ZKReads(c); res < lo || res > hi {
					t.Errorf("zk %s: zk_reads %d, model %d: residual outside %d..%d", ev.Trigger, f.ZKReads, ZKReads(c), lo, hi)
				}
				continue
			}
			c, got := GroupChangeOf(recs, e.Era, ev)
			model, ok := GroupRequests(c)
			if !ok {
				t.Fatalf("%s: no model", e.Era)
			}
			if model.JoinGroup != w.join || model.SyncGroup != w.sync || got.JoinGroup != w.join || got.SyncGroup != w.sync {
				t.Errorf("%s %s: JoinGroup/SyncGroup model %d/%d, measured %d/%d, want %d/%d (inputs %+v)",
					e.Era, ev.Trigger, model.JoinGroup, model.SyncGroup, got.JoinGroup, got.SyncGroup, w.join, w.sync, c)
			}
			if got.Heartbeat < model.Heartbeat || got.OffsetCommit < model.OffsetCommit || got.LeaveGroup != model.LeaveGroup {
				t.Errorf("%s %s: measured %v below the model's %v", e.Era, ev.Trigger, got, model)
			}
			if got.Total() != f.GroupRequests {
				t.Errorf("%s %s: requests by API %d, group_requests %d", e.Era, ev.Trigger, got.Total(), f.GroupRequests)
			}
		}
	}
}

// herdEffectSweep is the recorded herd-effect run as a one-size sweep of its join, with its timelines.
func herdEffectSweep(t *testing.T) *SweepResult {
	dir := filepath.Join("..", "docs", "figures", "herd-effect")
	var run recordedRun
	readJSON(t, filepath.Join(dir, "result.json"), &run)
	r := &RunResult{Scenario: "herd-effect", Script: run.Script,
		Params: Params{Consumers: run.Params.Consumers, Partitions: run.Params.Partitions}}
	for _, e := range run.Eras {
		r.Eras = append(r.Eras, &EraRun{Era: e.Era, Applies: e.Applies, EndOwners: e.EndOwners,
			Records: readTimeline(t, filepath.Join(dir, "timeline-"+e.Era+".jsonl")), Result: Result{Era: e.Era, Events: e.Events}})
	}
	return &SweepResult{Scenario: "herd-effect", Trigger: "join", Sizes: []*SweepSize{{N: run.Params.Consumers, Runs: []*RunResult{r}}}}
}

// WriteModel prints each era's measured count beside the model's on the recorded join: zk 98 reads
// against 99 (the last leader lookup after the window), 4 watch events against 4; classic 19 requests
// against 19, cooperative 37 against 37 (two rounds), static 18 against 18.
func TestSweepWriteModel(t *testing.T) {
	var b strings.Builder
	if err := herdEffectSweep(t).WriteModel(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{
		"  zk          N=4    zk_reads         measured 98 (1 run)  model 99  residual -1 (bound -10..+0)",
		"  zk          N=4    zk_watch_events  measured 4 (1 run)  model 4  residual +0",
		"  classic     N=4    group_requests   measured 19 (1 run)  model 19  residual +0 [model: JoinGroup 6 + SyncGroup 5 + Heartbeat 4 + OffsetCommit 4 + LeaveGroup 0]",
		"  cooperative N=4    group_requests   measured 37 (1 run)  model 37  residual +0 [model: JoinGroup 11 + SyncGroup 10 + Heartbeat 8 + OffsetCommit 8 + LeaveGroup 0]",
		"  static      N=4    group_requests   measured 18 (1 run)  model 18  residual +0 [model: JoinGroup 5 + SyncGroup 5 + Heartbeat 4 + OffsetCommit 4 + LeaveGroup 0]",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %q in:\n%s", line, out)
		}
	}
}

// The recorded split-brain-zombie run (docs/figures/split-brain-zombie: m1's coordination link stalls
// for 5 s while its fetch link stays up), its timelines replayed: per era the time two members delivered
// one partition, the records delivered twice and the stale commits. The overlap times were computed
// apart from the replay, from the same records (each member delivers a partition from its first
// deliver after an assigned until its revoked or member_stop; Σ over partitions of the time ≥ 2 deliver).
func TestSplitBrainZombieRecorded(t *testing.T) {
	dir := filepath.Join("..", "docs", "figures", "split-brain-zombie")
	var run recordedRun
	readJSON(t, filepath.Join(dir, "result.json"), &run)
	var results []Result
	for _, e := range run.Eras {
		recs := readTimeline(t, filepath.Join(dir, "timeline-"+e.Era+".jsonl"))
		topic := ""
		for _, r := range recs {
			if r.Kind == timeline.Produce {
				topic = r.Topic
				break
			}
		}
		parts := make([]int32, run.Params.Partitions)
		for i := range parts {
			parts[i] = int32(i)
		}
		results = append(results, Compute(recs, e.Era, FigureOptions{Partitions: map[string][]int32{topic: parts}}))
	}
	want := []SplitBrain{
		{Era: "zk", ConcurrentOwnerMs: 7998, MaxConcurrentOwners: 2, Duplicates: 151, StaleCommitsApplied: 2, RejectedNA: true},
		{Era: "classic", ConcurrentOwnerMs: 6520, MaxConcurrentOwners: 2, Duplicates: 133, StaleCommitsRejected: 2},
		{Era: "cooperative", ConcurrentOwnerMs: 5478, MaxConcurrentOwners: 2, Duplicates: 133, StaleCommitsRejected: 2},
		{Era: "static", ConcurrentOwnerMs: 6592, MaxConcurrentOwners: 2, Duplicates: 134, StaleCommitsRejected: 2},
	}
	if got := SplitBrains(results...); !reflect.DeepEqual(got, want) {
		t.Errorf("split brains:\n got %+v\nwant %+v", got, want)
	}
	const sentence = "Split brain (concurrent_owner_ms: ms during which two or more members delivered the same partition, " +
		"summed over partitions; duplicates; stale_commits_applied / _rejected), longest first: " +
		"zk 7998 ms (2 members at most), 151 records delivered again, stale commits 2 applied / none refusable rejected; " +
		"static 6592 ms (2 members at most), 134 records delivered again, stale commits 0 applied / 2 rejected; " +
		"classic 6520 ms (2 members at most), 133 records delivered again, stale commits 0 applied / 2 rejected; " +
		"cooperative 5478 ms (2 members at most), 133 records delivered again, stale commits 0 applied / 2 rejected."
	if got := splitBrainSentence(results); got != sentence {
		t.Errorf("sentence:\n got %s\nwant %s", got, sentence)
	}
	// Without split brain (at most one member delivering each partition) there is nothing to say.
	one := []Result{{Era: "zk", Totals: Figures{MaxConcurrentOwners: 1, Duplicates: 3}}, {Era: "classic", Totals: Figures{MaxConcurrentOwners: 1}}}
	if sb, s := SplitBrains(one...), splitBrainSentence(one); sb != nil || s != "" {
		t.Errorf("no split brain: %+v, %q", sb, s)
	}
}

// A recorded sweep without its timelines (docs/figures/ch4-herd-sweep.json) prints the zk cells with
// their inputs from the figures, the median with min–max over the 3 runs and each run's residual; the
// coordinator eras, whose requests by API only the records give, print nothing.
func TestSweepWriteModelFromFigures(t *testing.T) {
	var doc struct {
		Trigger string        `json:"trigger"`
		Runs    []recordedRun `json:"runs"`
	}
	readJSON(t, filepath.Join("..", "docs", "figures", "ch4-herd-sweep.json"), &doc)
	s := &SweepResult{Scenario: "herd-join", Trigger: doc.Trigger}
	for _, run := range doc.Runs {
		r := &RunResult{Scenario: "herd-join", Script: run.Script,
			Params: Params{Consumers: run.Params.Consumers, Partitions: run.Params.Partitions}}
		for _, e := range run.Eras {
			r.Eras = append(r.Eras, &EraRun{Era: e.Era, Applies: e.Applies, EndOwners: e.EndOwners,
				Result: Result{Era: e.Era, Events: e.Events}})
		}
		if n := len(s.Sizes); n == 0 || s.Sizes[n-1].N != run.Params.Consumers {
			s.Sizes = append(s.Sizes, &SweepSize{N: run.Params.Consumers})
		}
		z := s.Sizes[len(s.Sizes)-1]
		z.Runs = append(z.Runs, r)
	}
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
	c, ok := s.ModelCellFor(16, "zk", FigZKReads)
	if !ok || !reflect.DeepEqual(c.Measured, []int64{572, 574, 571}) || !reflect.DeepEqual(c.Model, []int64{575, 575, 575}) ||
		!reflect.DeepEqual(c.Residuals(), []int64{-3, -1, -4}) || c.Lo != -34 || c.Hi != 0 {
		t.Errorf("N=16 zk reads cell %+v, %v", c, ok)
	}
	if _, ok := s.ModelCellFor(16, "classic", FigGroupRequests); ok {
		t.Error("a classic cell without records")
	}
}
