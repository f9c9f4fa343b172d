package env

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// A topic's partitions are waited for in the metadata, each with a leader: a topic that does not
// exist keeps the wait going until its deadline, with the broker's error in the reason; a created one
// ends it. The CreateTopics timeout grows with the replicas (10,000 partitions of factor 1: 80 s).
func TestAwaitTopicLeaders(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	if got := CreateTopicTimeout(10000, 1); got != 80*time.Second {
		t.Errorf("CreateTopicTimeout(10000, 1) = %s, want 80s", got)
	}
	if got := CreateTopicTimeout(8, 3); got != 30*time.Second+120*time.Millisecond {
		t.Errorf("CreateTopicTimeout(8, 3) = %s, want 30.12s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	short, stop := context.WithTimeout(ctx, 700*time.Millisecond)
	err = AwaitTopicLeaders(short, adm, "absent", 4)
	stop()
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("AwaitTopicLeaders(absent topic) = %v, want the broker's UNKNOWN_TOPIC_OR_PARTITION and the deadline", err)
	}
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "present"); err != nil {
		t.Fatal(err)
	}
	if err := AwaitTopicLeaders(ctx, adm, "present", 4); err != nil {
		t.Fatalf("AwaitTopicLeaders(created topic of 4) = %v, want nil", err)
	}
	short, stop = context.WithTimeout(ctx, 700*time.Millisecond)
	err = AwaitTopicLeaders(short, adm, "present", 5)
	stop()
	if err == nil || !strings.Contains(err.Error(), "4 of 5 partitions in the metadata") {
		t.Fatalf("AwaitTopicLeaders(4 partitions, want 5) = %v, want \"4 of 5 partitions in the metadata\"", err)
	}
}

// quietLog is the lab's log in these tests: errors only.
func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(l)
}
