package assignor

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// parts builds a []TopicPartition from "t:0 t:1 u:3".
func parts(s string) []TopicPartition {
	out := []TopicPartition{}
	for _, f := range strings.Fields(s) {
		t, p, _ := strings.Cut(f, ":")
		n, _ := strconv.Atoi(p)
		out = append(out, TopicPartition{t, int32(n)})
	}
	return out
}

// want builds an expected assignment from member -> "t:0 t:1".
func want(m map[string]string) map[string][]TopicPartition {
	out := map[string][]TopicPartition{}
	for id, s := range m {
		out[id] = parts(s)
	}
	return out
}

func sub(id string, topics ...string) Subscription {
	return Subscription{MemberID: id, Topics: topics, Generation: DefaultGeneration}
}

// owning returns a cooperative member's subscription: owned partitions in generation gen.
func owning(id string, gen int32, owned string, topics ...string) Subscription {
	return Subscription{MemberID: id, Topics: topics, OwnedPartitions: parts(owned), Generation: gen}
}

// eagerOwning returns a sticky (eager) member's subscription: the previous assignment in user data.
func eagerOwning(id string, gen int32, owned string, topics ...string) Subscription {
	return Subscription{MemberID: id, Topics: topics, Generation: gen, UserData: Sticky{}.UserData(&Previous{parts(owned), gen})}
}

func assertAssignment(t *testing.T, a Assignor, partitions map[string]int32, subs []Subscription, exp map[string][]TopicPartition) {
	t.Helper()
	got := a.Assign(partitions, subs)
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("%s:\n got %v\nwant %v", a.Name(), got, exp)
	}
	if err := checkAssignment(a.Name(), partitions, subs, got); err != nil {
		t.Fatal(err)
	}
}

// checkAssignment checks the rules every assignment obeys: one sorted entry per member; only
// existing partitions of topics the member subscribes to; no partition twice; for the eager
// assignors every partition of a subscribed topic assigned; for cooperative-sticky every such
// partition assigned unless it is withheld because another member validly owns it or two members
// claim it in the highest generation claiming it.
func checkAssignment(name string, partitions map[string]int32, subs []Subscription, got map[string][]TopicPartition) error {
	g := newGroup(partitions, subs)
	if len(got) != len(g.members) {
		return fmt.Errorf("%d entries for %d members", len(got), len(g.members))
	}
	owner := map[TopicPartition]string{}
	for id, ps := range got {
		if _, ok := g.topics[id]; !ok {
			return fmt.Errorf("entry for unknown member %q", id)
		}
		if ps == nil {
			return fmt.Errorf("member %s: nil list", id)
		}
		if !sort.SliceIsSorted(ps, func(i, j int) bool { return ComparePartitions(ps[i], ps[j]) < 0 }) {
			return fmt.Errorf("member %s: not sorted: %v", id, ps)
		}
		for _, tp := range ps {
			if !g.topics[id][tp.Topic] {
				return fmt.Errorf("member %s gets %s but does not subscribe to %s", id, tp, tp.Topic)
			}
			if tp.Partition < 0 || tp.Partition >= g.partitions[tp.Topic] {
				return fmt.Errorf("member %s gets %s, which does not exist", id, tp)
			}
			if o, dup := owner[tp]; dup {
				return fmt.Errorf("%s assigned to both %s and %s", tp, o, id)
			}
			owner[tp] = id
		}
	}
	var o ownership
	if name == CooperativeStickyName {
		data := map[string]memberData{}
		for _, m := range g.members {
			data[m.MemberID] = cooperativeMemberData(m)
		}
		o = resolveOwnership(g, data)
	}
	for t, n := range g.partitions {
		for p := int32(0); p < n; p++ {
			tp := TopicPartition{t, p}
			id, assigned := owner[tp]
			if name != CooperativeStickyName {
				if !assigned {
					return fmt.Errorf("%s assigned to no one", tp)
				}
				continue
			}
			prev, owned := o.owner[tp]
			switch {
			case assigned && o.multi[tp]:
				return fmt.Errorf("%s, claimed twice in one generation, assigned to %s", tp, id)
			case assigned && owned && prev != id:
				return fmt.Errorf("%s assigned to %s while %s still owns it", tp, id, prev)
			case !assigned && !o.multi[tp] && !transferred(got, o, tp):
				return fmt.Errorf("%s assigned to no one without being owned elsewhere", tp)
			}
		}
	}
	return nil
}

