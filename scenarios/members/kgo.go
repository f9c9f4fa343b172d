package members

// franz-go's kgo group consumer as a pool member (`rebalancelab member-pool --client kgo`): the peer
// that bench storm runs beside ours, in pool processes when one process's descriptors cannot hold N
// of them. It writes no timeline: the peer is measured from the broker's side (DescribeGroups).

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Pool clients (PoolOptions.Client): the era's own member, or franz-go's kgo.
const (
	ClientEra = ""
	ClientKgo = "kgo"
)

// KgoOptions are the franz-go client options of one group member from Kafka consumer configs:
// bootstrap.servers, group.id and client.id (required); partition.assignment.strategy range
// (default) or cooperative-sticky; session.timeout.ms (45000), heartbeat.interval.ms (3000),
// max.poll.interval.ms (300000, kgo's rebalance timeout), auto.commit.interval.ms (5000),
// fetch.max.wait.ms (500): Kafka's defaults where unset. It subscribes to topic from the earliest
// offset, dialling with dial (nil: directly). Errors name the config.
func KgoOptions(topic string, props map[string]string, dial func(ctx context.Context, network, host string) (net.Conn, error)) ([]kgo.Opt, error) {
	for _, k := range []string{"bootstrap.servers", "group.id", "client.id"} {
		if props[k] == "" {
			return nil, fmt.Errorf("kgo member: %s is required", k)
		}
	}
	var session, heartbeat, rebalance, autoCommit, fetchWait time.Duration
	for _, c := range []struct {
		key string
		def int // ms: Kafka's default
		to  *time.Duration
	}{{"session.timeout.ms", 45000, &session}, {"heartbeat.interval.ms", 3000, &heartbeat},
		{"max.poll.interval.ms", 300000, &rebalance}, {"auto.commit.interval.ms", 5000, &autoCommit},
		{"fetch.max.wait.ms", 500, &fetchWait}} {
		n := c.def
		if v, ok := props[c.key]; ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n <= 0 {
				return nil, fmt.Errorf("kgo member: %s=%q: want a positive number of ms", c.key, v)
			}
		}
		*c.to = time.Duration(n) * time.Millisecond
	}
	bal := kgo.RangeBalancer()
	switch s := props["partition.assignment.strategy"]; s {
	case "", "range":
	case "cooperative-sticky":
		bal = kgo.CooperativeStickyBalancer()
	default:
		return nil, fmt.Errorf("kgo member: partition.assignment.strategy=%q: want range or cooperative-sticky", s)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(props["bootstrap.servers"], ",")...),
		kgo.ClientID(props["client.id"]),
		kgo.ConsumerGroup(props["group.id"]), kgo.ConsumeTopics(topic), kgo.Balancers(bal),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(heartbeat), kgo.RebalanceTimeout(rebalance),
		kgo.AutoCommitInterval(autoCommit), kgo.FetchMaxWait(fetchWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	return opts, nil
}

// kgoMember is a kgo group consumer that polls until stopped; it implements Runtime.
type kgoMember struct {
	cl        *kgo.Client
	closeOnce sync.Once
}

func newKgoMember(topic string, props map[string]string, links Dialers) (*kgoMember, error) {
	opts, err := KgoOptions(topic, props, links.Dialer(lab.LinkFetch))
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kgo member: %w", err)
	}
	return &kgoMember{cl: cl}, nil
}

// run polls (the application) until the client is closed or ctx ends.
func (m *kgoMember) Run(ctx context.Context) error {
	for ctx.Err() == nil && !m.cl.PollFetches(ctx).IsClientClosed() {
	}
	return nil
}

// stop closes the client: kgo commits and sends LeaveGroup. franz-go has no close that leaves the
// group unsaid, so a kill is the same Close; the bench only stops its peers gracefully (a crash of a
// kgo member is its pool's kill -9).
func (m *kgoMember) Stop(bool) { m.closeOnce.Do(m.cl.Close) }

func (m *kgoMember) ZKSession() int64 { return 0 }

func (m *kgoMember) OwnProcess() bool { return false }

// KgoPools are franz-go kgo group members in `rebalancelab member-pool --client kgo` processes:
// bench storm's peer when one process's descriptors cannot hold N kgo clients (StartKgoPools).
type KgoPools struct {
	pools   []*memberPool
	members []*poolMember
	wg      sync.WaitGroup // every member's run
}

// StartKgoPools starts one kgo member per element of props (its KgoOptions configs, client.id naming
// it), perProcess to a pool process of the rebalancelab binary bin, all subscribed to topic; they dial
// the brokers directly. It returns once every start command is sent; the group's progress is the
// caller's to watch (from the broker). Errors: a pool process that cannot start (the pools started so
// far are closed).
func StartKgoPools(bin string, perProcess int, era, topic string, props []map[string]string, log *logrus.Entry) (*KgoPools, error) {
	k := &KgoPools{}
	perProcess = max(1, perProcess)
	for i, p := range props {
		if i%perProcess == 0 {
			pool, err := startPool(poolArgv(bin, log.Logger.GetLevel().String(), era, topic, ClientKgo), log.WithField("kgo_pool", len(k.pools)), nil)
			if err != nil {
				k.Close()
				return nil, err
			}
			k.pools = append(k.pools, pool)
		}
		m := newPoolMember(k.pools[len(k.pools)-1], p["client.id"], p, nil, timeline.Discard)
		k.members = append(k.members, m)
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			_ = m.Run(context.Background()) // ends when its pool stops it (Close) or it gives up
		}()
	}
	return k, nil
}

// Processes are the pool processes still running (for the resource sampler).
func (k *KgoPools) Processes() []ChildProcess {
	var out []ChildProcess
	for _, p := range k.pools {
		if c, ok := p.childProcess(); ok {
			out = append(out, c)
		}
	}
	return out
}

// Ended is how many members have ended so far (before Close: given up, or their pool died) and the
// first one's reason.
func (k *KgoPools) Ended() (n int, first string) {
	for _, m := range k.members {
		select {
		case <-m.ended:
			if n++; first == "" && m.err != nil {
				first = fmt.Sprintf("%s: %v", m.name, m.err)
			}
		default:
		}
	}
	return n, first
}

// Close stops every member gracefully (kgo's Close: commit, LeaveGroup), ends the pools and waits for
// them and for the members' runs.
func (k *KgoPools) Close() {
	var wg sync.WaitGroup
	for _, p := range k.pools {
		wg.Add(1)
		go func() { defer wg.Done(); p.close(true) }()
	}
	wg.Wait()
	k.wg.Wait()
}
