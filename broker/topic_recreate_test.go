package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// FID-TOPIC-RECREATE: a topic deleted and created again under the same name, each re-creation sent
// after DeleteTopics answered, gets a leader for every partition. CreateTopics answers success, or
// TOPIC_ALREADY_EXISTS while a deletion is still pending and then success on retry (as Kafka 3.9 may:
// "Topic 'x' is marked for deletion."), never REQUEST_TIMED_OUT; every partition is led within a second
// of the answer, and the new topic is empty (the record produced to the previous one is gone).
func TestFIDTopicRecreateOneBroker(t *testing.T)    { fidTopicRecreate(t, 1) }
func TestFIDTopicRecreateThreeBrokers(t *testing.T) { fidTopicRecreate(t, 3) }

const (
	fidRecreateRounds     = 20
	fidRecreatePartitions = 32
)

func fidTopicRecreate(t *testing.T, brokers int) {
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
	for round := 0; round < fidRecreateRounds; round++ {
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
		for {
			resp, err := adm.CreateTopics(ctx, fidRecreatePartitions, 1, nil, topic)
			if err != nil {
				t.Fatalf("round %d: CreateTopics: %v", round, err)
			}
			r := resp[topic]
			if r.Err == nil {
				break
			}
			// Kafka 3.9 answers TOPIC_ALREADY_EXISTS while the old topic's deletion is pending; a retry
			// succeeds once it is done. Anything else (REQUEST_TIMED_OUT above all) is the bug.
			if !errors.Is(r.Err, kerr.TopicAlreadyExists) || round == 0 {
				t.Fatalf("round %d: CreateTopics %s: %v (%s); want success", round, topic, r.Err, r.ErrMessage)
			}
			if alreadyExists++; alreadyExists > 50 {
				t.Fatalf("round %d: CreateTopics still TOPIC_ALREADY_EXISTS after %d retries (%s)", round, alreadyExists, r.ErrMessage)
			}
		}
		created := time.Now()
		waitLed(ctx, t, adm, topic, round)
		t.Logf("round %d: %d partitions led %v after CreateTopics answered (TOPIC_ALREADY_EXISTS retries: %d)",
			round, fidRecreatePartitions, time.Since(created).Round(time.Millisecond), alreadyExists)
		// The re-created topic starts empty: nothing of the record the previous incarnation held.
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("round %d: ListEndOffsets: %v", round, err)
		}
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
// says what Metadata last showed if not.
func waitLed(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, round int) {
	t.Helper()
	var missing string
	defer func() {
		if missing != "" {
			t.Logf("round %d: last Metadata: %s", round, missing)
		}
	}()
	waitFor(t, time.Second, fmt.Sprintf("round %d: a leader for each of the %d partitions", round, fidRecreatePartitions), func() bool {
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
