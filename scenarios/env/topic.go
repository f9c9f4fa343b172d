package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// Topic is a topic to create (CreateTopic).
type Topic struct {
	Name       string
	Partitions int
	// ReplicationFactor: 0 = 1.
	ReplicationFactor int
	Configs           map[string]string // topic configs (cleanup.policy, min.insync.replicas, ...); nil: the broker's
	// InSync: wait, after the leaders, until every partition has ReplicationFactor replicas, all in the
	// ISR (a replicated benchmark topic measures replication only once its followers are in), for at
	// most InSyncTimeout (0: 30 s).
	InSync        bool
	InSyncTimeout time.Duration
}

// CreateTopic creates t on the cluster at bootstrap ("host:port,...") and waits until the metadata
// shows its partitions, each with a leader (and, with t.InSync, every replica in the ISR). The
// CreateTopics timeout is CreateTopicTimeout; the whole call is bounded by it plus a minute (and ctx).
// A REQUEST_TIMED_OUT answer is not an error by itself: the topic is written and its partitions still
// coming, so it waits for them. Errors name the topic and wrap the broker's, the deadline's or ctx's
// error (errors.Is(err, kerr.TopicAlreadyExists) for a topic that exists).
func CreateTopic(ctx context.Context, bootstrap string, t Topic) error {
	rf := int16(max(1, t.ReplicationFactor))
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, CreateTopicTimeout(t.Partitions, rf)+time.Minute)
	defer cancel()
	cfg := make(map[string]*string, len(t.Configs))
	for k, v := range t.Configs {
		cfg[k] = kadm.StringPtr(v)
	}
	adm := kadm.NewClient(cl)
	// The broker answers once every partition's state is seen, which takes longer the more partitions
	// (10,000 over five brokers: tens of seconds). REQUEST_TIMED_OUT means the topic is written and its
	// partitions still coming: wait for them in the metadata, as an admin would.
	adm.SetTimeoutMillis(int32(CreateTopicTimeout(t.Partitions, rf).Milliseconds()))
	resp, err := adm.CreateTopic(cctx, int32(t.Partitions), rf, cfg, t.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.RequestTimedOut) {
		return fmt.Errorf("create topic %s: %w", t.Name, err)
	}
	if werr := AwaitTopicLeaders(cctx, adm, t.Name, t.Partitions); werr != nil {
		if err != nil {
			return fmt.Errorf("create topic %s: %w; then %w", t.Name, err, werr)
		}
		return fmt.Errorf("create topic %s: %w", t.Name, werr)
	}
	if t.InSync {
		timeout := t.InSyncTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		if err := awaitInSync(cctx, adm, t.Name, int(rf), timeout); err != nil {
			return fmt.Errorf("create topic %s: %w", t.Name, err)
		}
	}
	return nil
}

// CreateTopicTimeout is the CreateTopics timeout for a topic of partitions × rf replicas:
// 30 s, plus 5 ms per replica (a 10,000-partition topic of factor 1: 80 s).
func CreateTopicTimeout(partitions int, rf int16) time.Duration {
	return 30*time.Second + time.Duration(partitions*int(rf))*5*time.Millisecond
}

// AwaitTopicLeaders waits, trying every 200 ms, until the metadata shows topic with its partitions,
// each with a leader. The error, once ctx ends, wraps ctx's and ends with the last reason (a metadata
// error, "not in the metadata", "4 of 5 partitions in the metadata", "2 of 4 partitions without a
// leader").
func AwaitTopicLeaders(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	err := poll.Backoff{First: 200 * time.Millisecond, Max: 200 * time.Millisecond}.UntilErr(ctx, 0, "the partitions of "+topic, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		switch {
		case !ok:
			return errors.New("not in the metadata")
		case td.Err != nil:
			return td.Err
		case len(td.Partitions) != partitions:
			return fmt.Errorf("%d of %d partitions in the metadata", len(td.Partitions), partitions)
		}
		leaderless := 0
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil {
				leaderless++
			}
		}
		if leaderless > 0 {
			return fmt.Errorf("%d of %d partitions without a leader", leaderless, partitions)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("partitions not ready: %w", err)
	}
	return nil
}

// AwaitInSync waits, backing off from 10 ms to 500 ms, until every partition of topic on the cluster at
// bootstrap has rf replicas, all in the ISR, for at most timeout. The error wraps poll.ErrTimeout (or
// ctx's error) and ends with the last reason ("partition 3: replicas [1 2], ISR [1]").
func AwaitInSync(ctx context.Context, bootstrap, topic string, rf int, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return awaitInSync(ctx, kadm.NewClient(cl), topic, rf, timeout)
}

// awaitInSync is AwaitInSync on adm.
func awaitInSync(ctx context.Context, adm *kadm.Client, topic string, rf int, timeout time.Duration) error {
	return poll.Backoff{First: 10 * time.Millisecond, Max: 500 * time.Millisecond}.UntilErr(ctx, timeout,
		fmt.Sprintf("every partition of %s with %d in-sync replicas", topic, rf), func() error {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			td, ok := md.Topics[topic]
			if !ok || td.Err != nil || len(td.Partitions) == 0 {
				return fmt.Errorf("topic %s not in metadata yet", topic)
			}
			for _, p := range td.Partitions.Sorted() {
				if len(p.Replicas) != rf || len(p.ISR) != rf {
					return fmt.Errorf("partition %d: replicas %v, ISR %v", p.Partition, p.Replicas, p.ISR)
				}
			}
			return nil
		})
}
