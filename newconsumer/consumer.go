// Package newconsumer is the coordinator-era consumer: this project's own client side of Kafka's
// classic group protocol, behaving as Kafka 3.9's Java consumer does (ClassicKafkaConsumer with
// internals.ConsumerCoordinator and AbstractCoordinator): FindCoordinator, JoinGroup with one
// protocol per configured assignor, the leader's assignment (package assignor), SyncGroup, a
// heartbeat goroutine, max.poll.interval.ms, eager and cooperative (KIP-429) rebalancing, static
// membership (KIP-345), auto-commit and commits that carry the generation and member id, offsets
// reset through ListOffsets, and Fetch on connections of its own, separate from the coordinator's.
//
// Threads as in the Java client: the application's goroutine calls Poll, which runs the rebalance
// steps that call the RebalanceListener, commits, and fetches; a heartbeat goroutine keeps the
// session (AbstractCoordinator.HeartbeatThread); a join goroutine carries each JoinGroup/SyncGroup
// round, so that under the cooperative protocol Poll keeps returning records of the partitions the
// member keeps while the group rebalances. Every group request and rebalance step is written to
// the timeline (docs/design.md; the rules are scenarios.Compute's). member_start and member_stop are the
// runner's.
//
// Differences from the Java client, on purpose: no fetch sessions (KIP-227; every Fetch is a full
// one) and Fetch at most v12 (v13+ names topics by id); no rack-aware assignment (the lab's brokers
// have no broker.rack); retry backoffs without jitter; Poll(ctx) returns as soon as records are
// available or ctx ends, instead of taking a timeout; a fatal error (fenced, not authorised) stays
// and every later Poll returns it; a member whose subscription the leader cannot decode gets an
// empty assignment (Java's leader fails its poll), and an assignment this member cannot decode
// makes it rejoin; an OffsetCommit's UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION for a generation the
// member has left is dropped in every state (Java resets unless PREPARING_REBALANCE: its commits never
// cross a JoinGroup on the wire, this consumer's asynchronous auto-commit can). As in the Java client,
// the coordinator connection's answers are applied in the order they arrive (wire.Conn.Ordered), and
// an unreachable coordinator does not stop Poll from fetching: the coordinator lookup runs on a
// goroutine of its own. The assignors' own differences are in package assignor.
package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/sirupsen/logrus"
)

// partitionState is an owned partition's fetch position: the next offset to hand out, -1 until
// initialised from the committed offset or auto.offset.reset.
type partitionState struct {
	position int64
	hwm      int64 // high watermark of the last fetch that answered for it; -1 before one
	reset    bool  // the position was out of range: reset it by auto.offset.reset, not from the commit

	// KIP-320 (SubscriptionState.FetchPosition, validate.go): offsetEpoch is the leader epoch of the
	// record before the position (the last consumed record's batch, or the committed offset's), -1
	// when unknown; leaderID and leaderEpoch are the partition's leader as metadata told it when
	// the position was set or last validated (FetchPosition.currentLeader; -1 when unknown).
	offsetEpoch           int32
	leaderID, leaderEpoch int32
	// awaitValidation: the position waits for an OffsetForLeaderEpoch answer from the current
	// leader before it is fetched (FetchStates.AWAIT_VALIDATION), not sent again before validateAt.
	awaitValidation bool
	validateAt      time.Time
}

// newPartitionState is an assigned partition without a position yet (FetchStates.INITIALIZING).
func newPartitionState() *partitionState {
	return &partitionState{position: -1, hwm: -1, offsetEpoch: -1, leaderID: -1, leaderEpoch: -1}
}

