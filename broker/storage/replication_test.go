package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// replBatch is a 3-record batch (values tagged seq); all have the same length.
func replBatch(seq int) []byte { return newBatch(1000+int64(seq), values(seq, 3, 10)...) }

var replBatchLen = int64(len(replBatch(0)))

// leaderFixture is a leader log of six 3-record batches, two per segment (segments 0, 6, 12),
// with leader epochs 0, 0, 2, 2, 5, 5 (epoch cache (0,0) (2,6) (5,12)), every append fsynced.
func leaderFixture(t *testing.T, dir string, fs *memFS, extra func(*Config)) (*Log, Config) {
	t.Helper()
	cfg := Config{FS: fs, SegmentBytes: 2 * replBatchLen, RetentionMs: -1, FlushIntervalMessages: 1}
	if extra != nil {
		extra(&cfg)
	}
	l := mustOpen(t, dir, cfg)
	for i, epoch := range []int32{0, 0, 2, 2, 5, 5} {
		if err := l.SetLeaderEpoch(epoch); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, replBatch(i))
	}
	if got := segBases(l); !slices.Equal(got, []int64{0, 6, 12}) || l.LogEndOffset() != 18 {
		t.Fatalf("fixture: segments %v, LEO %d", got, l.LogEndOffset())
	}
	return l, cfg
}

// storedPrefix is what the fixture's log holds below end (a batch boundary).
func storedPrefix(end int64) []byte {
	var out []byte
	for i, epoch := range []int32{0, 0, 2, 2, 5, 5} {
		if int64(3*i) < end {
			out = append(out, stamped(replBatch(i), int64(3*i), epoch)...)
		}
	}
	return out
}

// allEpochs returns EndOffsetForEpoch for epochs -1..8.
func allEpochs(l *Log) (out [][2]int64) {
	for e := int32(-1); e <= 8; e++ {
		fe, off := l.EndOffsetForEpoch(e)
		out = append(out, [2]int64{int64(fe), off})
	}
	return out
}

// TestEndOffsetForLeaderEpochFileCacheCases: the cases of Kafka 3.9's LeaderEpochFileCacheTest
// for endOffsetFor, on the cache as the Log keeps it.
func TestEndOffsetForLeaderEpochFileCacheCases(t *testing.T) {
	type q struct {
		epoch     int32
		wantEpoch int32
		wantOff   int64
	}
	cases := []struct {
		name    string
		entries []epochEntry
		leo     int64
		qs      []q
	}{
		{"shouldReturnUnsupportedIfNoEpochRecorded", nil, 0, []q{{0, -1, -1}}},
		{"shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested", nil, 73, []q{{UndefinedEpoch, -1, -1}}},
		{"shouldReturnUndefinedOffsetIfUndefinedEpochRequested", []epochEntry{{2, 6}}, 10, []q{{UndefinedEpoch, -1, -1}}},
		{"shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch", []epochEntry{{5, 11}, {6, 12}, {7, 13}}, 14, []q{{4, 4, 11}}},
		{"shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch", []epochEntry{{1, 0}, {2, 3}}, 5, []q{{1, 1, 3}}},
		{"shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested", []epochEntry{{0, 10}, {2, 13}, {4, 17}}, 20,
			[]q{{0, 0, 13}, {1, 0, 13}, {2, 2, 17}, {3, 2, 17}}},
		{"shouldReturnLogEndOffsetIfLatestEpochRequested", []epochEntry{{2, 6}, {3, 8}}, 10, []q{{3, 3, 10}}},
		{"shouldReturnUnsupportedIfRequestedEpochIsGreaterThanCurrentEpoch", []epochEntry{{2, 5}}, 10, []q{{3, -1, -1}}},
		{"shouldNotUpdateEpochAndStartOffsetIfItDidNotChange", []epochEntry{{2, 6}}, 8, []q{{2, 2, 8}}},
		{"shouldPersistEpochsBetweenInstances (two epochs)", []epochEntry{{0, 0}, {1, 5}}, 9, []q{{0, 0, 5}, {1, 1, 9}, {2, -1, -1}}},
	}
	for _, c := range cases {
		for _, x := range c.qs {
			if e, off := endOffsetFor(c.entries, x.epoch, c.leo); e != x.wantEpoch || off != x.wantOff {
				t.Errorf("%s: endOffsetFor(%d) = (%d, %d), want (%d, %d)", c.name, x.epoch, e, off, x.wantEpoch, x.wantOff)
			}
		}
	}
}

