package lab

// Acceptance tests of replication (replication factor > 1, ISR, leader failover, coordinator
// failover), written before the feature: today the broker refuses replication factor > 1, so each
// test fails where a replicated topic is created (INVALID_REPLICATION_FACTOR "... implements
// replication factor 1 only") or, for __consumer_offsets, where FindCoordinator keeps answering
// COORDINATOR_NOT_AVAILABLE. They pass once replication works as Kafka 3.9's does.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	gometrics "github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/newconsumer"
)

// TestReplicationCoordinatorNotAvailableUntilEnoughBrokers: a one-broker lab whose
// offsets.topic.replication.factor is 3 cannot create __consumer_offsets (KIP-115: the factor is
// enforced strictly), so FindCoordinator answers COORDINATOR_NOT_AVAILABLE; once two more brokers
// join, a group member gets an assignment and __consumer_offsets has 3 replicas per partition, all in
// the ISR.
//
// Issue 15 must-show: offsets.topic.replication.factor is honoured (no group coordinator until enough
// brokers; then __consumer_offsets replicated 3 ways with a full ISR).
func TestReplicationCoordinatorNotAvailableUntilEnoughBrokers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := startReplicatedLab(t, 1, map[string]string{"offsets.topic.replication.factor": "3"})
	if got := l.Brokers()[0].Properties()["offsets.topic.replication.factor"]; got != "3" {
		t.Fatalf("broker 1 offsets.topic.replication.factor = %q, want 3 (Options.BrokerConfig over the lab's)", got)
	}
	cl := newClient(t, l, nil)
	adm := kadm.NewClient(cl)
	createReplicatedTopic(t, cl, "t", 3, 1, nil, nil) // replication factor 1: the one broker hosts it

	var code int16
	var lastErr error
	testutil.WaitFor(t, 20*time.Second, "a FindCoordinator answer from broker 1", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		code, _, lastErr = findCoordinator(ctx, cl, 1, "g")
		return lastErr == nil
	})
	if code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator(g) with 1 broker and offsets.topic.replication.factor 3: %v (code %d), want COORDINATOR_NOT_AVAILABLE (15)",
			kerr.ErrorForCode(code), code)
	}

	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n, err := l.AddBroker(ctx)
		cancel()
		if err != nil {
			t.Fatalf("AddBroker: %v", err)
		}
		if got := n.Properties()["offsets.topic.replication.factor"]; got != "3" {
			t.Fatalf("added broker %d offsets.topic.replication.factor = %q, want 3", n.ID(), got)
		}
	}

	var mu sync.Mutex
	var assigned map[string][]int32
	member := newClient(t, l, nil, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			assigned = a
		}))
	pollCtx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			member.PollFetches(pollCtx)
		}
	}()
	defer func() { stopPoll(); <-polled }()
	waitFor(t, 30*time.Second, "the kgo member of g assigned t's 3 partitions once 3 brokers are up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(assigned["t"]) == 3
	}, func() string { return "FindCoordinator(g) to broker 1: " + describeFindCoordinator(cl, "g") })

	md := waitFullISR(t, adm, "__consumer_offsets", 50, 3, 60*time.Second)
	for _, p := range md.Sorted() {
		if r := slices.Sorted(slices.Values(p.Replicas)); !reflect.DeepEqual(r, []int32{1, 2, 3}) {
			t.Fatalf("__consumer_offsets-%d replicas %v, want brokers 1, 2, 3", p.Partition, p.Replicas)
		}
	}
}

// describeFindCoordinator is a fresh FindCoordinator answer (from broker 1), for failure messages.
func describeFindCoordinator(cl *kgo.Client, group string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, node, err := findCoordinator(ctx, cl, 1, group)
	if err != nil {
		return err.Error()
	}
	if code != 0 {
		return fmt.Sprintf("%v (code %d)", kerr.ErrorForCode(code), code)
	}
	return fmt.Sprintf("coordinator %d", node)
}

// ackLog records which "<producer>-<seq>" values were acknowledged (acks=all).
type ackLog struct {
	mu    sync.Mutex
	acked map[string][]int // producer -> acknowledged seqs (in acknowledgement order)
	fails map[string]int   // producer -> sends that failed (not acknowledged; may or may not be in the log)
}

