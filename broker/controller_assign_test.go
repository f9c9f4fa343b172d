package broker

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Exact placements of Kafka 3.9's AdminUtils.assignReplicasToBrokersRackUnaware with a fixed start
// index (startIndex = nextReplicaShift = start), derived by hand from the algorithm; the 5-broker,
// rf 3, start 0 case is 3.9's own AdminRackAwareTest.testReplicaAssignment.
func TestAssignReplicasKafka39Placements(t *testing.T) {
	for _, c := range []struct {
		live     []int32
		first, n int32
		rf       int16
		start    int
		want     map[int32][]int32
	}{
		{live: []int32{3, 1, 2}, first: 0, n: 4, rf: 1, start: 0, want: map[int32][]int32{0: {1}, 1: {2}, 2: {3}, 3: {1}}},
		{live: []int32{1, 2, 3}, first: 0, n: 6, rf: 2, start: 1, want: map[int32][]int32{0: {2, 1}, 1: {3, 2}, 2: {1, 3}, 3: {2, 3}, 4: {3, 1}, 5: {1, 2}}},
		{live: []int32{1, 2, 3}, first: 0, n: 6, rf: 3, start: 0, want: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}, 3: {1, 3, 2}, 4: {2, 1, 3}, 5: {3, 2, 1}}},
		{live: []int32{1, 2, 3}, first: 0, n: 6, rf: 3, start: 2, want: map[int32][]int32{0: {3, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 1}, 3: {3, 2, 1}, 4: {1, 3, 2}, 5: {2, 1, 3}}},
		// AdminRackAwareTest.testReplicaAssignment (3.9).
		{live: []int32{0, 1, 2, 3, 4}, first: 0, n: 10, rf: 3, start: 0, want: map[int32][]int32{0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1}, 5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2}}},
		{live: []int32{0, 1, 2, 3, 4}, first: 0, n: 10, rf: 2, start: 3, want: map[int32][]int32{0: {3, 2}, 1: {4, 3}, 2: {0, 4}, 3: {1, 0}, 4: {2, 1}, 5: {3, 4}, 6: {4, 0}, 7: {0, 1}, 8: {1, 2}, 9: {2, 3}}},
		{live: []int32{4, 3, 2, 1, 0}, first: 0, n: 6, rf: 1, start: 4, want: map[int32][]int32{0: {4}, 1: {0}, 2: {1}, 3: {2}, 4: {3}, 5: {4}}},
		// startPartitionId 3 (addPartitions): the shift starts at the fixed index and grows only at p=5.
		{live: []int32{0, 1, 2, 3, 4}, first: 3, n: 7, rf: 3, start: 1, want: map[int32][]int32{3: {4, 1, 2}, 4: {0, 2, 3}, 5: {1, 4, 0}, 6: {2, 0, 1}, 7: {3, 1, 2}, 8: {4, 2, 3}, 9: {0, 3, 4}}},
		{live: []int32{1, 2, 3}, first: 7, n: 2, rf: 1, start: 0, want: map[int32][]int32{7: {2}, 8: {3}}},
	} {
		got, err := assignReplicas(c.live, c.first, c.n, c.rf, c.start, nil)
		if err != nil {
			t.Fatalf("%v rf %d start %d: %v", c.live, c.rf, c.start, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v first %d n %d rf %d start %d:\n got %v\nwant %v", c.live, c.first, c.n, c.rf, c.start, got, c.want)
		}
	}
}

func TestAssignReplicasErrors(t *testing.T) {
	for _, c := range []struct {
		live  []int32
		n     int32
		rf    int16
		start int
		want  string
	}{
		{[]int32{1}, 1, 2, 0, "Replication factor: 2 larger than available brokers: 1."},
		{[]int32{1, 2}, 1, 0, 0, "Replication factor must be larger than 0."},
		{[]int32{1, 2}, 0, 1, 0, "Number of partitions must be larger than 0."},
		{[]int32{1, 2}, 1, 1, -1, "assignReplicas: no random source for a random start index"},
	} {
		if _, err := assignReplicas(c.live, 0, c.n, c.rf, c.start, nil); err == nil || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %q", c, err, c.want)
		}
	}
}