// TestEpochLookupsAndSetLeaderEpoch: EndOffsetForEpoch and LatestEpoch on a log; SetLeaderEpoch
// assigns (epoch, LEO) before any append (Partition.makeLeader), checkpointed, and a reopen with no
// batch of that epoch drops it as Kafka's truncateFromEnd does.
func TestEpochLookupsAndSetLeaderEpoch(t *testing.T) {
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs})
	if e, ok := l.LatestEpoch(); ok || e != UndefinedEpoch {
		t.Fatalf("LatestEpoch of an empty log = %d, %v", e, ok)
	}
	if e, off := l.EndOffsetForEpoch(0); e != -1 || off != -1 {
		t.Fatalf("EndOffsetForEpoch(0) of an empty log = (%d, %d)", e, off)
	}
	mustAppend(t, l, replBatch(0)) // 0-2, epoch 0
	if err := l.SetLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	if got, want := string(fs.content("/d/"+epochCheckpointName)), "0\n2\n0 0\n3 3\n"; got != want {
		t.Fatalf("checkpoint %q, want %q", got, want)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 3 {
		t.Fatalf("LatestEpoch = %d, %v; want 3", e, ok)
	}
	for _, c := range []struct {
		epoch, wantE int32
		wantOff      int64
	}{{0, 0, 3}, {1, 0, 3}, {2, 0, 3}, {3, 3, 3}, {4, -1, -1}} {
		if e, off := l.EndOffsetForEpoch(c.epoch); e != c.wantE || off != c.wantOff {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.epoch, e, off, c.wantE, c.wantOff)
		}
	}
	// Same epoch again: nothing assigned.
	if err := l.SetLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, replBatch(1)) // 3-5, epoch 3
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != 6 {
		t.Fatalf("EndOffsetForEpoch(3) after an append = (%d, %d), want (3, 6)", e, off)
	}
	if err := l.SetLeaderEpoch(4); err != nil { // no batch follows
		t.Fatal(err)
	}
	mustClose(t, l)
	l = mustOpen(t, "/d", Config{FS: fs})
	defer mustClose(t, l)
	if e, _ := l.LatestEpoch(); e != 3 || l.LeaderEpoch() != 3 {
		t.Fatalf("after reopen: latest cached epoch %d, leader epoch %d; want 3, 3 (the unfollowed entry dropped)", e, l.LeaderEpoch())
	}
}

// TestFollowerMirrorsLeader: a follower fetching with Read from its LEO and appending with
// AppendAsFollower ends with the leader's bytes, LEO, epoch answers and producer state; a reopen
// finds it clean.
func TestFollowerMirrorsLeader(t *testing.T) {
	lfs, ffs := newMemFS(), newMemFS()
	leader, _ := leaderFixture(t, "/l", lfs, nil)
	defer mustClose(t, leader)
	// An idempotent producer's batches too, in epoch 5.
	for i := int32(0); i < 2; i++ {
		mustAppendRecords(t, leader, idemBatch(42, 1, 3*i, 2000, values(int(i), 3, 10)...))
	}
	// Record timestamps are from 1970: the clock stays near them, so that no producer expires.
	fcfg := Config{FS: ffs, SegmentBytes: 3 * replBatchLen, RetentionMs: -1, Now: newClock(5000).now}
	f := mustOpen(t, "/f", fcfg)
	for _, maxBytes := range []int32{1, int32(2 * replBatchLen)} {
		for f.LogEndOffset() < leader.LogEndOffset() {
			leo := f.LogEndOffset()
			b, err := leader.Read(leo, maxBytes)
			if err != nil || len(b) == 0 {
				t.Fatalf("leader Read(%d) = %d bytes, %v", leo, len(b), err)
			}
			r, err := f.AppendAsFollower(b)
			bs := decodeBatches(t, b)
			if err != nil || r.BaseOffset != leo || r.LastOffset != bs[len(bs)-1].last || r.Duplicate || r.LogAppendTime != -1 {
				t.Fatalf("AppendAsFollower at %d = %+v, %v", leo, r, err)
			}
			// Byte for byte: offsets and epochs kept.
			if got, err := f.Read(leo, math.MaxInt32); err != nil || !bytes.HasPrefix(b, got) && !bytes.HasPrefix(got, b) {
				t.Fatalf("follower Read(%d) differs from the leader's bytes (%v)", leo, err)
			}
		}
		if maxBytes == 1 { // start again with larger fetches
			if err := f.TruncateFullyAndStartAt(0); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string, leaderEpoch int32) {
		t.Helper()
		if f.LogEndOffset() != leader.LogEndOffset() || f.LogEndOffset() != 24 {
			t.Fatalf("%s: follower LEO %d, leader %d", when, f.LogEndOffset(), leader.LogEndOffset())
		}
		if got, want := readAll(t, f), readAll(t, leader); !bytes.Equal(got, want) {
			t.Fatalf("%s: follower bytes differ from the leader's (%d vs %d)", when, len(got), len(want))
		}
		if got, want := allEpochs(f), allEpochs(leader); !slices.Equal(got, want) {
			t.Fatalf("%s: EndOffsetForEpoch follower %v, leader %v", when, got, want)
		}
		fe, _ := f.LatestEpoch()
		le, _ := leader.LatestEpoch()
		if fe != 5 || le != 5 || f.LeaderEpoch() != leaderEpoch {
			t.Fatalf("%s: latest epochs follower %d leader %d; follower's leader epoch %d", when, fe, le, f.LeaderEpoch())
		}
		pf, okf := f.ProducerEntry(42)
		pl, okl := leader.ProducerEntry(42)
		if !okf || !okl || fmt.Sprint(pf) != fmt.Sprint(pl) {
			t.Fatalf("%s: producer entry follower %+v, leader %+v", when, pf, pl)
		}
	}
	check("after fetching", 0) // follower appends do not change the epoch leader appends stamp
	if got := string(ffs.content("/f/" + epochCheckpointName)); got != "0\n3\n0 0\n2 6\n5 12\n" {
		t.Fatalf("follower epoch checkpoint %q", got)
	}
	mustClose(t, f)
	f = mustOpen(t, "/f", fcfg)
	defer mustClose(t, f)
	if r := f.Recovery(); r.Problem != "" || r.EpochCheckpoint != "ok" || r.RebuiltIndexes != 0 {
		t.Fatalf("follower recovery %+v, want clean", r)
	}
	check("after reopen", 5) // Open takes max(Config.LeaderEpoch, latest cached epoch)
}

// TestAppendAsFollowerRefused: appends a follower must not take leave the log as it was.
func TestAppendAsFollowerRefused(t *testing.T) {
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs})
	defer mustClose(t, l)
	if _, err := l.AppendAsFollower(stamped(replBatch(0), 0, 2)); err != nil { // 0-2, epoch 2
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		records []byte
		want    error
	}{
		{"empty", nil, ErrCorruptRecord},
		{"below the log end offset", stamped(replBatch(1), 2, 2), ErrOffsetOutOfRange},
		{"gap in a log that is not compacted", stamped(replBatch(1), 4, 2), ErrOffsetOutOfRange},
		{"epoch below the latest", stamped(replBatch(1), 3, 1), ErrCorruptRecord},
		{"no epoch (-1)", stamped(replBatch(1), 3, -1), ErrCorruptRecord},
		{"offsets not increasing", concatBytes(stamped(replBatch(1), 3, 2), stamped(replBatch(2), 5, 2)), ErrCorruptRecord},
		{"epochs decreasing", concatBytes(stamped(replBatch(1), 3, 3), stamped(replBatch(2), 6, 2)), ErrCorruptRecord},
		{"bad CRC", func() []byte { b := stamped(replBatch(1), 3, 2); b[len(b)-1] ^= 1; return b }(), ErrCorruptRecord},
	} {
		before := fmt.Sprint(fs.files())
		r, err := l.AppendAsFollower(c.records)
		if !errors.Is(err, c.want) || r.BaseOffset != -1 {
			t.Errorf("%s: %+v, %v; want %v", c.name, r, err, c.want)
		}
		if fmt.Sprint(fs.files()) != before || l.LogEndOffset() != 3 {
			t.Errorf("%s: the log changed", c.name)
		}
	}
	if l.LeaderEpoch() != 0 {
		t.Fatalf("follower appends changed the leader epoch to %d", l.LeaderEpoch())
	}
}

