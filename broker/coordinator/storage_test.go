package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// storageOffsetsLog is __consumer_offsets on the broker's real partition logs (broker/storage), one
// log per partition: the glue the broker needs, with ReadAll done by ReadPartition.
type storageOffsetsLog struct {
	dir        string
	flushEvery int64 // log.flush.interval.messages; 0: the OS flushes
	mu         sync.Mutex
	logs       map[int32]*storage.Log
}

func (s *storageOffsetsLog) log(p int32) (*storage.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[p]; l != nil {
		return l, nil
	}
	l, err := storage.Open(filepath.Join(s.dir, fmt.Sprintf("%s-%d", OffsetsTopic, p)), storage.Config{SegmentBytes: 1024, FlushIntervalMessages: s.flushEvery})
	if err != nil {
		return nil, err
	}
	s.logs[p] = l
	return l, nil
}

func (s *storageOffsetsLog) Append(p int32, batches [][]byte) []error {
	errs := make([]error, len(batches))
	l, err := s.log(p)
	if err == nil {
		_, err = l.Append(bytes.Join(batches, nil))
	}
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func (s *storageOffsetsLog) ReadAll(p int32, fn func(key, value []byte) error) error {
	l, err := s.log(p)
	if err != nil {
		return err
	}
	return ReadPartition(l, fn)
}

func (s *storageOffsetsLog) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.logs {
		l.Close()
	}
	s.logs = map[int32]*storage.Log{}
}

// TestReplayFromStorageLog: commits and group metadata go through the driver into real segmented
// partition logs (small segments, so the replay crosses segment files), and a coordinator started on
// reopened logs gets them back.
func TestReplayFromStorageLog(t *testing.T) {
	dir := t.TempDir()
	olog := &storageOffsetsLog{dir: dir, logs: map[int32]*storage.Log{}}
	cfg := driverConfig()
	cfg.GroupInitialRebalanceDelayMs = 0
	cfg.OffsetsTopicSegmentBytes = 1024 // storageOffsetsLog's segments
	c, err := Start(context.Background(), cfg, olog, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	j := handle(t, c, "c", joinReq("g", joinOpts{version: 3, session: 10000, rebalance: 10000})).(*kmsg.JoinGroupResponse)
	handle(t, c, "c", syncReq(3, "g", j.MemberID, 1, nil, map[string]string{j.MemberID: "everything"}))
	for i := int64(0); i < 40; i++ { // many batches: several segments
		if e := commitErr(t, handle(t, c, "c", commitReq(8, "g", j.MemberID, 1, nil, "t", int32(i%4), 1000+i))); e != 0 {
			t.Fatalf("commit %d: %d", i, e)
		}
	}
	c.Close()
	olog.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", OffsetsTopic, PartitionFor("g", cfg.OffsetsTopicNumPartitions)), "*.log"))
	if len(segs) < 2 {
		t.Fatalf("%d segment files, want several", len(segs))
	}

	olog2 := &storageOffsetsLog{dir: dir, logs: map[int32]*storage.Log{}}
	defer olog2.Close()
	c2, err := Start(context.Background(), cfg, olog2, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	g, ok := c2.Group("g")
	if !ok || g.State != Stable || g.Generation != 1 || len(g.Members) != 1 || g.Members[0].MemberID != j.MemberID ||
		string(g.Members[0].Assignment) != "everything" {
		t.Fatalf("replayed group: %+v", g)
	}
	for p := int32(0); p < 4; p++ {
		want := int64(1000 + 36 + int64(p)) // the last commit of each partition
		if off, ok := c2.CommittedOffset("g", "t", p); !ok || off != want {
			t.Fatalf("t-%d: %d %v, want %d", p, off, ok, want)
		}
	}
	l, _ := olog2.log(PartitionFor("g", cfg.OffsetsTopicNumPartitions))
	if hw := l.HighWatermark(); hw != 41 { // 1 group record + 40 offset records
		t.Fatalf("high watermark %d, want 41", hw)
	}
}

// countingStorageLog is storageOffsetsLog on logs that fsync every append
// (log.flush.interval.messages=1), counting storage appends (= fsyncs). With oneByOne it writes each
// batch with its own storage append, as the driver did before it handed queued batches over together.
type countingStorageLog struct {
	storageOffsetsLog
	oneByOne bool
	fsyncs   atomic.Int64
}

func (s *countingStorageLog) Append(p int32, batches [][]byte) []error {
	if !s.oneByOne {
		s.fsyncs.Add(1)
		return s.storageOffsetsLog.Append(p, batches)
	}
	errs := make([]error, len(batches))
	for i, b := range batches {
		s.fsyncs.Add(1)
		errs[i] = s.storageOffsetsLog.Append(p, [][]byte{b})[0]
	}
	return errs
}

// BenchmarkDriverCommitFsync: 32 clients commit concurrently (manual assignment, generation -1) to
// groups of one __consumer_offsets partition whose log fsyncs every append. "shared" is the driver
// (commits that queue while an append is under way share the next one); "one-by-one" is the peer,
// one storage append and fsync per commit. Compare ns/op (per commit) and fsyncs/commit.
func BenchmarkDriverCommitFsync(b *testing.B) {
	for _, mode := range []string{"shared", "one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			olog := &countingStorageLog{oneByOne: mode == "one-by-one"}
			olog.dir, olog.logs, olog.flushEvery = b.TempDir(), map[int32]*storage.Log{}, 1
			defer olog.Close()
			cfg := driverConfig()
			cfg.OffsetsTopicNumPartitions = 1
			cfg.OffsetsTopicSegmentBytes = 1024 // storageOffsetsLog's segments
			c, err := Start(context.Background(), cfg, olog, testLogger(b))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var next atomic.Int64
			b.SetParallelism(16) // 32 committers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				group := fmt.Sprintf("g%d", next.Add(1))
				for i := int64(0); pb.Next(); i++ {
					resp, err := c.Handle(ContextWithClient(context.Background(), "c", "/127.0.0.1"), commitReq(2, group, "", -1, nil, "t", 0, i))
					if err != nil {
						b.Error(err)
						return
					}
					if e := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; e != 0 {
						b.Errorf("commit: error %d", e)
						return
					}
				}
			})
			b.ReportMetric(float64(olog.fsyncs.Load())/float64(b.N), "fsyncs/commit")
		})
	}
}
