package zkconsumer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// The rebalance driver: the one rebalance goroutine (the watcher executor thread), the watch
// listeners that wake it, and the execution of the rebalance core's effects — ZooKeeper requests
// through zkConn (which records each as a zk_op), the fetchers, the commits, the listener calls,
// the back-off timer.

// syncedRebalance runs one syncedRebalance of the core (rebalance_core.go): up to
// rebalance.max.retries attempts, rebalance.backoff.ms apart. Records rebalance_begin once, then
// rebalance_end{ok, attempt} after every attempt (the rebalance_attempts figure); a rebalance cut
// short by Shutdown records no end for the attempt it did not finish. Errors: ErrShutdown, or
// ErrRebalanceFailed wrapping the last attempt's error.
func (c *Connector) syncedRebalance() error {
	c.mu.Lock()
	owned := keys(c.topicRegistry)
	c.mu.Unlock()
	effects := c.core.Step(evStart{Owned: owned}, time.Now())
	for {
		var result coreEvent
		for _, e := range effects {
			if fin, ok := e.(effFinished); ok {
				return fin.Err
			}
			if r := c.execute(e); r != nil {
				result = r
			}
		}
		if result == nil {
			// Unreachable: every effect slice ends in a request or effFinished.
			return fmt.Errorf("zkconsumer: rebalance core stopped without finishing (last effects %v)", effects)
		}
		effects = c.core.Step(result, time.Now())
	}
}

// execute carries out one effect of the core; a request's result is returned as the next event.
func (c *Connector) execute(e coreEffect) coreEvent {
	switch e := e.(type) {
	case effObserve:
		return evObserved{Session: c.zk.conn.SessionID(), Closing: c.closing.Load()}
	case effReadChildren:
		kids, err := c.zk.children(e.Path)
		return evChildren{kids, err}
	case effReadData:
		data, err := c.zk.get(e.Path)
		return evData{data, err}
	case effReadStat:
		_, st, err := c.zk.getStat(e.Path)
		r := evStat{Err: err}
		if st != nil {
			r.Owner = st.EphemeralOwner
		}
		r.Session = c.zk.conn.SessionID()
		return r
	case effCreateOwner:
		return evCreated{c.zk.createOwner(e.Path, e.Thread)}
	case effRecordOwnerWrite:
		c.zk.recordOwnerWrite(e.Path, e.Result)
	case effDelete:
		return evDone{c.zk.delete(e.Path)}
	case effReleaseOwner:
		err := c.zk.delete(e.Path)
		if err == nil {
			c.mu.Lock()
			delete(c.topicRegistry, e.Partition)
			c.mu.Unlock()
		}
		return evDone{err}
	case effSubscribeChildren:
		return evDone{c.zk.subscribeChildChanges(e.Path)}
	case effFetchKafkaOffsets:
		offsets, err := c.fetchOffsetsFromKafka(c.ctx, e.Partitions)
		return evOffsets{offsets, err}
	case effBeforeReleasing:
		return evDone{c.callListener(func(l RebalanceListener) { l.BeforeReleasingPartitions(e.Owned) })}
	case effBeforeStarting:
		return evDone{c.callListener(func(l RebalanceListener) { l.BeforeStartingFetchers(c.consumerID, e.Assignment) })}
	case effBackoff:
		select {
		case <-time.After(e.After):
		case <-c.ctx.Done(): // the next attempt observes the shutdown
		}
		return evTimerFired{}
	case effRecord:
		c.emit(e.Record)
	case effStopFetchers:
		c.fetcher.stop()
		queues := c.allQueues
		if !e.All {
			topics := map[string]bool{}
			for _, t := range e.Topics {
				topics[t] = true
			}
			queues = c.queuesOf(topics)
		}
		for _, q := range queues {
			q.clearQueue()
		}
	case effCommitOffsets:
		if err := c.CommitOffsets(); err != nil {
			c.log.WithError(err).Warn("commit before release failed")
		}
	case effRecordRevoked:
		c.emitRevoked()
	case effInstall:
		c.install(e.Partitions)
	case effStartFetchers:
		c.mu.Lock()
		infos := make([]*partitionInfo, 0, len(c.topicRegistry))
		for _, tp := range keys(c.topicRegistry) {
			infos = append(infos, c.topicRegistry[tp])
		}
		c.mu.Unlock()
		c.fetcher.start(infos)
	case effLog:
		c.log.WithFields(e.Fields).Log(e.Level, e.Msg)
	}
	return nil
}