// TestAppendAsFollowerGap: in a compacted log a batch past the log end offset starts a segment at
// its base offset; reads skip the gap and a reopen is clean.
func TestAppendAsFollowerGap(t *testing.T) {
	fs := newMemFS()
	cfg := Config{FS: fs, CleanupPolicy: "compact"}
	l := mustOpen(t, "/d", cfg)
	a, b, c := stamped(replBatch(0), 0, 0), stamped(replBatch(1), 10, 1), stamped(replBatch(2), 20, 1)
	if _, err := l.AppendAsFollower(a); err != nil {
		t.Fatal(err)
	}
	if r, err := l.AppendAsFollower(concatBytes(b, c)); err != nil || r.BaseOffset != 10 || r.LastOffset != 22 {
		t.Fatalf("AppendAsFollower past gaps = %+v, %v", r, err)
	}
	check := func() {
		t.Helper()
		if got := segBases(l); !slices.Equal(got, []int64{0, 10, 20}) || l.LogEndOffset() != 23 {
			t.Fatalf("segments %v, LEO %d; want [0 10 20], 23", got, l.LogEndOffset())
		}
		if got, err := l.Read(3, math.MaxInt32); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Read(3) in the gap: %v", err)
		}
		for _, r := range []struct {
			off  int64
			want []byte
		}{{0, a}, {13, c}, {23, nil}} {
			if got, err := l.Read(r.off, math.MaxInt32); err != nil || !bytes.Equal(got, r.want) {
				t.Fatalf("Read(%d): %d bytes, %v", r.off, len(got), err)
			}
		}
		if got := allEpochs(l)[1:4]; fmt.Sprint(got) != "[[0 10] [1 23] [-1 -1]]" {
			t.Fatalf("EndOffsetForEpoch 0..2 = %v", got)
		}
	}
	check()
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if r := l.Recovery(); r.Problem != "" || r.EpochCheckpoint != "ok" {
		t.Fatalf("recovery %+v", r)
	}
	check()

	// An empty log: the empty active segment is replaced by one at the batch's base.
	e := mustOpen(t, "/e", cfg)
	defer mustClose(t, e)
	if _, err := e.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if got := segBases(e); !slices.Equal(got, []int64{10}) || e.LogStartOffset() != 10 || e.LogEndOffset() != 13 {
		t.Fatalf("segments %v, log start %d, LEO %d", got, e.LogStartOffset(), e.LogEndOffset())
	}
}

