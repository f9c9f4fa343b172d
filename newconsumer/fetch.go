package newconsumer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the data side: metadata, offsets reset (ListOffsets) and fetching, each over
// connections dialled with the fetch dialer, apart from the coordinator's.

// metadata is a Metadata response: brokers and the partitions' leaders.
type metadata struct {
	brokers map[int32]string         // node id -> host:port
	topics  map[string][]partitionMD // topic (without error) -> partitions by id
}

type partitionMD struct {
	leader int32 // -1: none
	epoch  int32 // the leader epoch (Metadata v7+); -1: unknown
}

// leader returns tp's leader and leader epoch (-1, -1 when unknown).
func (m *metadata) leader(tp TopicPartition) (id, epoch int32) {
	if m == nil {
		return -1, -1
	}
	ps := m.topics[tp.Topic]
	if tp.Partition < 0 || int(tp.Partition) >= len(ps) {
		return -1, -1
	}
	return ps[tp.Partition].leader, ps[tp.Partition].epoch
}

// partitionCounts maps each of topics that exists to its partition count (topics absent or in
// error are left out, as AbstractPartitionAssignor skips topics without metadata).
func (m *metadata) partitionCounts(topics []string) map[string]int32 {
	out := map[string]int32{}
	for _, t := range topics {
		if ps, ok := m.topics[t]; ok && len(ps) > 0 {
			out[t] = int32(len(ps))
		}
	}
	return out
}

// leaderAddr returns the address of tp's leader, or "" when unknown.
func (m *metadata) leaderAddr(tp TopicPartition) string {
	if m == nil {
		return ""
	}
	ps := m.topics[tp.Topic]
	if tp.Partition < 0 || int(tp.Partition) >= len(ps) {
		return ""
	}
	return m.brokers[ps[tp.Partition].leader]
}

// brokerAddrs lists the addresses to try for cluster-wide requests (Metadata, FindCoordinator), as
// the Java client's NetworkClient.leastLoadedNode picks a node: the known brokers from a random offset
// drawn once per consumer (so that a group's members spread their metadata connections over the
// brokers rather than all on the lowest id), those it is connected to first, then the bootstrap
// servers, from the same offset.
func (c *Consumer) brokerAddrs() []string {
	c.mu.Lock()
	var known []string
	if c.meta != nil {
		ids := make([]int32, 0, len(c.meta.brokers))
		for id := range c.meta.brokers {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			known = append(known, c.meta.brokers[id])
		}
	}
	c.mu.Unlock()
	rotate := func(as []string) []string {
		if len(as) == 0 {
			return nil
		}
		k := c.nodeOffset % len(as)
		return append(slices.Clone(as[k:]), as[:k]...)
	}
	known = rotate(known)
	c.connMu.Lock()
	connected := func(a string) bool { return c.conns[a] != nil }
	sort.SliceStable(known, func(i, j int) bool { return connected(known[i]) && !connected(known[j]) })
	c.connMu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range append(known, rotate(c.cfg.BootstrapServers)...) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// fetchConn returns the fetch-side connection to addr, dialling it with the fetch dialer.
func (c *Consumer) fetchConn(ctx context.Context, addr string) (*brokerConn, error) {
	c.connMu.Lock()
	if conn := c.conns[addr]; conn != nil {
		c.connMu.Unlock()
		return conn, nil
	}
	c.connMu.Unlock()
	conn, err := dialBroker(ctx, c.cfg.FetchDialer, addr, c.clientID, c.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.connsClosed {
		_ = conn.Close()
		return nil, ErrClosed
	}
	if old := c.conns[addr]; old != nil {
		_ = conn.Close()
		return old, nil
	}
	c.conns[addr] = conn
	return conn, nil
}

// dropConn closes and forgets conn (after an error: the wire connection is closed already).
func (c *Consumer) dropConn(addr string, conn *brokerConn) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.conns[addr] == conn {
		delete(c.conns, addr)
	}
	_ = conn.Close()
}

// brokerRequest sends req to the broker at addr over its fetch-side connection. A failed request
// drops the connection (wire closed it); a pooled connection found closed already (another
// request's deadline or a cut link) is replaced by a fresh dial once.
func (c *Consumer) brokerRequest(ctx context.Context, addr string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	for attempt := 0; ; attempt++ {
		conn, err := c.fetchConn(ctx, addr)
		if err != nil {
			return nil, err
		}
		r, err := conn.request(ctx, req, timeout)
		if err == nil {
			return r, nil
		}
		c.dropConn(addr, conn)
		if attempt > 0 || !errors.Is(err, wire.ErrClosed) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// refreshMetadata asks the brokers in turn for topics' metadata (auto-creating them where the broker
// allows, as the Java consumer's allow.auto.create.topics default does) and keeps the answer.
func (c *Consumer) refreshMetadata(ctx context.Context, topics []string) (*metadata, error) {
	var last error
	for _, addr := range c.brokerAddrs() {
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(t)})
		}
		if req.Topics == nil {
			req.Topics = []kmsg.MetadataRequestTopic{} // empty, not null (null is every topic)
		}
		req.AllowAutoTopicCreation = true
		r, err := c.brokerRequest(ctx, addr, req, c.cfg.RequestTimeout)
		if err != nil {
			last = err
			continue
		}
		resp := r.(*kmsg.MetadataResponse)
		m := &metadata{brokers: map[int32]string{}, topics: map[string][]partitionMD{}}
		for _, b := range resp.Brokers {
			m.brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			ps := make([]partitionMD, len(t.Partitions))
			for i := range ps {
				ps[i].leader, ps[i].epoch = -1, -1
			}
			for _, p := range t.Partitions {
				if p.Partition >= 0 && int(p.Partition) < len(ps) {
					ps[p.Partition].leader = p.Leader
					if resp.Version >= 7 {
						ps[p.Partition].epoch = p.LeaderEpoch
					}
					if p.ErrorCode != 0 {
						ps[p.Partition].leader = -1
					}
				}
			}
			m.topics[*t.Topic] = ps
		}
		c.mu.Lock()
		if c.meta == nil {
			c.meta = &metadata{brokers: map[int32]string{}, topics: map[string][]partitionMD{}}
		}
		c.meta.brokers = m.brokers
		for t, ps := range m.topics {
			c.meta.topics[t] = ps
		}
		for _, t := range topics {
			if _, ok := m.topics[t]; !ok {
				delete(c.meta.topics, t)
			}
		}
		c.metaAt = time.Now()
		c.metaStale = false
		c.validateOnMetadataChangeLocked()
		c.mu.Unlock()
		return m, nil
	}
	if last == nil {
		last = errors.New("newconsumer: no broker to ask for metadata")
	}
	return nil, last
}

