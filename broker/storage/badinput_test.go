package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchWith builds a one-record batch through kmsg after edit changed its
// fields; the CRC is computed after the edit, so only the edited rule is broken.
func batchWith(edit func(rb *kmsg.RecordBatch)) []byte {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(newBatch(1, values(0, 1, 10)...)); err != nil {
		panic(err)
	}
	rb.Records = bytes.Clone(rb.Records)
	edit(&rb)
	rb.Length = int32(batchOverhead - logOverhead + len(rb.Records))
	return withCRC(rb)
}

func patch(b []byte, at int, f func([]byte)) []byte {
	b = bytes.Clone(b)
	f(b[at:])
	return b
}

// TestBadInput: every invalid Append returns ErrCorruptRecord and changes
// nothing on disk, also when only a later batch of the Append is bad.
func TestBadInput(t *testing.T) {
	good := newBatch(1, values(0, 2, 10)...)
	garbage := make([]byte, 300)
	rand.New(rand.NewSource(1)).Read(garbage)
	cases := []struct {
		name, why string
		records   []byte
	}{
		{"empty", "no record batch", nil},
		{"garbage", "", garbage},
		{"short header", "a batch header needs 61", good[:30]},
		{"wrong magic", "magic 1", patch(good, offMagic, func(b []byte) { b[0] = 1 })},
		{"legacy magic 0", "magic 0", patch(good, offMagic, func(b []byte) { b[0] = 0 })},
		{"length overruns", "overruns", patch(good, offLength, func(b []byte) { binary.BigEndian.PutUint32(b, uint32(len(good))) })},
		{"length max", "overruns", patch(good, offLength, func(b []byte) { binary.BigEndian.PutUint32(b, math.MaxInt32) })},
		{"length negative", "below the minimum", patch(good, offLength, func(b []byte) { binary.BigEndian.PutUint32(b, math.MaxUint32) })},
		{"length too small", "below the minimum", patch(good, offLength, func(b []byte) { binary.BigEndian.PutUint32(b, 10) })},
		{"cut short", "overruns", good[:len(good)-1]},
		{"value byte flipped", "CRC-32C", patch(good, len(good)-3, func(b []byte) { b[0] ^= 1 })},
		{"crc flipped", "CRC-32C", patch(good, offCRC, func(b []byte) { b[0] ^= 0x80 })},
		{"count above last offset delta", "2 records but last offset delta 0", batchWith(func(rb *kmsg.RecordBatch) { rb.NumRecords = 2 })},
		{"negative last offset delta", "last offset delta -1", batchWith(func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta, rb.NumRecords = -1, 0; rb.Records = nil })},
		{"record length past the batch", "record 0: bad length", batchWith(func(rb *kmsg.RecordBatch) { rb.Records[0] += 2 })},
		{"bytes after the last record", "1 bytes after the last record", batchWith(func(rb *kmsg.RecordBatch) { rb.Records = append(rb.Records, 0) })},
		{"unknown compression", "compression codec 5", batchWith(func(rb *kmsg.RecordBatch) { rb.Attributes = 5 })},
		{"second batch bad", "batch 1 at byte", append(bytes.Clone(good), patch(good, len(good)-1, func(b []byte) { b[0] ^= 1 })...)},
		{"trailing garbage", "batch 1 at byte", append(bytes.Clone(good), 1, 2, 3, 4, 5)},
	}
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs})
	defer mustClose(t, l)
	ws := fill(t, l, 1, 3)
	before := fmt.Sprint(fs.files())
	for _, tc := range cases {
		off, err := l.Append(tc.records)
		wantErr(t, err, ErrCorruptRecord)
		if off != -1 || !strings.Contains(err.Error(), tc.why) {
			t.Fatalf("%s: Append = %d, %v; want -1 and an error saying %q", tc.name, off, err, tc.why)
		}
		if fmt.Sprint(fs.files()) != before || l.HighWatermark() != nextOffset(ws) {
			t.Fatalf("%s: the log changed", tc.name)
		}
	}
	if !bytes.Equal(readAll(t, l), concat(ws)) {
		t.Fatal("content changed")
	}
	// The same log still takes good batches at the next offset.
	if off := mustAppend(t, l, good); off != nextOffset(ws) {
		t.Fatalf("append at %d, want %d", off, nextOffset(ws))
	}
}