// TestAppendAsFollowerProducerState: the follower takes the leader's producer batches as they
// are — a repeated or out-of-order sequence is neither refused nor treated as a duplicate.
func TestAppendAsFollowerProducerState(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS(), Now: newClock(5000).now})
	defer mustClose(t, l)
	for i, c := range []struct {
		epoch int16
		seq   int32
		base  int64
	}{{0, 0, 0}, {0, 0, 3}, {0, 7, 6}, {1, 5, 9}, {0, 1, 12}} {
		b := stamped(idemBatch(9, c.epoch, c.seq, 2000, values(i, 3, 10)...), c.base, 0)
		r, err := l.AppendAsFollower(b)
		if err != nil || r.Duplicate || r.BaseOffset != c.base {
			t.Fatalf("batch %d: %+v, %v", i, r, err)
		}
	}
	e, ok := l.ProducerEntry(9)
	if !ok || e.Epoch != 0 || len(e.Batches) != 1 || e.Batches[0].FirstSeq() != 1 || e.Batches[0].LastOffset != 14 {
		t.Fatalf("producer entry %+v, want epoch 0 with the last batch (seq 1-3, last offset 14)", e)
	}
}

// TestHighWatermark: without ReplicatedHighWatermark it is the LEO; with it, SetHighWatermark
// only moves forward and ForceHighWatermark both ways, clamped to [log start, LEO]; the
// checkpoint survives Close and Open, is clamped when the log got shorter, and its absence means
// the log start.
func TestHighWatermark(t *testing.T) {
	plain := mustOpen(t, "/p", Config{FS: newMemFS()})
	mustAppend(t, plain, replBatch(0))
	if plain.HighWatermark() != 3 || plain.SetHighWatermark(1) != 3 || plain.ForceHighWatermark(1) != 3 || plain.CheckpointHighWatermark() != nil {
		t.Fatal("a log without ReplicatedHighWatermark: the high watermark is not the LEO")
	}
	mustClose(t, plain)

	fs := newMemFS()
	cfg := Config{FS: fs, ReplicatedHighWatermark: true}
	l := mustOpen(t, "/d", cfg)
	if l.HighWatermark() != 0 {
		t.Fatalf("new log: high watermark %d", l.HighWatermark())
	}
	for i := range 3 {
		mustAppend(t, l, replBatch(i)) // LEO 9
	}
	for _, c := range []struct {
		op   string
		arg  int64
		want int64
	}{
		{"set", 4, 4}, {"set", 2, 4}, {"set", 100, 9}, {"force", 3, 3}, {"force", -5, 0}, {"set", 6, 6}, {"force", 7, 7},
	} {
		var got int64
		if c.op == "set" {
			got = l.SetHighWatermark(c.arg)
		} else {
			got = l.ForceHighWatermark(c.arg)
		}
		if got != c.want || l.HighWatermark() != c.want || l.LogEndOffset() != 9 {
			t.Fatalf("%s(%d) = %d (HighWatermark %d, LEO %d), want %d", c.op, c.arg, got, l.HighWatermark(), l.LogEndOffset(), c.want)
		}
	}
	// DeleteRecords is bounded by the high watermark.
	if _, err := l.DeleteRecordsBefore(8); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecordsBefore above the high watermark: %v", err)
	}
	mustClose(t, l)
	if got := string(fs.content("/d/" + hwCheckpointName)); got != "0\n1\n7\n" {
		t.Fatalf("checkpoint %q", got)
	}
	l = mustOpen(t, "/d", cfg)
	if l.HighWatermark() != 7 || l.Recovery().Problem != "" {
		t.Fatalf("after reopen: high watermark %d, recovery %+v", l.HighWatermark(), l.Recovery())
	}
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	// The log got shorter behind the checkpoint's back (a truncation the checkpoint did not see).
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if l.HighWatermark() != 6 {
		t.Fatalf("after TruncateTo(6): high watermark %d", l.HighWatermark())
	}
	fs.mutate("/d/"+hwCheckpointName, func([]byte) []byte { return []byte("0\n1\n50\n") })
	l.mu.Lock()
	l.cfg.ReplicatedHighWatermark = false // Close must not rewrite the checkpoint
	l.mu.Unlock()
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	if l.HighWatermark() != 6 || l.LogEndOffset() != 6 {
		t.Fatalf("checkpoint 50 on a log ending at 6: high watermark %d", l.HighWatermark())
	}
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	mustClose(t, l)
	if err := fs.Remove("/d/" + hwCheckpointName); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if l.HighWatermark() != 3 {
		t.Fatalf("no checkpoint: high watermark %d, want the log start 3", l.HighWatermark())
	}
}