// transferred reports whether tp's valid owner loses it (so withholding it is legitimate).
func transferred(got map[string][]TopicPartition, o ownership, tp TopicPartition) bool {
	prev, ok := o.owner[tp]
	if !ok {
		return false
	}
	for _, p := range got[prev] {
		if p == tp {
			return false
		}
	}
	return true
}

func TestNewAndProtocol(t *testing.T) {
	for _, n := range Names() {
		a, err := New(n)
		if err != nil || a.Name() != n {
			t.Fatalf("New(%q) = %v, %v", n, a, err)
		}
	}
	if a, err := New("org.apache.kafka.clients.consumer.CooperativeStickyAssignor"); err != nil || a.Name() != CooperativeStickyName {
		t.Fatalf("class name: %v, %v", a, err)
	}
	if _, err := New("fancy"); err == nil || !strings.Contains(err.Error(), `unknown partition.assignment.strategy "fancy"`) {
		t.Fatalf("New(fancy) error = %v", err)
	}
	// 3.9's default partition.assignment.strategy is range,cooperative-sticky: common protocol EAGER.
	for _, c := range []struct {
		names []string
		want  RebalanceProtocol
	}{
		{[]string{"range", "cooperative-sticky"}, Eager},
		{[]string{"cooperative-sticky"}, Cooperative},
		{[]string{"sticky"}, Eager},
		{[]string{"roundrobin", "range"}, Eager},
	} {
		var as []Assignor
		for _, n := range c.names {
			a, _ := New(n)
			as = append(as, a)
		}
		if got, err := ProtocolFor(as); err != nil || got != c.want {
			t.Fatalf("ProtocolFor(%v) = %v, %v; want %v", c.names, got, err, c.want)
		}
	}
	if _, err := ProtocolFor(nil); err == nil {
		t.Fatal("ProtocolFor(nil): no error")
	}
}

// RangeAssignor's javadoc example: C0 gets [t0p0, t0p1, t1p0, t1p1], C1 [t0p2, t1p2].
func TestRangeJavadoc(t *testing.T) {
	assertAssignment(t, Range{}, map[string]int32{"t0": 3, "t1": 3},
		[]Subscription{sub("C1", "t0", "t1"), sub("C0", "t0", "t1")},
		want(map[string]string{"C0": "t0:0 t0:1 t1:0 t1:1", "C1": "t0:2 t1:2"}))
}

// 7 partitions over 3 members sorted by member id: 3, 2, 2; a topic only m2 subscribes goes to m2.
func TestRangeUnevenAndPartial(t *testing.T) {
	assertAssignment(t, Range{}, map[string]int32{"t": 7, "u": 2, "gone": 0},
		[]Subscription{sub("m3", "t"), sub("m1", "t", "missing"), sub("m2", "t", "u")},
		want(map[string]string{"m1": "t:0 t:1 t:2", "m2": "t:3 t:4 u:0 u:1", "m3": "t:5 t:6"}))
}

// Static members come first, by group.instance.id, then dynamic ones by member id (MemberInfo).
func TestRangeStaticMembersFirst(t *testing.T) {
	b := sub("b", "t")
	b.InstanceID = "z"
	c := sub("c", "t")
	c.InstanceID = "y"
	assertAssignment(t, Range{}, map[string]int32{"t": 5},
		[]Subscription{sub("a", "t"), b, c},
		want(map[string]string{"c": "t:0 t:1", "b": "t:2 t:3", "a": "t:4"}))
}