// Consumer is a group member. Poll, CommitSync and Close are meant for one goroutine, as Java's
// KafkaConsumer; CommitSync may also be called from the RebalanceListener.
type Consumer struct {
	cfg       Config
	clientID  string
	log       *logrus.Entry
	tl        *timeline.Recorder
	assignors []assignor.Assignor
	protocol  assignor.RebalanceProtocol
	listener  RebalanceListener

	ctx       context.Context // the consumer's lifetime: cancelled when it has stopped
	cancel    context.CancelFunc
	closing   context.Context // cancelled when Close or Kill starts: interrupts a running Poll
	interrupt context.CancelFunc
	wg        sync.WaitGroup
	wakePoll  chan struct{} // wakes an idle Poll
	wakeHB    chan struct{} // wakes the heartbeat goroutine
	appMu     sync.Mutex    // Poll and Close

	connMu      sync.Mutex
	conns       map[string]*brokerConn // fetch-side connections by address
	connsClosed bool
	// nodeOffset is where brokerAddrs starts in the broker list (NetworkClient's randOffset), drawn
	// once at New.
	nodeOffset int

	mu             sync.Mutex // everything below
	m              *membership
	hb             *heartbeatTimers
	topics         map[string]bool // the subscription
	joinedTopics   map[string]bool // the subscription of the last JoinGroup (joinedSubscription)
	owned          map[TopicPartition]*partitionState
	prev           *assignor.Previous // last assignment, for the assignors' user data
	isLeader       bool
	snapshot       map[string]int32 // the leader's partition counts at assignment (assignmentSnapshot)
	fatal          error            // sticky: Poll returns it (fenced, authorization, ...)
	closed         bool
	coord          *brokerConn
	lookup         *coordLookup    // the running or last coordinator lookup
	join           chan joinResult // the pending JoinGroup/SyncGroup round (joinFuture); nil: none
	joinCancel     context.CancelFunc
	attempt        int // rounds in the current rebalance (rebalance_end's attempt)
	discarded      int // successful JoinGroup/SyncGroup answers thrown away (discardedLocked)
	nextAutoCommit time.Time
	autoCommitting bool // an asynchronous auto-commit is in flight
	meta           *metadata
	metaAt         time.Time
	metaStale      bool
	fetched        []*completedFetch       // records fetched, not yet handed out
	inFlight       map[TopicPartition]bool // partitions with a Fetch in flight
	leaderBusy     map[string]bool         // brokers with a Fetch in flight

	rebalances rebalanceCounts // from the records emitted, for Collector
}

var clientSeq atomic.Int64

// New creates a consumer from cfg (see Config; Validate's errors). It connects to nothing until
// the first Poll; the heartbeat goroutine starts now and idles until the member joins.
func New(cfg Config) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	as := make([]assignor.Assignor, 0, len(cfg.Assignors))
	for _, n := range cfg.Assignors {
		a, _ := assignor.New(n) // Validate checked the names
		as = append(as, a)
	}
	protocol, _ := assignor.ProtocolFor(as)
	clientID := cfg.ClientID
	if clientID == "" {
		clientID = fmt.Sprintf("consumer-%s-%d", cfg.GroupID, clientSeq.Add(1))
	}
	log := cfg.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	log = log.WithFields(logrus.Fields{"group": cfg.GroupID, "client": clientID})
	ctx, cancel := context.WithCancel(context.Background())
	closing, interrupt := context.WithCancel(ctx)
	c := &Consumer{
		cfg: cfg, clientID: clientID, log: log, tl: cfg.Timeline, assignors: as, protocol: protocol,
		listener: cfg.Listener, ctx: ctx, cancel: cancel, closing: closing, interrupt: interrupt,
		wakePoll: make(chan struct{}, 1), wakeHB: make(chan struct{}, 1),
		conns: map[string]*brokerConn{}, m: newMembership(cfg.GroupInstanceID != ""),
		hb: newHeartbeatTimers(&cfg, time.Now()), topics: map[string]bool{}, owned: map[TopicPartition]*partitionState{},
		inFlight: map[TopicPartition]bool{}, leaderBusy: map[string]bool{}, nodeOffset: rand.IntN(1 << 30),
	}
	if c.listener == nil {
		c.listener = ListenerFuncs{}
	}
	c.wg.Add(1)
	go c.heartbeatLoop()
	return c, nil
}

// Protocol is the rebalance protocol the configured assignors share: EAGER or COOPERATIVE.
func (c *Consumer) Protocol() assignor.RebalanceProtocol { return c.protocol }

// Subscribe sets the topics to consume (KafkaConsumer.subscribe); a change takes effect with a
// rebalance at the next Poll. At least one topic, no empty names.
func (c *Consumer) Subscribe(topics ...string) error {
	set := map[string]bool{}
	for _, t := range topics {
		if t == "" {
			return errors.New("newconsumer: Subscribe: empty topic name")
		}
		set[t] = true
	}
	if len(set) == 0 {
		return errors.New("newconsumer: Subscribe: no topics")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.topics = set
	return nil
}

// Assignment returns the partitions the member owns now, sorted.
func (c *Consumer) Assignment() []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownedLocked()
}

