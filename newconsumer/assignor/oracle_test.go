package assignor

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// oracleCase is one case of testdata/java39-*.txt: an input and the assignment Kafka 3.9's own
// assignor classes computed for it (see testdata/README.md).
type oracleCase struct {
	line       int
	assignor   string
	partitions map[string]int32
	subs       []Subscription
	want       map[string][]TopicPartition
	javaThrew  string // the exception Kafka 3.9 threw instead of returning an assignment
}

func parsePartitions(s string) ([]TopicPartition, error) {
	if s == "-" {
		return nil, nil
	}
	var out []TopicPartition
	for _, f := range strings.Split(s, ",") {
		t, p, ok := strings.Cut(f, ":")
		n, err := strconv.Atoi(p)
		if !ok || err != nil {
			return nil, fmt.Errorf("bad partition %q", f)
		}
		out = append(out, TopicPartition{t, int32(n)})
	}
	return out, nil
}

func readOracleCases(t *testing.T, path string) []oracleCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []oracleCase
	var c *oracleCase
	inResult := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 0:
		case fs[0] == "assignor":
			cases = append(cases, oracleCase{line: n, assignor: fs[1], partitions: map[string]int32{}, want: map[string][]TopicPartition{}})
			c, inResult = &cases[len(cases)-1], false
		case fs[0] == "topic":
			np, _ := strconv.Atoi(fs[2])
			c.partitions[fs[1]] = int32(np)
		case fs[0] == "member":
			gen, _ := strconv.Atoi(fs[3])
			owned, err := parsePartitions(fs[5])
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			s := Subscription{MemberID: fs[1], Topics: strings.Split(fs[4], ","), Generation: int32(gen)}
			if fs[2] != "-" {
				s.InstanceID = fs[2]
			}
			switch c.assignor {
			case StickyName: // eager: the previous assignment travels in the user data
				s.UserData = EncodeStickyUserData(owned, int32(gen))
			case CooperativeStickyName:
				s.OwnedPartitions = owned
			}
			c.subs = append(c.subs, s)
		case fs[0] == "end":
			inResult = true
		case fs[0] == "--":
			c = nil
		case inResult && fs[0] == "EXCEPTION":
			c.javaThrew = strings.Join(fs[1:], " ")
		case inResult:
			var ps []TopicPartition
			for _, f := range fs[1:] {
				p, err := parsePartitions(f)
				if err != nil {
					t.Fatalf("%s:%d: %v", path, n, err)
				}
				ps = append(ps, p...)
			}
			if ps == nil {
				ps = []TopicPartition{}
			}
			c.want[fs[0]] = ps
		default:
			t.Fatalf("%s:%d: unexpected line %q", path, n, sc.Text())
		}
	}
	return cases
}

// javaFault names what is wrong with Java's result by this package's rules, or "" if nothing:
// a partition of a topic the member does not subscribe to (the general sticky builder hands a
// partition back to its previous owner without checking), or, for cooperative-sticky, a partition
// handed to a member while another one validly owns it, or while two claim it in one generation.
func javaFault(c oracleCase, got map[string][]TopicPartition) string {
	if got == nil {
		return "threw " + c.javaThrew
	}
	topics := map[string]map[string]bool{}
	for _, s := range c.subs {
		topics[s.MemberID] = map[string]bool{}
		for _, t := range s.Topics {
			topics[s.MemberID][t] = true
		}
	}
	for m, ps := range got {
		for _, tp := range ps {
			if !topics[m][tp.Topic] {
				return fmt.Sprintf("%s gets %s, a topic it does not subscribe to", m, tp)
			}
		}
	}
	if c.assignor != CooperativeStickyName {
		return ""
	}
	g := newGroup(c.partitions, c.subs)
	data := map[string]memberData{}
	for _, m := range g.members {
		data[m.MemberID] = cooperativeMemberData(m)
	}
	o := resolveOwnership(g, data)
	for m, ps := range got {
		for _, tp := range ps {
			if o.multi[tp] {
				return fmt.Sprintf("%s gets %s, claimed by two members in one generation", m, tp)
			}
			if owner, ok := o.owner[tp]; ok && owner != m {
				return fmt.Sprintf("%s gets %s while %s still owns it", m, tp, owner)
			}
		}
	}
	return ""
}

// runOracle checks every case against Kafka 3.9's result: equal where that result is valid; where
// it is not (javaFault), ours must be valid. Every result must pass checkAssignment. It returns the
// number of cases and of cases where Java's result is faulty.
func runOracle(t *testing.T, path string) (cases, faults int) {
	all := readOracleCases(t, path)
	for _, c := range all {
		a, err := New(c.assignor)
		if err != nil {
			t.Fatal(err)
		}
		got := a.Assign(c.partitions, c.subs)
		if err := checkAssignment(c.assignor, c.partitions, c.subs, got); err != nil {
			t.Errorf("%s:%d %s: %v\n got %v", path, c.line, c.assignor, err, got)
		}
		want := c.want
		if c.javaThrew != "" {
			want = nil
		}
		if f := javaFault(c, want); f != "" {
			faults++
			if g := javaFault(c, got); g != "" {
				t.Errorf("%s:%d %s: Java 3.9 is wrong here (%s) and so is ours: %s\n got %v", path, c.line, c.assignor, f, g, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:%d %s:\n got %v\nwant %v", path, c.line, c.assignor, got, c.want)
		}
	}
	t.Logf("%s: %d cases, %d where Java 3.9's result breaks a rule", path, len(all), faults)
	return len(all), faults
}

// TestJava39Cases: random inputs without conflicting claims (range, roundrobin, sticky,
// cooperative-sticky; 1-20 members, 1-4 topics, static members for range/roundrobin).
func TestJava39Cases(t *testing.T) {
	n, faults := runOracle(t, "testdata/java39-cases.txt")
	if n != 500 || faults > 25 {
		t.Fatalf("%d cases (want 500), %d with a faulty Java result (want at most 25)", n, faults)
	}
}

// TestJava39ConflictCases: the same with two members claiming some partitions, in the same or in
// different generations.
func TestJava39ConflictCases(t *testing.T) {
	n, faults := runOracle(t, "testdata/java39-conflict-cases.txt")
	if n != 500 || faults > 40 {
		t.Fatalf("%d cases (want 500), %d with a faulty Java result (want at most 40)", n, faults)
	}
}

// TestJava39FaultCases: cases where Kafka 3.9 assigns an unsubscribed topic, double-assigns in a
// cooperative round, or throws (NullPointerException in GeneralAssignmentBuilder.performReassignments).
func TestJava39FaultCases(t *testing.T) {
	n, faults := runOracle(t, "testdata/java39-fault-cases.txt")
	if n != faults || n < 30 {
		t.Fatalf("%d cases, %d with a faulty Java result: every case must be one", n, faults)
	}
}