// RoundRobinAssignor's javadoc examples.
func TestRoundRobinJavadoc(t *testing.T) {
	assertAssignment(t, RoundRobin{}, map[string]int32{"t0": 3, "t1": 3},
		[]Subscription{sub("C0", "t0", "t1"), sub("C1", "t0", "t1")},
		want(map[string]string{"C0": "t0:0 t0:2 t1:1", "C1": "t0:1 t1:0 t1:2"}))
	assertAssignment(t, RoundRobin{}, map[string]int32{"t0": 1, "t1": 2, "t2": 3},
		[]Subscription{sub("C0", "t0"), sub("C1", "t0", "t1"), sub("C2", "t0", "t1", "t2")},
		want(map[string]string{"C0": "t0:0", "C1": "t1:0", "C2": "t1:1 t2:0 t2:1 t2:2"}))
}

func TestNoMembersNoPartitions(t *testing.T) {
	for _, n := range Names() {
		a, _ := New(n)
		if got := a.Assign(map[string]int32{"t": 3}, nil); len(got) != 0 {
			t.Fatalf("%s with no members: %v", n, got)
		}
		assertAssignment(t, a, map[string]int32{}, []Subscription{sub("m1", "t")}, want(map[string]string{"m1": ""}))
	}
}

// StickyAssignor's javadoc example: the first assignment of 8 partitions to 3 members, then C1 leaves
// and C0 and C2 keep everything they had (values from Kafka 3.9's StickyAssignor).
func TestStickyMemberLeaves(t *testing.T) {
	topics := map[string]int32{"t0": 2, "t1": 2, "t2": 2, "t3": 2}
	all := []string{"t0", "t1", "t2", "t3"}
	assertAssignment(t, Sticky{}, topics,
		[]Subscription{sub("C0", all...), sub("C1", all...), sub("C2", all...)},
		want(map[string]string{"C0": "t0:0 t1:1 t3:0", "C1": "t0:1 t2:0 t3:1", "C2": "t1:0 t2:1"}))
	assertAssignment(t, Sticky{}, topics,
		[]Subscription{eagerOwning("C0", 1, "t0:0 t1:1 t3:0", all...), eagerOwning("C2", 1, "t1:0 t2:1", all...)},
		want(map[string]string{"C0": "t0:0 t0:1 t1:1 t3:0", "C2": "t1:0 t2:0 t2:1 t3:1"}))
}

// A fourth member joins three that own two partitions each: two keep both, one gives up one. Which
// two follows Java's HashMap order of the member ids (c3, c4, c1, c2), as 3.9 computes it.
func TestStickyJoinerTakesOneFromTheThirdInHashOrder(t *testing.T) {
	assertAssignment(t, Sticky{}, map[string]int32{"t": 6},
		[]Subscription{eagerOwning("c1", 5, "t:0 t:1", "t"), eagerOwning("c2", 5, "t:2 t:3", "t"),
			eagerOwning("c3", 5, "t:4 t:5", "t"), sub("c4", "t")},
		want(map[string]string{"c1": "t:0 t:1", "c2": "t:2", "c3": "t:4 t:5", "c4": "t:3"}))
}

// KIP-429: the same join with cooperative-sticky leaves every owner what it keeps and withholds the
// moving partition (t:3) until c2 has revoked it; the follow-up round gives it to c4.
func TestCooperativeJoinTwoRounds(t *testing.T) {
	topics := map[string]int32{"t": 6}
	assertAssignment(t, CooperativeSticky{}, topics,
		[]Subscription{owning("c1", 5, "t:0 t:1", "t"), owning("c2", 5, "t:2 t:3", "t"),
			owning("c3", 5, "t:4 t:5", "t"), owning("c4", -1, "", "t")},
		want(map[string]string{"c1": "t:0 t:1", "c2": "t:2", "c3": "t:4 t:5", "c4": ""}))
	assertAssignment(t, CooperativeSticky{}, topics,
		[]Subscription{owning("c1", 6, "t:0 t:1", "t"), owning("c2", 6, "t:2", "t"),
			owning("c3", 6, "t:4 t:5", "t"), owning("c4", 6, "", "t")},
		want(map[string]string{"c1": "t:0 t:1", "c2": "t:2", "c3": "t:4 t:5", "c4": "t:3"}))
}