// resetOffsets sets the position of parts from auto.offset.reset, with ListOffsets to each leader
// (latest: timestamp -1, earliest: -2); none is an error, as NoOffsetForPartitionException.
func (c *Consumer) resetOffsets(ctx context.Context, parts []TopicPartition) error {
	if len(parts) == 0 {
		return nil
	}
	var ts int64
	switch c.cfg.AutoOffsetReset {
	case "latest":
		ts = -1
	case "earliest":
		ts = -2
	default:
		return errFatal{fmt.Errorf("newconsumer: no committed offset for %v and auto.offset.reset is none", parts)}
	}
	byLeader, err := c.byLeader(ctx, parts)
	if err != nil {
		return err
	}
	for addr, ps := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		if c.cfg.IsolationLevel == "read_committed" {
			req.IsolationLevel = 1
		}
		idx := map[string]int{}
		for _, tp := range ps {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(req.Topics)
				idx[tp.Topic] = i
				req.Topics = append(req.Topics, kmsg.ListOffsetsRequestTopic{Topic: tp.Topic})
			}
			c.mu.Lock()
			_, epoch := c.meta.leader(tp)
			c.mu.Unlock()
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, kmsg.ListOffsetsRequestTopicPartition{
				Partition: tp.Partition, CurrentLeaderEpoch: epoch, Timestamp: ts, MaxNumOffsets: 1,
			})
		}
		r, err := c.brokerRequest(ctx, addr, req, c.cfg.RequestTimeout)
		if err != nil {
			c.markMetadataStale()
			return errRetriable{err}
		}
		var stale error
		c.mu.Lock()
		for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if p.ErrorCode != 0 {
					stale = fmt.Errorf("newconsumer: ListOffsets %s: %w", tp, kerr.ErrorForCode(p.ErrorCode))
					c.metaStale = true
					continue
				}
				off := p.Offset
				if r.GetVersion() == 0 && len(p.OldStyleOffsets) > 0 {
					off = p.OldStyleOffsets[0]
				}
				if st := c.owned[tp]; st != nil && st.position < 0 {
					// OffsetFetcherUtils.resetPositionIfNeeded: no offset epoch, so no validation.
					c.seekUnvalidatedLocked(tp, st, off, -1)
					st.reset = false
					c.logLocked().WithField("partition", tp.String()).Infof("resetting offset to %d (auto.offset.reset=%s)", off, c.cfg.AutoOffsetReset)
				}
			}
		}
		c.mu.Unlock()
		if stale != nil {
			return errRetriable{stale}
		}
	}
	return nil
}

