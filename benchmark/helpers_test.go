package benchmark

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
)

// Benchmarks start brokers, kfake clusters and connections: all must be gone when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testutil.Exit)) // Exit: removes the test binary (testutil.Binary)
}

// side is one implementation measured in a side-by-side benchmark: its name (the metric's unit is
// "ms-<name>/op"), an optional preparation run before each operation outside the stopwatch and
// b's timer, and the operation.
type side struct {
	name string
	prep func() error
	op   func() error
}

// sideBySide runs every side once per b.N iteration, in the same loop, and accumulates each side's
// wall time separately; report names the ratios to print (ours/peer, as "x-<ours>-vs-<peer>").
type sideBySide struct {
	sides []side
	total []time.Duration
}

func newSideBySide(sides ...side) *sideBySide {
	return &sideBySide{sides: sides, total: make([]time.Duration, len(sides))}
}

// iteration runs each side once (after its prep). The order rotates with i, so that neither side always runs on a
// heap the other has just filled; a GC before each side (outside the stopwatch and b's timer)
// starts both from a collected heap.
func (s *sideBySide) iteration(b *testing.B, i int) {
	b.Helper()
	for k := range s.sides {
		j := (k + i) % len(s.sides)
		b.StopTimer()
		if p := s.sides[j].prep; p != nil {
			if err := p(); err != nil {
				b.Fatalf("%s: %v", s.sides[j].name, err)
			}
		}
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		err := s.sides[j].op()
		s.total[j] += time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v", s.sides[j].name, err)
		}
	}
}

// report adds each side's mean ms per operation ("ms-<name>/op") and, for each ratio [ours, peer]
// index pair, ours/peer as "x-<ours>-vs-<peer>" (below 1: ours is faster).
func (s *sideBySide) report(b *testing.B, ratios ...[2]int) {
	b.Helper()
	for j, sd := range s.sides {
		b.ReportMetric(msPerOp(s.total[j], b.N), "ms-"+sd.name+"/op")
	}
	for _, r := range ratios {
		if s.total[r[1]] > 0 {
			b.ReportMetric(float64(s.total[r[0]])/float64(s.total[r[1]]), "x-"+s.sides[r[0]].name+"-vs-"+s.sides[r[1]].name)
		}
	}
}

func msPerOp(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(n)
}

// checkSyncAssignment checks a leader's SyncGroup assignments: every member id is one of members and
// appears once, and every partition of partitionsPerTopic is assigned exactly once (nothing
// missing, nothing duplicated, nothing unknown). It returns the decoded assignment.
func checkSyncAssignment(sync []kmsg.SyncGroupRequestGroupAssignment, members map[string]bool, partitionsPerTopic map[string]int32) (map[string][]assignor.TopicPartition, error) {
	out := make(map[string][]assignor.TopicPartition, len(sync))
	for _, a := range sync {
		if !members[a.MemberID] {
			return nil, fmt.Errorf("assignment for unknown member %q", a.MemberID)
		}
		if _, dup := out[a.MemberID]; dup {
			return nil, fmt.Errorf("member %q assigned twice", a.MemberID)
		}
		ps, _, err := assignor.DecodeAssignment(a.MemberAssignment)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", a.MemberID, err)
		}
		assignor.SortPartitions(ps)
		out[a.MemberID] = ps
	}
	if err := checkCoverage(out, partitionsPerTopic); err != nil {
		return nil, err
	}
	return out, nil
}

// checkCoverage checks that every partition of partitionsPerTopic has exactly one owner in a and
// that a holds no other partition.
func checkCoverage[K comparable](a map[K][]assignor.TopicPartition, partitionsPerTopic map[string]int32) error {
	owner := map[assignor.TopicPartition]K{}
	for m, ps := range a {
		for _, tp := range ps {
			if n, ok := partitionsPerTopic[tp.Topic]; !ok || tp.Partition < 0 || tp.Partition >= n {
				return fmt.Errorf("%v: assigned partition %s does not exist", m, tp)
			}
			if prev, dup := owner[tp]; dup {
				return fmt.Errorf("partition %s assigned to both %v and %v", tp, prev, m)
			}
			owner[tp] = m
		}
	}
	want := 0
	for _, n := range partitionsPerTopic {
		want += int(n)
	}
	if len(owner) != want {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), want)
	}
	return nil
}

// sameAssignment reports whether two assignments give every member the same partitions (members
// with none may be absent from either).
func sameAssignment(a, b map[string][]assignor.TopicPartition) bool {
	norm := func(m map[string][]assignor.TopicPartition) map[string]string {
		out := map[string]string{}
		for id, ps := range m {
			if len(ps) == 0 {
				continue
			}
			cp := append([]assignor.TopicPartition(nil), ps...)
			assignor.SortPartitions(cp)
			out[id] = fmt.Sprint(cp)
		}
		return out
	}
	na, nb := norm(a), norm(b)
	if len(na) != len(nb) {
		return false
	}
	for id, s := range na {
		if nb[id] != s {
			return false
		}
	}
	return true
}

// topicsOf lists n topics named "topic-0".."topic-<n-1>", each with partitions partitions.
func topicsOf(n int, partitions int32) (names []string, partitionsPerTopic map[string]int32) {
	partitionsPerTopic = make(map[string]int32, n)
	for i := 0; i < n; i++ {
		t := fmt.Sprintf("topic-%d", i)
		names = append(names, t)
		partitionsPerTopic[t] = partitions
	}
	sort.Strings(names)
	return names, partitionsPerTopic
}

// printBenchConfig prints kv as configuration lines of the `go test -bench` output ("key: value", keys
// sorted), with the load average ("loadavg"), for `bench report` (ReadGoBench's GoBenchConfig) to print
// beside the ratios and keep in the history line. Call it in a top-level benchmark before its first
// b.Run: a result line is not open then.
func printBenchConfig(kv map[string]string) {
	kv = maps.Clone(kv)
	kv["loadavg"] = LoadAverage()
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Printf("%s: %s\n", k, strings.ReplaceAll(kv[k], "\n", " "))
	}
}
