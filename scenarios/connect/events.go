package connect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// events are the tasks' event files, read.
type events struct {
	produced   map[string]bool // "task:seqno" the broker acknowledged
	consumed   map[string]int  // value → times consumed
	duplicates int64
	// per task ("<connector>-<n>"): its start and stop events in order
	lifecycle map[string][]taskEvent
}

type taskEvent struct {
	Event     string `json:"event"`
	Worker    string `json:"worker"`
	Connector string `json:"connector"`
	Task      int    `json:"task"`
	Ms        int64  `json:"ms"`
	Seqno     int64  `json:"seqno"`
	Value     string `json:"value"`
}

func readEvents(dir string) (*events, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	ev := &events{produced: map[string]bool{}, consumed: map[string]int{}, lifecycle: map[string][]taskEvent{}}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var e taskEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue // a line cut by kill -9
			}
			id := fmt.Sprintf("%s-%d", e.Connector, e.Task)
			switch e.Event {
			case "produced":
				ev.produced[fmt.Sprintf("%d:%d", e.Task, e.Seqno)] = true
			case "consumed":
				ev.consumed[e.Value]++
			case "start", "stop":
				ev.lifecycle[id] = append(ev.lifecycle[id], e)
			}
		}
		fh.Close()
	}
	for _, n := range ev.consumed {
		if n > 1 {
			ev.duplicates += int64(n - 1)
		}
	}
	for _, l := range ev.lifecycle {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Ms < l[j].Ms })
	}
	return ev, nil
}

func (ev *events) missing() int64 {
	var n int64
	for v := range ev.produced {
		if ev.consumed[v] == 0 {
			n++
		}
	}
	return n
}

// tasksStopped: every task of the connector has a stop event after its last start (a stopped
// connector's tasks stop), so nothing more is produced.
func (ev *events) tasksStopped(connector string, tasks int) bool {
	for i := range tasks {
		l := ev.lifecycle[fmt.Sprintf("%s-%d", connector, i)]
		if len(l) == 0 || l[len(l)-1].Event != "stop" {
			return false
		}
	}
	return true
}

// running: every task of the holdings has started on its worker (its last lifecycle event is a start
// there).
func (ev *events) running(hs []Holding) bool {
	for _, h := range hs {
		for _, t := range h.Tasks {
			l := ev.lifecycle[t]
			if len(l) == 0 || l[len(l)-1].Event != "start" || l[len(l)-1].Worker != h.Worker {
				return false
			}
		}
	}
	return true
}

// downtime: for every worker that ran tasks at the kill, the sum over those tasks of the time from
// the kill (or the task's stop on that worker after it) to the task's next start; and per worker how
// many of its tasks stopped in that window. Only events before untilMs count (later stops are the
// drain's).
func (ev *events) downtime(killedMs int64, victim string, untilMs int64) (map[string]int64, map[string]int) {
	down, stopped := map[string]int64{}, map[string]int{}
	for _, l := range ev.lifecycle {
		// the worker running the task at the kill: its last start before it
		var at *taskEvent
		for i := range l {
			if l[i].Event == "start" && l[i].Ms <= killedMs {
				at = &l[i]
			}
		}
		if at == nil {
			continue
		}
		down[at.Worker] += 0
		from := int64(-1)
		if at.Worker == victim {
			from = killedMs
		}
		for _, e := range l {
			if e.Ms <= killedMs || e.Ms >= untilMs {
				continue
			}
			if e.Event == "stop" && from < 0 && e.Worker == at.Worker {
				from = e.Ms
				stopped[at.Worker]++
			}
			if e.Event == "start" && from >= 0 {
				down[at.Worker] += e.Ms - from
				break
			}
		}
	}
	for w := range down {
		if _, ok := stopped[w]; !ok && w != victim {
			stopped[w] = 0
		}
	}
	return down, stopped
}