// CO-COOP-STALE-OWNED (KAFKA-12984): C3 timed out in generation 1; generation 2 moved its partitions
// to C1 and C2; C3 rejoins still claiming them. The older claim loses: C1 and C2 keep what balance
// allows and the partitions moving to C3 are withheld this round; the next round completes it, and
// the final assignment covers every partition exactly once.
func TestCoopStaleOwned(t *testing.T) {
	topics := map[string]int32{"t": 6}
	assertAssignment(t, CooperativeSticky{}, topics,
		[]Subscription{owning("C1", 2, "t:0 t:1 t:4", "t"), owning("C2", 2, "t:2 t:3 t:5", "t"),
			owning("C3", 1, "t:4 t:5", "t")},
		want(map[string]string{"C1": "t:0 t:1", "C2": "t:2 t:3", "C3": ""}))
	// C1 and C2 revoked t:4 and t:5, C3 revoked its stale claims (owned - assigned); all rejoin.
	final := CooperativeSticky{}.Assign(topics, []Subscription{owning("C1", 3, "t:0 t:1", "t"),
		owning("C2", 3, "t:2 t:3", "t"), owning("C3", 3, "", "t")})
	if exp := want(map[string]string{"C1": "t:0 t:1", "C2": "t:2 t:3", "C3": "t:4 t:5"}); !reflect.DeepEqual(final, exp) {
		t.Fatalf("second round:\n got %v\nwant %v", final, exp)
	}
	assertCoversOnce(t, topics, final)

	t.Run("same generation", func(t *testing.T) {
		// C1 and C2 both claim t:2 in generation 2: neither keeps it, no one gets it this round.
		assertAssignment(t, CooperativeSticky{}, topics,
			[]Subscription{owning("C1", 2, "t:0 t:1 t:2", "t"), owning("C2", 2, "t:2 t:3", "t"),
				owning("C3", 2, "t:4 t:5", "t")},
			want(map[string]string{"C1": "t:0 t:1", "C2": "t:3", "C3": "t:4 t:5"}))
		final := CooperativeSticky{}.Assign(topics, []Subscription{owning("C1", 3, "t:0 t:1", "t"),
			owning("C2", 3, "t:3", "t"), owning("C3", 3, "t:4 t:5", "t")})
		if exp := want(map[string]string{"C1": "t:0 t:1", "C2": "t:2 t:3", "C3": "t:4 t:5"}); !reflect.DeepEqual(final, exp) {
			t.Fatalf("second round:\n got %v\nwant %v", final, exp)
		}
		assertCoversOnce(t, topics, final)
	})
	t.Run("tie below a newer claim", func(t *testing.T) {
		// C1 and C2 claim t:0 in generation 2, C3 in generation 3: C3's claim wins, whatever the order.
		for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
			subs := []Subscription{owning("C1", 2, "t:0 t:1", "t"), owning("C2", 2, "t:0 t:2 t:3", "t"),
				owning("C3", 3, "t:0 t:4 t:5", "t")}
			in := []Subscription{subs[order[0]], subs[order[1]], subs[order[2]]}
			assertAssignment(t, CooperativeSticky{}, topics, in,
				want(map[string]string{"C1": "t:1", "C2": "t:2 t:3", "C3": "t:0 t:4"}))
		}
	})
	t.Run("eager sticky", func(t *testing.T) {
		// The same stale claim with the eager sticky assignor: one round, everything covered.
		assertAssignment(t, Sticky{}, topics,
			[]Subscription{eagerOwning("C1", 2, "t:0 t:1 t:4", "t"), eagerOwning("C2", 2, "t:2 t:3 t:5", "t"),
				eagerOwning("C3", 1, "t:4 t:5", "t")},
			want(map[string]string{"C1": "t:0 t:1", "C2": "t:2 t:3", "C3": "t:4 t:5"}))
	})
}