// install makes the partitions of a successful attempt this member's (its owner znodes exist):
// the registry the fetchers and commits use, recorded as assigned before any commit can include
// them (commitMu orders this against a concurrent commit's records; a Kafka commit sends every
// owned partition).
func (c *Connector) install(parts []installedPartition) {
	registry := map[TopicPartition]*partitionInfo{}
	tps := make([]TopicPartition, 0, len(parts))
	for _, p := range parts {
		q, err := c.queueFor(p.Partition.Topic, p.Thread)
		if err != nil { // the core checked every owner thread's stream
			panic(fmt.Sprintf("zkconsumer: rebalance core installed %s without a stream: %v", p.Partition, err))
		}
		registry[p.Partition] = newPartitionInfo(p.Partition, q, p.Offset)
		tps = append(tps, p.Partition)
	}
	c.commitMu.Lock()
	c.mu.Lock()
	c.topicRegistry = registry
	c.delivering = keys(registry) // a failed listener call after this still ends in a revoked record
	for tp, pi := range registry {
		c.checkpointed[tp] = pi.consumed.Load()
	}
	c.mu.Unlock()
	c.emit(timeline.Record{Kind: timeline.Assigned, Partitions: partitionsByTopic(tps)})
	c.commitMu.Unlock()
}

// callListener calls the RebalanceListener, if any; a panic is the attempt's error.
func (c *Connector) callListener(call func(RebalanceListener)) (err error) {
	if c.cfg.Listener == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rebalance listener panicked: %v", r)
		}
	}()
	call(c.cfg.Listener)
	return nil
}

// newCore configures the rebalance core for the subscription (set by CreateMessageStreams*).
func (c *Connector) newCore() *rebalanceCore {
	cfg := coreConfig{
		consumerID:      c.consumerID,
		groupID:         c.cfg.GroupID,
		maxRetries:      c.cfg.RebalanceMaxRetries,
		backoff:         time.Duration(c.cfg.RebalanceBackoffMs) * time.Millisecond,
		roundRobin:      c.cfg.PartitionAssignmentStrategy == StrategyRoundRobin,
		excludeInternal: c.cfg.ExcludeInternalTopics,
		autoCommit:      c.cfg.AutoCommitEnable,
		kafkaOffsets:    c.cfg.OffsetsStorage == OffsetsStorageKafka,
		listener:        c.cfg.Listener != nil,
	}
	if c.filter == nil {
		cfg.streams = map[string]int{}
		for t, qs := range c.queues {
			cfg.streams[t] = len(qs)
		}
	} else {
		cfg.wildcardStreams = len(c.wildQueues)
	}
	return newRebalanceCore(cfg)
}

// ---- the watcher executor ----

type initRequest struct {
	fn    func() error
	reply chan error
}

// run is the one rebalance goroutine (the watcher executor thread): it serves the initial
// rebalance, then one syncedRebalance per wake-up however many events came meanwhile (events
// collapse into one rebalance).
func (c *Connector) run() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case req := <-c.initial:
			if c.ctx.Err() != nil { // shutdown began as the request came: no ZooKeeper call now
				req.reply <- ErrShutdown
				return
			}
			req.reply <- req.fn()
		case <-c.wake:
			c.flagMu.Lock()
			session, topics, rebalance := c.flagSession, c.flagTopics, c.flagRebalance
			c.flagSession, c.flagTopics, c.flagRebalance = false, false, false
			c.flagMu.Unlock()
			switch {
			case session:
				c.handleNewSession()
			case topics && c.handleTopicEvent():
				c.watchTriggered(c.reinitializeConsumer)
			case rebalance:
				c.watchTriggered(c.syncedRebalance)
			}
		}
	}
}

