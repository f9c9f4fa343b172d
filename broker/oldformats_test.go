package broker

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// message is one message of format magic (0 or 1) at offset, attributes attrs.
func message(magic int8, offset int64, attrs byte, ts int64, key, value []byte) []byte {
	m := appendLegacyMessage(nil, magic, false, legacyRecord{offset: offset, timestamp: ts, key: key, value: value})
	if attrs != 0 { // set the codec and fix the CRC
		m[12+5] = attrs
		binary.BigEndian.PutUint32(m[12:16], crc32.ChecksumIEEE(m[16:]))
	}
	return m
}

// consumeMessageSet reads a (down-converted) message set as a consumer does: every message, each
// compressed wrapper unwrapped on its own, with absolute offsets.
func consumeMessageSet(t *testing.T, set []byte) []legacyRecord {
	t.Helper()
	msgs, err := readMessages(set)
	if err != nil {
		t.Fatalf("message set: %v", err)
	}
	var out []legacyRecord
	for len(set) > 0 {
		size := 12 + int(binary.BigEndian.Uint32(set[8:12]))
		recs, _, err := parseMessageSet(set[:size])
		if err != nil {
			t.Fatalf("message at %d: %v", binary.BigEndian.Uint64(set), err)
		}
		out = append(out, recs...)
		set = set[size:]
	}
	if len(msgs) == 0 {
		return nil
	}
	return out
}

// wrapper is a compressed wrapper message of format magic at offset (with timestamp ts) holding
// inner, compressed with codec as recordbatch writes it for that magic.
func wrapper(t *testing.T, magic int8, codec recordbatch.Codec, offset, ts int64, inner []byte) []byte {
	t.Helper()
	v, err := recordbatch.Compress(codec, magic, inner)
	if err != nil {
		t.Fatal(err)
	}
	return message(magic, offset, byte(codec), ts, nil, v)
}

// TestMessageSetConversionRoundTrip: a format 0 set (a null key included), and the messages of a
// wrapper of every codec of formats 0 and 1 (gzip, snappy, lz4; format 1's inner offsets relative)
// are converted on append to one v2 batch of the wrapper's codec that keeps keys, values and format 1
// timestamps, and down-convert back to the same messages at their log offsets in the format asked
// for: an uncompressed batch from the fetch offset on, one message each; a compressed one whole, as
// one wrapper of its codec at its last offset.
func TestMessageSetConversionRoundTrip(t *testing.T) {
	set0 := append(message(0, 0, 0, -1, nil, []byte("a")), message(0, 1, 0, -1, []byte("k"), []byte("b"))...)
	type tc struct {
		name      string
		set       []byte
		fromMagic int8
		codec     recordbatch.Codec
		want      []legacyRecord
	}
	cases := []tc{{"format 0", set0, 0, recordbatch.CodecNone, []legacyRecord{{0, -1, nil, []byte("a")}, {1, -1, []byte("k"), []byte("b")}}}}
	for _, magic := range []int8{0, 1} {
		for _, codec := range []recordbatch.Codec{recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLZ4} {
			var inner []byte
			var want []legacyRecord
			for i, v := range []string{"x", "y", "z"} {
				ts := int64(-1)
				if magic == 1 {
					ts = 1000 + int64(i)
				}
				inner = append(inner, message(magic, int64(i), 0, ts, []byte(v), []byte(v+v))...)
				want = append(want, legacyRecord{int64(i), ts, []byte(v), []byte(v + v)})
			}
			cases = append(cases, tc{fmt.Sprintf("format %d, %s", magic, codec), wrapper(t, magic, codec, 2, 1002, inner), magic, codec, want})
		}
	}
	for _, c := range cases {
		batch, code, msg := messageSetToBatch(c.set)
		if code != 0 {
			t.Fatalf("%s: error %d %s", c.name, code, msg)
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(batch); err != nil || b.Magic != 2 || b.NumRecords != int32(len(c.want)) || b.Attributes != int16(c.codec) {
			t.Fatalf("%s: batch %+v (%v), want attributes %d", c.name, b, err, c.codec)
		}
		if crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)) != uint32(b.CRC) {
			t.Fatalf("%s: batch CRC wrong", c.name)
		}
		binary.BigEndian.PutUint64(batch, 40) // the log assigns base offset 40
		for i := range c.want {
			c.want[i].offset += 40
		}
		for _, toMagic := range []int8{0, 1} {
			conv, _, err := downConvert(batch, toMagic, 41)
			if err != nil {
				t.Fatalf("%s to format %d: %v", c.name, toMagic, err)
			}
			msgs, err := readMessages(conv)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.want[1:]) // fetched from offset 41
			if c.codec != recordbatch.CodecNone {
				want = slices.Clone(c.want) // a compressed batch converts whole (RecordsUtil.downConvert)
				if len(msgs) != 1 || msgs[0].attrs != byte(c.codec) || msgs[0].offset != 42 || msgs[0].magic != toMagic {
					t.Fatalf("%s to format %d: %d messages, the first %+v; want one wrapper of codec %d at 42", c.name, toMagic, len(msgs), msgs[0], c.codec)
				}
				if toMagic == 1 && msgs[0].timestamp != max(c.want[2].timestamp, -1) {
					t.Fatalf("%s to format 1: wrapper timestamp %d, want the max %d", c.name, msgs[0].timestamp, c.want[2].timestamp)
				}
			}
			for i := range want {
				if toMagic == 0 {
					want[i].timestamp = -1
				}
			}
			if recs := consumeMessageSet(t, conv); !reflect.DeepEqual(recs, want) {
				t.Fatalf("%s to format %d: %+v, want %+v", c.name, toMagic, recs, want)
			}
			if conv[16] != byte(toMagic) {
				t.Fatalf("%s: magic %d, want %d", c.name, conv[16], toMagic)
			}
		}
	}
}

