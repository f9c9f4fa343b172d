package newconsumer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// Mixed groups: this package's consumer in one group with real clients of other authors (franz-go's
// kgo, librdkafka through kcat), against the real broker and coordinator the lab starts. Every
// client reports what it owns from its own side (Assignment, kgo's partition callbacks, the
// partitions kcat delivers and prints), and the coordinator's DescribeGroups must agree; messages
// produced once the group is Stable are each consumed exactly once, by their partition's owner.

const mixedTopic, mixedPartitions, mixedPerPartition = "mixed", 6, 10

// tally counts what every client delivered: values ("<partition>-<i>") and the partitions each
// client delivered from.
type tally struct {
	mu     sync.Mutex
	values map[string]map[string]int // client -> value -> times
	parts  map[string]map[int32]int  // client -> partition -> records
	bad    []string                  // records whose value does not match their partition
}

func newTally() *tally {
	return &tally{values: map[string]map[string]int{}, parts: map[string]map[int32]int{}}
}

func (t *tally) add(client string, partition int32, value string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.values[client] == nil {
		t.values[client], t.parts[client] = map[string]int{}, map[int32]int{}
	}
	t.values[client][value]++
	t.parts[client][partition]++
	if !strings.HasPrefix(value, fmt.Sprintf("%d-", partition)) {
		t.bad = append(t.bad, fmt.Sprintf("%s got %q from partition %d", client, value, partition))
	}
}

func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, vs := range t.values {
		for _, c := range vs {
			n += c
		}
	}
	return n
}

// summary is what each client delivered, per partition.
func (t *tally) summary() map[string]map[int32]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]map[int32]int{}
	for c, ps := range t.parts {
		out[c] = map[int32]int{}
		for p, n := range ps {
			out[c][p] = n
		}
	}
	return out
}

// check: every produced value delivered exactly once across the group, each by the client that
// owns its partition (owners: client -> partitions), and every owner delivered from exactly the
// partitions it owns.
func (t *tally) check(tb testing.TB, owners map[string][]int32) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.bad) > 0 {
		tb.Fatalf("records in the wrong partition: %v", t.bad)
	}
	owner := map[int32]string{}
	for c, ps := range owners {
		for _, p := range ps {
			owner[p] = c
		}
	}
	seen := map[string]int{}
	for c, vs := range t.values {
		for v, n := range vs {
			seen[v] += n
			var p int32
			fmt.Sscanf(v, "%d-", &p)
			if owner[p] != c {
				tb.Errorf("%s delivered %s, but partition %d is owned by %s", c, v, p, owner[p])
			}
		}
	}
	for p := int32(0); p < mixedPartitions; p++ {
		for i := 0; i < mixedPerPartition; i++ {
			if v := fmt.Sprintf("%d-%d", p, i); seen[v] != 1 {
				tb.Errorf("%s consumed %d times across the group, want exactly once", v, seen[v])
			}
		}
	}
	if len(seen) != mixedPartitions*mixedPerPartition {
		tb.Errorf("%d distinct values consumed, want %d", len(seen), mixedPartitions*mixedPerPartition)
	}
	for c, ps := range owners {
		var got []int32
		for p := range t.parts[c] {
			got = append(got, p)
		}
		sortInt32(got)
		if !reflect.DeepEqual(got, ps) && !(len(got) == 0 && len(ps) == 0) {
			tb.Errorf("%s delivered from partitions %v, owns %v", c, got, ps)
		}
	}
}

func sortInt32(ps []int32) { sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] }) }

// ncRunner is a newconsumer polling on its own goroutine, feeding a tally.
type ncRunner struct {
	name string
	c    *Consumer
	stop chan struct{}
	done chan struct{}
}

func runNewconsumer(t *testing.T, name, bootstrap, group, assignor string, tl *tally) *ncRunner {
	t.Helper()
	cfg, err := FromProperties(map[string]string{"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
		"session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "auto.offset.reset": "earliest",
		"partition.assignment.strategy": assignor})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = quietLog()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(mixedTopic); err != nil {
		t.Fatal(err)
	}
	r := &ncRunner{name: name, c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			recs, err := c.Poll(ctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: Poll: %v", name, err)
				return
			}
			for _, rec := range recs {
				tl.add(name, rec.Partition, string(rec.Value))
			}
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *ncRunner) close() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.c.Close(ctx)
}