// TestReadUpTo: only whole batches ending below limit, never one crossing it.
func TestReadUpTo(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS()})
	defer mustClose(t, l)
	var stored [][]byte
	for i := range 4 { // 0-2, 3-5, 6-8, 9-11
		mustAppend(t, l, replBatch(i))
		stored = append(stored, stamped(replBatch(i), int64(3*i), 0))
	}
	for _, c := range []struct {
		offset   int64
		maxBytes int32
		limit    int64
		want     []int // batches
		err      error
	}{
		{0, math.MaxInt32, 12, []int{0, 1, 2, 3}, nil},
		{0, math.MaxInt32, 100, []int{0, 1, 2, 3}, nil},
		{0, math.MaxInt32, 9, []int{0, 1, 2}, nil},
		{0, math.MaxInt32, 8, []int{0, 1}, nil},
		{0, math.MaxInt32, 3, []int{0}, nil},
		{0, math.MaxInt32, 2, nil, nil},
		{1, math.MaxInt32, 2, nil, nil},
		{4, math.MaxInt32, 7, []int{1}, nil},
		{4, 1, 12, []int{1}, nil},
		{6, math.MaxInt32, 6, nil, nil},
		{7, math.MaxInt32, 0, nil, nil},
		{12, math.MaxInt32, 12, nil, nil},
		{13, math.MaxInt32, 20, nil, ErrOffsetOutOfRange},
		{-1, math.MaxInt32, 20, nil, ErrOffsetOutOfRange},
	} {
		got, err := l.ReadUpTo(c.offset, c.maxBytes, c.limit)
		var want []byte
		for _, i := range c.want {
			want = append(want, stored[i]...)
		}
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) || !bytes.Equal(got, want) {
			t.Errorf("ReadUpTo(%d, %d, %d) = %d bytes, %v; want batches %v, %v", c.offset, c.maxBytes, c.limit, len(got), err, c.want, c.err)
		}
	}
	// Read is not bounded by a high watermark.
	if got, err := l.Read(9, math.MaxInt32); err != nil || !bytes.Equal(got, stored[3]) {
		t.Fatalf("Read(9): %v", err)
	}
}

// TestTruncateTo: the fixture truncated at various offsets holds exactly the batches below the
// batch start at or before the offset, in the expected segments, with the epoch cache, high
// watermark and producer state cut; the state survives a reopen, which finds nothing to repair,
// and appends go on at the new LEO.
func TestTruncateTo(t *testing.T) {
	for _, c := range []struct {
		name     string
		offset   int64
		wantLEO  int64
		wantSegs []int64
		epochs   string // EndOffsetForEpoch(-1..8)
	}{
		{"inside a batch", 7, 6, []int64{0, 6}, "[[-1 -1] [0 6] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1]]"},
		{"batch boundary inside a segment", 9, 9, []int64{0, 6}, "[[-1 -1] [0 6] [0 6] [2 9] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1]]"},
		{"segment boundary", 12, 12, []int64{0, 6}, "[[-1 -1] [0 6] [0 6] [2 12] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1]]"},
		{"inside the first batch of a segment", 13, 12, []int64{0, 6, 12}, "[[-1 -1] [0 6] [0 6] [2 12] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1]]"},
		{"the first offset", 0, 0, []int64{0}, "[[-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1] [-1 -1]]"},
		{"the log end offset", 18, 18, []int64{0, 6, 12}, "[[-1 -1] [0 6] [0 6] [2 12] [2 12] [2 12] [5 18] [-1 -1] [-1 -1] [-1 -1]]"},
		{"beyond the log end offset", 40, 18, []int64{0, 6, 12}, "[[-1 -1] [0 6] [0 6] [2 12] [2 12] [2 12] [5 18] [-1 -1] [-1 -1] [-1 -1]]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMemFS()
			l, cfg := leaderFixture(t, "/d", fs, func(c *Config) { c.ReplicatedHighWatermark = true })
			mustAppendRecords(t, l, idemBatch(3, 0, 0, 1500, values(0, 3, 10)...)) // 18-20, epoch 5
			if err := l.TruncateTo(18); err != nil {                               // drop it again: the producer goes with it
				t.Fatal(err)
			}
			if _, ok := l.ProducerEntry(3); ok {
				t.Fatal("producer of a truncated batch kept")
			}
			l.SetHighWatermark(18)
			if err := l.TruncateTo(c.offset); err != nil {
				t.Fatal(err)
			}
			check := func(when string, leaderEpoch int32) {
				t.Helper()
				if l.LogEndOffset() != c.wantLEO || l.HighWatermark() != c.wantLEO || l.LogStartOffset() != 0 {
					t.Fatalf("%s: LEO %d, HW %d, log start %d; want LEO = HW = %d", when, l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset(), c.wantLEO)
				}
				if got := segBases(l); !slices.Equal(got, c.wantSegs) {
					t.Fatalf("%s: segments %v, want %v", when, got, c.wantSegs)
				}
				if got := readAll(t, l); !bytes.Equal(got, storedPrefix(c.wantLEO)) {
					t.Fatalf("%s: content differs from the fixture's first %d offsets", when, c.wantLEO)
				}
				if got := fmt.Sprint(allEpochs(l)); got != c.epochs {
					t.Fatalf("%s: EndOffsetForEpoch = %s, want %s", when, got, c.epochs)
				}
				if l.LeaderEpoch() != leaderEpoch {
					t.Fatalf("%s: leader epoch %d", when, l.LeaderEpoch())
				}
			}
			check("after TruncateTo", 5) // truncation does not change the epoch leader appends stamp
			mustClose(t, l)
			l = mustOpen(t, "/d", cfg)
			defer mustClose(t, l)
			if r := l.Recovery(); r.Problem != "" || r.EpochCheckpoint != "ok" || r.RebuiltIndexes != 0 || r.TruncatedBytes != 0 || r.DeletedSegments != 0 {
				t.Fatalf("recovery after TruncateTo: %+v", r)
			}
			// Open takes the latest cached epoch (Config.LeaderEpoch is 0).
			latest, _ := l.LatestEpoch()
			check("after reopen", max(latest, 0))
			if off := mustAppend(t, l, replBatch(9)); off != c.wantLEO {
				t.Fatalf("append after truncation at %d, want %d", off, c.wantLEO)
			}
		})
	}
}

