package zkconsumer

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Ground truth from the JRE: `"...".hashCode()` and compareTo printed by java (see report).
func TestJavaHashCode(t *testing.T) {
	for s, want := range map[string]int32{
		"[a,0]":                        86974003,
		"[b,2]":                        87003856,
		"[t,0]":                        87540032,
		"[t,10]":                       -1581226645, // wraps
		"[orders,3]":                   -1093576522,
		"[topic-with-a-long-name,123]": 1704970901,
		"[é,0]":                        91025579,
		"[😀,1]":                        -412844102, // a surrogate pair: two UTF-16 units
	} {
		if got := javaHashCode(s); got != want {
			t.Errorf("javaHashCode(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestJavaCompare(t *testing.T) {
	if got := javaCompare("g_c1-0", "g_c10-0"); got != -3 {
		t.Errorf(`compare("g_c1-0", "g_c10-0") = %d, want -3 (Java)`, got)
	}
	// U+1F600 is the surrogate pair D83D DE00; Java orders it below U+FFFD (Go's byte order would not).
	if got := javaCompare("😀", "\uFFFD"); got != -10176 {
		t.Errorf(`compare("😀", "\uFFFD") = %d, want -10176 (Java)`, got)
	}
}

func threads(consumers ...string) []ThreadID {
	var out []ThreadID
	for _, c := range consumers {
		i := strings.LastIndex(c, "-")
		var n int
		fmt.Sscan(c[i+1:], &n)
		out = append(out, ThreadID{c[:i], n})
	}
	return out
}

func owners(a assignment) map[string]string {
	out := map[string]string{}
	for tp, th := range a {
		out[tp.String()] = th.String()
	}
	return out
}

func partitions(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// The example of RangeAssignor's scaladoc: C1, C2 with two streams each, five partitions.
func TestAssignRangeKafkaDocExample(t *testing.T) {
	all := threads("C1-0", "C1-1", "C2-0", "C2-1")
	got, err := assignRange(assignmentContext{
		consumerID:         "C1",
		myTopicThreadIDs:   map[string][]ThreadID{"t": all[:2]},
		consumersForTopic:  map[string][]ThreadID{"t": all},
		partitionsForTopic: map[string][]int32{"t": partitions(5)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"[t,0]": "C1-0", "[t,1]": "C1-0", "[t,2]": "C1-1", "[t,3]": "C2-0", "[t,4]": "C2-1"}
	if !reflect.DeepEqual(owners(got), want) {
		t.Fatalf("range = %v, want %v", owners(got), want)
	}
	mine := owners(got.mine("C1"))
	if !reflect.DeepEqual(mine, map[string]string{"[t,0]": "C1-0", "[t,1]": "C1-0", "[t,2]": "C1-1"}) {
		t.Fatalf("mine = %v", mine)
	}
}

// 11 consumers on 12 partitions: thread ids sort as strings (c1, c10, c11, c2, ...), so c1 gets
// the extra partition and c10 the third.
func TestAssignRangeStringOrder(t *testing.T) {
	var all []ThreadID
	for i := 1; i <= 11; i++ {
		all = append(all, ThreadID{fmt.Sprintf("g_c%d", i), 0})
	}
	sortThreadIDs(all)
	var names []string
	for _, th := range all {
		names = append(names, th.String())
	}
	wantOrder := "g_c1-0 g_c10-0 g_c11-0 g_c2-0 g_c3-0 g_c4-0 g_c5-0 g_c6-0 g_c7-0 g_c8-0 g_c9-0"
	if strings.Join(names, " ") != wantOrder {
		t.Fatalf("order = %v", names)
	}
	got, err := assignRange(assignmentContext{
		consumerID:         "g_c2",
		myTopicThreadIDs:   map[string][]ThreadID{"t": {{"g_c2", 0}}},
		consumersForTopic:  map[string][]ThreadID{"t": all},
		partitionsForTopic: map[string][]int32{"t": partitions(12)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"[t,0]": "g_c1-0", "[t,1]": "g_c1-0", "[t,2]": "g_c10-0", "[t,3]": "g_c11-0", "[t,4]": "g_c2-0",
		"[t,5]": "g_c3-0", "[t,6]": "g_c4-0", "[t,7]": "g_c5-0", "[t,8]": "g_c6-0", "[t,9]": "g_c7-0",
		"[t,10]": "g_c8-0", "[t,11]": "g_c9-0",
	}
	if !reflect.DeepEqual(owners(got), want) {
		t.Fatalf("range = %v, want %v", owners(got), want)
	}
}

func TestAssignRangeMoreThreadsThanPartitions(t *testing.T) {
	all := threads("a-0", "b-0", "c-0")
	got, err := assignRange(assignmentContext{
		consumerID:         "c",
		myTopicThreadIDs:   map[string][]ThreadID{"t": all[2:]},
		consumersForTopic:  map[string][]ThreadID{"t": all},
		partitionsForTopic: map[string][]int32{"t": partitions(2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"[t,0]": "a-0", "[t,1]": "b-0"}; !reflect.DeepEqual(owners(got), want) {
		t.Fatalf("range = %v, want %v", owners(got), want)
	}
	if len(got.mine("c")) != 0 {
		t.Fatalf("c owns %v, want nothing", got.mine("c"))
	}
	// A topic without partitions (not created yet) assigns nothing and is no error.
	got, err = assignRange(assignmentContext{consumerID: "c", myTopicThreadIDs: map[string][]ThreadID{"t": all[2:]},
		consumersForTopic: map[string][]ThreadID{"t": all}, partitionsForTopic: map[string][]int32{}})
	if err != nil || len(got) != 0 {
		t.Fatalf("no partitions: %v, %v", got, err)
	}
}

func TestAssignRangeOwnThreadMissing(t *testing.T) {
	_, err := assignRange(assignmentContext{
		consumerID:         "x",
		myTopicThreadIDs:   map[string][]ThreadID{"t": {{"x", 0}}},
		consumersForTopic:  map[string][]ThreadID{"t": threads("a-0")},
		partitionsForTopic: map[string][]int32{"t": partitions(2)},
	})
	if err == nil || !strings.Contains(err.Error(), "own thread x-0") {
		t.Fatalf("err = %v, want own thread missing", err)
	}
}

// Two topics dealt over two threads in the order of Java's "[topic,partition]".hashCode(); the
// expected owners were printed by the JRE running the same sort (Integer.compare of hashCode).
func TestAssignRoundRobinHashOrder(t *testing.T) {
	th := threads("g_c2-0", "g_c1-0") // unsorted on purpose
	got, err := assignRoundRobin(assignmentContext{
		consumerID:         "g_c1",
		myTopicThreadIDs:   map[string][]ThreadID{"orders": th[1:], "t": th[1:]},
		consumersForTopic:  map[string][]ThreadID{"orders": th, "t": th},
		partitionsForTopic: map[string][]int32{"orders": partitions(3), "t": partitions(12)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"[t,10]": "g_c1-0", "[t,11]": "g_c2-0", "[orders,0]": "g_c1-0", "[orders,1]": "g_c2-0",
		"[orders,2]": "g_c1-0", "[t,0]": "g_c2-0", "[t,1]": "g_c1-0", "[t,2]": "g_c2-0", "[t,3]": "g_c1-0",
		"[t,4]": "g_c2-0", "[t,5]": "g_c1-0", "[t,6]": "g_c2-0", "[t,7]": "g_c1-0", "[t,8]": "g_c2-0",
		"[t,9]": "g_c1-0",
	}
	if !reflect.DeepEqual(owners(got), want) {
		t.Fatalf("roundrobin = %v, want %v", owners(got), want)
	}
}

// ZK-ROUNDROBIN-EMPTY (KAFKA-1648): no topics at all is an empty assignment, not a failure.
func TestAssignRoundRobinEmpty(t *testing.T) {
	got, err := assignRoundRobin(assignmentContext{consumerID: "c", myTopicThreadIDs: map[string][]ThreadID{},
		consumersForTopic: map[string][]ThreadID{}, partitionsForTopic: map[string][]int32{}})
	if err != nil || len(got) != 0 {
		t.Fatalf("roundrobin with no topics = %v, %v; want empty, nil", got, err)
	}
}

func TestAssignRoundRobinDifferentSubscriptions(t *testing.T) {
	_, err := assignRoundRobin(assignmentContext{
		consumerID:         "a",
		myTopicThreadIDs:   map[string][]ThreadID{"x": threads("a-0")},
		consumersForTopic:  map[string][]ThreadID{"x": threads("a-0", "b-0"), "y": threads("b-0")},
		partitionsForTopic: map[string][]int32{"x": partitions(2)},
	})
	if !errors.Is(err, ErrRoundRobinSubscriptions) {
		t.Fatalf("err = %v, want ErrRoundRobinSubscriptions", err)
	}
}

func TestRegistrationThreads(t *testing.T) {
	r, err := parseRegistration([]byte(`{"version":1,"subscription":{"a":2,"b":1},"pattern":"static","timestamp":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.threadsPerTopic("g_c", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]ThreadID{"a": {{"g_c", 0}, {"g_c", 1}}, "b": {{"g_c", 0}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("threads = %v, want %v", got, want)
	}

	w, err := parseRegistration([]byte(`{"version":1,"subscription":{"o.*|x":1},"pattern":"white_list","timestamp":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err = w.threadsPerTopic("g_w", []string{"orders", "x", "xy", InternalTopic, "other"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for tp := range got {
		topics = append(topics, tp)
	}
	sort.Strings(topics)
	if strings.Join(topics, ",") != "orders,other,x" {
		t.Fatalf("whitelist topics = %v", topics)
	}
	got, _ = w.threadsPerTopic("g_w", []string{"o_x", InternalTopic}, false)
	if _, ok := got[InternalTopic]; ok {
		t.Fatalf("internal topic matched o.*|x?")
	}

	b, _ := parseRegistration([]byte(`{"version":1,"subscription":{"x.*":3},"pattern":"black_list","timestamp":"1"}`))
	got, _ = b.threadsPerTopic("g_b", []string{"xa", "ya", InternalTopic}, true)
	if len(got) != 1 || len(got["ya"]) != 3 {
		t.Fatalf("blacklist = %v, want only ya with 3 threads", got)
	}

	for _, bad := range []string{`{`, `{"version":1,"pattern":"static"}`, `{"subscription":{"a":0},"pattern":"static"}`} {
		if _, err := parseRegistration([]byte(bad)); err == nil {
			t.Errorf("parseRegistration(%s) = nil error", bad)
		}
	}
}

func TestTopicFilterNormalization(t *testing.T) {
	regex, black := Whitelist(` "a, b" `).filter()
	if regex != "a|b" || black {
		t.Fatalf("Whitelist regex = %q, %v", regex, black)
	}
	f, err := compileFilter(regex, black)
	if err != nil || !f.allowed("a", true) || f.allowed("ab", true) {
		t.Fatalf("a|b must match a (whole name) and not ab: %v", err)
	}
	if _, err := compileFilter("(", false); err == nil {
		t.Fatal("invalid regex accepted")
	}
}

func TestDecideClaim(t *testing.T) {
	for _, c := range []struct {
		created bool
		stored  []byte
		want    claimOutcome
	}{
		{true, nil, claimed},
		{false, []byte("g_me-0"), claimed}, // created before a connection loss
		{false, []byte("g_other-0"), conflict},
		{false, []byte("g_me-1"), conflict}, // another thread of ours is another owner
		{false, nil, conflict},              // vanished before the read: Kafka treats it as a conflict
	} {
		if got := decideClaim("g_me-0", c.created, c.stored); got != c.want {
			t.Errorf("decideClaim(created=%v, stored=%q) = %v, want %v", c.created, c.stored, got, c.want)
		}
	}
}

func TestDecideAttempt(t *testing.T) {
	ok, release := decideAttempt(map[TopicPartition]claimOutcome{{"t", 0}: claimed, {"t", 1}: claimed})
	if !ok || release != nil {
		t.Fatalf("all claimed: ok=%v release=%v", ok, release)
	}
	ok, release = decideAttempt(map[TopicPartition]claimOutcome{{"t", 2}: claimed, {"t", 0}: claimed, {"t", 1}: conflict, {"a", 5}: claimed})
	want := []TopicPartition{{"a", 5}, {"t", 0}, {"t", 2}}
	if ok || !reflect.DeepEqual(release, want) {
		t.Fatalf("one conflict: ok=%v release=%v, want false %v", ok, release, want)
	}
	ok, release = decideAttempt(map[TopicPartition]claimOutcome{})
	if !ok || release != nil {
		t.Fatalf("nothing to claim: ok=%v release=%v", ok, release)
	}
}