// stableView is the newconsumer's own view once it is Stable with no rebalance pending: its member
// id and partitions (ok=false while it is rebalancing).
func (r *ncRunner) stableView() (string, []int32, bool) {
	c := r.c
	c.mu.Lock()
	ok := c.m.state == stable && !c.m.rejoinNeeded && c.join == nil && c.m.gen.id > 0
	c.mu.Unlock()
	if !ok {
		return "", nil, false
	}
	var ps []int32
	for _, tp := range c.Assignment() {
		ps = append(ps, tp.Partition)
	}
	return c.MemberID(), ps, true
}

// kgoRunner is a franz-go group consumer; owned follows its own partition callbacks.
type kgoRunner struct {
	name   string
	cl     *kgo.Client
	mu     sync.Mutex
	owned  map[int32]bool
	calls  []string
	cancel context.CancelFunc
	done   chan struct{}
}

func runKgo(t *testing.T, name, bootstrap, group string, tl *tally, opts ...kgo.Opt) *kgoRunner {
	t.Helper()
	r := &kgoRunner{name: name, owned: map[int32]bool{}, done: make(chan struct{})}
	update := func(kind string, add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls = append(r.calls, fmt.Sprint(kind, " ", m[mixedTopic]))
			for _, p := range m[mixedTopic] {
				if add {
					r.owned[p] = true
				} else {
					delete(r.owned, p)
				}
			}
		}
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID(name), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(mixedTopic), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(500 * time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(update("assigned", true)), kgo.OnPartitionsRevoked(update("revoked", false)),
		kgo.OnPartitionsLost(update("lost", false))}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	r.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { tl.add(name, rec.Partition, string(rec.Value)) })
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *kgoRunner) close() {
	r.cancel()
	<-r.done
	r.cl.Close() // LeaveGroup
}

func (r *kgoRunner) view() (string, []int32) {
	id, _ := r.cl.GroupMetadata()
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []int32
	for p := range r.owned {
		ps = append(ps, p)
	}
	sortInt32(ps)
	return id, ps
}

// kcatRunner is kcat's high-level balanced consumer (librdkafka, `kcat -G`) as a subprocess; it
// prints "<partition> <offset> <value>" per message and, on stderr, each assignment it receives.
type kcatRunner struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{} // stdout drained
	exited chan struct{}
}

func runKcat(t *testing.T, name, bootstrap, group string, tl *tally, props ...string) *kcatRunner {
	t.Helper()
	args := []string{"-u", "-b", bootstrap, "-G", group, mixedTopic, "-o", "beginning", "-f", `%p %o %s\n`,
		"-X", "client.id=" + name, "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500"}
	for _, p := range props {
		args = append(args, "-X", p)
	}
	r := &kcatRunner{name: name, cmd: exec.Command("kcat", args...), done: make(chan struct{}), exited: make(chan struct{})}
	r.cmd.Stderr = lockedWriter{&r.mu, &r.stderr}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("kcat: %v", err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			p, err := strconv.Atoi(f[0])
			if len(f) != 3 || err != nil {
				t.Errorf("kcat printed %q", sc.Text())
				continue
			}
			tl.add(name, int32(p), f[2])
		}
	}()
	go func() {
		<-r.done
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(r.close)
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// close stops kcat with SIGTERM (it closes its consumer: LeaveGroup), SIGKILL after 15 s.
func (r *kcatRunner) close() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// kcatAssigned matches the line kcat writes to stderr when librdkafka hands it an assignment
// ("% Group g rebalanced (memberid M): assigned: mixed [0], mixed [1]").
var kcatAssigned = regexp.MustCompile(`rebalanced \(memberid ([^)]*)\): assigned: ([^\n]*)`)

// view is kcat's last printed assignment: its member id and partitions (ok=false before any).
func (r *kcatRunner) view() (string, []int32, bool) {
	r.mu.Lock()
	all := kcatAssigned.FindAllStringSubmatch(r.stderr.String(), -1)
	r.mu.Unlock()
	if len(all) == 0 {
		return "", nil, false
	}
	last := all[len(all)-1]
	var ps []int32
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(mixedTopic)+` \[(\d+)\]`).FindAllStringSubmatch(last[2], -1) {
		p, _ := strconv.Atoi(m[1])
		ps = append(ps, int32(p))
	}
	sortInt32(ps)
	return last[1], ps, true
}