// DiscardedRounds is how many successful JoinGroup or SyncGroup answers the member threw away
// because its own state had moved on before it applied them (each also an error record on the
// timeline). A group's rebalance round completed without this member: it rejoins, costing the group
// another round. 0 in a healthy run.
func (c *Consumer) DiscardedRounds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.discarded
}

// EnforceRebalance makes the member rejoin the group at its next Poll, starting a rebalance
// (KafkaConsumer.enforceRebalance(reason), KIP-568): the reason goes in the JoinGroup request
// (KIP-800). It does nothing while a rejoin is already requested (requestRejoinIfNecessary).
func (c *Consumer) EnforceRebalance(reason string) {
	c.mu.Lock()
	if !c.m.rejoinNeeded {
		c.m.requestRejoin("rebalance enforced by user: " + reason)
	}
	c.mu.Unlock()
	c.signal()
}

// MemberID is the member id the coordinator gave this member ("" when it has none), as sent in
// JoinGroup, SyncGroup, Heartbeat and OffsetCommit.
func (c *Consumer) MemberID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.gen.memberID
}

// Generation is the generation id of the member's last completed rebalance (-1 when none), as sent
// in Heartbeat and OffsetCommit.
func (c *Consumer) Generation() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.gen.id
}

func (c *Consumer) ownedLocked() []TopicPartition {
	out := make([]TopicPartition, 0, len(c.owned))
	for tp := range c.owned {
		out = append(out, tp)
	}
	assignor.SortPartitions(out)
	return out
}

func (c *Consumer) emit(r timeline.Record) {
	c.rebalances.note(r)
	c.tl.Emit(r)
}

func (c *Consumer) logLocked() *logrus.Entry {
	return c.log.WithFields(logrus.Fields{"member": c.m.gen.memberID, "generation": c.m.gen.id})
}

// signal wakes the heartbeat goroutine and an idle Poll.
func (c *Consumer) signal() {
	for _, ch := range []chan struct{}{c.wakePoll, c.wakeHB} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func partitionsByTopic(ps []TopicPartition) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range ps {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	return out
}

// Poll runs the member (KafkaConsumer.poll): it finds the coordinator, joins or rejoins the group
// when needed (calling the listener), auto-commits every auto.commit.interval.ms, and fetches. It
// returns as soon as records are available (at most max.poll.records) or when ctx ends (nil,
// ctx.Err()). Errors: ErrClosed; fatal group errors, which every later Poll returns too (kerr's
// FencedInstanceID, GroupAuthorizationFailed, InconsistentGroupProtocol, InvalidSessionTimeout,
// GroupMaxSizeReached, ...); no committed offset with auto.offset.reset=none. Retriable problems
// (coordinator moved or unreachable, a broker down) are retried with retry.backoff.ms.
// Calling Poll is what tells the group the member is alive for max.poll.interval.ms.
func (c *Consumer) Poll(ctx context.Context) ([]Record, error) {
	c.appMu.Lock()
	defer c.appMu.Unlock()
	ctx, stop := c.merge(ctx)
	defer stop()
	for {
		c.mu.Lock()
		closed, fatal, subscribed := c.closed || c.closing.Err() != nil, c.fatal, len(c.topics) > 0
		c.hb.poll(time.Now())
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case fatal != nil:
			return nil, fatal
		case !subscribed:
			return nil, errors.New("newconsumer: Poll: not subscribed to any topic (call Subscribe first)")
		}
		if err := c.coordinatorPoll(ctx); err != nil {
			return nil, err
		}
		if recs := c.drain(); len(recs) > 0 {
			return recs, nil
		}
		posErr := c.updatePositions(ctx)
		var truncated *LogTruncationError
		if posErr != nil && (isFatal(posErr) || errors.As(posErr, &truncated)) {
			return nil, posErr
		}
		// The partitions that have a position are fetched even when another's could not be
		// initialised yet (its committed offset needs the coordinator): Kafka's poll fetches
		// whatever is fetchable.
		fetching, err := c.sendFetches(ctx)
		if err == nil {
			err = posErr
		}
		if ctx.Err() == nil {
			// Until a fetch completes, a round finishes, the heartbeat thread calls, or at most
			// fetch.max.wait.ms (auto-commit and rebalance checks run in between).
			wait := c.cfg.FetchMaxWait
			if !fetching || err != nil {
				wait = c.cfg.RetryBackoff
			}
			c.sleep(ctx, wait)
		}
		if recs := c.drain(); len(recs) > 0 {
			return recs, nil
		}
		if ctx.Err() != nil {
			if c.closing.Err() != nil {
				return nil, ErrClosed
			}
			return nil, ctx.Err()
		}
	}
}