// TestMessageSetErrors: a bad CRC or a wrapper that does not decompress is CORRUPT_MESSAGE; what
// LogValidator refuses with an InvalidRecordException is INVALID_RECORD (a zstd wrapper, a compressed
// message inside a wrapper, a wrapper beside another message, a null wrapper); a codec id above 4 is
// UNKNOWN_SERVER_ERROR (CompressionType.forId's IllegalArgumentException); a v2 batch sent at an old
// version is taken as it is (Kafka does not check the magic below v3).
func TestMessageSetErrors(t *testing.T) {
	bad := message(0, 0, 0, -1, nil, []byte("a"))
	bad[12]++ // CRC
	plain := message(1, 0, 0, 5, nil, []byte("a"))
	gz := wrapper(t, 1, recordbatch.CodecGzip, 0, 5, plain)
	for _, c := range []struct {
		name string
		set  []byte
		code int16
	}{
		{"bad CRC", bad, kerr.CorruptMessage.Code},
		{"snappy wrapper of garbage", message(1, 0, 2, 5, nil, []byte("snappy bytes")), kerr.CorruptMessage.Code},
		{"zstd wrapper", message(1, 0, 4, 5, nil, []byte("zstd bytes")), kerr.InvalidRecord.Code},
		{"codec 5", message(1, 0, 5, 5, nil, []byte("?")), kerr.UnknownServerError.Code},
		{"nested wrapper", wrapper(t, 1, recordbatch.CodecGzip, 0, 5, gz), kerr.InvalidRecord.Code},
		{"two wrappers", append(slices.Clone(gz), gz...), kerr.InvalidRecord.Code},
		{"a message beside a wrapper", append(slices.Clone(plain), gz...), kerr.InvalidRecord.Code},
		{"null wrapper", message(1, 0, 1, 5, nil, nil), kerr.InvalidRecord.Code},
	} {
		if _, code, msg := messageSetToBatch(c.set); code != c.code {
			t.Fatalf("%s: code %d (%s), want %d", c.name, code, msg, c.code)
		}
	}
	v2, err := encodeV2Batch([]legacyRecord{{0, 7, nil, []byte("v")}}, false, recordbatch.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	if got, code, _ := messageSetToBatch(v2); code != 0 || !bytes.Equal(got, v2) {
		t.Fatalf("v2 batch at an old version: code %d, changed %v", code, !bytes.Equal(got, v2))
	}
}

// TestDownConvertZstd: a zstd batch first is errUnsupportedCodec (the partition is answered
// UNSUPPORTED_COMPRESSION_TYPE); after a converted batch, the conversion ends before it, so that the
// consumer reads what came before and meets the error at its next fetch (LazyDownConversionRecordsSend).
func TestDownConvertZstd(t *testing.T) {
	v2 := func(base int64, codec recordbatch.Codec, v string) []byte {
		rec := recordbatch.AppendRecord(nil, recordbatch.Record{Value: []byte(v)})
		body, err := recordbatch.Compress(codec, 2, rec)
		if err != nil {
			t.Fatal(err)
		}
		return recordbatch.AppendBatch(nil, recordbatch.Header{BaseOffset: base, PartitionLeaderEpoch: -1, Attributes: int16(codec),
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1, BaseTimestamp: 1000, MaxTimestamp: 1000}, body)
	}
	zstd := v2(0, recordbatch.CodecZstd, "z")
	if _, _, err := downConvert(zstd, 1, 0); !errors.Is(err, errUnsupportedCodec) {
		t.Fatalf("zstd first: %v, want errUnsupportedCodec", err)
	}
	data := append(v2(0, recordbatch.CodecLZ4, "a"), v2(1, recordbatch.CodecZstd, "z")...)
	conv, first, err := downConvert(data, 0, 0)
	if err != nil || first != len(conv) {
		t.Fatalf("lz4 then zstd: %d bytes, first %d, %v", len(conv), first, err)
	}
	if recs := consumeMessageSet(t, conv); len(recs) != 1 || recs[0].offset != 0 || string(recs[0].value) != "a" {
		t.Fatalf("lz4 then zstd: %+v, want a@0 only", recs)
	}
}

// TestFitDownConverted: shorter output is padded to the original size with overflow messages
// (offset -1, a length past the end), longer output is cut, as LazyDownConversionRecordsSend does.
func TestFitDownConverted(t *testing.T) {
	conv := message(0, 5, 0, -1, nil, []byte("abc"))
	got := fitDownConverted(conv, len(conv)+20)
	if len(got) != len(conv)+20 || !bytes.Equal(got[:len(conv)], conv) {
		t.Fatalf("padded to %d bytes", len(got))
	}
	tail := got[len(conv):]
	if int64(binary.BigEndian.Uint64(tail)) != -1 || binary.BigEndian.Uint32(tail[8:]) != 61 {
		t.Fatalf("overflow header %x: want offset -1, length max(21, 61) = 61", tail[:12])
	}
	if got := fitDownConverted(conv, 5); !bytes.Equal(got, conv[:5]) {
		t.Fatalf("cut: %x", got)
	}
	if got := fitDownConverted(nil, 3); !bytes.Equal(got, []byte{0xff, 0xff, 0xff}) {
		t.Fatalf("3 bytes of nothing: %x, want the start of an overflow offset", got)
	}
}

// TestDownConvertedFirstBatchWhole: an uncompressed batch of 2,000 one-byte records is about 20 kB in
// the log, but its down-converted messages (one per record, 26 or 34 bytes of overhead each) are
// several times that; the answer is sized to hold them whole, as Kafka's LazyDownConversionRecords
// sizes it (at least the first converted batch), and parses back to every record. Sized to the batch
// read, a consumer got part of them and a partial message. A gzip batch of one 100 kB record of
// zeros converts to one gzip wrapper of about the same small size, holding the whole record.
func TestDownConvertedFirstBatchWhole(t *testing.T) {
	const n = 2000
	var recs []byte
	for i := range n {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{OffsetDelta: int32(i), Value: []byte{byte(i)}})
	}
	plain := recordbatch.AppendBatch(nil, recordbatch.Header{BaseOffset: 7, PartitionLeaderEpoch: -1, LastOffsetDelta: n - 1,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: n, BaseTimestamp: 1000, MaxTimestamp: 1000}, recs)
	value := make([]byte, 100_000)
	gz, err := recordbatch.Compress(recordbatch.CodecGzip, 2, recordbatch.AppendRecord(nil, recordbatch.Record{Value: value}))
	if err != nil {
		t.Fatal(err)
	}
	zeros := recordbatch.AppendBatch(nil, recordbatch.Header{BaseOffset: 7, PartitionLeaderEpoch: -1, Attributes: codecGzip,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1, BaseTimestamp: 1000, MaxTimestamp: 1000}, gz)
	for _, magic := range []int8{0, 1} {
		conv, first, err := downConvert(plain, magic, 7)
		if err != nil {
			t.Fatal(err)
		}
		if first != len(conv) || first < 2*len(plain) {
			t.Fatalf("magic %d: first batch's messages %d bytes of %d converted, the batch %d", magic, first, len(conv), len(plain))
		}
		got := fitDownConverted(conv, max(len(plain), first))
		back := consumeMessageSet(t, got)
		if len(back) != n || back[n-1].offset != 7+n-1 || back[n-1].value[0] != byte((n-1)%256) {
			t.Fatalf("magic %d: the %d-byte answer parsed to %d records; want %d", magic, len(got), len(back), n)
		}

		conv, first, err = downConvert(zeros, magic, 7)
		if err != nil || first != len(conv) {
			t.Fatalf("magic %d, gzip: %d bytes, first %d, %v", magic, len(conv), first, err)
		}
		got = fitDownConverted(conv, max(len(zeros), first))
		back = consumeMessageSet(t, got[:first])
		if len(back) != 1 || back[0].offset != 7 || !bytes.Equal(back[0].value, value) || conv[12+5] != codecGzip {
			t.Fatalf("magic %d, gzip: %d records, attributes %d; want the whole record at offset 7 in a gzip wrapper", magic, len(back), conv[12+5])
		}
	}
}