func (r *kcatRunner) stderrText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// describedMember is DescribeGroups' view: state, protocol, and member id -> (client id,
// partitions of the topic, decoded from the member's consumer-protocol assignment).
type describedMember struct {
	clientID string
	parts    []int32
}

func describeGroup(t *testing.T, adm *kadm.Client, group string) (kadm.DescribedGroup, map[string]describedMember) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, nil
	}
	d := ds[group]
	ms := map[string]describedMember{}
	for _, m := range d.Members {
		dm := describedMember{clientID: m.ClientID}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == mixedTopic {
					dm.parts = append(dm.parts, tp.Partitions...)
				}
			}
		}
		sortInt32(dm.parts)
		ms[m.MemberID] = dm
	}
	return d, ms
}

// coversOnce reports whether the members' partitions cover 0..n-1 exactly once.
func coversOnce(ms map[string]describedMember, n int32) bool {
	seen := map[int32]int{}
	for _, m := range ms {
		for _, p := range m.parts {
			seen[p]++
		}
	}
	if len(seen) != int(n) {
		return false
	}
	for p, c := range seen {
		if c != 1 || p < 0 || p >= n {
			return false
		}
	}
	return true
}

func produceMixed(t *testing.T, bootstrap string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := int32(0); p < mixedPartitions; p++ {
		for i := 0; i < mixedPerPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: mixedTopic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func newAdmin(t *testing.T, bootstrap string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestInteropMixedGroupRange: a newconsumer, a franz-go consumer (RangeBalancer) and kcat's
// librdkafka balanced consumer (partition.assignment.strategy=range) in one group on 6 partitions.
// Whichever of the three leads, the result is Kafka's RangeAssignor over the sorted member ids
// (2 consecutive partitions each); each client's own view equals the coordinator's DescribeGroups;
// the 60 messages produced once the group is Stable are consumed exactly once, each by its
// partition's owner, and every client delivers from exactly the partitions it owns.
func TestInteropMixedGroupRange(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kcat)
	bootstrap := startCluster(t, mixedTopic, mixedPartitions, 0, 0)
	adm := newAdmin(t, bootstrap)
	tl := newTally()
	nc := runNewconsumer(t, "nc", bootstrap, "mixed-range", "range", tl)
	kg := runKgo(t, "kgo", bootstrap, "mixed-range", tl, kgo.Balancers(kgo.RangeBalancer()))
	kc := runKcat(t, "kcat", bootstrap, "mixed-range", tl, "partition.assignment.strategy=range")

	var d kadm.DescribedGroup
	var ms map[string]describedMember
	var owners map[string][]int32
	testutil.WaitFor(t, 60*time.Second, "a Stable group of 3 where every client's view matches DescribeGroups", func() bool {
		d, ms = describeGroup(t, adm, "mixed-range")
		if d.State != "Stable" || d.Protocol != "range" || len(ms) != 3 || !coversOnce(ms, mixedPartitions) {
			return false
		}
		ncID, ncParts, ok1 := nc.stableView()
		kgID, kgParts := kg.view()
		kcID, kcParts, ok3 := kc.view()
		owners = map[string][]int32{"nc": ncParts, "kgo": kgParts, "kcat": kcParts}
		return ok1 && ok3 &&
			ms[ncID].clientID == "nc" && reflect.DeepEqual(ms[ncID].parts, ncParts) &&
			ms[kgID].clientID == "kgo" && reflect.DeepEqual(ms[kgID].parts, kgParts) &&
			ms[kcID].clientID == "kcat" && reflect.DeepEqual(ms[kcID].parts, kcParts)
	})
	// RangeAssignor: partitions 0-5 in consecutive pairs over the member ids in sorted order.
	var ids []string
	for id := range ms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		if want := []int32{int32(2 * i), int32(2*i + 1)}; !reflect.DeepEqual(ms[id].parts, want) {
			t.Fatalf("member %d by id (%s, %s) owns %v, want %v (RangeAssignor)", i, id, ms[id].clientID, ms[id].parts, want)
		}
	}
	gen := nc.c.Generation()
	t.Logf("generation %d: %v", gen, owners)

	produceMixed(t, bootstrap)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("delivered: %v\nkcat stderr:\n%s", tl.summary(), kc.stderrText())
		}
	})
	testutil.WaitFor(t, 60*time.Second, "all 60 messages consumed", func() bool { return tl.total() >= mixedPartitions*mixedPerPartition })
	tl.check(t, owners)
	// No rebalance happened meanwhile: same generation, same members, same assignment.
	if _, after := describeGroup(t, adm, "mixed-range"); !reflect.DeepEqual(after, ms) || nc.c.Generation() != gen {
		t.Fatalf("the group changed while consuming: %v (generation %d) -> %v (generation %d)", ms, gen, after, nc.c.Generation())
	}
}

