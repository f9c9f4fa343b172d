package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/newconsumer"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// quietLog is the lab's and the members' log: the runners' default (env.Defaults: warnings and
// errors on stderr).
func quietLog() *logrus.Entry {
	d := env.Defaults{}
	d.Fill()
	return d.LabLog
}

// startLab starts a real ZooKeeper and one broker with the lab's short timings (lab.ShortTimings),
// through the environment stage (env.Start) as every runner does.
func startLab(ctx context.Context) (*lab.Lab, error) {
	e, err := env.Start(ctx, env.Options{Lab: lab.Options{Brokers: 1, Log: quietLog()}})
	if err != nil {
		return nil, err
	}
	return e.Lab(), nil
}

// startLabWithTopic is startLab, then createTopic (the lab is closed when the topic cannot be made).
func startLabWithTopic(ctx context.Context, topic string, partitions int32) (*lab.Lab, error) {
	l, err := startLab(ctx)
	if err != nil {
		return nil, err
	}
	if err := createTopic(ctx, l.Bootstrap(), topic, partitions); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// createTopic creates topic with the given partitions (replication factor 1) and waits for their
// leaders (env.CreateTopic).
func createTopic(ctx context.Context, bootstrap, topic string, partitions int32) error {
	return env.CreateTopic(ctx, bootstrap, env.Topic{Name: topic, Partitions: int(partitions), ReplicationFactor: 1})
}

// produce sends n records whose values are their sequence numbers 0..n-1, record i to partition
// i mod partitions, acks=all, one at a time — what `rebalancelab produce` does.
func produce(ctx context.Context, bootstrap, topic string, partitions, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxProduceRequestsInflightPerBroker(1))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))}).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("produce %d to %s: %w", i, topic, err)
		}
	}
	return nil
}

// coordProps are a coordinator-era member's properties with the lab's short timings
// (lab.ShortConsumerTimings: session.timeout.ms 2000 [45000], heartbeat.interval.ms 500 [3000]),
// reading from the earliest offset, eager range assignment.
func coordProps(group, bootstrap, clientID string, extra map[string]string) map[string]string {
	p := map[string]string{
		"group.id": group, "bootstrap.servers": bootstrap, "client.id": clientID,
		"session.timeout.ms":            lab.ShortConsumerTimings["session.timeout.ms"],
		"heartbeat.interval.ms":         lab.ShortConsumerTimings["heartbeat.interval.ms"],
		"auto.offset.reset":             "earliest",
		"auto.commit.interval.ms":       "1000",
		"partition.assignment.strategy": "range",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// coordMember is one newconsumer run by an application loop that polls and keeps what it gets.
type coordMember struct {
	name string
	c    *newconsumer.Consumer
	done chan struct{}

	mu  sync.Mutex
	got []newconsumer.Record
	err error // a Poll error other than the close
}

// startCoord creates the consumer, subscribes to topic and polls in the background.
func startCoord(ctx context.Context, name, topic string, props map[string]string, rec *timeline.Recorder) (*coordMember, error) {
	cfg, err := newconsumer.FromProperties(props)
	if err != nil {
		return nil, err
	}
	cfg.Timeline = rec
	cfg.Log = quietLog().WithField("member", name)
	c, err := newconsumer.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Subscribe(topic); err != nil {
		return nil, err
	}
	m := &coordMember{name: name, c: c, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			rs, err := c.Poll(ctx)
			if err != nil {
				if !errors.Is(err, newconsumer.ErrClosed) && ctx.Err() == nil {
					m.mu.Lock()
					m.err = err
					m.mu.Unlock()
				}
				return
			}
			m.mu.Lock()
			m.got = append(m.got, rs...)
			m.mu.Unlock()
		}
	}()
	return m, nil
}

// close closes the consumer gracefully (commit, LeaveGroup) and waits for its loop.
func (m *coordMember) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = m.c.Close(ctx) // logs its own failures and returns nil, as Java's close
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return fmt.Errorf("%s: poll: %w", m.name, m.err)
	}
	return nil
}

func (m *coordMember) received() []newconsumer.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]newconsumer.Record(nil), m.got...)
}

// coordStable: every member is in the same generation and their assignments cover the topic's
// partitions exactly once.
func coordStable(ms []*coordMember, partitions int) bool {
	if len(ms) == 0 {
		return false
	}
	gen := ms[0].c.Generation()
	if gen <= 0 {
		return false
	}
	seen := map[int32]bool{}
	for _, m := range ms {
		if m.c.Generation() != gen {
			return false
		}
		for _, tp := range m.c.Assignment() {
			if seen[tp.Partition] {
				return false
			}
			seen[tp.Partition] = true
		}
	}
	return len(seen) == partitions
}

// awaitRoutine waits until each member of ms has recorded in col, from sinceMs, at least heartbeats
// Heartbeats and one OffsetCommit answered without error: a stable group's routine traffic, which the
// sequence diagram counts in one note per member (heartbeat.interval.ms 500, auto.commit.interval.ms
// 1000: about heartbeats/2 seconds).
func awaitRoutine(ctx context.Context, col *timeline.Collector, ms []*coordMember, sinceMs int64, heartbeats int) error {
	what := fmt.Sprintf("%d heartbeats and a commit from each member", heartbeats)
	return poll.Until(ctx, 30*time.Second, what, func() bool {
		hb, commits := map[string]int{}, map[string]int{}
		for _, r := range col.Records() {
			if r.Kind != timeline.GroupRequest || r.Err != "" || r.TsMs < sinceMs {
				continue
			}
			switch r.API {
			case "Heartbeat":
				hb[r.Member]++
			case "OffsetCommit":
				commits[r.Member]++
			}
		}
		for _, m := range ms {
			if hb[m.name] < heartbeats || commits[m.name] < 1 {
				return false
			}
		}
		return true
	})
}

// partitionList formats partitions as "0, 1, 2" (sorted), or "none".
func partitionList(ps []int32) string {
	if len(ps) == 0 {
		return "none"
	}
	ps = append([]int32(nil), ps...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}