// AdminZkClient.createNewPartitionsAssignment: added partitions continue after partition 0's first
// replica, with startIndex = nextReplicaShift = its position and startPartitionId = the old count.
func TestAssignReplicasAddPartitionsStart(t *testing.T) {
	live := []int32{3, 1, 2}
	if got := startIndexFor(live, 2); got != 1 {
		t.Fatalf("start for replica0 2: %d", got)
	}
	if got := startIndexFor(live, 9); got != 0 {
		t.Fatalf("start for an unknown high replica0: %d, want 0 (max(0, -1))", got)
	}
	more, err := assignReplicas(live, 3, 3, 2, startIndexFor(live, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	// start 1, shift 1; p=3 wraps: shift 2.
	if want := map[int32][]int32{3: {2, 3}, 4: {3, 1}, 5: {1, 2}}; !reflect.DeepEqual(more, want) {
		t.Fatalf("added %v, want %v", more, want)
	}
}

// A random start (fixedStartIndex -1): the same seed gives the same placement, every replica list has
// rf distinct live brokers, and the placement is one of the fixed-start ones (startIndex and
// nextReplicaShift drawn independently, so the pair need not be equal: check the shape).
func TestAssignReplicasRandomSeeded(t *testing.T) {
	live := []int32{1, 2, 3, 4, 5}
	for _, rf := range []int16{1, 2, 3} {
		a, err := assignReplicas(live, 0, 12, rf, -1, assignRandFor(42, "orders", 0))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := assignReplicas(live, 0, 12, rf, -1, assignRandFor(42, "orders", 99))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("rf %d: same seed, different placements %v / %v", rf, a, b)
		}
		firsts := map[int32]int{}
		for p := int32(0); p < 12; p++ {
			r := a[p]
			if len(r) != int(rf) {
				t.Fatalf("rf %d partition %d: %v", rf, p, r)
			}
			for i, x := range r {
				if !slices.Contains(live, x) || slices.Contains(r[:i], x) {
					t.Fatalf("rf %d partition %d: %v not rf distinct live brokers", rf, p, r)
				}
			}
			firsts[r[0]]++
			// round-robin first replicas: consecutive partitions lead on consecutive brokers.
			if p > 0 && (a[p-1][0]%5)+1 != r[0] {
				t.Fatalf("rf %d: first replicas not round-robin: %v", rf, a)
			}
		}
		for _, b := range live {
			if firsts[b] < 2 {
				t.Fatalf("rf %d: first replicas unevenly spread %v", rf, firsts)
			}
		}
	}
	// Different seeds reach different start indexes.
	starts := map[int32]bool{}
	for seed := int64(0); seed < 50; seed++ {
		a, _ := assignReplicas(live, 0, 1, 1, -1, assignRandFor(seed, "t", 0))
		starts[a[0][0]] = true
	}
	if len(starts) != len(live) {
		t.Fatalf("50 seeds reached only first replicas %v", starts)
	}
	// seed -1: from the clock reading; two readings give (almost surely) different sources.
	x, y := assignRandFor(-1, "t", 1).Uint64(), assignRandFor(-1, "t", 2).Uint64()
	if x == y {
		t.Fatal("clock-seeded sources equal for different readings")
	}
}

func TestAssignReplicaSeedConfig(t *testing.T) {
	base := map[string]string{"zookeeper.connect": "127.0.0.1:2181"}
	c, err := ConfigFromProperties(base)
	if err != nil || c.ReplicaAssignmentSeed != -1 || c.ReplicaAssignmentRandom {
		t.Fatalf("default seed %d random %v, %v; want -1, false", c.ReplicaAssignmentSeed, c.ReplicaAssignmentRandom, err)
	}
	// Without the key: the lab's fixed start index 0.
	if start, rnd := replicaAssignmentStart(c, "t", 1); start != 0 || rnd != nil {
		t.Fatalf("no key: start %d rnd %v", start, rnd)
	}
	for _, v := range []string{"-1", "7"} {
		c, err = ConfigFromProperties(map[string]string{"zookeeper.connect": "127.0.0.1:2181", "rebalancelab.replica.assignment.seed": v})
		if err != nil || !c.ReplicaAssignmentRandom || fmt.Sprint(c.ReplicaAssignmentSeed) != v {
			t.Fatalf("seed %s: %d %v, %v", v, c.ReplicaAssignmentSeed, c.ReplicaAssignmentRandom, err)
		}
		if start, rnd := replicaAssignmentStart(c, "t", 1); start != -1 || rnd == nil {
			t.Fatalf("seed %s: start %d rnd %v", v, start, rnd)
		}
	}
	// Seed 7 draws the same start for the same topic whatever the clock says.
	c.ReplicaAssignmentSeed = 7
	_, r1 := replicaAssignmentStart(c, "t", 1)
	_, r2 := replicaAssignmentStart(c, "t", 2)
	if r1.Uint64() != r2.Uint64() {
		t.Fatal("seed 7: clock reading changed the source")
	}
	_, err = ConfigFromProperties(map[string]string{"zookeeper.connect": "127.0.0.1:2181", "rebalancelab.replica.assignment.seed": "-2"})
	if err == nil || !strings.Contains(err.Error(), "rebalancelab.replica.assignment.seed") {
		t.Fatalf("seed -2: %v", err)
	}
}