// merge returns ctx, also cancelled when the consumer starts closing.
func (c *Consumer) merge(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// sleep waits d, or less if ctx ends or the consumer is signalled.
func (c *Consumer) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-c.wakePoll:
	}
}

// backoffWait waits d or until ctx ends (Java's timer.sleep(retry.backoff.ms) after a retriable
// failure). Unlike sleep, a signal does not cut it short: the join goroutine signals as it hands
// over each failed round, and a backoff that ended on that signal would retry at once, flooding the
// coordinator with FindCoordinator/JoinGroup requests for as long as it is unavailable.
func (c *Consumer) backoffWait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// drain hands out queued records and writes a deliver record for each.
func (c *Consumer) drain() []Record {
	c.mu.Lock()
	recs := c.drainLocked(c.cfg.MaxPollRecords)
	c.mu.Unlock()
	for _, r := range recs {
		c.emit(timeline.Record{Kind: timeline.Deliver, Topic: r.Topic, Partition: timeline.I32(r.Partition), Offset: timeline.I64(r.Offset)})
	}
	return recs
}

// updatePositions initialises the positions of newly assigned partitions: the committed offset,
// else auto.offset.reset (updateFetchPositions).
func (c *Consumer) updatePositions(ctx context.Context) error {
	if err := c.validatePositions(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	var need, reset []TopicPartition
	for tp, st := range c.owned {
		switch {
		case st.position >= 0:
		case st.reset:
			reset = append(reset, tp)
		default:
			need = append(need, tp)
		}
	}
	c.mu.Unlock()
	if len(need) > 0 {
		assignor.SortPartitions(need)
		committed, err := c.fetchCommitted(ctx, need)
		if err != nil {
			c.log.WithError(err).Debug("committed offsets not fetched")
			return err
		}
		c.mu.Lock()
		for _, tp := range need {
			st := c.owned[tp]
			if st == nil || st.position >= 0 {
				continue
			}
			if off, ok := committed[tp]; ok {
				c.seekUnvalidatedLocked(tp, st, off.offset, off.leaderEpoch)
			} else {
				reset = append(reset, tp)
			}
		}
		c.mu.Unlock()
	}
	if err := c.resetOffsets(ctx, reset); err != nil {
		c.log.WithError(err).Debug("offsets not reset")
		return err
	}
	return nil
}

// coordinatorPoll is ConsumerCoordinator.poll(timer, waitForJoinGroup=false): the rebalance steps,
// then auto-commit. It does not wait for an unknown coordinator (coordinatorReady). It returns only
// fatal errors.
func (c *Consumer) coordinatorPoll(ctx context.Context) error {
	c.maybeRefreshMetadata(ctx)
	if conn, err := c.coordinatorReady(); conn == nil {
		if err != nil && isFatal(err) {
			return c.setFatal(err)
		}
		// The lookup runs on its own goroutine and wakes Poll when it ends; meanwhile the member
		// goes on fetching what it owns. An auto-commit that falls due waits for the lookup on its
		// own goroutine (commitOffsetsAsync with the coordinator unknown).
		if err != nil {
			c.log.WithError(err).Debug("coordinator not available")
		}
		c.maybeAutoCommit()
		return nil
	}
	for c.rejoinNeededOrPending() && ctx.Err() == nil {
		c.mu.Lock()
		pending := c.join
		prepare := pending == nil && c.m.needsJoinPrepare
		if prepare {
			c.m.needsJoinPrepare = false
		}
		c.mu.Unlock()
		if prepare {
			c.onJoinPrepare(ctx)
		}
		if pending == nil {
			pending = c.startJoin()
		}
		// Under COOPERATIVE, a member that keeps partitions goes on fetching while the round runs.
		var res joinResult
		if c.protocol == assignor.Cooperative && len(c.Assignment()) > 0 {
			select {
			case res = <-pending:
			default:
				return nil
			}
		} else {
			select {
			case res = <-pending:
			case <-ctx.Done():
				return nil
			}
		}
		c.mu.Lock()
		c.join, c.joinCancel = nil, nil
		c.mu.Unlock()
		if err := c.handleJoin(ctx, res); err != nil {
			return err
		}
	}
	c.maybeAutoCommit()
	return nil
}

// rejoinNeededOrPending is ConsumerCoordinator.rejoinNeededOrPending: a requested rejoin, a pending
// round, a changed subscription, or (leader only) a partition count change since the assignment.
func (c *Consumer) rejoinNeededOrPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isLeader && c.snapshot != nil && c.meta != nil {
		for t, n := range c.snapshot {
			if ps, ok := c.meta.topics[t]; !ok || int32(len(ps)) != n {
				c.m.requestRejoin("cached metadata has changed")
				c.snapshot = nil
				break
			}
		}
	}
	if c.joinedTopics != nil && !sameSet(c.joinedTopics, c.topics) && !c.m.rejoinNeeded {
		c.m.requestRejoin("subscription has changed")
	}
	return c.m.rejoinNeeded || c.join != nil
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// maybeRefreshMetadata refreshes the subscribed topics' metadata every metadata.max.age.ms (the
// leader then notices partition count changes) or when a fetch found it stale.
func (c *Consumer) maybeRefreshMetadata(ctx context.Context) {
	c.mu.Lock()
	due := c.metaStale || c.meta == nil || time.Since(c.metaAt) >= c.cfg.MetadataMaxAge
	topics := len(c.topics)
	c.mu.Unlock()
	if !due || topics == 0 {
		return
	}
	if _, err := c.refreshMetadata(ctx, c.metadataTopics()); err != nil && ctx.Err() == nil {
		c.log.WithError(err).Debug("metadata refresh failed")
	}
}

// startJoin sends the next JoinGroup round on the join goroutine (initiateJoinGroup).
func (c *Consumer) startJoin() chan joinResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.startJoin()
	c.joinedTopics = map[string]bool{}
	for t := range c.topics {
		c.joinedTopics[t] = true
	}
	req := c.buildJoinLocked()
	sent := c.m.gen
	ctx, cancel := context.WithCancel(c.ctx)
	ch := make(chan joinResult, 1)
	c.join, c.joinCancel = ch, cancel
	c.attempt++
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ch <- c.runJoin(ctx, req, sent)
		c.signal()
	}()
	return ch
}

