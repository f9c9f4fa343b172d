package broker_test

// Real Kafka clients against the broker, started by the lab on a real ZooKeeper: IBM/sarama,
// kcat (librdkafka) and kafka-python each do a produce/consume round trip; a broker process is
// killed with SIGKILL under acks=all load and every acknowledged record is read back after restart.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

func interopLab(t *testing.T, o lab.Options) *lab.Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	l, err := lab.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func interopCreateTopic(t *testing.T, bootstrap, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

func TestSaramaRoundTrip(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "sarama", 3)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer([]string{l.Bootstrap()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const perPartition = 100
	for p := int32(0); p < 3; p++ {
		for i := 0; i < perPartition; i++ {
			part, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama", Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("%d-%d", p, i))})
			if err != nil {
				t.Fatal(err)
			}
			if part != p || off != int64(i) {
				t.Fatalf("message %d-%d stored at %d@%d, want %d@%d", p, i, part, off, p, i)
			}
		}
	}
	cons, err := sarama.NewConsumer([]string{l.Bootstrap()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for p := int32(0); p < 3; p++ {
		pc, err := cons.ConsumePartition("sarama", p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perPartition; i++ {
			select {
			case m := <-pc.Messages():
				if want := fmt.Sprintf("%d-%d", p, i); string(m.Value) != want || m.Offset != int64(i) {
					t.Fatalf("partition %d message %d: %q@%d, want %q@%d", p, i, m.Value, m.Offset, want, i)
				}
			case err := <-pc.Errors():
				t.Fatal(err)
			case <-time.After(20 * time.Second):
				t.Fatalf("partition %d: only %d of %d messages", p, i, perPartition)
			}
		}
		pc.Close()
	}
}

func runKcat(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func TestKcatListAndRoundTrip(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kcat)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "kcat", 4)
	b := l.Bootstrap()

	list := runKcat(t, nil, "-b", b, "-L", "-t", "kcat")
	if !strings.Contains(list, fmt.Sprintf("broker %d at %s", l.Brokers()[0].ID(), b)) {
		t.Fatalf("kcat -L does not list broker %d at %s:\n%s", l.Brokers()[0].ID(), b, list)
	}
	if !strings.Contains(list, `topic "kcat" with 4 partitions`) {
		t.Fatalf("kcat -L does not list the topic with 4 partitions:\n%s", list)
	}

	const n = 1000
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "msg-%04d\n", i)
	}
	runKcat(t, in.Bytes(), "-b", b, "-P", "-t", "kcat", "-X", "acks=all")
	out := runKcat(t, nil, "-b", b, "-C", "-t", "kcat", "-e", "-q", "-f", "%s\n")
	got := strings.Fields(out)
	if len(got) != n {
		t.Fatalf("kcat -C read %d messages, want %d", len(got), n)
	}
	seen := make(map[string]bool, n)
	for _, m := range got {
		seen[m] = true
	}
	for i := 0; i < n; i++ {
		if m := fmt.Sprintf("msg-%04d", i); !seen[m] {
			t.Fatalf("message %s missing", m)
		}
	}
}

const kafkaPythonRoundTrip = `
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
b, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = KafkaProducer(bootstrap_servers=b, acks='all')
for i in range(n):
    p.send(topic, value=b'py-%d' % i, partition=0)
p.flush(); p.close()
c = KafkaConsumer(bootstrap_servers=b, consumer_timeout_ms=10000, auto_offset_reset='earliest', enable_auto_commit=False)
tp = TopicPartition(topic, 0)
c.assign([tp]); c.seek_to_beginning(tp)
got = [m.value.decode() for m in c]
print(len(got)); print(','.join(got))
`

func TestKafkaPythonRoundTrip(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.KafkaPython)
	l := interopLab(t, lab.Options{Brokers: 1})
	interopCreateTopic(t, l.Bootstrap(), "py", 1)
	const n = 200
	for i, v := range runKafkaPython(t, kafkaPythonRoundTrip, l.Bootstrap(), "py", n) {
		if v != fmt.Sprintf("py-%d", i) {
			t.Fatalf("message %d is %q", i, v)
		}
	}
}

// runKafkaPython runs a kafka-python script (argv: bootstrap, topic, n) that prints the number of
// messages it read and then their texts comma-separated, and returns the texts after checking there
// are n of them.
func runKafkaPython(t *testing.T, script, bootstrap, topic string, n int) []string {
	t.Helper()
	out := kafkaPython(t, script, bootstrap, topic, strconv.Itoa(n))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(n) {
		t.Fatalf("kafka-python read %q, want %d messages", lines[0], n)
	}
	return strings.Split(lines[1], ",")
}

// kafkaPython runs a kafka-python script (/usr/bin/python3 -c script args...) and returns its stdout;
// a failure ends the test with its stderr.
func kafkaPython(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, stderr.String())
	}
	return out
}

// TestKill9UnderLoadKeepsAcknowledged: with log.flush.interval.messages=1 every acks=all record
// the broker acknowledged is on disk; a SIGKILL mid-load must not lose one.
func TestKill9UnderLoadKeepsAcknowledged(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	l := interopLab(t, lab.Options{
		Brokers:      1,
		BrokersAs:    "process",
		BrokerBinary: testutil.Binary(t),
		BrokerConfig: map[string]string{"log.flush.interval.messages": "1"},
	})
	interopCreateTopic(t, l.Bootstrap(), "durable", 2)

	// Not idempotent, on purpose: the test fails every record in flight at the kill (no retries, a
	// 5 s delivery timeout) and counts only the acknowledged ones; an idempotent producer will not fail
	// a record sent without an answer (failing it could leave a sequence gap) and retries it instead.
	prod, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	var mu sync.Mutex
	acked := map[string]bool{} // value -> acknowledged
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := fmt.Sprintf("r%07d", i)
			prod.Produce(ctx, &kgo.Record{Topic: "durable", Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[v] = true
					mu.Unlock()
				}
			})
		}
	}()
	testutil.WaitFor(t, 30*time.Second, "1000 acknowledged records", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 1000
	})
	if err := l.Brokers()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	prod.Close() // fails what is in flight; only callbacks with err == nil counted
	// The acknowledgements so far; a promise may still finish after Close returns, and the check below
	// reads this snapshot, not the map its callback writes.
	mu.Lock()
	ackedAtKill := maps.Clone(acked)
	mu.Unlock()
	want := len(ackedAtKill)

	sctx, scancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer scancel()
	if err := l.Brokers()[0].Start(sctx); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.ConsumeTopics("durable"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	found := map[string]bool{}
	testutil.WaitFor(t, 60*time.Second, "every acknowledged record read back", func() bool {
		pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
		defer pcancel()
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { found[string(r.Value)] = true })
		for v := range ackedAtKill {
			if !found[v] {
				return false
			}
		}
		return true
	})
	t.Logf("%d records acknowledged before SIGKILL, all %d read back (%d read in all)", want, want, len(found))
}
