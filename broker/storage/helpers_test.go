package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newBatch builds a real v2 RecordBatch with kmsg: one uncompressed record per
// value, timestamps ts, ts+1, ... (ts = -1: no timestamps), producer fields as a
// non-idempotent producer sends them, CRC-32C set.
func newBatch(ts int64, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v, Key: []byte(fmt.Sprintf("k%d", i))}
		if ts >= 0 {
			r.TimestampDelta64 = int64(i)
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // AppendTo writes Length as a 1-byte varint 0
		recs = r.AppendTo(recs)
	}
	n := int32(len(values))
	maxTs := ts
	if ts >= 0 {
		maxTs = ts + int64(n) - 1
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      n - 1,
		FirstTimestamp:       ts,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           n,
		Records:              recs,
		Length:               int32(batchOverhead - logOverhead + len(recs)),
	}
	return withCRC(rb)
}

// withCRC encodes rb with its CRC-32C computed.
func withCRC(rb kmsg.RecordBatch) []byte {
	raw := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(raw[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(nil)
}

// values returns n values of size bytes, tagged with seq.
func values(seq, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		v := []byte(fmt.Sprintf("%d/%d:", seq, i))
		for len(v) < size {
			v = append(v, byte('a'+(seq+i+len(v))%26))
		}
		out[i] = v[:max(size, 1)]
	}
	return out
}

// stamped is how the log stores b: baseOffset and partitionLeaderEpoch rewritten.
func stamped(b []byte, base int64, epoch int32) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(out, uint64(base))
	binary.BigEndian.PutUint32(out[offPartitionLeaderEpoch:], uint32(epoch))
	return out
}

// decoded is one batch of a Read, checked with kmsg independently of the log's
// own parser.
type decoded struct {
	base, last int64
	raw        []byte
	values     [][]byte
}

// decodeBatches splits read output into batches and fails the test on any torn
// or corrupt one (length, magic, CRC-32C, records decodable by kmsg).
func decodeBatches(t testing.TB, b []byte) []decoded {
	t.Helper()
	out, err := tryDecodeBatches(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryDecodeBatches(b []byte) ([]decoded, error) {
	var out []decoded
	for len(b) > 0 {
		if len(b) < batchOverhead {
			return nil, fmt.Errorf("read returned a torn batch header: %d bytes", len(b))
		}
		size := logOverhead + int(int32(binary.BigEndian.Uint32(b[offLength:])))
		if size < batchOverhead || size > len(b) {
			return nil, fmt.Errorf("read returned a torn batch: size %d, %d bytes", size, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			return nil, fmt.Errorf("kmsg cannot decode a returned batch: %v", err)
		}
		if rb.Magic != 2 {
			return nil, fmt.Errorf("returned batch has magic %d", rb.Magic)
		}
		if crc32.Checksum(b[offAttributes:size], crc32.MakeTable(crc32.Castagnoli)) != uint32(rb.CRC) {
			return nil, fmt.Errorf("returned batch at offset %d fails its CRC", rb.FirstOffset)
		}
		d := decoded{base: rb.FirstOffset, last: rb.FirstOffset + int64(rb.LastOffsetDelta), raw: b[:size]}
		recs := rb.Records
		if rb.Attributes&0x07 != 0 { // compressed: the payload is opaque here
			recs, rb.NumRecords = nil, 0
		}
		for i := int32(0); i < rb.NumRecords; i++ {
			l, k := binary.Varint(recs)
			if k <= 0 || l < 0 || int(l) > len(recs)-k {
				return nil, fmt.Errorf("returned batch %d: record %d unreadable", rb.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:k+int(l)]); err != nil {
				return nil, fmt.Errorf("returned batch %d: record %d: %v", rb.FirstOffset, i, err)
			}
			d.values = append(d.values, r.Value)
			recs = recs[k+int(l):]
		}
		out = append(out, d)
		b = b[size:]
	}
	return out, nil
}

// readAll reads the whole log from LogStartOffset to HighWatermark.
func readAll(t testing.TB, l *Log) []byte {
	t.Helper()
	var all []byte
	hw := l.HighWatermark()
	for off := l.LogStartOffset(); off < hw; {
		b, err := l.Read(off, math.MaxInt32)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		bs := decodeBatches(t, b)
		if len(bs) == 0 {
			t.Fatalf("Read(%d) below the high watermark %d returned nothing", off, hw)
		}
		if bs[0].base > off || bs[0].last < off {
			t.Fatalf("Read(%d) starts with batch [%d, %d]", off, bs[0].base, bs[0].last)
		}
		all = append(all, b...)
		off = bs[len(bs)-1].last + 1
	}
	if b, err := l.Read(hw, math.MaxInt32); err != nil || len(b) != 0 {
		t.Fatalf("Read(high watermark %d) = %d bytes, %v; want 0 bytes, no error", hw, len(b), err)
	}
	return all
}

func mustOpen(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, records []byte) int64 {
	t.Helper()
	off, err := l.Append(records)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return off
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// fakeClock is an injectable Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time   { return c.t }
func (c *fakeClock) advance(ms int64) { c.t = c.t.Add(time.Duration(ms) * time.Millisecond) }
func newClock(ms int64) *fakeClock    { return &fakeClock{time.UnixMilli(ms)} }
func (c *fakeClock) set(ms int64)     { c.t = time.UnixMilli(ms) }
func segBases(l *Log) (bases []int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		bases = append(bases, s.base)
	}
	return bases
}