// onJoinPrepare is ConsumerCoordinator.onJoinPrepare: commit what was consumed (auto-commit), then
// give up partitions: all lost if the generation was reset, all revoked under EAGER, those of
// unsubscribed topics under COOPERATIVE. It starts a rebalance on the timeline.
func (c *Consumer) onJoinPrepare(ctx context.Context) {
	c.emit(timeline.Record{Kind: timeline.RebalanceBegin})
	c.mu.Lock()
	c.attempt = 0
	c.mu.Unlock()
	c.mu.Lock()
	commit := c.cfg.EnableAutoCommit && c.m.state == stable && len(c.owned) > 0
	c.mu.Unlock()
	if commit {
		// The commit gets at most the rebalance timeout, then the member joins anyway.
		cctx, cancel := context.WithTimeout(ctx, c.cfg.MaxPollInterval)
		if err := c.commitSync(cctx, nil); err != nil {
			c.log.WithError(err).Warn("auto-commit before rebalance failed; joining anyway")
		}
		cancel()
	}
	c.mu.Lock()
	d := joinPrepare(c.protocol, c.m.gen, c.ownedLocked(), c.topics)
	c.mu.Unlock()
	if len(d.lose) > 0 {
		c.log.Infof("giving away all assigned partitions as lost since generation/member id has been reset: %v", d.lose)
		c.listener.OnPartitionsLost(d.lose)
	}
	if d.callRevoked {
		c.listener.OnPartitionsRevoked(d.revoke)
	}
	c.mu.Lock()
	c.keepOnlyLocked(d.keep)
	c.isLeader, c.snapshot = false, nil
	c.mu.Unlock()
	if gone := append(append([]TopicPartition{}, d.revoke...), d.lose...); len(gone) > 0 {
		c.emit(timeline.Record{Kind: timeline.Revoked, Partitions: partitionsByTopic(gone)})
	}
}