// TestTruncateToDropsUnfollowedEpoch: a TruncateTo at the LEO drops the entry SetLeaderEpoch added
// that no batch followed (Kafka's truncateTo always truncates the epoch cache).
func TestTruncateToDropsUnfollowedEpoch(t *testing.T) {
	l, _ := leaderFixture(t, "/d", newMemFS(), nil)
	defer mustClose(t, l)
	if err := l.SetLeaderEpoch(7); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(5); e != 5 || off != 18 {
		t.Fatalf("EndOffsetForEpoch(5) = (%d, %d)", e, off)
	}
	if err := l.TruncateTo(18); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.LatestEpoch(); e != 5 || l.LogEndOffset() != 18 {
		t.Fatalf("latest epoch %d, LEO %d; want 5, 18", e, l.LogEndOffset())
	}
}

// TestTruncateBelowLogStartAndFully: TruncateTo below the log start is TruncateFullyAndStartAt;
// TruncateFullyAndStartAt empties the log, restarts it at the offset (above, below or at a segment
// base), and a reopen keeps that.
func TestTruncateBelowLogStartAndFully(t *testing.T) {
	for _, c := range []struct {
		name   string
		op     func(*Log) error
		offset int64
	}{
		{"TruncateTo below the log start", func(l *Log) error { return l.TruncateTo(4) }, 4},
		{"TruncateFullyAndStartAt beyond the LEO", func(l *Log) error { return l.TruncateFullyAndStartAt(100) }, 100},
		{"TruncateFullyAndStartAt at a segment base", func(l *Log) error { return l.TruncateFullyAndStartAt(12) }, 12},
		{"TruncateFullyAndStartAt at 0", func(l *Log) error { return l.TruncateFullyAndStartAt(0) }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMemFS()
			l, cfg := leaderFixture(t, "/d", fs, func(c *Config) { c.ReplicatedHighWatermark = true })
			mustAppendRecords(t, l, idemBatch(3, 0, 0, 1500, values(0, 3, 10)...))
			l.SetHighWatermark(21)
			if _, err := l.DeleteRecordsBefore(6); err != nil {
				t.Fatal(err)
			}
			if err := l.EnforceRetention(); err != nil {
				t.Fatal(err)
			}
			if err := c.op(l); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				if l.LogStartOffset() != c.offset || l.LogEndOffset() != c.offset || l.HighWatermark() != c.offset {
					t.Fatalf("%s: log start %d, LEO %d, HW %d; want all %d", when, l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), c.offset)
				}
				if got := segBases(l); !slices.Equal(got, []int64{c.offset}) {
					t.Fatalf("%s: segments %v", when, got)
				}
				if _, ok := l.LatestEpoch(); ok {
					t.Fatalf("%s: epoch cache not empty", when)
				}
				if _, ok := l.ProducerEntry(3); ok {
					t.Fatalf("%s: producer kept", when)
				}
				if b, err := l.Read(c.offset, 100); err != nil || len(b) != 0 {
					t.Fatalf("%s: Read(%d) = %d bytes, %v", when, c.offset, len(b), err)
				}
			}
			check("after truncation")
			if got := string(fs.content("/d/" + epochCheckpointName)); got != "0\n0\n" {
				t.Fatalf("epoch checkpoint %q", got)
			}
			mustClose(t, l)
			l = mustOpen(t, "/d", cfg)
			defer mustClose(t, l)
			if r := l.Recovery(); r.Problem != "" || r.EpochCheckpoint != "ok" || r.Segments != 1 {
				t.Fatalf("recovery %+v", r)
			}
			check("after reopen")
			b := stamped(replBatch(7), c.offset, 6)
			if _, err := l.AppendAsFollower(b); err != nil {
				t.Fatal(err)
			}
			if hw := l.ForceHighWatermark(math.MaxInt64); hw != c.offset+3 {
				t.Fatalf("ForceHighWatermark to the LEO: %d", hw)
			}
			if got := readAll(t, l); !bytes.Equal(got, b) {
				t.Fatal("follower append after the truncation not read back")
			}
		})
	}
}

