package members

// Goroutine members: the era's consumer (zkconsumer's connector in the zk era, newconsumer in the
// coordinator eras) run as goroutines of the process that calls Run: the runner's, a `rebalancelab
// member` process's (process.go) or a member pool's (pool.go). The consumer dials through the
// member's links (Dialers), so that a fault on one member's link leaves the others alone.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/newconsumer"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/zkconsumer"
)

// appLoop is the application's consume loop of a member that commits after what it takes (no
// auto-commit). A graceful stop first ends the loop — the application takes nothing more, and the
// commit of what it took is made — and only then closes the consumer, as Kafka's VerifiableConsumer
// does on a clean shutdown, so that the last commit equals the position.
type appLoop struct {
	done    chan struct{} // closed when a started loop has returned
	mu      sync.Mutex
	ended   bool
	started bool
	cancel  context.CancelFunc // ends the started loop's context
}

func newAppLoop() *appLoop { return &appLoop{done: make(chan struct{})} }

// start marks the loop running and returns its context, which end cancels (Kafka's wakeup()); ok is
// false when the loop was ended first and must not run. A started loop calls finished when it returns.
func (l *appLoop) start(ctx context.Context) (lctx context.Context, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil, false
	}
	l.started = true
	lctx, l.cancel = context.WithCancel(ctx)
	return lctx, true
}

func (l *appLoop) finished() {
	l.mu.Lock()
	l.cancel()
	l.mu.Unlock()
	close(l.done)
}