func assertCoversOnce(t *testing.T, partitions map[string]int32, a map[string][]TopicPartition) {
	t.Helper()
	seen := map[TopicPartition]int{}
	for _, ps := range a {
		for _, tp := range ps {
			seen[tp]++
		}
	}
	for topic, n := range partitions {
		for p := int32(0); p < n; p++ {
			if c := seen[TopicPartition{topic, p}]; c != 1 {
				t.Fatalf("%s-%d assigned %d times in %v", topic, p, c, a)
			}
		}
	}
}

// Kafka 3.9's general sticky builder throws NullPointerException on this input: t1-4 and t1-7 were
// consumer-g-3's in an older generation, and handing them back looks up consumer-g-3, which no
// longer subscribes to t1 and was set aside (GeneralAssignmentBuilder.performReassignments). Ours
// skips that previous owner and balances t1 between the two subscribers (7 and 8 in all).
func TestStickyNeverFails(t *testing.T) {
	assertAssignment(t, Sticky{}, map[string]int32{"t0": 6, "t1": 8, "t2": 7},
		[]Subscription{
			eagerOwning("consumer-g-1-06ac630e-22db", 3, "t0:2 t0:3 t1:0 t1:1 t2:0 t2:2 t2:6", "t1"),
			eagerOwning("consumer-g-2-da8c5582-52fe", 3, "t0:4 t0:5 t1:2 t1:4 t1:6 t2:2 t2:3 t2:5 t1:1 t2:1", "t1", "t2"),
			eagerOwning("consumer-g-3-663c37f1-6eb4", -1, "t0:0 t0:1 t1:7 t2:1 t2:6 t0:3 t1:4", "t0"),
		},
		want(map[string]string{
			"consumer-g-1-06ac630e-22db": "t1:0 t1:1 t1:2 t1:3 t1:4 t1:5 t1:7",
			"consumer-g-2-da8c5582-52fe": "t1:6 t2:0 t2:1 t2:2 t2:3 t2:4 t2:5 t2:6",
			"consumer-g-3-663c37f1-6eb4": "t0:0 t0:1 t0:2 t0:3 t0:4 t0:5",
		}))
}

// Kafka 3.9's general sticky builder gives a partition back to its previous owner even when that
// member no longer subscribes to the topic (here m1 would get t1-5); ours keeps it with a subscriber
// and withholds what moves.
func TestCooperativeGeneralNeverAssignsUnsubscribedTopic(t *testing.T) {
	assertAssignment(t, CooperativeSticky{}, map[string]int32{"t0": 6, "t1": 6, "t2": 3, "t3": 3},
		[]Subscription{
			owning("m4", 4, "t0:4 t2:1 t3:1", "t0", "t1", "t3"),
			owning("m1", -1, "t0:3 t1:5 t3:2", "t0", "t3"),
			owning("m3", 4, "t0:0 t0:2 t0:5 t2:2", "t0", "t1", "t2", "t3"),
			owning("m8", 4, "t0:1 t1:0 t1:1 t1:3 t2:0 t3:0", "t0", "t1", "t3"),
		},
		want(map[string]string{"m1": "t0:3 t3:2", "m3": "t0:2 t0:5 t2:2", "m4": "t0:4 t1:2 t1:4 t3:1", "m8": "t1:0 t1:1 t1:3 t3:0"}))
}