// TestCompressedBatch: a compressed batch is stored as received (its payload is
// covered by the CRC; Kafka would also decompress it to validate records).
func TestCompressedBatch(t *testing.T) {
	var raw kmsg.RecordBatch
	if err := raw.ReadFrom(newBatch(7, values(3, 4, 50)...)); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(raw.Records)
	w.Close()
	b := batchWith(func(rb *kmsg.RecordBatch) {
		*rb = raw
		rb.Attributes = 1 // gzip
		rb.Records = z.Bytes()
	})
	l := mustOpen(t, "/d", Config{FS: newMemFS()})
	defer mustClose(t, l)
	mustAppend(t, l, newBatch(1, values(0, 1, 5)...))
	if off := mustAppend(t, l, b); off != 1 {
		t.Fatalf("offset %d, want 1", off)
	}
	if l.HighWatermark() != 5 {
		t.Fatalf("high watermark %d, want 5 (4 compressed records)", l.HighWatermark())
	}
	for off := int64(1); off < 5; off++ {
		if got, err := l.Read(off, 1); err != nil || !bytes.Equal(got, stamped(b, 1, 0)) {
			t.Fatalf("Read(%d) = %v; want the compressed batch as received", off, err)
		}
	}
}

func TestTooLarge(t *testing.T) {
	fs := newMemFS()
	l := mustOpen(t, "/d", Config{FS: fs, SegmentBytes: 200})
	defer mustClose(t, l)
	mustAppend(t, l, newBatch(1, values(0, 1, 10)...))
	before := fmt.Sprint(fs.files())
	_, err := l.Append(newBatch(1, values(0, 1, 300)...))
	wantErr(t, err, ErrRecordBatchTooLarge)
	if fmt.Sprint(fs.files()) != before || l.HighWatermark() != 1 {
		t.Fatal("the log changed")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{SegmentBytes: -1}, "log.segment.bytes"},
		{Config{SegmentBytes: 1 << 31}, "log.segment.bytes"},
		{Config{SegmentMs: -1}, "log.roll.ms"},
		{Config{RetentionBytes: -2}, "log.retention.bytes"},
		{Config{RetentionMs: -2}, "log.retention.ms"},
		{Config{FlushIntervalMessages: -1}, "log.flush.interval.messages"},
		{Config{IndexIntervalBytes: -1}, "log.index.interval.bytes"},
		{Config{LeaderEpoch: -1}, "leader epoch"},
	} {
		tc.cfg.FS = newMemFS()
		if _, err := Open("/d", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Open(%+v) = %v; want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	cfg, err := Config{}.withDefaults()
	if err != nil || cfg.SegmentBytes != 1<<30 || cfg.SegmentMs != 604800000 || cfg.RetentionBytes != -1 ||
		cfg.RetentionMs != 604800000 || cfg.FlushIntervalMessages != math.MaxInt64 || cfg.IndexIntervalBytes != 4096 || cfg.FS != OS {
		t.Fatalf("defaults %+v, %v; want Kafka's", cfg, err)
	}
}

func TestClosed(t *testing.T) {
	l := mustOpen(t, "/d", Config{FS: newMemFS()})
	mustAppend(t, l, newBatch(1, values(0, 1, 10)...))
	mustClose(t, l)
	_, err := l.Append(newBatch(1, values(0, 1, 10)...))
	wantErr(t, err, ErrClosed)
	_, err = l.Read(0, 1)
	wantErr(t, err, ErrClosed)
	wantErr(t, l.Sync(), ErrClosed)
	wantErr(t, l.EnforceRetention(), ErrClosed)
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
