package zkconsumer

import (
	"sync"
	"sync/atomic"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// Message is one record handed to the application (Kafka's MessageAndMetadata).
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

// partitionInfo is Kafka's PartitionTopicInfo: one owned partition, the consumer thread queue its
// chunks go to, the fetch offset (next offset to fetch) and the consumed offset (next offset to
// hand to the application; what commits write).
type partitionInfo struct {
	tp       TopicPartition
	queue    *threadQueue
	fetched  atomic.Int64
	consumed atomic.Int64
	hw       atomic.Int64 // high watermark of the last fetch that answered for it; -1 before one
}

func newPartitionInfo(tp TopicPartition, q *threadQueue, offset int64) *partitionInfo {
	pi := &partitionInfo{tp: tp, queue: q}
	pi.fetched.Store(offset)
	pi.consumed.Store(offset)
	pi.hw.Store(-1)
	return pi
}

// chunk is Kafka's FetchedDataChunk: the records of one partition from one Fetch response.
type chunk struct {
	pi   *partitionInfo
	msgs []Message
}

// threadQueue is one consumer thread: a bounded queue of chunks (queued.max.message.chunks, the
// fetchers block when it is full) and the iterator goroutine (ConsumerIterator) that hands
// messages one by one to the stream channel. A message counts as consumed — its offset+1 becomes
// the partition's consumed offset and a deliver record is written — only once the application
// has received it.
type threadQueue struct {
	chunks chan *chunk
	out    chan Message
	clear  chan chan struct{}
	stop   chan struct{}
	done   chan struct{}
	rec    *timeline.Recorder
	once   sync.Once
}

func newThreadQueue(capacity int, rec *timeline.Recorder) *threadQueue {
	q := &threadQueue{
		chunks: make(chan *chunk, capacity),
		out:    make(chan Message),
		clear:  make(chan chan struct{}),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		rec:    rec,
	}
	go q.iterate()
	return q
}

func (q *threadQueue) iterate() {
	defer close(q.done)
	defer close(q.out) // the stream ends (Kafka's shutdownCommand)
	for {
		select {
		case <-q.stop:
			return
		case ack := <-q.clear:
			q.drain()
			close(ack)
		case c := <-q.chunks:
			if !q.deliver(c) {
				return
			}
		}
	}
}

// deliver hands c's messages to the application; false when the queue stops meanwhile. A clear
// request drops the rest of the chunk (ConsumerIterator.clearCurrentChunk).
func (q *threadQueue) deliver(c *chunk) bool {
	for _, m := range c.msgs {
		if m.Offset < c.pi.consumed.Load() { // already handed over (ConsumerIterator skips these)
			continue
		}
		select {
		case q.out <- m:
			c.pi.consumed.Store(m.Offset + 1)
			q.rec.Emit(timeline.Record{Kind: timeline.Deliver, Topic: m.Topic, Partition: timeline.I32(m.Partition), Offset: timeline.I64(m.Offset)})
		case ack := <-q.clear:
			q.drain()
			close(ack)
			return true
		case <-q.stop:
			return false
		}
	}
	return true
}

func (q *threadQueue) drain() {
	for {
		select {
		case <-q.chunks:
		default:
			return
		}
	}
}

// clearQueue drops every queued chunk and the one being handed over; when it returns, no message
// fetched before it will reach the application. The fetchers must be stopped first.
func (q *threadQueue) clearQueue() {
	ack := make(chan struct{})
	select {
	case q.clear <- ack:
		<-ack
	case <-q.done:
	}
}

// enqueue blocks until c is queued or abort is closed (the fetcher is stopping); false if aborted.
func (q *threadQueue) enqueue(c *chunk, abort <-chan struct{}) bool {
	select {
	case q.chunks <- c:
		return true
	case <-abort:
		return false
	case <-q.done:
		return false
	}
}

// shutdown ends the iterator and closes the stream channel; queued chunks are dropped.
func (q *threadQueue) shutdown() {
	q.once.Do(func() { close(q.stop) })
	<-q.done
}