// FuzzMessageSet: any bytes as a Produce v0–v2 message set never panic the conversion; what converts
// down-converts back to as many messages, in both old formats.
func FuzzMessageSet(f *testing.F) {
	f.Add(message(0, 0, 0, -1, []byte("k"), []byte("v")))
	f.Add(append(message(1, 0, 0, 9, nil, []byte("a")), message(1, 1, 0, 10, []byte("b"), nil)...))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(message(1, 0, 0, 3, nil, []byte("in")))
	zw.Close()
	f.Add(message(1, 0, codecGzip, 3, nil, gz.Bytes()))
	for magic := int8(0); magic <= 1; magic++ {
		for _, codec := range []recordbatch.Codec{recordbatch.CodecSnappy, recordbatch.CodecLZ4} {
			v, _ := recordbatch.Compress(codec, magic, message(magic, 0, 0, 3, []byte("k"), []byte("in")))
			f.Add(message(magic, 0, byte(codec), 3, nil, v))
		}
	}
	f.Fuzz(func(t *testing.T, set []byte) {
		batch, code, _ := messageSetToBatch(set)
		if code != 0 || (len(set) > 16 && set[16] == 2) {
			return
		}
		recs, _, err := parseMessageSet(set)
		if err != nil {
			t.Fatalf("converted, but does not parse: %v", err)
		}
		for _, magic := range []int8{0, 1} {
			conv, _, err := downConvert(batch, magic, 0)
			if err != nil {
				t.Fatalf("format %d: %v", magic, err)
			}
			if back := consumeMessageSet(t, conv); len(back) != len(recs) {
				t.Fatalf("format %d: %d messages back, want %d", magic, len(back), len(recs))
			}
		}
	})
}
