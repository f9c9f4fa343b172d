package zkconsumer

// Registration and the ZooKeeper session: registerConsumerInZK (as 0.9's ZKCheckedEphemeral), the
// session events, and ZKSessionExpireListener.handleNewSession.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// register is registerConsumerInZK: the ephemeral ids znode with the subscription JSON, created
// as 0.9's ZKCheckedEphemeral does (KAFKA-1387, zkConn.createEphemeralChecked): a node owned by the
// current session is ours — a create that succeeded before a connection loss, or a registration
// already made in this session. (0.8.2.2 compared the node's bytes with its own, whose timestamp is
// always new, and so waited forever for its own node to go.) A node owned by another session may be
// our expired session's, which ZooKeeper has yet to delete (ZOOKEEPER-1740), or another connector's
// with the same consumer.id: as 0.8.2's createEphemeralPathExpectConflictHandleZKBug, back off
// zookeeper.session.timeout.ms — each back-off recorded as an error — and try again until it is
// gone. On success c.session is the session that owns the registration. Errors: ErrShutdown, or the
// server's error for the ids path.
func (c *Connector) register() error {
	data, err := json.Marshal(Registration{Version: 1, Subscription: c.subscription, Pattern: c.pattern, Timestamp: strconv.FormatInt(time.Now().UnixMilli(), 10)})
	if err != nil {
		return err
	}
	path := c.idsPath + "/" + c.consumerID
	for {
		owner, err := c.zk.createEphemeralChecked(path, data)
		switch {
		case err == nil:
			c.session = owner
			c.log.WithField("session", fmt.Sprintf("%#x", owner)).Info("registered consumer in ZooKeeper")
			return nil
		case errors.Is(err, ErrShutdown):
			return ErrShutdown
		case !errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("zkconsumer: registering %s: %w", path, err)
		}
		text := fmt.Sprintf("registration node exists: %s is owned by session %#x; backing off %d ms", path, owner, c.cfg.ZooKeeperSessionTimeoutMs)
		c.log.Warn(text)
		c.emit(timeline.Record{Kind: timeline.Error, Text: text})
		select {
		case <-time.After(time.Duration(c.cfg.ZooKeeperSessionTimeoutMs) * time.Millisecond):
		case <-c.ctx.Done():
			return ErrShutdown
		}
	}
}

// onZKEvent is go-zookeeper's event callback: session events set flags (IZkStateListener), watch
// notifications go to ZkClient's event thread. Never blocks.
func (c *Connector) onZKEvent(ev zk.Event) {
	switch {
	case ev.Type == zk.EventSession:
	case ev.Type == zk.EventNotWatching || ev.Path == "":
		return
	default:
		c.zk.notify(ev)
		return
	}
	c.zk.sessionStateChanged()
	switch ev.State {
	case zk.StateExpired:
		// The session's ephemeral znodes (the ids znode, the owner znodes) are gone: out of the group
		// until it registers again and claims (the invariant figures read this record).
		if !c.expired.Swap(true) {
			c.emit(timeline.Record{Kind: timeline.SessionExpired})
		}
	case zk.StateHasSession:
		c.connectOnce.Do(func() { close(c.connected) })
		if c.expired.Swap(false) {
			c.signal(func() { c.flagSession = true })
		}
	}
}

// handleNewSession follows ZkClient's order after an expiry: ZKSessionExpireListener.
// handleNewSession — forget the partitions (resetState; the session's owner znodes are gone, but
// the fetchers run on until the rebalance stops them: the split-brain window), re-register,
// rebalance — then, with a wildcard, the topic watcher re-subscribes; then fireAllEvents: every
// subscription re-reads its path and calls its listener, which schedules one more rebalance.
//
// It acts on the session connected now (waiting for one if there is none), and an event for a
// session already handled does nothing: when sessions are re-created faster than this goroutine
// gets to their events, a registration waiting for a connection is made in a later session than
// the event it answers, whose own event still follows (ZkClient queued one handleNewSession per
// session: KAFKA-1387). Before the first registration (CreateMessageStreams) there is nothing to
// re-create.
func (c *Connector) handleNewSession() {
	if c.session == 0 {
		return
	}
	sid, ok := c.zk.waitSession()
	if !ok {
		return // shutting down
	}
	if sid == c.session {
		c.log.WithField("session", fmt.Sprintf("%#x", sid)).Info("new-session event for a session already handled; nothing to do")
		return
	}
	c.log.Warn("ZooKeeper session expired; re-registering and rebalancing")
	c.emit(timeline.Record{Kind: timeline.Error, Text: "zookeeper session expired"})
	c.mu.Lock()
	c.topicRegistry = map[TopicPartition]*partitionInfo{}
	c.mu.Unlock()
	c.zk.resetWatches()
	if err := c.register(); err != nil {
		c.reportFailure(err)
	} else {
		c.watchTriggered(c.syncedRebalance)
	}
	if c.filter != nil {
		if err := c.zk.subscribeChildChanges(brokerTopicsPath); err != nil {
			c.log.WithError(err).Warn("re-subscribing to topic changes failed")
		}
	}
	c.zk.fireAll()
}