// keepOnlyLocked drops every owned partition not in keep, with its queued data.
func (c *Consumer) keepOnlyLocked(keep []TopicPartition) {
	in := map[TopicPartition]bool{}
	for _, tp := range keep {
		in[tp] = true
	}
	for tp := range c.owned {
		if !in[tp] {
			delete(c.owned, tp)
		}
	}
}

// handleJoin finishes a round: on success onJoinComplete; on failure the retry the error calls
// for. It returns only fatal errors.
func (c *Consumer) handleJoin(ctx context.Context, res joinResult) error {
	c.mu.Lock()
	attempt := c.attempt
	c.mu.Unlock()
	if err := res.outcome.err; err != nil {
		c.emit(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: attempt})
		switch res.outcome.retry {
		case fatal:
			c.log.WithError(err).Error("rebalance failed")
			return c.setFatal(err)
		case retryBackoff:
			c.log.WithError(err).Info("rebalance failed; retrying")
			c.backoffWait(ctx, c.cfg.RetryBackoff)
		default:
			c.log.WithError(err).Info("rebalance failed; rejoining")
		}
		return nil
	}
	c.onJoinComplete(res, attempt)
	return nil
}

func (c *Consumer) setFatal(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal == nil {
		c.fatal = err
	}
	return c.fatal
}

// onJoinComplete is ConsumerCoordinator.onJoinComplete: take the assignment; under COOPERATIVE
// revoke what it takes away and rejoin; call OnPartitionsAssigned with what it adds.
func (c *Consumer) onJoinComplete(res joinResult, attempt int) {
	assigned, _, err := assignor.DecodeAssignment(res.assignment)
	c.mu.Lock()
	if err == nil && !matchesSubscription(assigned, c.topics) {
		err = fmt.Errorf("newconsumer: received assignment %v does not match the current subscription", assigned)
	}
	if err != nil {
		c.m.requestRejoin(err.Error())
		c.mu.Unlock()
		c.log.WithError(err).Error("rejoining")
		c.emit(timeline.Record{Kind: timeline.Error, Text: err.Error()})
		c.emit(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: attempt})
		return
	}
	d := joinComplete(c.protocol, c.ownedLocked(), assigned)
	c.mu.Unlock()

	if len(d.revoked) > 0 {
		c.listener.OnPartitionsRevoked(d.revoked)
		c.mu.Lock()
		for _, tp := range d.revoked {
			delete(c.owned, tp)
		}
		c.m.requestRejoin(fmt.Sprintf("need to revoke partitions %v and re-join", d.revoked))
		c.mu.Unlock()
		c.emit(timeline.Record{Kind: timeline.Revoked, Partitions: partitionsByTopic(d.revoked)})
	}
	c.mu.Lock()
	next := make(map[TopicPartition]*partitionState, len(assigned))
	for _, tp := range assigned {
		if st := c.owned[tp]; st != nil {
			next[tp] = st
		} else {
			next[tp] = newPartitionState()
		}
	}
	c.owned = next
	c.prev = &assignor.Previous{Partitions: assigned, Generation: res.gen.id}
	c.isLeader = res.leader
	c.snapshot = nil
	if res.leader {
		c.snapshot = res.snapshot
	}
	c.nextAutoCommit = time.Now().Add(c.cfg.AutoCommitInterval)
	c.m.needsJoinPrepare = true // the next rebalance starts with onJoinPrepare again
	c.logLocked().Infof("assigned %v (added %v, revoked %v)", assigned, d.added, d.revoked)
	c.mu.Unlock()
	c.emit(timeline.Record{Kind: timeline.Assigned, Partitions: partitionsByTopic(assigned), Generation: timeline.I32(res.gen.id),
		MemberID: res.gen.memberID})
	c.emit(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: attempt})
	c.listener.OnPartitionsAssigned(d.added)
}

