package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// FID-TOPIC-RECREATE: a topic deleted and created again under the same name, each re-creation sent
// after DeleteTopics answered, gets a leader for every partition. CreateTopics answers success, or
// TOPIC_ALREADY_EXISTS while a deletion is still pending and then success on retry (as Kafka 3.9 may:
// "Topic 'x' is marked for deletion."), never REQUEST_TIMED_OUT; every partition is led within a second
// of the answer, and the new topic is empty (the record produced to the previous one is gone).
func TestFIDTopicRecreateOneBroker(t *testing.T)    { fidTopicRecreate(t, 1) }
func TestFIDTopicRecreateThreeBrokers(t *testing.T) { fidTopicRecreate(t, 3) }

const (
	fidRecreateRounds     = 20 // deletions and re-creations, after the first creation
	fidRecreatePartitions = 32
)

func fidTopicRecreate(t *testing.T, brokers int) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	var seeds []string
	for id := int32(1); id <= int32(brokers); id++ {
		seeds = append(seeds, startBroker(t, z.Connect(), id, nil).addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// The brokers' wait for a creation or deletion to show (TimeoutMillis); a re-creation whose
	// partitions never get a state answers REQUEST_TIMED_OUT after it.
	adm.SetTimeoutMillis(5000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const topic = "recreated"
	for round := 0; round <= fidRecreateRounds; round++ {
		if round > 0 {
			resp, err := adm.DeleteTopics(ctx, topic)
			if err != nil {
				t.Fatalf("round %d: DeleteTopics: %v", round, err)
			}
			if r := resp[topic]; r.Err != nil {
				t.Fatalf("round %d: DeleteTopics %s: %v (%s)", round, topic, r.Err, r.ErrMessage)
			}
		}
		alreadyExists := 0
		// Kafka 3.9 answers TOPIC_ALREADY_EXISTS while the old topic's deletion is pending; a retry
		// succeeds once it is done. Anything else (REQUEST_TIMED_OUT above all) is the bug.
		testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("round %d: CreateTopics to succeed", round), func() bool {
			resp, err := adm.CreateTopics(ctx, fidRecreatePartitions, 1, nil, topic)
			if err != nil {
				t.Fatalf("round %d: CreateTopics: %v", round, err)
			}
			r := resp[topic]
			if r.Err == nil {
				return true
			}
			if !errors.Is(r.Err, kerr.TopicAlreadyExists) || round == 0 {
				t.Fatalf("round %d: CreateTopics %s: %v (%s); want success", round, topic, r.Err, r.ErrMessage)
			}
			alreadyExists++
			return false
		})
		created := time.Now()
		waitLed(ctx, t, adm, topic, round)
		t.Logf("round %d: %d partitions led %v after CreateTopics answered (TOPIC_ALREADY_EXISTS retries: %d)",
			round, fidRecreatePartitions, time.Since(created).Round(time.Millisecond), alreadyExists)
		// The re-created topic starts empty: nothing of the record the previous incarnation held.
		// A leader named by another broker's metadata may not have its LeaderAndIsr yet: it answers
		// UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER for a moment (as in Kafka: the
		// controller's requests to different brokers are not ordered), which clients retry.
		var ends kadm.ListedOffsets
		testutil.WaitFor(t, 10*time.Second, fmt.Sprintf("round %d: every leader to answer ListOffsets", round), func() bool {
			var err error
			ends, err = adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatalf("round %d: ListEndOffsets: %v", round, err)
			}
			answered := true
			ends.Each(func(o kadm.ListedOffset) {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) || errors.Is(o.Err, kerr.NotLeaderForPartition) {
					answered = false
				}
			})
			return answered
		})
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || o.Offset != 0 {
				t.Errorf("round %d: partition %d end offset %d, %v; want 0 in a new topic", round, o.Partition, o.Offset, o.Err)
			}
		})
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("round %d", round))}).FirstErr(); err != nil {
			t.Fatalf("round %d: produce: %v", round, err)
		}
	}
}

// waitLed waits up to a second for every partition of topic to have a leader (leaderless), and
// says what Metadata last showed if not. The second is the bound under test (testutil.Within: not
// stretched under the race detector).
func waitLed(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, round int) {
	t.Helper()
	var missing string
	defer func() {
		if missing != "" {
			t.Logf("round %d: last Metadata: %s", round, missing)
		}
	}()
	testutil.Within(t, time.Second, fmt.Sprintf("round %d: a leader for each of the %d partitions", round, fidRecreatePartitions), func() bool {
		missing = leaderless(ctx, adm, topic)
		return missing == ""
	})
}

// leaderless asks Metadata about topic and describes what is missing: "" when the topic has
// fidRecreatePartitions partitions, each answered without error and with a leader.
func leaderless(ctx context.Context, adm *kadm.Client, topic string) string {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err.Error()
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok:
		return "topic not in Metadata"
	case td.Err != nil:
		return "topic: " + td.Err.Error()
	case len(td.Partitions) != fidRecreatePartitions:
		return fmt.Sprintf("%d partitions", len(td.Partitions))
	}
	var bad []string
	for _, p := range td.Partitions.Sorted() {
		if p.Err != nil || p.Leader < 0 {
			bad = append(bad, fmt.Sprintf("%d: leader %d %v", p.Partition, p.Leader, p.Err))
		}
	}
	return strings.Join(bad, ", ")
}

