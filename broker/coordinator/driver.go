package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsLog is the __consumer_offsets topic as the coordinator uses it; the broker plugs its storage
// in here. Append writes batches (v2 RecordBatches made by EncodeBatch, in the order the core asked
// for them) to partition's log and returns one error per batch (nil: that batch is in the log); it
// must return only once they are written: the coordinator acknowledges a commit only after that.
// Appends that queued up while the previous one was being written come in one call, so a log that
// writes them with one write (and, with log.flush.interval.messages=1, one fsync) lets commits that
// arrive together share one fsync. A batch the log refuses (larger than its maximum message size:
// kerr.MessageTooLarge) fails alone. ReadAll calls fn for every
// record of partition in log order (DecodeBatches does the decoding for a log that stores batches as
// received); a nil value is a tombstone. A missing partition reads as empty. Both are called without
// the coordinator's lock, from different goroutines: concurrently for different partitions, never
// concurrently for one partition, and one partition's appends in the order the core asked for them.
type OffsetsLog interface {
	Append(partition int32, batches [][]byte) []error
	ReadAll(partition int32, fn func(key, value []byte) error) error
}

// ErrClosed is returned by Handle after Close, and to requests still parked when Close runs.
var ErrClosed = errors.New("group coordinator closed")

type clientInfoKey struct{}

type clientInfo struct{ id, host string }

// ContextWithClient attaches the request header's client id and the client's address to ctx for
// Handle; JoinGroup records them on the member (DescribeGroups shows them). host is printed as Kafka
// does (InetAddress.toString): pass "/127.0.0.1" for a client at 127.0.0.1.
func ContextWithClient(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, clientInfo{clientID, host})
}

type result struct {
	resp kmsg.Response
	err  error
}

// appendQueue holds one __consumer_offsets partition's appends that the core asked for and the log
// has not finished, oldest first; one persist goroutine at a time works through it.
type appendQueue struct {
	pending []Append
	running bool          // a persist goroutine owns the queue
	idle    chan struct{} // closed when that goroutine stops (the queue is empty or the driver closed)
}

// Coordinator runs a Core for the broker: it implements the broker's GroupHandler
// (Handle(ctx, kmsg.Request) (kmsg.Response, error)), turns the core's timers into real timers and
// its appends into OffsetsLog appends, and answers each Handle call once the core has a response.
//
// One lock guards the core. Log appends run outside it, as etcd's raft persists a Ready's entries
// outside the state machine: an Append effect is queued for its partition, a goroutine writes it
// and then steps AppendCompleted into the core. So a slow append (a disk that stalls, an fsync per
// append) holds up only what depends on it — the commit or SyncGroup waiting for that record and the
// partition's later appends — never other groups' requests, as in Kafka, where an append holds only
// its group's lock.
type Coordinator struct {
	mu      sync.Mutex
	core    *Core
	olog    OffsetsLog
	log     *logrus.Entry
	nextReq RequestID
	waiting map[RequestID]chan result
	timers  map[TimerID]*time.Timer
	appends map[int32]*appendQueue
	// appendLimit bounds one OffsetsLog.Append (bytes): maxAppendBytes and offsets.topic.segment.bytes.
	appendLimit int
	closed      bool
	// wg counts the goroutines the driver started (persist goroutines, timer callbacks that were due
	// when stopped); Close waits for them. Add is only called with mu held and closed false.
	wg sync.WaitGroup

	clientInfo func(context.Context) (string, string)
	observer   *groupObserver // nil without Config.OnGroupChange
}