// Random and malformed input: no assignor panics, each result obeys checkAssignment, and the
// sticky assignors are balanced (sizes differ by at most 1) when all members subscribe alike.
func TestAssignorsNeverFail(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	topics := []string{"a", "b", "c", "d"}
	for i := 0; i < 2000; i++ {
		partitions := map[string]int32{}
		for _, tp := range topics {
			partitions[tp] = int32(rnd.Intn(9)) - 1 // -1 and 0: no partitions
		}
		same := rnd.Intn(2) == 0
		var subs []Subscription
		for m := 0; m < 1+rnd.Intn(12); m++ {
			s := Subscription{MemberID: fmt.Sprintf("m%d", rnd.Intn(15)), Generation: int32(rnd.Intn(5)) - 1}
			for _, tp := range topics {
				if same || rnd.Intn(2) == 0 {
					s.Topics = append(s.Topics, tp)
				}
			}
			if rnd.Intn(5) == 0 {
				s.Topics = append(append(s.Topics, "unknown"), s.Topics...) // duplicates and an unknown topic
			}
			for k := 0; k < rnd.Intn(8); k++ {
				s.OwnedPartitions = append(s.OwnedPartitions, TopicPartition{topics[rnd.Intn(5)%4], int32(rnd.Intn(10)) - 1})
			}
			switch rnd.Intn(4) {
			case 0:
				s.UserData = []byte{0xff, 0x01}
			case 1:
				s.UserData = Sticky{}.UserData(&Previous{s.OwnedPartitions, s.Generation})
			}
			subs = append(subs, s)
		}
		for _, n := range Names() {
			a, _ := New(n)
			got := a.Assign(partitions, subs)
			if err := checkAssignment(n, partitions, subs, got); err != nil {
				t.Fatalf("case %d %s: %v\nsubs %+v\ngot %v", i, n, err, subs, got)
			}
			if n == StickyName && same {
				min, max := -1, 0
				for _, ps := range got {
					if min < 0 || len(ps) < min {
						min = len(ps)
					}
					if len(ps) > max {
						max = len(ps)
					}
				}
				if max-min > 1 {
					t.Fatalf("case %d sticky unbalanced %v", i, got)
				}
			}
		}
	}
}

func TestCompareStringsIsJavas(t *testing.T) {
	for _, c := range []struct {
		a, b string
		sign int
	}{
		{"a", "b", -1}, {"ab", "a", 1}, {"", "a", -1}, {"m10", "m9", -1}, {"x", "x", 0},
		// U+10000 is the surrogate pair D800 DC00 in UTF-16, so it sorts before U+FFFF in Java.
		{"\U00010000", "\uffff", -1}, {"\uffff", "\U00010000", 1}, {"\U00010000", "\U00010001", -1},
	} {
		got := CompareStrings(c.a, c.b)
		if (got < 0 && c.sign >= 0) || (got > 0 && c.sign <= 0) || (got == 0 && c.sign != 0) {
			t.Fatalf("CompareStrings(%q, %q) = %d, want sign %d", c.a, c.b, got, c.sign)
		}
	}
}

func TestJavaHashes(t *testing.T) {
	// Values as Java computes them: "hello".hashCode(), new TopicPartition("t0", 1).hashCode().
	if h := javaStringHash("hello"); h != 99162322 {
		t.Fatalf(`"hello".hashCode() = %d`, h)
	}
	if h := javaStringHash("consumer-group-1-0123456789abcdef"); h != javaStringHashSlow("consumer-group-1-0123456789abcdef") {
		t.Fatalf("overflow arithmetic differs: %d", h)
	}
	if h := partitionHash(TopicPartition{"t0", 1}); h != 4636 {
		t.Fatalf("TopicPartition(t0,1).hashCode() = %d", h)
	}
	if c := []int{hashCapacity(0), hashCapacity(12), hashCapacity(13), hashCapacity(24), hashCapacity(25)}; !reflect.DeepEqual(c, []int{16, 16, 32, 32, 64}) {
		t.Fatalf("capacities %v", c)
	}
	// "c1".."c4" hash to buckets 14, 15, 0, 1 of 16.
	if got := javaHashOrder([]string{"c1", "c2", "c3", "c4"}); !reflect.DeepEqual(got, []string{"c3", "c4", "c1", "c2"}) {
		t.Fatalf("HashMap order %v", got)
	}
}

// javaStringHashSlow is String.hashCode with 64-bit arithmetic reduced mod 2^32.
func javaStringHashSlow(s string) int32 {
	var h int64
	for _, r := range s {
		h = (31*h + int64(r)) & 0xffffffff
	}
	return int32(uint32(h))
}

