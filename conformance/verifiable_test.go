package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// vEvent is one JSON line of VerifiableProducer or VerifiableConsumer (Kafka 3.9).
type vEvent struct {
	Name       string `json:"name"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	Count      int64  `json:"count"`
	Success    bool   `json:"success"`
	Error      string `json:"error"`
	Partitions []struct {
		Partition int32 `json:"partition"`
		Count     int64 `json:"count"`
		MinOffset int64 `json:"minOffset"`
		MaxOffset int64 `json:"maxOffset"`
	} `json:"partitions"`
	Offsets []struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Error     string `json:"error"`
	} `json:"offsets"`
}

// vMember is one VerifiableConsumer process and its state as kafkatest's ConsumerEventHandler keeps
// it (services/verifiable_consumer.py): assignment, position, joined.
type vMember struct {
	name       string
	cmd        *exec.Cmd
	done       chan struct{}
	joined     bool
	dead       bool
	assignment map[int32]bool
	position   map[int32]int64
}

// vCheck applies the system tests' invariants to the events of every member, in arrival order
// (one lock, as the Python service's).
type vCheck struct {
	mu         sync.Mutex
	violations []string
	members    []*vMember
	acked      map[int32]map[int64]bool
	sendErrors int
	consumed   map[int32]map[int64]bool
	total      int64
	globalPos  map[int32]int64 // VerifiableConsumer.global_position
	globalComm map[int32]int64 // global_committed
	commits    int
	rebalances int
}

func (c *vCheck) violate(format string, a ...any) {
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, a...))
	}
}

func (c *vCheck) producerEvent(e vEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Name {
	case "producer_send_success":
		if c.acked[e.Partition] == nil {
			c.acked[e.Partition] = map[int64]bool{}
		}
		c.acked[e.Partition][e.Offset] = true
	case "producer_send_error":
		c.sendErrors++
	}
}

func (c *vCheck) memberEvent(m *vMember, e vEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Name {
	case "partitions_revoked":
		m.joined, m.position = false, map[int32]int64{}
	case "partitions_assigned":
		c.rebalances++
		m.joined, m.assignment = true, map[int32]bool{}
		for _, p := range e.Partitions {
			m.assignment[p.Partition] = true
		}
	case "records_consumed":
		if !m.joined {
			c.violate("%s: consumed while not joined", m.name)
		}
		c.total += e.Count
		for _, p := range e.Partitions {
			if !m.assignment[p.Partition] {
				c.violate("%s: consumed p%d, not in its assignment %v", m.name, p.Partition, m.assignment)
			}
			if pos, ok := m.position[p.Partition]; ok && pos != p.MinOffset {
				c.violate("%s: consumed p%d from %d, position %d (not contiguous)", m.name, p.Partition, p.MinOffset, pos)
			}
			m.position[p.Partition] = p.MaxOffset + 1
			if comm, ok := c.globalComm[p.Partition]; ok && comm > p.MinOffset {
				c.violate("%s: consumed p%d from %d, behind the committed offset %d", m.name, p.Partition, p.MinOffset, comm)
			}
			c.globalPos[p.Partition] = p.MaxOffset + 1
			if c.consumed[p.Partition] == nil {
				c.consumed[p.Partition] = map[int64]bool{}
			}
			for o := p.MinOffset; o <= p.MaxOffset; o++ {
				c.consumed[p.Partition][o] = true
			}
		}
	case "offsets_committed":
		if !e.Success {
			return
		}
		for _, o := range e.Offsets {
			if o.Error != "" {
				continue
			}
			c.commits++
			if !m.assignment[o.Partition] {
				c.violate("%s: committed p%d, not in its assignment %v", m.name, o.Partition, m.assignment)
			}
			if pos, ok := m.position[o.Partition]; !ok || pos < o.Offset {
				c.violate("%s: committed p%d at %d, ahead of its position %d (known %v)", m.name, o.Partition, o.Offset, pos, ok)
			}
			if c.globalPos[o.Partition] < o.Offset {
				c.violate("%s: committed p%d at %d, ahead of the group's position %d", m.name, o.Partition, o.Offset, c.globalPos[o.Partition])
			}
			c.globalComm[o.Partition] = o.Offset
		}
	case "shutdown_complete":
		m.joined, m.dead = false, true
	}
}

// stable: n live members, each joined, owning every one of the partitions exactly once.
func (c *vCheck) stable(n, partitions int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	owners := map[int32]int{}
	live := 0
	for _, m := range c.members {
		if m.dead {
			continue
		}
		live++
		if !m.joined {
			return false
		}
		for p := range m.assignment {
			owners[p]++
		}
	}
	if live != n || len(owners) != partitions {
		return false
	}
	for _, k := range owners {
		if k != 1 {
			return false
		}
	}
	return true
}

// missing counts acked records not consumed.
func (c *vCheck) missing() (missing, acked int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, offs := range c.acked {
		for o := range offs {
			acked++
			if !c.consumed[p][o] {
				missing++
			}
		}
	}
	return missing, acked
}

// startJava starts a tool JVM whose JSON lines go to handle; done closes once it exited and its
// output is read.
func startJava(t *testing.T, handle func(vEvent), args ...string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("java", javaArgs(append([]string{"-Dlog4j.configuration=file:testdata/log4j.properties"}, args...)...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e vEvent
			if b := sc.Bytes(); len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &e) == nil {
				handle(e)
			}
		}
		_ = cmd.Wait()
		if s := stderr.String(); strings.Contains(s, "Exception") {
			t.Logf("%s stderr:\n%s", args[0], s)
		}
	}()
	return cmd, done
}

// TestVerifiableProducerConsumer runs Kafka 3.9's VerifiableProducer (acks=all) into a 3-partition
// topic on this broker and a group of 3 VerifiableConsumers (classic protocol, range, manual commits
// after every poll, as consumer_test.py's), bounces every member once in turn — cleanly with SIGTERM,
// then in a second group with kill -9 — and checks consumer_test.py's invariants from the tools'
// JSON events: every acked record consumed, records consumed only from assigned partitions, offsets
// contiguous within an assignment, never consumed behind the group's last commit, no commit ahead of
// the position; then, clean: the committed positions equal the records consumed (no duplicates);
// hard: the positions are at most the records consumed.
func TestVerifiableProducerConsumer(t *testing.T) {
	needPair(t)
	for _, mode := range []string{"clean", "hard"} {
		t.Run(mode, func(t *testing.T) { runVerifiable(t, mode) })
	}
}

func runVerifiable(t *testing.T, mode string) {
	const partitions = 3
	topic, group := "vt-"+mode, "vg-"+mode
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(ours.Bootstrap(), ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	c := &vCheck{acked: map[int32]map[int64]bool{}, consumed: map[int32]map[int64]bool{}, globalPos: map[int32]int64{}, globalComm: map[int32]int64{}}
	var all []chan struct{}
	defer func() { // every JVM ends with the test
		c.mu.Lock()
		ms := append([]*vMember(nil), c.members...)
		c.mu.Unlock()
		for _, m := range ms {
			_ = m.cmd.Process.Kill()
		}
		for _, d := range all {
			<-d
		}
	}()
	start := func(i int) *vMember {
		m := &vMember{name: fmt.Sprintf("c%d.%d", i, len(c.members)), assignment: map[int32]bool{}, position: map[int32]int64{}}
		m.cmd, m.done = startJava(t, func(e vEvent) { c.memberEvent(m, e) }, "org.apache.kafka.tools.VerifiableConsumer",
			"--bootstrap-server", ours.Bootstrap(), "--topic", topic, "--group-id", group, "--group-protocol", "classic",
			"--session-timeout", "6000", "--reset-policy", "earliest", "--consumer.config", "testdata/member.properties")
		all = append(all, m.done)
		c.mu.Lock()
		c.members = append(c.members, m)
		c.mu.Unlock()
		return m
	}
	prod, prodDone := startJava(t, c.producerEvent, "org.apache.kafka.tools.VerifiableProducer",
		"--bootstrap-server", ours.Bootstrap(), "--topic", topic, "--acks", "-1", "--throughput", "300")
	all = append(all, prodDone)
	members := []*vMember{start(0), start(1), start(2)}
	testutil.WaitFor(t, 60*time.Second, "3 members own the 3 partitions", func() bool { return c.stable(3, partitions) })
	for i := range members {
		if mode == "clean" {
			_ = members[i].cmd.Process.Signal(syscall.SIGTERM)
		} else {
			_ = members[i].cmd.Process.Kill()
		}
		<-members[i].done
		c.mu.Lock()
		members[i].dead, members[i].joined = true, false // a killed member writes no shutdown_complete
		c.mu.Unlock()
		members[i] = start(i)
		testutil.WaitFor(t, 60*time.Second, fmt.Sprintf("the group stable after %s's bounce", members[i].name), func() bool { return c.stable(3, partitions) })
	}
	_ = prod.Process.Signal(syscall.SIGTERM) // the producer closes, flushing its sends
	<-prodDone
	testutil.WaitFor(t, 60*time.Second, "every acked record consumed", func() bool { m, _ := c.missing(); return m == 0 })
	for _, m := range members {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, m := range members {
		<-m.done
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.violations {
		t.Error(v)
	}
	var positions int64
	for p := int32(0); p < partitions; p++ {
		positions += c.globalPos[p]
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	var detail []string
	for p := int32(0); p < partitions; p++ {
		o, _ := fetched.Lookup(topic, p)
		committed += o.At
		detail = append(detail, fmt.Sprintf("p%d committed %d position %d", p, o.At, c.globalPos[p]))
		if o.At > c.globalPos[p] {
			t.Errorf("p%d: committed %d ahead of the position %d", p, o.At, c.globalPos[p])
		}
		if mode == "clean" && o.At != c.globalPos[p] {
			t.Errorf("clean: p%d committed %d, position %d", p, o.At, c.globalPos[p])
		}
	}
	sort.Strings(detail)
	acked := 0
	for _, offs := range c.acked {
		acked += len(offs)
	}
	if acked == 0 || c.sendErrors != 0 {
		t.Errorf("producer: %d acked, %d send errors", acked, c.sendErrors)
	}
	if mode == "clean" && (positions != c.total || committed != c.total) {
		t.Errorf("clean bounce: consumed %d, positions %d, committed %d: want all equal (no duplicates)", c.total, positions, committed)
	}
	if mode == "hard" && positions > c.total {
		t.Errorf("hard bounce: positions %d > consumed %d", positions, c.total)
	}
	t.Logf("%s: %d acked, %d consumed (%d duplicates), positions %d, committed %d (%s), %d commits, %d assignments, %d member processes",
		mode, acked, c.total, c.total-positions, positions, committed, strings.Join(detail, ", "), c.commits, c.rebalances, len(c.members))
}