func (a *ackLog) ack(producer string, seqs ...int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[producer] = append(a.acked[producer], seqs...)
}

func (a *ackLog) fail(producer string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fails[producer] += n
}

// TestReplicationAcksAllUnderKills: three producers (kgo, sarama, kcat), all with acks=all, write to a
// topic of 3 partitions, replication factor 3, min.insync.replicas 2, while a random broker is killed
// with -9 every ~3 s and restarted ~2 s later (never more than one down) for ~25 s. Afterwards every
// acknowledged record is in the log, each producer's acknowledged records in increasing seq order
// per partition (first occurrences; duplicates are allowed, at least once, and logged), and once
// the ISR is full again every replica of every partition has the same log end offset.
//
// Issue 15 must-show: acks=all + min.insync.replicas 2 loses no acknowledged record across leader
// kills (three clients: franz-go, sarama, librdkafka), and replicas converge to identical logs. Here
// kgo is idempotent (its default with acks=all), sarama and kcat are not.
func TestReplicationAcksAllUnderKills(t *testing.T) { acksAllUnderKills(t, false) }

// TestReplicationIdempotentUnderKills: the same with idempotence switched on in all three clients
// (enable.idempotence, sarama's Producer.Idempotent): exactly once — every acknowledged record is in
// the log once, and no record of any producer is there twice (the brokers rebuild each producer's
// sequence state from the log they replicate, so a retry to a new leader is recognised).
func TestReplicationIdempotentUnderKills(t *testing.T) { acksAllUnderKills(t, true) }