// The v3 subscription's bytes, field by field (ConsumerProtocolSubscription.json, not flexible).
func TestEncodeSubscriptionLayout(t *testing.T) {
	got := EncodeSubscription(Subscription{MemberID: "m", Topics: []string{"u", "t"}, UserData: []byte{7},
		OwnedPartitions: parts("u:1 t:2 u:0"), Generation: 5, Rack: "r"})
	exp := "0003" + // version 3
		"00000002" + "0001" + "74" + "0001" + "75" + // topics [t u], sorted
		"00000001" + "07" + // user data
		"00000002" + "0001" + "74" + "00000001" + "00000002" + "0001" + "75" + "00000002" + "00000000" + "00000001" + // owned t:[2] u:[0 1]
		"00000005" + // generation
		"0001" + "72" // rack
	if hex.EncodeToString(got) != exp {
		t.Fatalf("bytes\n got %x\nwant %s", got, exp)
	}
	s, err := DecodeSubscription("m", "i", got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, Subscription{MemberID: "m", InstanceID: "i", Topics: []string{"t", "u"}, UserData: []byte{7},
		OwnedPartitions: parts("t:2 u:0 u:1"), Generation: 5, Rack: "r"}) {
		t.Fatalf("decoded %+v", s)
	}
	// No rack, no user data: nullable fields are -1.
	got = EncodeSubscription(sub("m", "t"))
	if exp := "0003" + "00000001" + "0001" + "74" + "ffffffff" + "00000000" + "ffffffff" + "ffff"; hex.EncodeToString(got) != exp {
		t.Fatalf("bytes\n got %x\nwant %s", got, exp)
	}
}