// end asks the loop to stop and waits until it has (its last commit made), at most d: a commit that
// cannot complete (an unreachable ZooKeeper or coordinator) is cut by closing the consumer after it.
func (l *appLoop) end(d time.Duration) {
	l.mu.Lock()
	l.ended = true
	started := l.started
	if started {
		l.cancel()
	}
	l.mu.Unlock()
	if !started {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}

// appStopWait bounds how long a graceful stop waits for the application's last commit.
const appStopWait = 10 * time.Second

// ---- zk era ----

type zkMember struct {
	cfg   zkconsumer.Config
	topic string
	log   *logrus.Entry
	// commitEach: auto.commit.enable=false, so the application commits after every message it takes
	// (commitOffsets), as an at-least-once application of the 0.8 high-level consumer does.
	commitEach bool
	loop       *appLoop

	mu       sync.Mutex
	c        *zkconsumer.Connector
	stopped  bool
	graceful bool
}

func (z *zkMember) Run(ctx context.Context) error {
	c, err := zkconsumer.New(z.cfg)
	if err != nil {
		return err
	}
	z.mu.Lock()
	if z.stopped { // stopped while New was waiting for a session
		z.mu.Unlock()
		halt(c, z.graceful)
		return nil
	}
	z.c = c
	z.mu.Unlock()
	go func() { // watch-triggered rebalances that failed every attempt; the connector records them
		for err := range c.Errors() {
			z.log.WithError(err).Warn("rebalance failed")
		}
	}()
	streams, err := c.CreateMessageStreams(ctx, map[string]int{z.topic: 1})
	if err != nil {
		z.mu.Lock()
		stopped := z.stopped
		z.mu.Unlock()
		if stopped || errors.Is(err, zkconsumer.ErrShutdown) {
			return nil
		}
		return fmt.Errorf("createMessageStreams: %w", err)
	}
	lctx, ok := z.loop.start(ctx)
	if !ok {
		return nil
	}
	defer z.loop.finished()
	stream := streams[z.topic][0]
	for {
		select {
		case <-lctx.Done():
			return nil
		case _, ok := <-stream: // the connector records each delivery as the application takes it
			if !ok {
				return nil
			}
			if z.commitEach {
				if err := c.CommitOffsets(); err != nil {
					z.log.WithError(err).Warn("commitOffsets failed")
				}
			}
		}
	}
}

func halt(c *zkconsumer.Connector, graceful bool) {
	if graceful {
		c.Shutdown()
	} else {
		c.Crash()
	}
}

func (z *zkMember) Stop(graceful bool) {
	if graceful && z.commitEach {
		z.loop.end(appStopWait)
	}
	z.mu.Lock()
	z.stopped, z.graceful = true, graceful
	c := z.c
	z.mu.Unlock()
	if c != nil {
		halt(c, graceful)
	}
}

func (z *zkMember) ZKSession() int64 {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.c == nil || z.stopped {
		return 0
	}
	return z.c.SessionID()
}

// ---- coordinator eras ----

type coordMember struct {
	c     *newconsumer.Consumer
	topic string
	log   *logrus.Entry
	// commitEach: enable.auto.commit=false, so the application commits the position after every
	// non-empty poll (commitSync()), as Kafka's VerifiableConsumer does without --enable-autocommit.
	commitEach bool
	loop       *appLoop
}

func (m *coordMember) Run(ctx context.Context) error {
	if err := m.c.Subscribe(m.topic); err != nil {
		return err
	}
	// A graceful stop ends the poll (Kafka's wakeup()); records already handed out are committed below.
	pctx, ok := m.loop.start(ctx)
	if !ok {
		return nil
	}
	defer m.loop.finished()
	for {
		// Records are recorded as delivered when Poll hands them out; the application only loops.
		recs, err := m.c.Poll(pctx)
		if err != nil {
			if errors.Is(err, newconsumer.ErrClosed) || pctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("poll: %w", err)
		}
		if m.commitEach && len(recs) > 0 {
			if err := m.c.CommitSync(ctx, nil); err != nil && ctx.Err() == nil && !errors.Is(err, newconsumer.ErrClosed) {
				// VerifiableConsumer logs a failed commit and goes on polling; a fatal error shows in Poll.
				m.log.WithError(err).Warn("commitSync failed")
			}
		}
	}
}

func (m *coordMember) Stop(graceful bool) {
	if graceful && m.commitEach {
		m.loop.end(appStopWait)
	}
	if !graceful {
		m.c.Kill()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = m.c.Close(ctx) // logged by the consumer
}

func (m *coordMember) ZKSession() int64 { return 0 }

func (z *zkMember) OwnProcess() bool    { return false }
func (m *coordMember) OwnProcess() bool { return false }

// ---- construction ----

// Props returns era's consumer properties for member name of group: connect is ZooKeeper's
// zookeeper.connect (zk era) or the brokers' bootstrap.servers; then the lab timing t in ms (unless
// kafkaDefaults: Kafka's own), offsets from the beginning, auto-commit, the era's assignor and
// identity (consumer.id, client.id, group.instance.id when static), then extra, the scenario's own
// overrides, over all of them.
func Props(era, name, group, connect string, t spec.Timing, kafkaDefaults bool, extra map[string]string) map[string]string {
	ms := func(v int64) string { return strconv.FormatInt(v, 10) }
	var p map[string]string
	if spec.Era(era).UsesZooKeeper() {
		p = map[string]string{"group.id": group, "zookeeper.connect": connect, "consumer.id": name,
			"auto.offset.reset": zkconsumer.OffsetResetSmallest, "auto.commit.interval.ms": ms(t.ZKAutoCommitMs)}
		if !kafkaDefaults {
			p["zookeeper.session.timeout.ms"] = ms(t.ZKSessionTimeoutMs)
			p["rebalance.backoff.ms"] = ms(t.RebalanceBackoffMs)
		}
	} else {
		p = map[string]string{"group.id": group, "bootstrap.servers": connect, "client.id": name,
			"auto.offset.reset": "earliest", "auto.commit.interval.ms": ms(t.AutoCommitIntervalMs),
			"partition.assignment.strategy": spec.Era(era).Assignor()}
		if spec.Era(era).Static() {
			p["group.instance.id"] = name
		}
		if !kafkaDefaults {
			p["session.timeout.ms"] = ms(t.SessionTimeoutMs)
			p["heartbeat.interval.ms"] = ms(t.HeartbeatIntervalMs)
		}
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// Dialers are a member's links as its consumer dials them: *lab.MemberLinks (the proxies live in
// this process) or *lab.RoutedLinks (a member process dialling the runner's proxies).
type Dialers interface {
	ZKDialer() zk.Dialer
	Dialer(l lab.Link) wire.DialFunc
}

// GoroutineConfig configures NewGoroutine.
type GoroutineConfig struct {
	Member
	Links Dialers // the member's links: the consumer dials ZooKeeper, coordinator and fetch through them
}

// NewGoroutine builds the era's consumer for one member, run as goroutines of this process, dialling
// through c.Links. A crash is Stop(false) after the caller cut the links. Errors: properties the
// consumer refuses (zkconsumer.FromProperties, newconsumer.FromProperties).
func NewGoroutine(c GoroutineConfig) (Runtime, error) {
	return newConsumer(c.Era, c.Topic, c.Props, c.Links, c.Rec, c.Log)
}

// newConsumer builds the era's client for one member, dialling through its links.
func newConsumer(era, topic string, props map[string]string, links Dialers, rec *timeline.Recorder, log *logrus.Entry) (Runtime, error) {
	if spec.Era(era).UsesZooKeeper() {
		cfg, err := zkconsumer.FromProperties(props)
		if err != nil {
			return nil, err
		}
		cfg.ZKDialer = links.ZKDialer()
		cfg.BrokerDialer = links.Dialer(lab.LinkFetch)
		cfg.Recorder = rec
		cfg.Log = log
		return &zkMember{cfg: cfg, topic: topic, log: log, commitEach: !cfg.AutoCommitEnable, loop: newAppLoop()}, nil
	}
	cfg, err := newconsumer.FromProperties(props)
	if err != nil {
		return nil, err
	}
	cfg.CoordinatorDialer = links.Dialer(lab.LinkCoordinator)
	cfg.FetchDialer = links.Dialer(lab.LinkFetch)
	cfg.Timeline = rec
	cfg.Log = log
	c, err := newconsumer.New(cfg)
	if err != nil {
		return nil, err
	}
	return &coordMember{c: c, topic: topic, log: log, commitEach: !cfg.EnableAutoCommit, loop: newAppLoop()}, nil
}