// Start creates the coordinator, activates it and loads the __consumer_offsets partitions it
// coordinates from olog: every partition, or with cfg.CoordinatorFor set those whose leader is
// cfg.Node. Groups and committed offsets come back as Kafka 3.9 restores them (see
// Core.CompleteLoad); requests for a partition still loading get COORDINATOR_LOAD_IN_PROGRESS.
// Records that cannot be decoded are skipped and logged; a failing ReadAll is returned as an error
// after the partition is handed over with what was read (ctx ends the load early the same way).
func Start(ctx context.Context, cfg Config, olog OffsetsLog, log *logrus.Entry) (*Coordinator, error) {
	if olog == nil {
		return nil, errors.New("group coordinator: nil OffsetsLog")
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("group coordinator: seed: %w", err)
	}
	cfg.ObserveGroups = cfg.OnGroupChange != nil
	core, err := NewCore(cfg, logrusLogger{log}, binary.LittleEndian.Uint64(seed[:]))
	if err != nil {
		return nil, err
	}
	c := &Coordinator{
		core:        core,
		olog:        olog,
		log:         log,
		waiting:     map[RequestID]chan result{},
		timers:      map[TimerID]*time.Timer{},
		appends:     map[int32]*appendQueue{},
		clientInfo:  cfg.ClientInfo,
		appendLimit: min(maxAppendBytes, int(cfg.OffsetsTopicSegmentBytes)),
	}
	if cfg.OnGroupChange != nil {
		c.observer = startGroupObserver(cfg.OnGroupChange)
	}
	c.mu.Lock()
	c.apply(core.Startup(time.Now()))
	c.mu.Unlock()
	var errs []error
	for p := int32(0); p < cfg.OffsetsTopicNumPartitions; p++ {
		if cfg.CoordinatorFor != nil {
			if n, ok := cfg.CoordinatorFor(p); !ok || n.ID != cfg.Node.ID {
				continue
			}
		}
		if err := c.OnElection(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// Stats is Core.Stats under the driver's lock (held only to count: no I/O).
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Stats()
}

// OnElection loads __consumer_offsets partition p and starts coordinating its groups
// (GroupCoordinator.onElection): BeginElection, then LoadPartition. The log is read without holding
// up other partitions' requests.
func (c *Coordinator) OnElection(ctx context.Context, p int32) error {
	began, err := c.BeginElection(p)
	if err != nil || !began {
		return err
	}
	return c.LoadPartition(ctx, p)
}

// BeginElection marks partition p as loading without reading it, so requests for its groups get
// COORDINATOR_LOAD_IN_PROGRESS from now on (GroupMetadataManager.scheduleLoadGroupAndOffsets adds
// the partition to loadingPartitions at once and reads it on a scheduler thread). It never blocks
// on I/O: the broker's leadership listener calls it, then LoadPartition elsewhere. false when p is
// already loading or loaded; ErrClosed after Close.
func (c *Coordinator) BeginElection(p int32) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, ErrClosed
	}
	return c.core.BeginLoad(p), nil
}

