package streams

// What a Streams run measured: the result JSON's "streams" object.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rebalancelab/rebalancelab/internal/groupview"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// Result is what a Streams scenario's run measured (the scenarios runner's RunResult.Streams, the
// JSON's "streams"). It is the report's report.StreamsOutput (output.go).
type Result struct {
	Application string            `json:"application_id"`
	Inputs      []string          `json:"inputs"`
	Output      string            `json:"output"`
	Config      map[string]string `json:"config"` // the StreamsConfig every instance was given
	Threads     int               `json:"threads_per_instance"`
	// Generations is the coordinator's view of the application's group, every transition
	// (groupview.Generation); Lanes its Stable generations, member by member.
	Generations []groupview.Generation `json:"-"`
	Lanes       []Lane                 `json:"lanes"`
	Events      []Event                `json:"events"`
	Totals      Totals                 `json:"totals"`
	Instances   []report.MemberProcess `json:"instances"`
	// App is every line the instances printed (in order of arrival); written as AppEventsFile.
	App []AppEvent `json:"-"`
	// Observed: the group's transitions were seen by the broker's group observer (the rebalancelab
	// broker). On Kafka's broker they were not: Generations, Lanes and the events' group figures are
	// not measured (the group is settled on DescribeGroups instead), and the relations on them skip.
	Observed    bool   `json:"observed"`
	AppFile     string `json:"app_events,omitempty"`
	ObserverLog string `json:"group_log,omitempty"`
}

// Lane is one Stable generation of the group as the coordinator saw it.
type Lane struct {
	TsMs       int64        `json:"ts_ms"`
	Generation int32        `json:"generation"`
	Members    []LaneMember `json:"members"`
}

// LaneMember is one stream thread's consumer in a generation.
type LaneMember struct {
	Thread     string             `json:"thread"`   // the consumer's client id without "-consumer": s1-StreamThread-2
	Instance   string             `json:"instance"` // s1
	MemberID   string             `json:"member_id"`
	Tasks      []string           `json:"active_tasks"`
	Partitions map[string][]int32 `json:"partitions"`
}

// Event is one scripted trigger's window: from the trigger to the next one.
type Event struct {
	Trigger string `json:"trigger"`
	AtMs    int64  `json:"at_ms"` // Unix ms
	// TimeToStableMs: trigger → the window's last group transition, when that is a Stable generation
	// with every task assigned once to the live threads (0: no transition; -1: never stable).
	TimeToStableMs int64 `json:"time_to_stable_ms"`
	Rebalances     int   `json:"rebalances"`  // PreparingRebalance transitions in the window
	Generations    int   `json:"generations"` // Stable generations in the window
	// TasksMoved: tasks whose thread differs between the stable generation before the trigger and the
	// window's stable one; Moves lists them ("0_1 s1-StreamThread-1 -> s1-StreamThread-2").
	TasksMoved int      `json:"tasks_moved"`
	Moves      []string `json:"moves"`
	// RecordsReprocessed: records processed in the window that an instance had processed before
	// (at least once: what the last committed offsets did not cover).
	RecordsReprocessed int64 `json:"records_reprocessed"`
	Stable             *Lane `json:"stable,omitempty"` // the window's stable generation
}

// Totals are the run's record counts.
type Totals struct {
	RecordsIn          int64 `json:"records_in"`          // acknowledged produce to the inputs
	RecordsOut         int64 `json:"records_out"`         // records of the output topic, read back at the end
	DistinctOut        int64 `json:"distinct_out"`        // distinct inputs they name
	Duplicates         int64 `json:"duplicates"`          // RecordsOut - DistinctOut
	Lost               int64 `json:"lost"`                // inputs no output record names
	RecordsProcessed   int64 `json:"records_processed"`   // processed lines of all instances
	RecordsReprocessed int64 `json:"records_reprocessed"` // those of an input processed before
	Rebalances         int   `json:"rebalances"`
	Generations        int   `json:"generations"`
}

// laneOf is a Stable generation, member by member (sorted by thread).
func laneOf(g groupview.Generation) Lane {
	l := Lane{TsMs: g.TsMs, Generation: g.Generation}
	for _, m := range g.Members {
		thread := strings.TrimSuffix(m.ClientID, "-consumer")
		inst, _, _ := strings.Cut(thread, "-StreamThread-")
		l.Members = append(l.Members, LaneMember{Thread: thread, Instance: inst, MemberID: m.MemberID,
			Tasks: append([]string{}, m.ActiveTasks...), Partitions: m.Partitions})
	}
	sort.Slice(l.Members, func(i, j int) bool { return threadLess(l.Members[i].Thread, l.Members[j].Thread) })
	return l
}

// threadLess orders s1-StreamThread-2 before s1-StreamThread-10.
func threadLess(a, b string) bool {
	ai, an, _ := strings.Cut(a, "-StreamThread-")
	bi, bn, _ := strings.Cut(b, "-StreamThread-")
	if ai != bi {
		return ai < bi
	}
	x, errA := strconv.Atoi(an)
	y, errB := strconv.Atoi(bn)
	if errA != nil || errB != nil {
		return an < bn
	}
	return x < y
}

// owners maps each active task to its thread.
func (l Lane) owners() map[string]string {
	out := map[string]string{}
	for _, m := range l.Members {
		for _, t := range m.Tasks {
			out[t] = m.Thread
		}
	}
	return out
}

// ThreadsOf counts the lane's members (stream threads) of instance inst ("s1").
func (l Lane) ThreadsOf(inst string) int {
	n := 0
	for _, m := range l.Members {
		if m.Instance == inst {
			n++
		}
	}
	return n
}

// CoPartitioned: every member's partitions of each input are exactly the partitions of its tasks
// (task 0_i reads partition i of both inputs). The error names the first member that differs (or
// whose task is not "0_<n>").
func (l Lane) CoPartitioned(inputs []string) error {
	for _, m := range l.Members {
		var want []int32
		for _, t := range m.Tasks {
			_, p, ok := strings.Cut(t, "_")
			n, err := strconv.Atoi(p)
			if !ok || err != nil {
				return fmt.Errorf("%s: task %q", m.Thread, t)
			}
			want = append(want, int32(n))
		}
		slices.Sort(want)
		for _, in := range inputs {
			if got := m.Partitions[in]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				return fmt.Errorf("generation %d, %s: tasks %v but %s partitions %v", l.Generation, m.Thread, m.Tasks, in, got)
			}
		}
	}
	return nil
}

// Summary is the lane on one line: "s1-StreamThread-1 [0_0 0_3], s1-StreamThread-2 [...]".
func (l Lane) Summary() string {
	var parts []string
	for _, m := range l.Members {
		tasks := slices.Clone(m.Tasks)
		parts = append(parts, fmt.Sprintf("%s [%s]", m.Thread, strings.Join(tasks, " ")))
	}
	return strings.Join(parts, ", ")
}

// Of is r's Streams output as this package's Result: nil when r is no Streams run.
func Of(r *report.RunResult) *Result {
	s, _ := r.Streams.(*Result)
	return s
}