// acksAllUnderKills is TestReplicationAcksAllUnderKills with sarama and kcat idempotent or not (kgo
// always is); idempotent also asserts that no record is in the log twice.
func acksAllUnderKills(t *testing.T, idempotent bool) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kcat)
	const topic = "acks"
	l := startReplicatedLab(t, 3, nil)
	cl := newClient(t, l, nil)
	adm := kadm.NewClient(cl)
	createReplicatedTopic(t, cl, topic, 3, 3, nil, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, adm, topic, 3, 3, 30*time.Second)

	acks := &ackLog{acked: map[string][]int{}, fails: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}

	// kgo: one record at a time, acknowledged when ProduceSync returns nil.
	prod := newClient(t, l, nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(15*time.Second), kgo.ProduceRequestTimeout(10*time.Second))
	run(func() {
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("kgo-" + strconv.Itoa(seq))}).FirstErr()
			cancel()
			if err != nil {
				acks.fail("kgo", 1)
				continue
			}
			acks.ack("kgo", seq)
		}
	})

	// sarama: SyncProducer with WaitForAll, acknowledged when SendMessage returns nil.
	// sarama's meters start a go-metrics goroutine that never ends (goleak in TestMain would fail the
	// package): no metrics.
	gometrics.UseNilMetrics = true
	scfg := sarama.NewConfig()
	scfg.Version = sarama.V2_8_0_0
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	scfg.Producer.Return.Successes = true
	scfg.Producer.Retry.Max = 10
	scfg.Net.DialTimeout, scfg.Net.ReadTimeout, scfg.Net.WriteTimeout = 5*time.Second, 15*time.Second, 10*time.Second
	scfg.Producer.Retry.Backoff = 250 * time.Millisecond
	scfg.Producer.Timeout = 10 * time.Second
	scfg.Net.MaxOpenRequests = 1
	scfg.Producer.Idempotent = idempotent
	scfg.Metadata.Retry.Max = 20
	sp, err := sarama.NewSyncProducer(strings.Split(l.Bootstrap(), ","), scfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	run(func() {
		defer sp.Close()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("sarama-" + strconv.Itoa(seq))}); err != nil {
				acks.fail("sarama", 1)
				continue
			}
			acks.ack("sarama", seq)
		}
	})

	// kcat (librdkafka): batches of kcatBatch lines on stdin, one kcat process per batch. kcat prints no
	// per-message delivery record that names the message (at -v -v it prints "Message delivered to
	// partition P (offset O)" per delivery report, without the value, and delivery reports of
	// different partitions interleave), so a batch counts as acknowledged only as a whole: kcat exited
	// 0 AND it reported kcatBatch successful deliveries and no "Delivery failed". A batch with any
	// failure counts nothing acknowledged (its records may still be in the log: at least once).
	const kcatBatch = 20
	run(func() {
		for seq := 0; ; seq += kcatBatch {
			select {
			case <-stop:
				return
			default:
			}
			var in bytes.Buffer
			for i := seq; i < seq+kcatBatch; i++ {
				fmt.Fprintf(&in, "kcat-%d\n", i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, "kcat", "-b", l.Bootstrap(), "-P", "-t", topic, "-v", "-v",
				"-X", "acks=all", "-X", "max.in.flight.requests.per.connection=1", "-X", "message.timeout.ms=15000",
				"-X", "enable.idempotence="+strconv.FormatBool(idempotent))
			cmd.Stdin = &in
			var stderr bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, &stderr
			err := cmd.Run()
			cancel()
			delivered, failed := kcatDeliveries(stderr.String())
			if errors.Is(err, exec.ErrNotFound) {
				t.Errorf("kcat not found (prerequisite: kcat on PATH): %v", err)
				return
			}
			if err != nil || delivered != kcatBatch || failed != 0 {
				acks.fail("kcat", kcatBatch)
				continue
			}
			seqs := make([]int, kcatBatch)
			for i := range seqs {
				seqs[i] = seq + i
			}
			acks.ack("kcat", seqs...)
		}
	})

	// The fault schedule (time.After here paces the faults; it waits for no state): every ~3 s kill -9 a
	// random broker, restart it ~2 s later; one broker down at most; ~25 s in all.
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("killer seed %d", seed)
	var kills []int32
	for end := time.Now().Add(25 * time.Second); time.Now().Before(end); {
		<-time.After(time.Duration(2500+rng.Intn(1000)) * time.Millisecond)
		b := l.Brokers()[rng.Intn(3)]
		if err := b.Kill(); err != nil {
			t.Errorf("kill -9 broker %d: %v", b.ID(), err)
			break
		}
		kills = append(kills, b.ID())
		<-time.After(time.Duration(1500+rng.Intn(1000)) * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := b.Start(ctx)
		cancel()
		if err != nil {
			t.Errorf("restart broker %d: %v", b.ID(), err)
			break
		}
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("killed brokers in turn: %v", kills)
	for _, p := range []string{"kgo", "sarama", "kcat"} {
		t.Logf("%s: %d acknowledged, %d not", p, len(acks.acked[p]), acks.fails[p])
		if len(acks.acked[p]) == 0 {
			t.Errorf("%s: no record acknowledged in ~25 s with one broker of three down at most (min.insync.replicas 2)", p)
		}
	}

	for _, b := range l.Brokers() {
		startBroker(t, b) // all are running already; a no-op unless a restart failed above
	}
	md := waitFullISR(t, adm, topic, 3, 3, 60*time.Second)
	leos := assertReplicasAgree(t, l, topic, md)

	logs := consumeAll(t, l, topic, md)
	for p, leo := range leos {
		if n := int64(len(logs[p])); n == 0 || logs[p][n-1].Offset+1 != leo {
			t.Errorf("partition %d: consumed up to %v, replicas' log end offset %d", p, lastOffset(logs[p]), leo)
		}
	}
	// First occurrence of each value: partition and offset; duplicates counted.
	type at struct {
		p   int32
		off int64
	}
	first := map[string]at{}
	dups := 0
	var twice []string
	for p, recs := range logs {
		for _, r := range recs {
			v := string(r.Value)
			if f, seen := first[v]; seen {
				dups++
				twice = append(twice, fmt.Sprintf("%s at %d-%d and %d-%d", v, f.p, f.off, p, r.Offset))
				continue
			}
			first[v] = at{p, r.Offset}
		}
	}
	t.Logf("%d records in the log, %d duplicates (idempotent producers: %v)", len(first)+dups, dups, idempotent)
	if idempotent && dups > 0 {
		t.Errorf("idempotent producers wrote %d records twice (want exactly once): %v", dups, twice[:min(len(twice), 10)])
	}
	for _, prod := range []string{"kgo", "sarama", "kcat"} {
		lastByPartition := map[int32]struct {
			seq int
			off int64
		}{}
		seqs := slices.Sorted(slices.Values(acks.acked[prod]))
		for _, seq := range seqs {
			v := prod + "-" + strconv.Itoa(seq)
			a, ok := first[v]
			if !ok {
				t.Errorf("acknowledged record %q (acks=all) is not in the log", v)
				continue
			}
			if last, ok := lastByPartition[a.p]; ok && a.off <= last.off {
				t.Errorf("partition %d: %s-%d at offset %d, after %s-%d at offset %d (a producer's acknowledged records out of order)",
					a.p, prod, seq, a.off, prod, last.seq, last.off)
			}
			lastByPartition[a.p] = struct {
				seq int
				off int64
			}{seq, a.off}
		}
	}
}

// kcatDeliveries counts kcat's delivery reports at verbosity 3 (-v -v): "Message delivered to
// partition ..." and "Delivery failed for message: ...".
func kcatDeliveries(out string) (delivered, failed int) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.Contains(line, "Message delivered to partition"):
			delivered++
		case strings.Contains(line, "Delivery failed"):
			failed++
		}
	}
	return delivered, failed
}