func TestDecodeSubscriptionVersions(t *testing.T) {
	// v0 (topics, user data): no owned partitions, generation -1.
	v0, _ := hex.DecodeString("0000" + "00000001" + "0001" + "74" + "ffffffff")
	s, err := DecodeSubscription("m", "", v0)
	if err != nil || s.Generation != DefaultGeneration || len(s.OwnedPartitions) != 0 || !reflect.DeepEqual(s.Topics, []string{"t"}) {
		t.Fatalf("v0: %+v, %v", s, err)
	}
	// A newer version is read as v3, trailing fields ignored (ConsumerProtocol.checkSubscriptionVersion).
	v4 := append(EncodeSubscription(owning("m", 2, "t:0", "t")), 0xde, 0xad)
	v4[1] = 4
	s, err = DecodeSubscription("m", "", v4)
	if err != nil || s.Generation != 2 || !reflect.DeepEqual(s.OwnedPartitions, parts("t:0")) {
		t.Fatalf("v4: %+v, %v", s, err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 3, 0, 0, 0, 5}, {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := DecodeSubscription("m", "", bad); err == nil {
			t.Fatalf("DecodeSubscription(%x): no error", bad)
		}
	}
}

func TestAssignmentCodec(t *testing.T) {
	b := EncodeAssignment(parts("u:1 t:0 u:0"), nil)
	if exp := "0003" + "00000002" + "0001" + "74" + "00000001" + "00000000" + "0001" + "75" + "00000002" + "00000000" + "00000001" + "ffffffff"; hex.EncodeToString(b) != exp {
		t.Fatalf("bytes\n got %x\nwant %s", b, exp)
	}
	ps, ud, err := DecodeAssignment(b)
	if err != nil || ud != nil || !reflect.DeepEqual(ps, parts("t:0 u:0 u:1")) {
		t.Fatalf("decoded %v %v %v", ps, ud, err)
	}
	if ps, _, err := DecodeAssignment(EncodeAssignment(nil, nil)); err != nil || ps == nil || len(ps) != 0 {
		t.Fatalf("empty assignment: %v %v", ps, err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 3, 0, 0, 0, 1}} {
		if _, _, err := DecodeAssignment(bad); err == nil {
			t.Fatalf("DecodeAssignment(%x): no error", bad)
		}
	}
}

func TestUserData(t *testing.T) {
	if (Sticky{}).UserData(nil) != nil {
		t.Fatal("sticky user data before any assignment must be nil")
	}
	b := (Sticky{}).UserData(&Previous{parts("t:1 t:0 u:2"), 7})
	// StickyMemberMetadata v1: [topic, [partitions]]..., generation.
	if exp := "00000002" + "0001" + "74" + "00000002" + "00000000" + "00000001" + "0001" + "75" + "00000001" + "00000002" + "00000007"; hex.EncodeToString(b) != exp {
		t.Fatalf("sticky bytes\n got %x\nwant %s", b, exp)
	}
	ps, gen, err := DecodeStickyUserData(b)
	if err != nil || gen != 7 || !reflect.DeepEqual(ps, parts("t:0 t:1 u:2")) {
		t.Fatalf("sticky decoded %v %d %v", ps, gen, err)
	}
	if _, gen, err := DecodeStickyUserData(b[:len(b)-4]); err != nil || gen != DefaultGeneration { // v0
		t.Fatalf("sticky v0: %d %v", gen, err)
	}
	if _, _, err := DecodeStickyUserData([]byte{0, 0, 0, 9}); err == nil {
		t.Fatal("truncated sticky user data: no error")
	}
	if b := (CooperativeSticky{}).UserData(nil); !bytes.Equal(b, []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("cooperative user data before any assignment %x", b)
	}
	if g, err := DecodeCooperativeUserData(CooperativeSticky{}.UserData(&Previous{nil, 42})); err != nil || g != 42 {
		t.Fatalf("cooperative generation %d %v", g, err)
	}
	if _, err := DecodeCooperativeUserData([]byte{1}); err == nil {
		t.Fatal("short cooperative user data: no error")
	}
	// A v1 subscription (no generation field) falls back to the generation in the user data.
	if md := cooperativeMemberData(&Subscription{UserData: EncodeCooperativeUserData(9), Generation: -1}); md.generation != 9 {
		t.Fatalf("generation from user data %d", md.generation)
	}
}

// benchGroup is members × partitions on one topic; with owned, each member owns what a first
// round gave it and one member (the last) is gone.
func benchGroup(members, partitions int, owned Assignor) (map[string]int32, []Subscription) {
	topics := map[string]int32{"t": int32(partitions)}
	subs := make([]Subscription, members)
	for i := range subs {
		subs[i] = sub(fmt.Sprintf("consumer-bench-%d-%08x", i, uint32(i)*2654435761), "t")
	}
	if owned == nil {
		return topics, subs
	}
	first := owned.Assign(topics, subs)
	subs = subs[:members-1]
	for i := range subs {
		ps := first[subs[i].MemberID]
		subs[i].Generation = 1
		subs[i].OwnedPartitions = ps
		subs[i].UserData = owned.UserData(&Previous{ps, 1})
	}
	return topics, subs
}

func benchmarkAssign(b *testing.B, a Assignor, withOwned bool) {
	var prev Assignor
	if withOwned {
		prev = a
	}
	topics, subs := benchGroup(10000, 10000, prev)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got := a.Assign(topics, subs)
		if len(got) != len(subs) {
			b.Fatalf("%d entries", len(got))
		}
	}
}

// 10,000 members × 10,000 partitions (go test -bench . -run ^$ ./newconsumer/assignor/).
func BenchmarkRange10kx10k(b *testing.B)      { benchmarkAssign(b, Range{}, false) }
func BenchmarkRoundRobin10kx10k(b *testing.B) { benchmarkAssign(b, RoundRobin{}, false) }
func BenchmarkSticky10kx10k(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchmarkAssign(b, Sticky{}, false) })
	b.Run("member-left", func(b *testing.B) { benchmarkAssign(b, Sticky{}, true) })
}
func BenchmarkCooperativeSticky10kx10k(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchmarkAssign(b, CooperativeSticky{}, false) })
	b.Run("member-left", func(b *testing.B) { benchmarkAssign(b, CooperativeSticky{}, true) })
}