// TestTruncateCrash: a crash after any number of the directory operations of a TruncateTo or a
// TruncateFullyAndStartAt (the next one fails, then the power goes) leaves a log that Open
// recovers: a prefix of the fixture's batches, at most the truncation target or all of them, with
// epoch answers that match its content; truncating again then gives the intended log.
func TestTruncateCrash(t *testing.T) {
	for _, c := range []struct {
		name    string
		op      func(*Log) error
		wantLEO int64
		start   int64
	}{
		{"TruncateTo(7)", func(l *Log) error { return l.TruncateTo(7) }, 6, 0},
		{"TruncateTo(0)", func(l *Log) error { return l.TruncateTo(0) }, 0, 0},
		{"TruncateFullyAndStartAt(30)", func(l *Log) error { return l.TruncateFullyAndStartAt(30) }, 30, 30},
		{"TruncateFullyAndStartAt(6)", func(l *Log) error { return l.TruncateFullyAndStartAt(6) }, 6, 6},
	} {
		for k := 0; ; k++ {
			fs := newMemFS()
			l, cfg := leaderFixture(t, "/d", fs, nil)
			n := 0
			fs.opHook = func(op, name string) error {
				if n++; n > k {
					return fmt.Errorf("injected %s %s failure", op, name)
				}
				return nil
			}
			err := c.op(l)
			fs.opHook = nil
			done := err == nil
			l.Close()
			fs.crash(nil)
			l = mustOpen(t, "/d", cfg)
			leo, ls := l.LogEndOffset(), l.LogStartOffset()
			got := readAll(t, l)
			// A crash after the log start checkpoint of TruncateFullyAndStartAt leaves the
			// batches from there, as a DeleteRecords would.
			want := storedPrefix(leo)[min(ls, 18)/3*replBatchLen:]
			if !bytes.Equal(got, want) || (done && (leo != c.wantLEO || ls != c.start)) {
				t.Fatalf("%s, crash after %d ops (done %v): log [%d, %d), %d bytes: not the fixture's batches in that range", c.name, k, done, ls, leo, len(got))
			}
			// The old log, the target, or (the epoch checkpoint emptied, the old batches refused)
			// an empty log.
			if r := l.Recovery(); ls == 0 && leo != 18 && leo != c.wantLEO && leo != 0 {
				t.Fatalf("%s, crash after %d ops: LEO %d, neither the old nor the target nor empty (%+v)", c.name, k, leo, r)
			}
			for _, e := range allEpochs(l) {
				if e[1] > leo {
					t.Fatalf("%s, crash after %d ops: EndOffsetForEpoch answers %v past LEO %d", c.name, k, e, leo)
				}
			}
			if err := c.op(l); err != nil {
				t.Fatalf("%s again after the crash: %v", c.name, err)
			}
			wantBytes := storedPrefix(c.wantLEO)
			if c.start > 0 {
				wantBytes = nil
			}
			if l.LogEndOffset() != c.wantLEO || !bytes.Equal(readAll(t, l), wantBytes) {
				t.Fatalf("%s again after the crash (%d ops): LEO %d", c.name, k, l.LogEndOffset())
			}
			mustClose(t, l)
			if done {
				break
			}
		}
	}
}

// TestRetentionBoundedByHighWatermark: with ReplicatedHighWatermark, retention deletes only the
// segments wholly below the high watermark.
func TestRetentionBoundedByHighWatermark(t *testing.T) {
	l, _ := leaderFixture(t, "/d", newMemFS(), func(c *Config) {
		c.ReplicatedHighWatermark = true
		c.RetentionBytes = 1
	})
	defer mustClose(t, l)
	for _, c := range []struct {
		hw   int64
		segs []int64
	}{{0, []int64{0, 6, 12}}, {5, []int64{0, 6, 12}}, {6, []int64{6, 12}}, {11, []int64{6, 12}}, {12, []int64{12}}, {18, []int64{12}}} {
		l.SetHighWatermark(c.hw)
		if err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if got := segBases(l); !slices.Equal(got, c.segs) || l.HighWatermark() != c.hw {
			t.Fatalf("high watermark %d: segments %v (HW %d), want %v", c.hw, got, l.HighWatermark(), c.segs)
		}
	}
}