// byLeader groups parts by their leader's address, refreshing metadata once if a leader is unknown;
// partitions still without a leader are left out (retried at the next Poll). It fails only when
// no partition has a known leader.
func (c *Consumer) byLeader(ctx context.Context, parts []TopicPartition) (map[string][]TopicPartition, error) {
	group := func() (map[string][]TopicPartition, int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		out, missing := map[string][]TopicPartition{}, 0
		for _, tp := range parts {
			if a := c.meta.leaderAddr(tp); a != "" {
				out[a] = append(out[a], tp)
			} else {
				missing++
			}
		}
		return out, missing
	}
	out, missing := group()
	if missing == 0 {
		return out, nil
	}
	if _, err := c.refreshMetadata(ctx, c.metadataTopics()); err != nil && len(out) == 0 {
		return nil, errRetriable{err}
	}
	if out, missing = group(); len(out) == 0 && missing > 0 {
		return nil, errRetriable{fmt.Errorf("newconsumer: no leader known for %v", parts)}
	}
	return out, nil
}

// metadataTopics is what to keep metadata for: the subscription, and for the leader every topic
// of the group it assigned (SubscriptionState.groupSubscribe), so that it sees their changes.
func (c *Consumer) metadataTopics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := map[string]bool{}
	for t := range c.topics {
		set[t] = true
	}
	for t := range c.snapshot {
		set[t] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// completedFetch is one partition's fetched records, waiting to be handed to the application.
type completedFetch struct {
	tp      TopicPartition
	pos     int64 // the partition's position this data continues from
	records []Record
	next    int64 // offset after the last batch, where fetching continues
}

// sendFetches starts one Fetch to the leader of each fetchable partition (owned, with a position,
// no data waiting, no fetch in flight), each on a goroutine that lives as long as the consumer,
// not as the Poll that started it (Fetcher.sendFetches): a Poll that ends does not cut a fetch,
// whose records wait for the next Poll. It reports whether a fetch is in flight.
func (c *Consumer) sendFetches(ctx context.Context) (bool, error) {
	c.mu.Lock()
	busy := map[TopicPartition]bool{}
	for _, f := range c.fetched {
		busy[f.tp] = true
	}
	var parts []TopicPartition
	for tp, st := range c.owned {
		if st.position >= 0 && !st.awaitValidation && !busy[tp] && !c.inFlight[tp] {
			parts = append(parts, tp)
		}
	}
	stale, running := c.metaStale, len(c.inFlight) > 0
	c.mu.Unlock()
	if len(parts) == 0 {
		return running, nil
	}
	if stale {
		if _, err := c.refreshMetadata(ctx, c.metadataTopics()); err != nil {
			return running, errRetriable{err}
		}
	}
	byLeader, err := c.byLeader(ctx, parts)
	if err != nil {
		return running, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, ErrClosed
	}
	for addr, ps := range byLeader {
		if c.leaderBusy[addr] {
			continue // one fetch per broker at a time; the others wait for the next round
		}
		c.leaderBusy[addr] = true
		for _, tp := range ps {
			c.inFlight[tp] = true
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.fetchFrom(c.ctx, addr, ps)
			c.mu.Lock()
			delete(c.leaderBusy, addr)
			for _, tp := range ps {
				delete(c.inFlight, tp)
			}
			c.mu.Unlock()
			c.signal()
		}()
	}
	return true, nil
}

// fetchFrom fetches ps from the broker at addr (without fetch sessions: each request is a full
// one, session id 0, epoch -1) and queues the records.
func (c *Consumer) fetchFrom(ctx context.Context, addr string, ps []TopicPartition) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(c.cfg.FetchMaxWait.Milliseconds())
	req.MinBytes = c.cfg.FetchMinBytes
	req.MaxBytes = c.cfg.FetchMaxBytes
	if c.cfg.IsolationLevel == "read_committed" {
		req.IsolationLevel = 1
	}
	req.SessionID, req.SessionEpoch = 0, -1
	req.Rack = c.cfg.ClientRack
	positions := map[TopicPartition]int64{}
	c.mu.Lock()
	idx := map[string]int{}
	for _, tp := range ps {
		st := c.owned[tp]
		if st == nil || st.position < 0 || st.awaitValidation {
			continue
		}
		positions[tp] = st.position
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: tp.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, kmsg.FetchRequestTopicPartition{
			Partition: tp.Partition, CurrentLeaderEpoch: st.leaderEpoch, FetchOffset: st.position, LogStartOffset: -1,
			LastFetchedEpoch: -1, PartitionMaxBytes: c.cfg.MaxPartitionFetchBytes,
		})
	}
	c.mu.Unlock()
	if len(positions) == 0 {
		return
	}
	r, err := c.brokerRequest(ctx, addr, req, c.cfg.FetchMaxWait+c.cfg.RequestTimeout)
	if err != nil {
		if ctx.Err() == nil {
			c.log.WithError(err).WithField("broker", addr).Warn("fetch failed")
			c.markMetadataStale()
		}
		return
	}
	resp := r.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		c.log.WithField("broker", addr).Warnf("fetch: %s", errName(resp.ErrorCode))
		return
	}
	var reset []TopicPartition
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
			pos, asked := positions[tp]
			if !asked {
				continue
			}
			switch p.ErrorCode {
			case 0:
			case kerr.OffsetOutOfRange.Code:
				reset = append(reset, tp)
				continue
			case kerr.UnknownLeaderEpoch.Code:
				// FetchCollector.handleInitializeErrors: this client's leader epoch is newer than the
				// broker's; it is only logged, the next fetch asks again.
				c.log.WithField("partition", tp.String()).Debug("received unknown leader epoch error in fetch")
				continue
			default:
				// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, ...: refresh metadata.
				c.log.WithField("partition", tp.String()).Debugf("fetch: %s", errName(p.ErrorCode))
				c.markMetadataStale()
				continue
			}
			recs, next, err := parseBatches(tp, p.RecordBatches, pos)
			if err != nil {
				c.log.WithError(err).WithField("partition", tp.String()).Error("fetch: bad record batch")
				c.emit(timeline.Record{Kind: timeline.Error, Text: fmt.Sprintf("fetch %s at %d: %v", tp, pos, err)})
			}
			c.mu.Lock()
			if st := c.owned[tp]; st != nil && st.position == pos {
				st.hwm = p.HighWatermark
				if len(recs) > 0 || next > pos {
					c.fetched = append(c.fetched, &completedFetch{tp: tp, pos: pos, records: recs, next: next})
				}
			}
			c.mu.Unlock()
		}
	}
	if len(reset) > 0 {
		c.mu.Lock()
		for _, tp := range reset {
			if st := c.owned[tp]; st != nil && st.position == positions[tp] {
				c.logLocked().WithField("partition", tp.String()).Infof("fetch offset %d is out of range; resetting", st.position)
				st.position, st.reset = -1, true // the next Poll resets it (auto.offset.reset)
			}
		}
		c.mu.Unlock()
	}
}

