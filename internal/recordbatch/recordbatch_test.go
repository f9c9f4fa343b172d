package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRecords() []Record {
	return []Record{
		{OffsetDelta: 0, TimestampDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
		{OffsetDelta: 1, TimestampDelta: 7, Key: nil, Value: []byte{}}, // null key, empty (not null) value
		{OffsetDelta: 2, TimestampDelta: -3, Key: []byte("k2"), Value: nil, // a tombstone
			Headers: []RecordHeader{{Key: "h", Value: []byte("hv")}, {Key: "", Value: nil}}},
	}
}

func testHeader() Header {
	return Header{BaseOffset: 42, PartitionLeaderEpoch: 5, Attributes: 0, LastOffsetDelta: 2,
		BaseTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_007, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, NumRecords: 3}
}

func encode(h Header, recs []Record) []byte {
	var rs []byte
	for _, r := range recs {
		rs = AppendRecord(rs, r)
	}
	return AppendBatch(nil, h, rs)
}

// TestRoundTrip: a batch written by AppendBatch/AppendRecord reads back field for field, and
// franz-go's kmsg (an independent implementation) decodes the same bytes to the same values, with
// the CRC-32C Kafka computes.
func TestRoundTrip(t *testing.T) {
	h, recs := testHeader(), testRecords()
	raw := encode(h, recs)
	trailing := append(bytes.Clone(raw), 0xde, 0xad) // the next batch's first bytes
	b, err := Read(trailing)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != len(raw) {
		t.Fatalf("Size %d, want %d", b.Size(), len(raw))
	}
	want := h
	want.Magic, want.Length = 2, int32(len(raw)-LogOverhead)
	want.CRC = crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	if b.Header != want {
		t.Fatalf("header\n got %+v\nwant %+v", b.Header, want)
	}
	if b.LastOffset() != 44 || b.IsControl() || b.LogAppendTime() || b.Compression() != 0 {
		t.Fatalf("LastOffset %d control %v logAppendTime %v compression %d", b.LastOffset(), b.IsControl(), b.LogAppendTime(), b.Compression())
	}
	var got []Record
	if err := ReadRecords(b.Records, b.NumRecords, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("records\n got %+v\nwant %+v", got, recs)
	}
	if got[1].Value == nil || got[2].Value != nil || got[1].Key != nil {
		t.Fatalf("null and empty not kept apart: %+v", got)
	}

	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	if kb.FirstOffset != 42 || kb.PartitionLeaderEpoch != 5 || kb.Magic != 2 || uint32(kb.CRC) != want.CRC ||
		kb.LastOffsetDelta != 2 || kb.FirstTimestamp != h.BaseTimestamp || kb.MaxTimestamp != h.MaxTimestamp ||
		kb.ProducerID != -1 || kb.ProducerEpoch != -1 || kb.FirstSequence != -1 || kb.NumRecords != 3 {
		t.Fatalf("kmsg header %+v", kb)
	}
	rs := kb.Records
	for i, r := range recs {
		var kr kmsg.Record
		l, n := binary.Varint(rs)
		if err := kr.ReadFrom(rs[:n+int(l)]); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		rs = rs[n+int(l):]
		if kr.OffsetDelta != r.OffsetDelta || kr.TimestampDelta64 != r.TimestampDelta || !bytes.Equal(kr.Key, r.Key) ||
			!bytes.Equal(kr.Value, r.Value) || (kr.Value == nil) != (r.Value == nil) || len(kr.Headers) != len(r.Headers) {
			t.Fatalf("kmsg record %d: %+v, want %+v", i, kr, r)
		}
		// kmsg re-encodes the record to the same bytes
		if enc := AppendRecord(nil, r); !bytes.Equal(kr.AppendTo(nil), enc) {
			t.Fatalf("record %d: kmsg encodes %x, AppendRecord %x", i, kr.AppendTo(nil), enc)
		}
	}
	if len(rs) != 0 {
		t.Fatalf("%d bytes left after kmsg decoded the records", len(rs))
	}
}

// TestReadRejects: each way a batch can be wrong gives an error wrapping ErrCorrupt that says what;
// data that ends early also wraps ErrTruncated, and nothing panics.
func TestReadRejects(t *testing.T) {
	good := encode(testHeader(), testRecords())
	patch := func(at int, f func([]byte)) []byte {
		b := bytes.Clone(good)
		f(b[at:])
		return b
	}
	cases := []struct {
		name      string
		data      []byte
		truncated bool
		why       string
	}{
		{"empty", nil, true, "0 bytes left, a batch header needs 61"},
		{"header cut", good[:60], true, "60 bytes left"},
		{"batch cut", good[:len(good)-1], true, "overruns"},
		{"length below the header", patch(OffLength, func(b []byte) { binary.BigEndian.PutUint32(b, 48) }), false, "batch length 48 below the minimum 49"},
		{"negative length", patch(OffLength, func(b []byte) { binary.BigEndian.PutUint32(b, 0xffffffff) }), false, "below the minimum"},
		{"magic 1", patch(OffMagic, func(b []byte) { b[0] = 1 }), false, "magic 1"},
		{"record byte flipped", patch(len(good)-2, func(b []byte) { b[0] ^= 1 }), false, "CRC mismatch"},
		{"attributes flipped", patch(OffAttributes+1, func(b []byte) { b[0] ^= ControlBit }), false, "CRC mismatch"},
		{"crc flipped", patch(OffCRC, func(b []byte) { b[0] ^= 0x80 }), false, "CRC-32C"},
	}
	for _, tc := range cases {
		_, err := Read(tc.data)
		if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated) != tc.truncated || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v; want ErrCorrupt (truncated %v) saying %q", tc.name, err, tc.truncated, tc.why)
		}
	}
	// the CRC does not cover baseOffset and partitionLeaderEpoch: the log rewrites them
	moved := patch(0, func(b []byte) {
		binary.BigEndian.PutUint64(b, 1000)
		binary.BigEndian.PutUint32(b[OffPartitionLeaderEpoch:], 9)
	})
	if b, err := Read(moved); err != nil || b.BaseOffset != 1000 || b.PartitionLeaderEpoch != 9 {
		t.Fatalf("rewritten base offset and epoch: %+v %v", b.Header, err)
	}
}

