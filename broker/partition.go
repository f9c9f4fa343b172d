package broker

import (
	"sync"
	"sync/atomic"

	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// partition is a local partition log (kafka.cluster.Partition, leader side only) plus the fetchers
// parked on it: every append wakes them (DelayedFetch completion in Kafka's purgatory), so long polls
// never loop on a timer.
type partition struct {
	topic string
	id    int32
	log   *storage.Log
	czxid int64 // the incarnation of the topic it belongs to (topicView.czxid)

	cfg atomic.Pointer[logConfig] // the topic's effective config (logconfig.go), replaced live

	leading atomic.Bool  // this broker leads it per ZooKeeper (as last seen)
	epoch   atomic.Int32 // leader epoch of that state

	appendMu sync.Mutex // one append at a time, so base offsets follow request order

	waitMu  sync.Mutex
	waiters map[chan struct{}]struct{}
}

func newPartition(topic string, czxid int64, id int32, log *storage.Log) *partition {
	return &partition{topic: topic, czxid: czxid, id: id, log: log, waiters: make(map[chan struct{}]struct{})}
}

// config is the partition's topic config now.
func (p *partition) config() *logConfig { return p.cfg.Load() }

// append stores records (v2 batches) and wakes the fetchers waiting on this partition.
func (p *partition) append(records []byte) (int64, error) {
	r, err := p.appendRecords(records)
	return r.BaseOffset, err
}

// appendRecords is append with the log's whole answer (a duplicate writes nothing and wakes no one).
func (p *partition) appendRecords(records []byte) (storage.AppendResult, error) {
	p.appendMu.Lock()
	r, err := p.log.AppendRecords(records)
	p.appendMu.Unlock()
	if err == nil && !r.Duplicate {
		p.notify()
	}
	return r, err
}

// watch registers ch (buffered, capacity 1) to be signalled on the next append; unwatch removes it.
func (p *partition) watch(ch chan struct{}) {
	p.waitMu.Lock()
	p.waiters[ch] = struct{}{}
	p.waitMu.Unlock()
}

func (p *partition) unwatch(ch chan struct{}) {
	p.waitMu.Lock()
	delete(p.waiters, ch)
	p.waitMu.Unlock()
}

func (p *partition) notify() {
	p.waitMu.Lock()
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.waitMu.Unlock()
}

func (p *partition) enforceRetention() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.log.EnforceRetention()
}

func (p *partition) close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.leading.Store(false)
	p.notify()           // parked fetchers re-check and see they are no longer served here
	return p.log.Close() // fsyncs the active segment
}