// TestTruncateToBelowMidBatchLogStart: a truncation into the batch holding a log start offset
// DeleteRecords set mid-batch brings the log start down to the new, empty, end (checkpointed).
func TestTruncateToBelowMidBatchLogStart(t *testing.T) {
	fs := newMemFS()
	l, cfg := leaderFixture(t, "/d", fs, nil)
	if _, err := l.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 || l.HighWatermark() != 3 {
		t.Fatalf("log [%d, %d), HW %d; want [3, 3), 3", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	mustClose(t, l)
	l = mustOpen(t, "/d", cfg)
	defer mustClose(t, l)
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 || l.Recovery().Problem != "" {
		t.Fatalf("after reopen: log [%d, %d), %+v", l.LogStartOffset(), l.LogEndOffset(), l.Recovery())
	}
	if off := mustAppend(t, l, replBatch(8)); off != 3 {
		t.Fatalf("append at %d, want 3", off)
	}
}

// TestReplicationConcurrent: readers (ReadUpTo below the high watermark, Read, the offsets and
// epoch lookups) run while a follower appends, moves its high watermark and truncates; -race
// checks the locking, and every ReadUpTo returns whole batches below the limit it was given.
func TestReplicationConcurrent(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS(), SegmentBytes: 2 * replBatchLen, ReplicatedHighWatermark: true})
	defer mustClose(t, l)
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			hw := l.HighWatermark()
			b, err := l.ReadUpTo(l.LogStartOffset(), math.MaxInt32, hw)
			if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
				errs <- err
				return
			}
			bs, derr := tryDecodeBatches(b)
			if derr != nil {
				errs <- derr
				return
			}
			if len(bs) > 0 && bs[len(bs)-1].last >= hw {
				errs <- fmt.Errorf("ReadUpTo(limit %d) returned a batch ending at %d", hw, bs[len(bs)-1].last)
				return
			}
			l.EndOffsetForEpoch(1)
			l.LatestEpoch()
			_, _ = l.Read(l.LogEndOffset(), 100)
		}
	}()
	for round := range 30 {
		leo := l.LogEndOffset()
		if _, err := l.AppendAsFollower(stamped(replBatch(round), leo, int32(round))); err != nil {
			t.Fatal(err)
		}
		l.ForceHighWatermark(leo + 1)
		if round%5 == 4 {
			if err := l.TruncateTo(leo - 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// TestCleanerBoundedByHighWatermark: with ReplicatedHighWatermark the Cleaner leaves alone the
// segments that reach the high watermark, and cleans them once it has moved past.
func TestCleanerBoundedByHighWatermark(t *testing.T) {
	clock := newClock(1_000_000)
	l := mustOpen(t, "/d", Config{FS: newMemFS(), Now: clock.now, SegmentBytes: 4096, CleanupPolicy: "compact", ReplicatedHighWatermark: true})
	defer mustClose(t, l)
	w := newWriter(t, l, clock)
	for i := range 200 {
		w.write(kv{[]byte(fmt.Sprintf("k%d", i%5)), []byte(fmt.Sprintf("v%d", i))})
	}
	bases := segBases(l)
	if len(bases) < 3 {
		t.Fatalf("%d segments; the test needs at least 3", len(bases))
	}
	c := NewCleaner(CleanerConfig{Logs: func() []*Log { return []*Log{l} }})
	// The high watermark inside the first segment: nothing is cleanable.
	l.SetHighWatermark(bases[1] - 1)
	if n := cleanUntilIdle(t, c); n != 0 {
		t.Fatalf("%d cleaning passes below a high watermark inside the first segment, want 0", n)
	}
	if !slices.Equal(segBases(l), bases) {
		t.Fatalf("segments changed: %v", segBases(l))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if n := cleanUntilIdle(t, c); n != 1 {
		t.Fatalf("%d cleaning passes once the high watermark is at the LEO, want 1", n)
	}
	l.ForceHighWatermark(l.LogEndOffset())
	w.check(consume(t, l))
}

// TestLeaderAppendAfterFollowerAppends: a leader append stamping an epoch older than the one
// follower appends cached is refused until SetLeaderEpoch makes this replica leader of a newer epoch.
func TestLeaderAppendAfterFollowerAppends(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS()})
	defer mustClose(t, l)
	if _, err := l.AppendAsFollower(stamped(replBatch(0), 0, 4)); err != nil {
		t.Fatal(err)
	}
	_, err := l.AppendRecords(replBatch(1))
	wantErr(t, err, errFenced)
	if l.LogEndOffset() != 3 {
		t.Fatalf("LEO %d after a refused append", l.LogEndOffset())
	}
	if err := l.SetLeaderEpoch(6); err != nil {
		t.Fatal(err)
	}
	if r := mustAppendRecords(t, l, replBatch(1)); r.BaseOffset != 3 {
		t.Fatalf("leader append at %d, want 3", r.BaseOffset)
	}
	if got, err := l.Read(3, 1); err != nil || !bytes.Equal(got, stamped(replBatch(1), 3, 6)) {
		t.Fatalf("leader batch not stamped with epoch 6: %v", err)
	}
	// Below the first cached epoch: (that epoch, the first entry's start), as Kafka answers.
	if got := fmt.Sprint(allEpochs(l)[1:8]); got != "[[0 0] [1 0] [2 0] [3 0] [4 3] [4 3] [6 6]]" {
		t.Fatalf("EndOffsetForEpoch 0..6 = %s", got)
	}
}