// TestReadHeader: the framing checks of Read (with the same errors), and nothing else: a batch whose
// records or magic are wrong still gives its header, size and record count.
func TestReadHeader(t *testing.T) {
	good := encode(testHeader(), testRecords())
	h, err := ReadHeader(append(bytes.Clone(good), 0, 0, 0)) // more bytes may follow
	if err != nil || h.Size() != len(good) || h.NumRecords != testHeader().NumRecords {
		t.Fatalf("header %+v size %d err %v; want size %d, %d records", h, h.Size(), err, len(good), testHeader().NumRecords)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-2] ^= 1
	flipped[OffMagic] = 1
	if h, err := ReadHeader(flipped); err != nil || h.Size() != len(good) {
		t.Errorf("bad CRC and magic 1: %+v %v; want the header (ReadHeader checks framing only)", h, err)
	}
	for name, data := range map[string][]byte{"header cut": good[:60], "batch cut": good[:len(good)-1]} {
		if _, err := ReadHeader(data); !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: %v, want ErrTruncated", name, err)
		}
	}
	short := bytes.Clone(good)
	binary.BigEndian.PutUint32(short[OffLength:], 48)
	if _, err := ReadHeader(short); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated) {
		t.Errorf("length 48: %v, want ErrCorrupt only", err)
	}
}

// TestReadRecordsRejects: record framing as DefaultRecord.readFrom checks it.
func TestReadRecordsRejects(t *testing.T) {
	one := AppendRecord(nil, Record{Key: []byte("k"), Value: []byte("v")})
	cases := []struct {
		name string
		recs []byte
		n    int32
		why  string
	}{
		{"fewer records than counted", one, 2, "record 1: bad length"},
		{"bytes after the last record", append(bytes.Clone(one), 0), 1, "1 bytes after the last record"},
		{"length past the section", append([]byte{one[0] + 2}, one[1:]...), 1, "record 0: bad length"},
		{"key longer than the record", AppendRecord(nil, Record{Key: []byte("k")})[:2], 1, "record 0: bad length"},
		// attributes, timestampDelta, offsetDelta, null key, null value, 1 header: null key, null value
		{"null header key", []byte{16, 0, 0, 0, 1, 1, 2, 1, 1}, 1, "record 0: header 0: bad key"},
		{"huge header count", func() []byte {
			body := []byte{0, 0, 0, 1, 1} // attributes, timestampDelta, offsetDelta, null key, null value
			body = binary.AppendVarint(body, 1<<30)
			return append(binary.AppendVarint(nil, int64(len(body))), body...)
		}(), 1, "record 0: bad header count"},
	}
	for _, tc := range cases {
		err := ReadRecords(tc.recs, tc.n, func(Record) error { return nil })
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v; want ErrCorrupt saying %q", tc.name, err, tc.why)
		}
	}
	stop := errors.New("stop")
	if err := ReadRecords(one, 1, func(Record) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v, want it as is", err)
	}
}

// FuzzRead: any bytes either fail with ErrCorrupt or read as a batch that, re-encoded from its
// header and records, gives the same bytes; nothing panics.
func FuzzRead(f *testing.F) {
	good := encode(testHeader(), testRecords())
	f.Add(good)
	f.Add(good[:70])
	f.Add(encode(Header{NumRecords: 0, LastOffsetDelta: -1, ProducerID: -1, BaseTimestamp: NoTimestamp, MaxTimestamp: NoTimestamp}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var recs []Record
		if err := ReadRecords(b.Records, b.NumRecords, func(r Record) error { recs = append(recs, r); return nil }); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("records error %v does not wrap ErrCorrupt", err)
			}
			// the header alone still round-trips
			if again := AppendBatch(nil, b.Header, b.Records); !bytes.Equal(again, data[:b.Size()]) {
				t.Fatalf("re-encoded header differs:\n got %x\nwant %x", again, data[:b.Size()])
			}
			return
		}
		var rs []byte
		for _, r := range recs {
			rs = AppendRecord(rs, r)
		}
		if again := AppendBatch(nil, b.Header, rs); !bytes.Equal(again, data[:b.Size()]) {
			// varints have one canonical encoding; a record may still spell its length with a
			// longer varint than needed, which Kafka accepts and AppendRecord does not reproduce
			if !bytes.Equal(rs, b.Records) && nonCanonical(b.Records) {
				return
			}
			t.Fatalf("re-encoded batch differs:\n got %x\nwant %x", again, data[:b.Size()])
		}
	})
}

// nonCanonical reports whether recs spells some varint with more bytes than it needs (a padded
// varint like 0x80 0x00 for 0), which decodes fine but re-encodes shorter.
func nonCanonical(recs []byte) bool {
	for i := 0; i+1 < len(recs); i++ {
		if recs[i]&0x80 != 0 && recs[i+1] == 0 {
			return true
		}
	}
	return false
}
