package connect

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReadEventsAndDowntime reads a hand-written event file (the verifiable connectors' format: a
// JSON line per task start, stop, record produced and record consumed, and a line cut by kill -9) and
// checks the end-to-end counts and the kill's figures: worker-3 is killed at 1000 with
// verifiable-source-1, which starts again on worker-1 at 4000; worker-2 stops verifiable-sink-0 at
// 1200 and starts it again at 1500 (an eager rebalance); worker-1's verifiable-source-0 never stops;
// the drain's stop at 6000 is after untilMs and does not count.
func TestReadEventsAndDowntime(t *testing.T) {
	dir := t.TempDir()
	lines := `{"event":"start","worker":"worker-1","connector":"verifiable-source","task":0,"ms":100}
{"event":"start","worker":"worker-3","connector":"verifiable-source","task":1,"ms":200}
{"event":"start","worker":"worker-2","connector":"verifiable-sink","task":0,"ms":300}
{"event":"produced","connector":"verifiable-source","task":0,"seqno":0,"ms":400}
{"event":"produced","connector":"verifiable-source","task":1,"seqno":0,"ms":400}
{"event":"produced","connector":"verifiable-source","task":1,"seqno":1,"ms":500}
{"event":"consumed","connector":"verifiable-sink","task":0,"value":"0:0","ms":600}
{"event":"consumed","connector":"verifiable-sink","task":0,"value":"0:0","ms":610}
{"event":"consumed","connector":"verifiable-sink","task":0,"value":"1:0","ms":620}
{"event":"stop","worker":"worker-2","connector":"verifiable-sink","task":0,"ms":1200}
{"event":"start","worker":"worker-2","connector":"verifiable-sink","task":0,"ms":1500}
{"event":"start","worker":"worker-1","connector":"verifiable-source","task":1,"ms":4000}
{"event":"stop","worker":"worker-1","connector":"verifiable-source","task":0,"ms":6000}
{"event":"prod`
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := readEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.produced) != 3 || len(ev.consumed) != 2 || ev.missing() != 1 || ev.duplicates != 1 {
		t.Errorf("produced %d, consumed %d, missing %d, duplicates %d; want 3, 2, 1 (1:1), 1 (0:0 twice)",
			len(ev.produced), len(ev.consumed), ev.missing(), ev.duplicates)
	}
	if ev.tasksStopped(connectSource, 2) {
		t.Errorf("tasksStopped(source, 2): verifiable-source-1's last event is a start; want false")
	}
	if !ev.tasksStopped(connectSource, 1) {
		t.Errorf("tasksStopped(source, 1): verifiable-source-0 stopped at 6000; want true")
	}
	hs := []Holding{{Worker: "worker-1", Tasks: []string{"verifiable-source-1"}}, {Worker: "worker-2", Tasks: []string{"verifiable-sink-0"}}}
	if !ev.running(hs) {
		t.Errorf("running(%v): both tasks' last event is a start on their worker; want true", hs)
	}
	if ev.running([]Holding{{Worker: "worker-3", Tasks: []string{"verifiable-source-1"}}}) {
		t.Errorf("running(worker-3 holding verifiable-source-1): it started on worker-1 last; want false")
	}
	down, stopped := ev.downtime(1000, "worker-3", 5000)
	if want := map[string]int64{"worker-1": 0, "worker-2": 300, "worker-3": 3000}; !maps.Equal(down, want) {
		t.Errorf("downtime %v, want %v", down, want)
	}
	if want := map[string]int{"worker-1": 0, "worker-2": 1}; !maps.Equal(stopped, want) {
		t.Errorf("tasks stopped %v, want %v", stopped, want)
	}
}

// TestWantHeld: a layout is held when the generation has exactly the live workers, both connectors
// and every task of the layout once, spread within one of even.
func TestWantHeld(t *testing.T) {
	l := Layout{Workers: 2, SourceTasks: 2, SinkTasks: 2}
	even := Generation{Workers: []Holding{
		{Worker: "worker-1", Connectors: []string{connectSource}, Tasks: []string{"verifiable-source-0", "verifiable-sink-1"}},
		{Worker: "worker-2", Connectors: []string{connectSink}, Tasks: []string{"verifiable-source-1", "verifiable-sink-0"}},
	}}
	if !wantHeld(even, []string{"worker-1", "worker-2"}, l) {
		t.Errorf("wantHeld(%v): want true", even)
	}
	if wantHeld(even, []string{"worker-1", "worker-3"}, l) {
		t.Errorf("wantHeld with worker-3 live instead of worker-2: want false")
	}
	uneven := Generation{Workers: []Holding{
		{Worker: "worker-1", Connectors: []string{connectSource, connectSink}, Tasks: []string{"verifiable-source-0", "verifiable-source-1", "verifiable-sink-0", "verifiable-sink-1"}},
		{Worker: "worker-2", Connectors: []string{}, Tasks: []string{}},
	}}
	if wantHeld(uneven, []string{"worker-1", "worker-2"}, l) {
		t.Errorf("wantHeld(%v): 4 tasks against 0; want false", uneven)
	}
	missing := Generation{Workers: even.Workers[:1]}
	if wantHeld(missing, []string{"worker-1"}, Layout{Workers: 1, SourceTasks: 2, SinkTasks: 2}) {
		t.Errorf("wantHeld(%v): two tasks and a connector missing; want false", missing)
	}
}

// TestHoldingsAccumulate: a sessioned worker's holding is what it held less what is revoked plus what
// is assigned, sorted, never nil.
func TestHoldingsAccumulate(t *testing.T) {
	got := union(minus([]string{"b", "a", "c"}, []string{"b"}), []string{"d", "a"})
	if want := []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("union(minus) = %v, want %v", got, want)
	}
	if got := union(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("union(nil, nil) = %#v, want an empty non-nil slice (JSON [])", got)
	}
}
