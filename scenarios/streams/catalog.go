package streams

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// The Streams scenario and the relations that read its Result join the catalogue here (the
// catalogue cannot import this package: the runner imports it).
func init() {
	catalog.Register(streamsThreads)
	for name, fn := range map[string]catalog.RunRelation{
		relStreamsStartOnThreads:           onStreams(true, streamsStartOnThreads),
		relStreamsCoPartitioned:            onStreams(true, streamsCoPartitioned),
		relStreamsRemovedThreadTasksMove:   onStreams(true, streamsRemovedThreadTasksMove),
		relStreamsAddThread:                onStreams(true, streamsAddThread),
		relStreamsJoinSpread:               onStreams(true, streamsJoinSpread),
		relStreamsCrashBackToS1:            onStreams(true, streamsCrashBackToS1),
		relStreamsEveryEventStable:         onStreams(true, streamsEveryEventStable),
		relStreamsRecordsOut:               onStreams(false, streamsRecordsOut),
		catalog.RelStreamsFaultsTookEffect: checkStreamsFaultsTookEffect,
	} {
		catalog.RegisterRelation(name, fn)
	}
}

// streamsThreads is issue 17's streams-threads: Kafka Streams' thread model seen from the coordinator.
// One instance with 3 stream threads gets 6 tasks, 2 per thread, task i reading partition i of both
// inputs; a thread removed at run time gives its tasks to the other two; a thread added back and a
// second instance joining spread the tasks over 6 threads; that instance killed with -9 gives its tasks
// back to the first instance's threads. Records are produced throughout; every one must come out.
func streamsThreads() *catalog.Scenario {
	ss := &spec.Streams{Threads: 3, Records: 10000, RatePerSec: 500, CommitIntervalMs: 1000}
	return &catalog.Scenario{
		Name: "streams-threads",
		Description: "Kafka Streams 3.9 instances (3 stream threads each; 2 co-partitioned inputs merged into an output) on this broker: " +
			"a thread removed and added, a second instance joins, then is killed with -9; tasks per thread from the coordinator's view",
		Defaults:     spec.Params{Consumers: 2, Partitions: 6},
		Small:        spec.Params{Consumers: 2, Partitions: 6},
		MinConsumers: 2, MaxConsumers: 2,
		ZKNodes: 1,
		Streams: ss,
		Script: func(p spec.Params, t spec.Timing, _ *rand.Rand) []spec.Step {
			s := catalog.NewBuilder(t)
			hold := int64(2000) // records flow through each layout before the next change
			s.Trigger("start").Member(0, spec.ActStart, "s1").Settle()
			s.Add(spec.Step{DelayMs: hold, Action: spec.ActTrigger, Name: "remove-thread"}).Member(0, spec.ActRemoveThread, "s1").Settle()
			s.Add(spec.Step{DelayMs: hold, Action: spec.ActTrigger, Name: "add-thread"}).Member(0, spec.ActAddThread, "s1").Settle()
			s.Add(spec.Step{DelayMs: hold, Action: spec.ActTrigger, Name: "join"}).Member(0, spec.ActStart, "s2").Settle()
			s.Add(spec.Step{DelayMs: hold, Action: spec.ActTrigger, Name: "crash"}).Member(0, spec.ActCrash, "s2").Settle()
			return s.Steps()
		},
		Relations: []catalog.Relation{
			streamsRel("start: every task on one of s1's 3 threads, partitions/3 per thread", relStreamsStartOnThreads),
			streamsRel("every stable generation: task 0_i reads partition i of both inputs", relStreamsCoPartitioned),
			streamsRel("remove-thread: the removed thread's tasks move to s1's other threads", relStreamsRemovedThreadTasksMove),
			streamsRel("add-thread: every task on s1's 3 threads again", relStreamsAddThread),
			streamsRel("join: the tasks spread over both instances, every thread of each with a task", relStreamsJoinSpread),
			streamsRel("crash: the killed s2's tasks come back to s1's threads", relStreamsCrashBackToS1),
			streamsRel("every event: stable again (time_to_stable_ms >= 0)", relStreamsEveryEventStable),
			streamsRel("records: every input came out at least once (lost == 0, distinct_out == records_in == records)", relStreamsRecordsOut),
		},
	}
}

// streamsRecords is the records the scenario produces (its spec's).
func streamsRecords(*Result) int { return streamsThreads().Streams.Records }

// streamsRel is the registered relation rel on a Streams run, reported as text.
func streamsRel(text, rel string) catalog.Relation {
	return catalog.NamedRel(nil, false, text, rel, nil)
}