func (c *Consumer) markMetadataStale() {
	c.mu.Lock()
	c.metaStale = true
	c.mu.Unlock()
}

// drainLocked hands out up to max queued records, advancing positions (Fetcher.collectFetch): a
// record is delivered once, in offset order; data for a partition no longer owned, or whose
// position moved meanwhile, is dropped.
func (c *Consumer) drainLocked(max int) []Record {
	var out []Record
	for len(c.fetched) > 0 && len(out) < max {
		f := c.fetched[0]
		st := c.owned[f.tp]
		if st == nil || st.position != f.pos || st.awaitValidation {
			// Unassigned, moved, or no longer fetchable while its position is validated
			// (FetchCollector: "not returning fetched records ... no longer fetchable"): dropped.
			c.fetched = c.fetched[1:]
			continue
		}
		for len(f.records) > 0 && len(out) < max {
			r := f.records[0]
			f.records = f.records[1:]
			if r.Offset < st.position {
				continue
			}
			out = append(out, r)
			st.position, st.offsetEpoch = r.Offset+1, r.LeaderEpoch
		}
		f.pos = st.position
		if len(f.records) == 0 {
			if f.next > st.position {
				st.position = f.next // past control batches and compacted-away offsets
			}
			c.fetched = c.fetched[1:]
		}
	}
	return out
}