// maybeAutoCommit commits every auto.commit.interval.ms (maybeAutoCommitOffsetsAsync: one try; a
// retriable failure retries after retry.backoff.ms).
func (c *Consumer) maybeAutoCommit() {
	if !c.cfg.EnableAutoCommit {
		return
	}
	now := time.Now()
	c.mu.Lock()
	due := c.m.state == stable && !now.Before(c.nextAutoCommit) && !c.closed && !c.autoCommitting
	if due {
		c.nextAutoCommit = now.Add(c.cfg.AutoCommitInterval)
		c.autoCommitting = true
		c.wg.Add(1) // under mu, with closed checked: shutdown's wg.Wait cannot have started
	}
	offsets, epochs := c.consumedLocked(), c.consumedEpochsLocked()
	c.mu.Unlock()
	if !due {
		return
	}
	// Asynchronous, as ConsumerCoordinator.maybeAutoCommitOffsetsAsync: Poll goes on delivering
	// while the commit is in flight (a stalled coordinator link does not stall the fetch side), and
	// a new auto-commit waits until this one is answered or request.timeout.ms ends it.
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
		defer cancel()
		err := c.commitOnce(ctx, offsets, epochs)
		c.mu.Lock()
		c.autoCommitting = false
		if err != nil && isRetriable(err) {
			c.nextAutoCommit = time.Now().Add(c.cfg.RetryBackoff)
		}
		c.mu.Unlock()
		if err != nil && c.ctx.Err() == nil {
			c.log.WithError(err).Warn("auto-commit failed")
		}
	}()
}

// consumedLocked is SubscriptionState.allConsumed: every owned partition's position.
func (c *Consumer) consumedLocked() map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for tp, st := range c.owned {
		if st.position >= 0 {
			out[tp] = st.position
		}
	}
	return out
}

// consumedEpochsLocked is the leader epoch allConsumed commits with each position (the
// FetchPosition's offsetEpoch; -1 when unknown).
func (c *Consumer) consumedEpochsLocked() map[TopicPartition]int32 {
	out := map[TopicPartition]int32{}
	for tp, st := range c.owned {
		if st.position >= 0 {
			out[tp] = st.offsetEpoch
		}
	}
	return out
}

// CommitSync commits offsets (partition -> next offset to consume) with the member's generation and
// member id, retrying retriable errors after retry.backoff.ms until ctx ends (no deadline:
// default.api.timeout.ms). nil offsets commit the position of every owned partition
// (commitSync()). Errors: ErrRebalanceInProgress (poll, then retry), ErrCommitFailed (the member
// is no longer in the group's generation: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), kerr errors
// (FencedInstanceID, GroupAuthorizationFailed, OffsetMetadataTooLarge, ...), ErrClosed, ctx.Err().
func (c *Consumer) CommitSync(ctx context.Context, offsets map[TopicPartition]int64) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.DefaultAPITimeout)
		defer cancel()
	}
	return c.commitSync(ctx, offsets)
}