// The Streams scenario's registered relations.
const (
	relStreamsStartOnThreads         = "streams-start-on-threads"
	relStreamsCoPartitioned          = "streams-co-partitioned"
	relStreamsRemovedThreadTasksMove = "streams-removed-thread-tasks-move"
	relStreamsAddThread              = "streams-add-thread"
	relStreamsJoinSpread             = "streams-join-spread"
	relStreamsCrashBackToS1          = "streams-crash-back-to-s1"
	relStreamsEveryEventStable       = "streams-every-event-stable"
	relStreamsRecordsOut             = "streams-records-out"
)

// onStreams is a registered relation on a Streams run (RunResult.Streams). Unless it reads only the
// records (observed false) it reads the group's generations, which only the rebalancelab broker's
// observer sees: on another broker (Result.Observed false) it is skipped, not measured.
func onStreams(observed bool, f func(r *Result, p spec.Params) (bool, string)) catalog.RunRelation {
	return func(run *report.RunResult, p spec.Params, _ map[string]string) (bool, string, bool) {
		var s *Result
		if run != nil {
			s, _ = run.Streams.(*Result)
		}
		if s == nil {
			return false, "not a Streams run", false
		}
		if observed && !s.Observed {
			return false, "not measured: the group's generations come from the rebalancelab broker's group observer, and this run's broker (" +
				run.Broker + ") has none", true
		}
		ok, got := f(s, p)
		return ok, got, false
	}
}

// streamsStartOnThreads: start: every task on one of s1's 3 threads, partitions/3 per thread
func streamsStartOnThreads(r *Result, p spec.Params) (bool, string) {
	ev, l, err := StableOf(r, "start")
	if err != nil {
		return false, err.Error()
	}
	ok := len(l.Members) == r.Threads && l.ThreadsOf("s1") == r.Threads
	for _, m := range l.Members {
		ok = ok && len(m.Tasks) == p.Partitions/r.Threads
	}
	return ok, fmt.Sprintf("generation %d: %s (time_to_stable_ms %d)", l.Generation, l.Summary(), ev.TimeToStableMs)
}

// streamsCoPartitioned: every stable generation: task 0_i reads partition i of both inputs
func streamsCoPartitioned(r *Result, _ spec.Params) (bool, string) {
	if len(r.Lanes) == 0 {
		return false, "no stable generation"
	}
	for _, l := range r.Lanes {
		if err := l.CoPartitioned(r.Inputs); err != nil {
			return false, err.Error()
		}
	}
	return true, fmt.Sprintf("%d stable generations, each thread's partitions of %s and %s = its tasks' numbers",
		len(r.Lanes), r.Inputs[0], r.Inputs[1])
}

// streamsRemovedThreadTasksMove: remove-thread: the removed thread's tasks move to s1's other threads
func streamsRemovedThreadTasksMove(r *Result, _ spec.Params) (bool, string) {
	ev, l, err := StableOf(r, "remove-thread")
	if err != nil {
		return false, err.Error()
	}
	removed := ""
	for _, a := range r.App {
		if a.Ev == "thread_removed" {
			removed = a.Thread
		}
	}
	moved := 0
	for _, mv := range ev.Moves {
		if strings.Contains(mv, " "+removed+" -> ") {
			moved++
		}
	}
	ok := removed != "" && len(l.Members) == r.Threads-1 && l.ThreadsOf("s1") == r.Threads-1 && moved > 0
	for _, m := range l.Members {
		ok = ok && m.Thread != removed
	}
	return ok, fmt.Sprintf("removed %s, its %d tasks moved; generation %d: %s", removed, moved, l.Generation, l.Summary())
}

// streamsAddThread: add-thread: every task on s1's 3 threads again
func streamsAddThread(r *Result, _ spec.Params) (bool, string) {
	_, l, err := StableOf(r, "add-thread")
	if err != nil {
		return false, err.Error()
	}
	return len(l.Members) == r.Threads && l.ThreadsOf("s1") == r.Threads, fmt.Sprintf("generation %d: %s", l.Generation, l.Summary())
}

// streamsJoinSpread: join: the tasks spread over both instances, every thread of each with a task
func streamsJoinSpread(r *Result, _ spec.Params) (bool, string) {
	ev, l, err := StableOf(r, "join")
	if err != nil {
		return false, err.Error()
	}
	ok := l.ThreadsOf("s1") == r.Threads && l.ThreadsOf("s2") == r.Threads
	for _, m := range l.Members {
		ok = ok && len(m.Tasks) > 0
	}
	return ok, fmt.Sprintf("generation %d: %s; %d tasks moved", l.Generation, l.Summary(), ev.TasksMoved)
}