// TestFIDTopicRecreateMissedDeletion: a broker that does not see a topic's deletion before its
// re-creation (its ZooKeeper link stalled meanwhile, shorter than its session) learns of both at once:
// the topic znode it reads has another creation zxid. Its per-path state and its partition log of the
// old topic must go: the re-created partition it leads is empty, not the old log under the new topic.
func TestFIDTopicRecreateMissedDeletion(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil) // the controller: first to register
	links := lab.NewMemberLinks("broker2")
	defer links.Close()
	cfg, err := broker.ConfigFromProperties(labProps(2, z.Connect(), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ZKDialer = links.ZKDialer()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b2, err := broker.Start(ctx, cfg, logrus.NewEntry(newTestLog(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.addr(), b2.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(5000)
	const topic = "missed"
	create := func() {
		t.Helper()
		resp, err := adm.CreateTopics(ctx, 2, 1, nil, topic)
		if err == nil {
			err = resp[topic].Err
		}
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
	}
	// Partition 1 lives on broker 2 (round-robin from broker 1).
	endOffset := func() int64 {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return -1
		}
		o, ok := ends.Lookup(topic, 1)
		if !ok || o.Err != nil {
			return -1
		}
		return o.Offset
	}
	create()
	testutil.WaitFor(t, 10*time.Second, "partition 1 led by broker 2", func() bool {
		md, err := adm.Metadata(ctx, topic)
		return err == nil && md.Topics[topic].Partitions[1].Leader == 2
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("old")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := endOffset(); got != 1 {
		t.Fatalf("end offset of partition 1 after one record: %d", got)
	}

	// Broker 2 hears nothing from ZooKeeper while the topic is deleted and created again (its session
	// survives: the same one holds its registration before and after).
	zc := zkClient(t, z.Connect())
	owner := func() int64 {
		t.Helper()
		_, st, err := zc.Get("/brokers/ids/2")
		if err != nil {
			t.Fatal(err)
		}
		return st.EphemeralOwner
	}
	before := owner()
	if err := links.Stall(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	create()
	if err := links.Heal(lab.LinkZooKeeper); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "broker 2 to serve partition 1 of the re-created topic, empty", func() bool { return endOffset() == 0 })
	if after := owner(); after != before {
		t.Fatalf("broker 2's registration changed session (0x%x -> 0x%x): the stall was meant to be shorter than the session", before, after)
	}
}

// TestFIDTopicRecreateWhileBrokerDown: a broker that crashed (its ZooKeeper session outlives it, so
// the controller still counts it live) while a topic it leads is deleted and created again finds the old
// incarnation's log on disk when it comes back. It must not serve it as the new topic's: the re-created
// partition it leads is empty.
func TestFIDTopicRecreateWhileBrokerDown(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil) // the controller: first to register
	proxy, err := lab.NewProxy("broker2-zk", z.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	b2 := startBroker(t, proxy.Addr(), 2, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.addr(), b2.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(5000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "down"
	create := func() {
		t.Helper()
		resp, err := adm.CreateTopics(ctx, 2, 1, nil, topic)
		if err == nil {
			err = resp[topic].Err
		}
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
	}
	endOffset := func() int64 {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return -1
		}
		o, ok := ends.Lookup(topic, 1)
		if !ok || o.Err != nil {
			return -1
		}
		return o.Offset
	}
	create()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("old")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := endOffset(); got != 1 {
		t.Fatalf("end offset of partition 1 after one record: %d", got)
	}

	// Broker 2 crashes: its session, cut off, outlives it, so its registration stays and the topic is
	// re-created with partition 1 on broker 2 again (round-robin over the registered brokers).
	if err := proxy.Cut(); err != nil {
		t.Fatal(err)
	}
	b2.stop()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	create()
	zc := zkClient(t, z.Connect())
	if data, _ := getZ(t, zc, "/brokers/topics/"+topic); !strings.Contains(string(data), `"1":[2]`) {
		t.Fatalf("re-created topic's assignment %s: want partition 1 on broker 2", data)
	}
	b2.props["zookeeper.connect"] = z.Connect()
	b2.start() // registers once the old session has expired
	testutil.WaitFor(t, 20*time.Second, "broker 2 to lead partition 1 of the re-created topic", func() bool {
		md, err := adm.Metadata(ctx, topic)
		return err == nil && len(md.Topics[topic].Partitions) == 2 && md.Topics[topic].Partitions[1].Leader == 2
	})
	testutil.WaitFor(t, 10*time.Second, "broker 2 to serve partition 1 of the re-created topic, empty", func() bool { return endOffset() == 0 })
}