// LoadPartition reads partition p (marked by BeginElection) and hands its groups and offsets to the
// coordinator. Appends to p still under way from an earlier term are finished first. If p was
// resigned meanwhile (OnResignation), what was read is dropped.
func (c *Coordinator) LoadPartition(ctx context.Context, p int32) error {
	start := time.Now()
	var recs []KV
	readErr := c.awaitAppends(ctx, p)
	if readErr == nil {
		readErr = c.olog.ReadAll(p, func(key, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			kv := KV{Key: append([]byte(nil), key...)}
			if value != nil {
				kv.Value = append([]byte{}, value...)
			}
			recs = append(recs, kv)
			return nil
		})
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	l := c.log.WithField("partition", p)
	if !c.core.loading[p] {
		l.Debug("partition resigned while loading; dropping what was read")
		return nil
	}
	effects, loadErr := c.core.CompleteLoad(time.Now(), p, recs)
	c.apply(effects)
	if loadErr != nil {
		l.WithError(loadErr).Error("skipped undecodable records while loading offsets and group metadata")
	}
	if readErr != nil {
		l.WithError(readErr).Error("reading offsets and group metadata failed; loaded what was read")
		return fmt.Errorf("group coordinator: load %s-%d: %w", OffsetsTopic, p, readErr)
	}
	l.Debugf("loaded %d records of %s-%d in %s", len(recs), OffsetsTopic, p, time.Since(start))
	return nil
}

// OnResignation stops coordinating partition p's groups (GroupCoordinator.onResignation); their
// parked JoinGroups and SyncGroups get NOT_COORDINATOR.
func (c *Coordinator) OnResignation(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.apply(c.core.Unload(time.Now(), p))
}

// Handle answers one group-API request (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete) for the version
// req carries. It blocks until the coordinator has the response — a JoinGroup until the join phase
// ends, a SyncGroup until the leader's assignment is stored, an OffsetCommit until its records are
// appended — or until ctx ends (ctx.Err(); the coordinator carries on as Kafka does when a client
// goes away). Group errors are in the response; the error return is only for requests with no
// answer: ErrNotGroupAPI, ErrUnsupportedVersion, ErrClosed, ctx.Err().
func (c *Coordinator) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ci, ok := ctx.Value(clientInfoKey{}).(clientInfo)
	if !ok && c.clientInfo != nil {
		ci.id, ci.host = c.clientInfo(ctx)
	}
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.nextReq++
	id := c.nextReq
	c.waiting[id] = ch
	c.apply(c.core.Step(time.Now(), RequestEvent{ID: id, Request: req, ClientID: ci.id, ClientHost: ci.host}))
	c.mu.Unlock()

	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
		select {
		case r := <-ch:
			return r.resp, r.err
		default:
		}
		return nil, ctx.Err()
	}
}

// apply carries out effects in order. Responses and timers take effect at once; an Append is queued
// for its partition and written by persist outside c.mu, which then steps AppendCompleted: the
// responses that wait for the record (OffsetCommit, the SyncGroups of a generation) come from that
// step, so they still leave only once the record is in the log. Called with c.mu held and c.closed
// false.
func (c *Coordinator) apply(effects []Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case Respond:
			if ch, ok := c.waiting[e.ID]; ok {
				delete(c.waiting, e.ID)
				ch <- result{e.Response, e.Err}
			}
		case SetTimer:
			id := e.Timer
			c.wg.Add(1)
			c.timers[id] = time.AfterFunc(e.After, func() {
				defer c.wg.Done()
				c.fire(id)
			})
		case CancelTimer:
			if t, ok := c.timers[e.Timer]; ok {
				if t.Stop() {
					c.wg.Done() // its callback will never run
				}
				delete(c.timers, e.Timer)
			}
		case GroupChanged:
			if c.observer != nil {
				c.observer.add(e)
			}
		case Append:
			q := c.appends[e.Partition]
			if q == nil {
				q = &appendQueue{}
				c.appends[e.Partition] = q
			}
			q.pending = append(q.pending, e)
			if !q.running {
				q.running, q.idle = true, make(chan struct{})
				c.wg.Add(1)
				go c.persist(q)
			}
		}
	}
}

// maxAppendBytes bounds the batches persist hands the log in one Append (bytes), with
// offsets.topic.segment.bytes; a single batch larger than the bound still goes alone.
const maxAppendBytes = 1 << 20

// persist writes q's appends in order outside c.mu — every append queued when the previous write
// ended goes in one OffsetsLog.Append, up to maxAppendBytes and offsets.topic.segment.bytes — and steps each one's AppendCompleted
// into the core, in order (its effects may queue more appends). It stops when q is empty or the
// driver closed; after Close, appends not yet started are dropped: nobody was told they were written.
func (c *Coordinator) persist(q *appendQueue) {
	defer c.wg.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && len(q.pending) > 0 {
		n, size := 0, 0
		for n < len(q.pending) && (n == 0 || size+len(q.pending[n].Batch) <= c.appendLimit) {
			size += len(q.pending[n].Batch)
			n++
		}
		run := q.pending[:n:n]
		q.pending = q.pending[n:]
		batches := make([][]byte, n)
		for i, e := range run {
			batches[i] = e.Batch
		}
		partition := run[0].Partition
		c.mu.Unlock()
		errs := c.olog.Append(partition, batches)
		c.mu.Lock()
		if len(errs) != n {
			err := fmt.Errorf("coordinator: OffsetsLog.Append returned %d errors for %d batches", len(errs), n)
			c.log.WithError(err).Error("append to " + OffsetsTopic)
			errs = make([]error, n)
			for i := range errs {
				errs[i] = err
			}
		}
		for i, e := range run {
			if errs[i] != nil {
				c.log.WithError(errs[i]).WithField("partition", e.Partition).Errorf("append to %s failed", OffsetsTopic)
			}
			if c.closed {
				break
			}
			c.apply(c.core.Step(time.Now(), AppendCompleted{ID: e.ID, Err: errs[i]}))
		}
	}
	q.pending = nil
	q.running = false
	close(q.idle)
}

