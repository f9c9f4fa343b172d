package zkconsumer

import "testing"

// TestSettleCountsATakenMessageAsConsumed: an application that commits right after taking a message
// commits past it, as with 0.8.2's ConsumerIterator, which stores the consumed offset before next
// returns. The hand-over and the store are two steps of the iterator goroutine here; settle (called by
// every commit) waits for the store. Before it, a manual commit right after taking offset 104 could
// commit 104 (the consumer-failure-manual-commit scenario on Kafka's broker saw it once).
func TestSettleCountsATakenMessageAsConsumed(t *testing.T) {
	const n = 2000
	q := newThreadQueue(1, nil)
	defer q.shutdown()
	tp := TopicPartition{Topic: "t", Partition: 0}
	pi := newPartitionInfo(tp, q, 100)
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i] = Message{Topic: "t", Partition: 0, Offset: int64(100 + i)}
	}
	if !q.enqueue(&chunk{pi: pi, msgs: msgs}, nil) {
		t.Fatal("enqueue: the queue stopped")
	}
	for i := 0; i < n; i++ {
		m := <-q.out
		q.settle()
		if got, want := pi.consumed.Load(), m.Offset+1; got != want {
			t.Fatalf("after taking offset %d and settling: consumed offset %d, want %d", m.Offset, got, want)
		}
	}
	// A queue with nothing being handed over settles at once, and a stopped one too.
	q.settle()
	q.shutdown()
	q.settle()
}