// TestInteropMixedGroupCooperativeSticky: two newconsumers (cooperative-sticky) and a franz-go
// consumer with its default balancer (cooperative-sticky) in one group on 6 partitions: the
// coordinator selects cooperative-sticky, each member ends with 2 partitions, each client's view
// (Assignment, kgo's assigned/revoked callbacks) equals DescribeGroups, the views cover every
// partition once, and the 60 messages produced once the group is Stable are consumed exactly once,
// each by its partition's owner.
func TestInteropMixedGroupCooperativeSticky(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kcat)
	bootstrap := startCluster(t, mixedTopic, mixedPartitions, 0, 0)
	adm := newAdmin(t, bootstrap)
	tl := newTally()
	nc1 := runNewconsumer(t, "nc1", bootstrap, "mixed-coop", "cooperative-sticky", tl)
	kg := runKgo(t, "kgo", bootstrap, "mixed-coop", tl)
	nc2 := runNewconsumer(t, "nc2", bootstrap, "mixed-coop", "cooperative-sticky", tl)

	var ms map[string]describedMember
	var owners map[string][]int32
	testutil.WaitFor(t, 60*time.Second, "a Stable group of 3 with 2 partitions each, every view matching DescribeGroups", func() bool {
		var d kadm.DescribedGroup
		d, ms = describeGroup(t, adm, "mixed-coop")
		if d.State != "Stable" || d.Protocol != "cooperative-sticky" || len(ms) != 3 || !coversOnce(ms, mixedPartitions) {
			return false
		}
		id1, p1, ok1 := nc1.stableView()
		id2, p2, ok2 := nc2.stableView()
		idk, pk := kg.view()
		owners = map[string][]int32{"nc1": p1, "nc2": p2, "kgo": pk}
		for _, ps := range owners {
			if len(ps) != 2 {
				return false
			}
		}
		return ok1 && ok2 &&
			ms[id1].clientID == "nc1" && reflect.DeepEqual(ms[id1].parts, p1) &&
			ms[id2].clientID == "nc2" && reflect.DeepEqual(ms[id2].parts, p2) &&
			ms[idk].clientID == "kgo" && reflect.DeepEqual(ms[idk].parts, pk)
	})
	gen := nc1.c.Generation()
	t.Logf("generation %d: %v", gen, owners)
	produceMixed(t, bootstrap)
	testutil.WaitFor(t, 60*time.Second, "all 60 messages consumed", func() bool { return tl.total() >= mixedPartitions*mixedPerPartition })
	tl.check(t, owners)
	if _, after := describeGroup(t, adm, "mixed-coop"); !reflect.DeepEqual(after, ms) || nc1.c.Generation() != gen {
		t.Fatalf("the group changed while consuming: %v (generation %d) -> %v (generation %d)", ms, gen, after, nc1.c.Generation())
	}
	kg.mu.Lock()
	calls := append([]string(nil), kg.calls...)
	kg.mu.Unlock()
	for _, c := range calls {
		if strings.HasPrefix(c, "lost") {
			t.Fatalf("kgo lost partitions with no member failing: %v", calls)
		}
	}
}