// streamsCrashBackToS1: crash: the killed s2's tasks come back to s1's threads
func streamsCrashBackToS1(r *Result, _ spec.Params) (bool, string) {
	ev, l, err := StableOf(r, "crash")
	if err != nil {
		return false, err.Error()
	}
	fromS2 := 0
	for _, mv := range ev.Moves {
		if strings.Contains(mv, " s2-StreamThread-") {
			fromS2++
		}
	}
	held := 0 // s2's tasks in the stable generation before the kill (the join's)
	if _, before, err := StableOf(r, "join"); err == nil {
		for _, m := range before.Members {
			if m.Instance == "s2" {
				held += len(m.Tasks)
			}
		}
	}
	killed := false
	for _, ip := range r.Instances {
		killed = killed || (ip.Member == "s2" && ip.Signal == "SIGKILL")
	}
	ok := killed && len(l.Members) == r.Threads && l.ThreadsOf("s1") == r.Threads && held > 0 && fromS2 == held
	return ok, fmt.Sprintf("s2 SIGKILL %v; %d of its %d tasks moved to s1 (%d moved in all); generation %d: %s (time_to_stable_ms %d)",
		killed, fromS2, held, ev.TasksMoved, l.Generation, l.Summary(), ev.TimeToStableMs)
}

// streamsEveryEventStable: every event: stable again (time_to_stable_ms >= 0)
func streamsEveryEventStable(r *Result, _ spec.Params) (bool, string) {
	var parts []string
	ok := len(r.Events) == 5
	for _, ev := range r.Events {
		ok = ok && ev.TimeToStableMs >= 0
		parts = append(parts, fmt.Sprintf("%s %d", ev.Trigger, ev.TimeToStableMs))
	}
	return ok, strings.Join(parts, ", ")
}

// streamsRecordsOut: records: every input came out at least once (lost == 0, distinct_out == records_in == records)
func streamsRecordsOut(r *Result, _ spec.Params) (bool, string) {
	t := r.Totals
	return t.Lost == 0 && t.DistinctOut == t.RecordsIn && t.RecordsIn == int64(streamsRecords(r)),
		fmt.Sprintf("records_in %d, records_out %d, distinct_out %d, duplicates %d, lost %d, records_reprocessed %d",
			t.RecordsIn, t.RecordsOut, t.DistinctOut, t.Duplicates, t.Lost, t.RecordsReprocessed)
}

// StableOf is the event of r named trigger and the generation it settled in; an error when there is no
// such event or it never settled.
func StableOf(r *Result, trigger string) (Event, Lane, error) {
	for _, ev := range r.Events {
		if ev.Trigger == trigger {
			if ev.Stable == nil {
				return ev, Lane{}, fmt.Errorf("%s: never stable (time_to_stable_ms %d)", trigger, ev.TimeToStableMs)
			}
			return ev, *ev.Stable, nil
		}
	}
	return Event{}, Lane{}, fmt.Errorf("no %s event", trigger)
}

// checkStreamsFaultsTookEffect: catalog.FaultRelationText on a Streams run (the catalogue's Streams
// fault relation, registered as catalog.RelStreamsFaultsTookEffect).
func checkStreamsFaultsTookEffect(run *report.RunResult, _ spec.Params, _ map[string]string) (bool, string, bool) {
	s, _ := run.Streams.(*Result)
	if s == nil {
		return false, "not a Streams run", false
	}
	n := 0
	var missing []string
	usedProc := map[int]bool{}
	usedApp := map[int]bool{}
	for _, st := range run.Script {
		switch st.Action {
		case spec.ActCrash:
			n++
			found := false
			for i, p := range s.Instances {
				if !usedProc[i] && p.Member == st.Member && p.Signal == "SIGKILL" {
					usedProc[i], found = true, true
					break
				}
			}
			if !found {
				missing = append(missing, st.String())
			}
		case spec.ActRemoveThread, spec.ActAddThread:
			n++
			want := "thread_removed"
			if st.Action == spec.ActAddThread {
				want = "thread_added"
			}
			found := false
			for i, a := range s.App {
				if !usedApp[i] && a.Instance == st.Member && a.Ev == want {
					usedApp[i], found = true, true
					break
				}
			}
			if !found {
				missing = append(missing, st.String())
			}
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("%d of %d fault steps left no record: %s", len(missing), n, strings.Join(missing, "; ")), false
	}
	if n == 0 {
		return true, "no fault step", false
	}
	return true, fmt.Sprintf("%d fault steps, each with its record", n), false
}