func lastOffset(recs []*kgo.Record) any {
	if len(recs) == 0 {
		return "nothing"
	}
	return recs[len(recs)-1].Offset
}

// consumeAll reads topic from the start (a kgo consumer without a group) up to each partition's
// high watermark at the call, within a minute, and returns partition -> records in offset order.
func consumeAll(t *testing.T, l *Lab, topic string, partitions kadm.PartitionDetails) map[int32][]*kgo.Record {
	t.Helper()
	adm := kadm.NewClient(newClient(t, l, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	want := map[int32]int64{}
	for _, p := range partitions.Numbers() {
		e, ok := ends.Lookup(topic, p)
		if !ok || e.Err != nil {
			t.Fatalf("ListEndOffsets %s-%d: %+v", topic, p, e)
		}
		want[p] = e.Offset
	}
	c := newClient(t, l, nil, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[int32][]*kgo.Record{}
	done := func() bool {
		for p, end := range want {
			if end > 0 && (len(out[p]) == 0 || out[p][len(out[p])-1].Offset+1 < end) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			got := map[int32]any{}
			for p := range want {
				got[p] = lastOffset(out[p])
			}
			t.Fatalf("consume %s from the start: not at the high watermarks %v within a minute (last offsets %v)", topic, want, got)
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r) })
	}
	return out
}

// ownRecorder is what every group member of TestReplicationCoordinatorFailover records, timestamped:
// partitions assigned and given up (revoked or lost), and commits acknowledged by the coordinator.
type ownRecorder struct {
	mu     sync.Mutex
	events []ownEvent
}

type ownEvent struct {
	at        time.Time
	member    string
	kind      string          // "assigned", "revoked", "lost", "commit"
	parts     []int32         // assigned, revoked, lost
	committed map[int32]int64 // commit: partition -> offset acknowledged
}

func (r *ownRecorder) add(e ownEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.at = time.Now()
	r.events = append(r.events, e)
}

func (r *ownRecorder) snapshot() []ownEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// lastCommits is partition -> the offset of the latest acknowledged commit (in time) by any member,
// and the number of commits acknowledged after since.
func lastCommits(evs []ownEvent, since time.Time) (map[int32]int64, int) {
	out := map[int32]int64{}
	n := 0
	for _, e := range evs {
		if e.kind != "commit" {
			continue
		}
		for p, o := range e.committed {
			out[p] = o
		}
		if e.at.After(since) {
			n++
		}
	}
	return out, n
}

// ownershipOverlaps returns every pair of members that owned one partition at the same time: each
// member's intervals from "assigned" to its next "revoked"/"lost" of that partition (or end).
func ownershipOverlaps(evs []ownEvent, end time.Time) []string {
	type interval struct {
		member     string
		start, end time.Time
	}
	open := map[string]map[int32]time.Time{} // member -> partition -> since
	var ivs = map[int32][]interval{}
	for _, e := range evs {
		if open[e.member] == nil {
			open[e.member] = map[int32]time.Time{}
		}
		switch e.kind {
		case "assigned":
			for _, p := range e.parts {
				if _, ok := open[e.member][p]; !ok {
					open[e.member][p] = e.at
				}
			}
		case "revoked", "lost":
			for _, p := range e.parts {
				if s, ok := open[e.member][p]; ok {
					ivs[p] = append(ivs[p], interval{e.member, s, e.at})
					delete(open[e.member], p)
				}
			}
		}
	}
	for m, ps := range open {
		for p, s := range ps {
			ivs[p] = append(ivs[p], interval{m, s, end})
		}
	}
	var out []string
	for p, list := range ivs {
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				a, b := list[i], list[j]
				if a.member != b.member && a.start.Before(b.end) && b.start.Before(a.end) {
					out = append(out, fmt.Sprintf("partition %d: %s owned it %s..%s and %s %s..%s", p,
						a.member, a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"),
						b.member, b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000")))
				}
			}
		}
	}
	return out
}

// TestReplicationCoordinatorFailover: group g (3 members of this project's newconsumer and 1 kgo
// member, range assignor, manual commits after processing) consumes a 6-partition topic of
// replication factor 3 while a producer keeps writing; the group coordinator's broker is killed
// with -9. The group is Stable again with 4 members within a deadline, its coordinator now another
// broker, the committed offsets at least what members last had acknowledged (equal, and at the end
// of the log, once the producer and members stop after a final commit), and no partition ever had
// two owners at once.
//
// Issue 15 must-show: coordinator failover: __consumer_offsets replicated, so a new coordinator
// takes the group over with every acknowledged commit, and ownership stays exclusive.
func TestReplicationCoordinatorFailover(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	const topic, group = "t6", "g"
	l := startReplicatedLab(t, 3, nil)
	cl := newClient(t, l, nil)
	adm := kadm.NewClient(cl)
	createReplicatedTopic(t, cl, topic, 6, 3, nil, nil)
	waitFullISR(t, adm, topic, 6, 3, 30*time.Second)

	stopProduce := make(chan struct{})
	produced := make(chan struct{})
	prod := newClient(t, l, nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(15*time.Second))
	go func() {
		defer close(produced)
		tick := time.NewTicker(10 * time.Millisecond) // pacing of the load, not a wait for state
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopProduce:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_ = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v-" + strconv.Itoa(i))}).FirstErr() // failures during the failover are fine
			cancel()
		}
	}()
	defer func() {
		select {
		case <-stopProduce:
		default:
			close(stopProduce)
		}
		<-produced
	}()

	rec := &ownRecorder{}
	stopMembers := make(chan struct{})
	var members sync.WaitGroup
	memberErr := make(chan error, 8)

	for i := 1; i <= 3; i++ {
		name := "nc" + strconv.Itoa(i)
		cfg, err := newconsumer.FromProperties(map[string]string{
			"group.id": group, "bootstrap.servers": l.Bootstrap(), "client.id": name,
			"partition.assignment.strategy": "range", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
			"session.timeout.ms": "10000", "heartbeat.interval.ms": "1000", "request.timeout.ms": "10000",
		})
		if err != nil {
			t.Fatalf("newconsumer config: %v", err)
		}
		parts := func(ps []newconsumer.TopicPartition) []int32 {
			var out []int32
			for _, p := range ps {
				out = append(out, p.Partition)
			}
			return out
		}
		cfg.Listener = newconsumer.ListenerFuncs{
			Assigned: func(ps []newconsumer.TopicPartition) {
				rec.add(ownEvent{member: name, kind: "assigned", parts: parts(ps)})
			},
			Revoked: func(ps []newconsumer.TopicPartition) {
				rec.add(ownEvent{member: name, kind: "revoked", parts: parts(ps)})
			},
			Lost: func(ps []newconsumer.TopicPartition) { rec.add(ownEvent{member: name, kind: "lost", parts: parts(ps)}) },
		}
		cfg.Log = testLog(t)
		c, err := newconsumer.New(cfg)
		if err != nil {
			t.Fatalf("newconsumer.New: %v", err)
		}
		if err := c.Subscribe(topic); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		members.Add(1)
		go func() {
			defer members.Done()
			commit := func(offs map[newconsumer.TopicPartition]int64) {
				if len(offs) == 0 {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := c.CommitSync(ctx, offs); err == nil {
					m := map[int32]int64{}
					for tp, o := range offs {
						m[tp.Partition] = o
					}
					rec.add(ownEvent{member: name, kind: "commit", committed: m})
				}
			}
			for {
				select {
				case <-stopMembers:
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					if err := c.Close(ctx); err != nil {
						memberErr <- fmt.Errorf("%s: Close: %w", name, err)
					}
					cancel()
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				recs, err := c.Poll(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					if errors.Is(err, newconsumer.ErrClosed) {
						return
					}
					continue // retriable trouble during the failover; Poll rediscovers the coordinator
				}
				offs := map[newconsumer.TopicPartition]int64{}
				owned := map[int32]bool{}
				for _, tp := range c.Assignment() {
					owned[tp.Partition] = true
				}
				for _, r := range recs {
					if owned[r.Partition] {
						offs[newconsumer.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
					}
				}
				commit(offs)
			}
		}()
	}

	// The kgo member: eager range, rebalances only between polls (BlockRebalanceOnPoll), a
	// synchronous CommitRecords after processing each poll.
	kname := "kgo"
	km := newClient(t, l, nil, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(kname),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			rec.add(ownEvent{member: kname, kind: "assigned", parts: slices.Clone(a[topic])})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			rec.add(ownEvent{member: kname, kind: "revoked", parts: slices.Clone(a[topic])})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			rec.add(ownEvent{member: kname, kind: "lost", parts: slices.Clone(a[topic])})
		}))
	members.Add(1)
	go func() {
		defer members.Done()
		for {
			select {
			case <-stopMembers:
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				if err := km.CommitUncommittedOffsets(ctx); err != nil {
					memberErr <- fmt.Errorf("kgo: final commit: %w", err)
				} else {
					// What the final commit covered: the committed position of every owned partition.
					m := map[int32]int64{}
					for p, o := range km.CommittedOffsets()[topic] {
						m[p] = o.Offset
					}
					if len(m) > 0 {
						rec.add(ownEvent{member: kname, kind: "commit", committed: m})
					}
				}
				km.LeaveGroup()
				cancel()
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			fs := km.PollFetches(ctx)
			cancel()
			recs := fs.Records()
			if len(recs) > 0 {
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := km.CommitRecords(cctx, recs...); err == nil {
					m := map[int32]int64{}
					for _, r := range recs {
						m[r.Partition] = max(m[r.Partition], r.Offset+1)
					}
					rec.add(ownEvent{member: kname, kind: "commit", committed: m})
				}
				ccancel()
			}
			km.AllowRebalance()
		}
	}()
	stopAll := func() {
		select {
		case <-stopMembers:
			return
		default:
		}
		close(stopMembers)
		members.Wait()
	}
	defer stopAll()

	groupStable := func(adm *kadm.Client) (string, int, int32) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err.Error(), 0, -1
		}
		g, ok := gs[group]
		if !ok || g.Err != nil {
			return fmt.Sprintf("%v", g.Err), 0, -1
		}
		return g.State, len(g.Members), g.Coordinator.NodeID
	}
	testutil.WaitFor(t, 60*time.Second, "g Stable with 4 members before the kill", func() bool {
		s, n, _ := groupStable(adm)
		return s == "Stable" && n == 4
	})
	testutil.WaitFor(t, 30*time.Second, "commits acknowledged for all 6 partitions before the kill", func() bool {
		c, _ := lastCommits(rec.snapshot(), time.Time{})
		return len(c) == 6
	})

	var coord int32
	testutil.WaitFor(t, 20*time.Second, "FindCoordinator(g) answered", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		code, node, err := findCoordinator(ctx, cl, l.Brokers()[0].ID(), group)
		coord = node
		return err == nil && code == 0 && node > 0
	})
	before, _ := lastCommits(rec.snapshot(), time.Time{})
	killedAt := time.Now()
	victim := l.Brokers()[coord-1]
	if err := victim.Kill(); err != nil {
		t.Fatalf("kill -9 coordinator broker %d: %v", coord, err)
	}
	t.Logf("killed coordinator broker %d; acknowledged commits then: %v", coord, before)
	// A fresh admin client on the surviving brokers for every question: kgo caches a group's
	// coordinator and keeps dialling a dead one (no Kafka error to invalidate it on).
	survivors := func() (*kadm.Client, func()) {
		c, err := kgo.NewClient(kgo.SeedBrokers(addrsExcept(l, coord)...))
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		return kadm.NewClient(c), c.Close
	}

	var state string
	var n int
	var now int32
	waitFor(t, 60*time.Second, fmt.Sprintf("g Stable with 4 members on a new coordinator after killing broker %d", coord), func() bool {
		adm, done := survivors()
		defer done()
		state, n, now = groupStable(adm)
		return state == "Stable" && n == 4 && now > 0 && now != coord
	}, func() string { return fmt.Sprintf("state %q, %d members, coordinator %d", state, n, now) })
	testutil.WaitFor(t, 30*time.Second, "commits acknowledged by the new coordinator", func() bool {
		_, after := lastCommits(rec.snapshot(), killedAt)
		return after > 0
	})

	fetch := func() map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		adm, done := survivors()
		defer done()
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("OffsetFetch g from the new coordinator: %v", err)
		}
		out := map[int32]int64{}
		for p, o := range os[topic] {
			if o.Err != nil {
				t.Fatalf("OffsetFetch g %s-%d: %v", topic, p, o.Err)
			}
			out[p] = o.At
		}
		return out
	}
	got := fetch()
	for p, o := range before {
		if got[p] < o {
			t.Errorf("after the failover %s-%d committed %d, below the %d acknowledged before the kill", topic, p, got[p], o)
		}
	}

	// Stop producing, let the members reach the end and commit it, stop them (final commits).
	close(stopProduce)
	<-produced
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	sadm, sdone := survivors()
	ends, err := sadm.ListEndOffsets(ctx, topic)
	sdone()
	cancel()
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	testutil.WaitFor(t, 60*time.Second, fmt.Sprintf("acknowledged commits at the end of every partition %v", end), func() bool {
		c, _ := lastCommits(rec.snapshot(), time.Time{})
		for p, e := range end {
			if e > 0 && c[p] != e {
				return false
			}
		}
		return true
	})
	stopAll()
	close(memberErr)
	for err := range memberErr {
		t.Error(err)
	}
	evs := rec.snapshot()
	final, _ := lastCommits(evs, time.Time{})
	got = fetch()
	for p, e := range end {
		if got[p] != final[p] || (e > 0 && got[p] != e) {
			t.Errorf("%s-%d: committed %d, last acknowledged commit %d, log end %d (want all equal)", topic, p, got[p], final[p], e)
		}
	}
	if ov := ownershipOverlaps(evs, time.Now()); len(ov) > 0 {
		t.Errorf("partitions with two owners at once:\n%s", strings.Join(ov, "\n"))
	}
	startBroker(t, victim)
}