func (c *Consumer) commitSync(ctx context.Context, offsets map[TopicPartition]int64) error {
	var epochs map[TopicPartition]int32 // explicit offsets commit no leader epoch (-1)
	if offsets == nil {
		c.mu.Lock()
		offsets, epochs = c.consumedLocked(), c.consumedEpochsLocked()
		c.mu.Unlock()
	}
	for attempt := 0; ; attempt++ {
		err := c.commitOnce(ctx, offsets, epochs)
		if err == nil || !isRetriable(err) {
			return err
		}
		t := time.NewTimer(backoff(c.cfg.RetryBackoff, c.cfg.RetryBackoffMax, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("newconsumer: commit: %w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// heartbeatLoop is AbstractCoordinator.HeartbeatThread: while the member is in a generation it
// heartbeats every heartbeat.interval.ms; no successful heartbeat for session.timeout.ms makes the
// coordinator unknown (rediscovered); no Poll for max.poll.interval.ms makes the member leave the
// group (a static member only forgets its generation), so that its partitions go to others.
func (c *Consumer) heartbeatLoop() {
	defer c.wg.Done()
	for {
		if c.ctx.Err() != nil {
			return
		}
		now := time.Now()
		c.mu.Lock()
		if !c.m.heartbeatEnabled() || c.fatal != nil {
			c.mu.Unlock()
			c.waitHeartbeat(time.Hour)
			continue
		}
		conn := c.coord
		switch {
		case conn == nil:
			c.mu.Unlock()
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
			if _, err := c.ensureCoordinator(ctx); err != nil {
				c.waitHeartbeat(c.cfg.RetryBackoff)
			}
			cancel()
		case c.hb.sessionExpired(now):
			c.markCoordinatorUnknownLocked(conn, "session timed out without receiving a heartbeat response")
			c.mu.Unlock()
		case c.hb.pollExpired(now):
			c.logLocked().Warn("consumer poll timeout has expired: the time between Poll calls exceeded max.poll.interval.ms; leaving the group")
			send, memberID := c.m.leaveGroup(true, "consumer poll timeout has expired.")
			c.mu.Unlock()
			c.signal()
			if send {
				ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
				c.sendLeave(ctx, memberID, "consumer poll timeout has expired.")
				cancel()
			}
		case !c.hb.shouldHeartbeat(now):
			wait := c.hb.next().Sub(now)
			c.mu.Unlock()
			c.waitHeartbeat(wait)
		default:
			c.hb.sent(now)
			gen := c.m.gen
			// Bounded by the session: no answer before it ends means the coordinator is unknown.
			timeout := c.hb.sessionEnd.Sub(now)
			if timeout > c.cfg.RequestTimeout {
				timeout = c.cfg.RequestTimeout
			}
			c.mu.Unlock()
			failed := c.heartbeat(c.ctx, conn, gen, timeout)
			if c.ctx.Err() != nil {
				return
			}
			if failed {
				c.signal() // Poll may have to rejoin
			}
		}
	}
}

func (c *Consumer) waitHeartbeat(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
	case <-t.C:
	case <-c.wakeHB:
	}
}

// Close leaves the group gracefully (KafkaConsumer.close / ConsumerCoordinator.close): it commits
// what was consumed (auto-commit), calls OnPartitionsRevoked (or OnPartitionsLost if the member was
// mid-rebalance or fenced), sends LeaveGroup unless the member is static (KIP-345: a static member
// keeps its place until session.timeout.ms), and closes every connection. Bounded by ctx (no
// deadline: default.api.timeout.ms). A running Poll returns ErrClosed first. Not from a
// RebalanceListener (it waits for the Poll that calls it). It returns nil: a failed commit or
// LeaveGroup is logged, as Java's close does. Safe to call twice.
func (c *Consumer) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if c.joinCancel != nil {
		c.joinCancel() // an unfinished round is abandoned (its JoinGroup interrupted)
	}
	c.mu.Unlock()
	c.interrupt() // a running Poll returns
	c.appMu.Lock()
	defer c.appMu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.DefaultAPITimeout)
		defer cancel()
	}
	c.mu.Lock()
	stableNow := c.m.state == stable
	c.mu.Unlock()
	if c.cfg.EnableAutoCommit && stableNow {
		if err := c.commitSync(ctx, nil); err != nil {
			c.log.WithError(err).Warn("auto-commit on close failed")
		}
	}
	c.mu.Lock()
	revoke, lose := leavePrepare(c.m, c.ownedLocked())
	c.mu.Unlock()
	if len(lose) > 0 {
		c.listener.OnPartitionsLost(lose)
	}
	if len(revoke) > 0 {
		c.listener.OnPartitionsRevoked(revoke)
	}
	if gone := append(append([]TopicPartition{}, revoke...), lose...); len(gone) > 0 {
		c.emit(timeline.Record{Kind: timeline.Revoked, Partitions: partitionsByTopic(gone)})
	}
	c.mu.Lock()
	c.owned = map[TopicPartition]*partitionState{}
	send, memberID := c.m.leaveGroup(true, "the consumer is being closed")
	c.mu.Unlock()
	if send {
		c.sendLeave(ctx, memberID, "the consumer is being closed")
	}
	c.shutdown()
	return nil
}

// Kill stops the consumer without a goodbye, as a killed process: no commit, no listener call, no
// LeaveGroup; its connections are closed. The group notices through session.timeout.ms. For crash
// scenarios; Close after Kill does nothing.
func (c *Consumer) Kill() {
	c.shutdown()
}

func (c *Consumer) shutdown() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if c.coord != nil {
		_ = c.coord.Close()
		c.coord = nil
	}
	c.mu.Unlock()
	c.interrupt()
	c.cancel()
	c.wg.Wait()
	c.connMu.Lock()
	c.connsClosed = true
	for a, conn := range c.conns {
		_ = conn.Close()
		delete(c.conns, a)
	}
	c.connMu.Unlock()
	c.mu.Lock()
	if c.coord != nil { // found again while stopping
		_ = c.coord.Close()
		c.coord = nil
	}
	c.mu.Unlock()
}