// awaitAppends waits until partition p has no append under way (the log is not read while it is
// written); ctx.Err() if ctx ends first.
func (c *Coordinator) awaitAppends(ctx context.Context, p int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q := c.appends[p]; q != nil && q.running; q = c.appends[p] {
		idle := q.idle
		c.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			c.mu.Lock()
			return ctx.Err()
		}
		c.mu.Lock()
	}
	return nil
}

func (c *Coordinator) fire(id TimerID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if _, ok := c.timers[id]; !ok {
		return // cancelled while this callback waited for the lock
	}
	delete(c.timers, id)
	c.apply(c.core.Step(time.Now(), TimerFired{Timer: id}))
}

// Close stops the coordinator: timers are stopped, requests still parked get ErrClosed, and Close
// returns once every goroutine the coordinator started has: an append under way is finished (an
// OffsetsLog append cannot be interrupted), appends not yet started are dropped. Nothing
// acknowledged is lost: commits were acknowledged only once appended.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.core.Shutdown()
	for id, t := range c.timers {
		if t.Stop() {
			c.wg.Done()
		}
		delete(c.timers, id)
	}
	for id, ch := range c.waiting {
		delete(c.waiting, id)
		ch <- result{nil, ErrClosed}
	}
	c.mu.Unlock()
	c.wg.Wait()
	if c.observer != nil {
		c.observer.close() // after the last effect was applied
	}
	return nil
}

// GroupAPIVersions lists the group APIs with Kafka 3.9's version ranges (APIVersions), for the
// broker's ApiVersions response (the broker's GroupAPIVersioner).
func (c *Coordinator) GroupAPIVersions() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, a := range APIVersions() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		out = append(out, k)
	}
	return out
}

// Group returns a snapshot of a group (false when unknown).
func (c *Coordinator) Group(id string) (GroupInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Group(id)
}

// CommittedOffset returns a group's committed offset for topic-partition (false when none).
func (c *Coordinator) CommittedOffset(groupID, topic string, partition int32) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.CommittedOffset(groupID, topic, partition)
}

// Faults returns the internal errors the core recovered from (see Core.Faults).
func (c *Coordinator) Faults() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.core.Faults()
}

// logrusLogger is the Logger Start gives the core: a line's key/value pairs become the entry's fields.
type logrusLogger struct{ e *logrus.Entry }

func (l logrusLogger) Debug(msg string, keyvals ...any) { l.log(logrus.DebugLevel, msg, keyvals) }
func (l logrusLogger) Info(msg string, keyvals ...any)  { l.log(logrus.InfoLevel, msg, keyvals) }
func (l logrusLogger) Warn(msg string, keyvals ...any)  { l.log(logrus.WarnLevel, msg, keyvals) }
func (l logrusLogger) Error(msg string, keyvals ...any) { l.log(logrus.ErrorLevel, msg, keyvals) }

func (l logrusLogger) log(level logrus.Level, msg string, keyvals []any) {
	if !l.e.Logger.IsLevelEnabled(level) {
		return
	}
	fields := make(logrus.Fields, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields[fmt.Sprint(keyvals[i])] = keyvals[i+1]
	}
	l.e.WithFields(fields).Log(level, msg)
}