// onChildChange is the child listeners' callback: ZKRebalancerListener (/consumers/<g>/ids and,
// once no broker was found, /brokers/ids) and ZkTopicEventListener (/brokers/topics). Sets a flag.
func (c *Connector) onChildChange(path string) {
	switch path {
	case c.idsPath, brokerIdsPath:
		c.signal(func() { c.flagRebalance = true })
	case brokerTopicsPath:
		c.signal(func() { c.flagTopics = true })
	}
}

// onDataChange is ZKTopicPartitionChangeListener: a topic's partition map changed (or the topic
// appeared). A deleted topic is only logged (handleDataDeleted; 0.8.2 does not handle deletion).
func (c *Connector) onDataChange(path string, deleted bool) {
	if deleted {
		c.log.WithField("topic", strings.TrimPrefix(path, brokerTopicsPath+"/")).Warn("topic path deleted")
		return
	}
	c.signal(func() { c.flagRebalance = true })
}

func (c *Connector) signal(set func()) {
	c.flagMu.Lock()
	set()
	c.flagMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// watchTriggered runs a rebalance that no caller waits for: a failure is reported.
func (c *Connector) watchTriggered(rebalance func() error) {
	if err := rebalance(); err != nil && !errors.Is(err, ErrShutdown) {
		c.reportFailure(err)
	}
}

// reportFailure logs, records and reports a watch-triggered failure on the error channel.
func (c *Connector) reportFailure(err error) {
	if c.closing.Load() {
		return
	}
	c.log.WithError(err).Error("rebalance failed")
	c.emit(timeline.Record{Kind: timeline.Error, Text: err.Error()})
	select {
	case c.errs <- err:
	default:
		c.log.Warn("error channel full; dropping the error")
	}
}

// reinitializeConsumer subscribes to the group's ids (ZKRebalancerListener) and to the data of
// every consumed topic (ZKTopicPartitionChangeListener), then runs syncedRebalance. A wildcard
// subscription's topics are listed from /brokers/topics (WildcardTopicCount); subscriptions are
// never dropped, as in 0.8.2.
func (c *Connector) reinitializeConsumer() error {
	if err := c.zk.subscribeChildChanges(c.idsPath); err != nil {
		return fmt.Errorf("zkconsumer: watching %s: %w", c.idsPath, err)
	}
	var topics []string
	if c.filter == nil {
		for t := range c.subscription {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	} else {
		all, err := c.zk.childrenMayNotExist(brokerTopicsPath)
		if err != nil {
			return fmt.Errorf("zkconsumer: listing %s: %w", brokerTopicsPath, err)
		}
		topics = c.allowedTopics(all)
	}
	for _, t := range topics {
		if err := c.zk.subscribeDataChanges(brokerTopicsPath + "/" + t); err != nil {
			return fmt.Errorf("zkconsumer: watching topic %s: %w", t, err)
		}
	}
	return c.syncedRebalance()
}

// handleTopicEvent is ZkTopicEventListener.handleChildChange + WildcardStreamsHandler.
// handleTopicEvent: list /brokers/topics; true when the allowed topics changed.
func (c *Connector) handleTopicEvent() bool {
	if c.filter == nil {
		return false
	}
	all, err := c.zk.childrenMayNotExist(brokerTopicsPath)
	if err != nil {
		c.log.WithError(err).Error("error in handling child changes")
		return false
	}
	now := c.allowedTopics(all)
	if strings.Join(now, ",") == strings.Join(c.wildcardTopics, ",") {
		return false
	}
	c.log.WithFields(logrus.Fields{"before": c.wildcardTopics, "after": now}).Info("topic event")
	c.wildcardTopics = now
	return true
}
