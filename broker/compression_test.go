package broker

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// v2Batch is one v2 batch of values (keys k<i>, offset deltas deltas or 0..n-1, timestamps 1000+i)
// compressed with codec, with attrs' other bits.
func v2Batch(t *testing.T, codec recordbatch.Codec, attrs int16, deltas []int32, values ...string) []byte {
	t.Helper()
	var recs []byte
	for i, v := range values {
		d := int32(i)
		if deltas != nil {
			d = deltas[i]
		}
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{OffsetDelta: d, TimestampDelta: int64(i),
			Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v), Headers: []recordbatch.RecordHeader{{Key: "h", Value: []byte(v)}}})
	}
	body, err := recordbatch.Compress(codec, 2, recs)
	if err != nil {
		t.Fatal(err)
	}
	last := int32(len(values) - 1)
	if deltas != nil {
		last = deltas[len(deltas)-1]
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs | int16(codec),
		LastOffsetDelta: last, BaseTimestamp: 1000, MaxTimestamp: 1000 + int64(len(values)-1), ProducerID: 77,
		ProducerEpoch: 3, BaseSequence: 5, NumRecords: int32(len(values))}, body)
}

// batchRecords decodes the one batch of data: its header and records.
func batchRecords(t *testing.T, data []byte) (recordbatch.Header, []recordbatch.Record) {
	t.Helper()
	b, err := recordbatch.Read(data)
	if err != nil || b.Size() != len(data) {
		t.Fatalf("not one batch: %v", err)
	}
	raw, err := recordbatch.Decompress(recordbatch.Codec(b.Compression()), 2, b.Records, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var recs []recordbatch.Record
	if err := recordbatch.ReadRecords(raw, b.NumRecords, func(r recordbatch.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return b.Header, recs
}

// TestApplyCompressionType: compression.type producer keeps every batch as it is; another codec
// rebuilds a batch of a different codec into it (uncompressed too), keeping records, producer fields
// and timestamps; the same codec keeps the batch unless its offsets are not 0..n-1 (LogValidator's
// in-place assignment); an uncompressed control batch stays uncompressed; more than one batch with a
// compressed one is INVALID_RECORD, a rebuilt batch over max.message.bytes MESSAGE_TOO_LARGE.
func TestApplyCompressionType(t *testing.T) {
	conf := func(typ string) compressionConfig {
		return compressionConfigOf(map[string]any{"compression.type": typ, "compression.gzip.level": int64(-1),
			"compression.lz4.level": int64(9), "compression.zstd.level": int64(3)})
	}
	values := []string{"a", "bb", "ccc"}
	for _, src := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLZ4, recordbatch.CodecZstd} {
		in := v2Batch(t, src, 0, nil, values...)
		_, wantRecs := batchRecords(t, in)
		for _, typ := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
			out, code, msg := applyCompressionType(conf(typ), in, "t", 0, 1<<20)
			if code != 0 {
				t.Fatalf("%s batch, compression.type %s: %d %s", src, typ, code, msg)
			}
			want := src
			if typ != "producer" {
				want = conf(typ).codec
			}
			if want == src {
				if !bytes.Equal(out, in) {
					t.Fatalf("%s batch, compression.type %s: rebuilt, want it kept", src, typ)
				}
				continue
			}
			h, recs := batchRecords(t, out)
			if recordbatch.Codec(h.Compression()) != want || h.ProducerID != 77 || h.ProducerEpoch != 3 || h.BaseSequence != 5 ||
				h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.BaseTimestamp != 1000 || h.MaxTimestamp != 1002 {
				t.Fatalf("%s batch, compression.type %s: header %+v", src, typ, h)
			}
			if !reflect.DeepEqual(recs, wantRecs) {
				t.Fatalf("%s batch, compression.type %s: records %+v, want %+v", src, typ, recs, wantRecs)
			}
		}
	}
	gappy := v2Batch(t, recordbatch.CodecLZ4, 0, []int32{0, 2, 5}, values...)
	out, code, _ := applyCompressionType(conf("producer"), gappy, "t", 0, 1<<20)
	if h, _ := batchRecords(t, out); code != 0 || h.LastOffsetDelta != 2 || recordbatch.Codec(h.Compression()) != recordbatch.CodecLZ4 {
		t.Fatalf("lz4 batch with offset deltas 0, 2, 5: code %d, last offset delta %d, want rebuilt as 0..2", code, h.LastOffsetDelta)
	}
	control := v2Batch(t, recordbatch.CodecNone, recordbatch.ControlBit, nil, "marker")
	if out, code, _ := applyCompressionType(conf("gzip"), control, "t", 0, 1<<20); code != 0 || !bytes.Equal(out, control) {
		t.Fatalf("uncompressed control batch with compression.type gzip: code %d, kept %v", code, bytes.Equal(out, control))
	}
	two := append(v2Batch(t, recordbatch.CodecNone, 0, nil, "a"), v2Batch(t, recordbatch.CodecGzip, 0, nil, "b")...)
	if _, code, _ := applyCompressionType(conf("producer"), two, "t", 0, 1<<20); code != kerr.InvalidRecord.Code {
		t.Fatalf("two batches, one gzip: code %d, want INVALID_RECORD", code)
	}
	big := v2Batch(t, recordbatch.CodecGzip, 0, nil, string(make([]byte, 10_000)))
	if _, code, msg := applyCompressionType(conf("uncompressed"), big, "t", 3, 5000); code != kerr.MessageTooLarge.Code ||
		msg != "Message batch size is 20079 bytes in append topartition t-3 which exceeds the maximum configured size of 5000." {
		t.Fatalf("a gzip batch decompressed past max.message.bytes: code %d %q", code, msg)
	}
}