// TestReplicationStateZnodeAfterFailover: topic t, one partition on replicas [1,2,3] (explicit
// assignment). kill -9 of the leader, broker 1, makes the controller write the partition state
// znode exactly as Kafka 3.9 does: {"version":1,"leader":2,"leader_epoch":E,"controller_epoch":<the
// /controller_epoch value>,"isr":[2,3]}, E = 1, or 2 when broker 1 was the controller too (the new
// controller, its epoch bumped, first takes replica 1 offline, leader -1, then elects 2); broker 1
// restarted catches up and is appended at the end of the ISR, [2,3,1] (Partition.prepareIsrExpand:
// isr + replica, sent in AlterPartition and written as sent), the leader still 2 and leader_epoch
// still E (an ISR change keeps the leader epoch). Every replica then has the 20 records acknowledged.
// Checked on Kafka 3.9.2 with $REBALANCELAB_REPLICATION_REFERENCE=kafka.
//
// Issue 15 must-show: leader failover and ISR shrink/expand recorded in ZooKeeper in Kafka's layout.
func TestReplicationStateZnodeAfterFailover(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := startReplicatedLab(t, 3, nil)
	cl := newClient(t, l, nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("t"))
	createReplicatedTopic(t, cl, "t", 1, 3, [][]int32{{1, 2, 3}}, nil)
	adm := kadm.NewClient(cl)
	waitFullISR(t, adm, "t", 1, 3, 30*time.Second)
	c := zkConnect(t, strings.Split(l.ZKConnect(), ","), 4*time.Second, nil)

	type want struct {
		leader, leaderEpoch int32
		isr                 []int32
	}
	var last string
	waitState := func(what string, w want, d time.Duration) partitionState {
		t.Helper()
		var got partitionState
		waitFor(t, d, fmt.Sprintf("%s: state znode leader %d, leader_epoch %d, isr %v, controller_epoch = /controller_epoch, version 1, keys %v",
			what, w.leader, w.leaderEpoch, w.isr, stateKeys), func() bool {
			s, keys, raw, err := readPartitionState(c, "t", 0)
			ce := controllerEpoch(c)
			last = fmt.Sprintf("%s (err %v), /controller_epoch %d", raw, err, ce)
			got = s
			return err == nil && reflect.DeepEqual(keys, stateKeys) && s.Version == 1 && s.Leader == w.leader &&
				s.LeaderEpoch == w.leaderEpoch && reflect.DeepEqual(s.ISR, w.isr) && ce > 0 && s.ControllerEpoch == ce
		}, func() string { return last })
		return got
	}
	waitState("after creation", want{1, 0, []int32{1, 2, 3}}, 30*time.Second)

	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("r-" + strconv.Itoa(i))}).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("produce r-%d (acks=all): %v", i, err)
			}
		}
	}
	produce(0, 10)
	epochBefore := controllerEpoch(c)
	data, _, err := c.Get("/controller")
	var ctl struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err != nil || json.Unmarshal(data, &ctl) != nil || ctl.BrokerID <= 0 {
		t.Fatalf("/controller = %s (%v): want {\"brokerid\":N,...}", data, err)
	}
	t.Logf("before the kill: /controller %s, /controller_epoch %d", data, epochBefore)
	// The leader epoch after the failover, as Kafka 3.9 writes it. Controller alive (not broker 1):
	// onBrokerFailure elects the new leader first (OfflinePartitionLeaderElection: the first live
	// assigned replica in the ISR, 2; ISR the live part, [2,3]) in one write, leader_epoch 1; the
	// OfflineReplica step then finds 1 out of the ISR already and writes nothing. Controller was broker
	// 1 too: the new controller's onControllerFailover starts the replica state machine first, whose
	// OfflineReplica step for replica 1 writes leader -1, isr [2,3], leader_epoch 1, then the
	// partition state machine elects 2: leader_epoch 2 (checked on Kafka 3.9.2 in this lab).
	wantEpoch := int32(1)
	if ctl.BrokerID == 1 {
		wantEpoch = 2
	}

	b1 := l.Brokers()[0]
	if err := b1.Kill(); err != nil {
		t.Fatalf("kill -9 broker 1: %v", err)
	}
	s := waitState(fmt.Sprintf("after kill -9 of leader 1 (controller %d)", ctl.BrokerID), want{2, wantEpoch, []int32{2, 3}}, 30*time.Second)
	if ctl.BrokerID == 1 && s.ControllerEpoch <= epochBefore {
		t.Fatalf("controller broker 1 killed: state controller_epoch %d, not above %d", s.ControllerEpoch, epochBefore)
	}
	t.Logf("after the kill: controller_epoch %d (before %d)", s.ControllerEpoch, epochBefore)
	produce(10, 20) // to leader 2; min.insync.replicas 1, ISR [2,3]

	startBroker(t, b1)
	waitState("after broker 1 restarted", want{2, wantEpoch, []int32{2, 3, 1}}, 60*time.Second)
	// Metadata's leader is not checked any more: Kafka's controller schedules its first automatic
	// preferred-leader check 5 s after a controller failover (onControllerFailover), then every
	// leader.imbalance.check.interval.seconds (300), so right after this test's kill of a controller
	// broker 1 the preferred replica, 1, may legitimately lead again by now (seen on Kafka 3.9.2).
	md := waitFullISR(t, adm, "t", 1, 3, 30*time.Second)
	if leos := assertReplicasAgree(t, l, "t", md); leos[0] != 20 {
		t.Fatalf("t-0 log end offset %d on every replica, want 20 (20 records acknowledged with acks=all)", leos[0])
	}
}
