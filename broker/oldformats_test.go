package broker

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/recordbatch"
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

// TestMessageSetConversionRoundTrip: a format 0 set (a null key included) and a format 1 set inside a
// gzip wrapper are converted on append to one v2 batch that keeps keys, values and format 1
// timestamps, and down-convert back to the same messages at their log offsets (from the fetch offset
// on), in the format asked for.
func TestMessageSetConversionRoundTrip(t *testing.T) {
	set0 := append(message(0, 0, 0, -1, nil, []byte("a")), message(0, 1, 0, -1, []byte("k"), []byte("b"))...)
	var inner []byte
	for i, v := range []string{"x", "y", "z"} {
		inner = append(inner, message(1, int64(i), 0, 1000+int64(i), []byte(v), []byte(v+v))...)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(inner)
	zw.Close()
	set1 := message(1, 2, codecGzip, 1002, nil, gz.Bytes())

	for _, c := range []struct {
		name      string
		set       []byte
		fromMagic int8
		want      []legacyRecord
	}{
		{"format 0", set0, 0, []legacyRecord{{0, -1, nil, []byte("a")}, {1, -1, []byte("k"), []byte("b")}}},
		{"format 1, gzip", set1, 1, []legacyRecord{{0, 1000, []byte("x"), []byte("xx")}, {1, 1001, []byte("y"), []byte("yy")}, {2, 1002, []byte("z"), []byte("zz")}}},
	} {
		batch, code, msg := messageSetToBatch(c.set)
		if code != 0 {
			t.Fatalf("%s: error %d %s", c.name, code, msg)
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(batch); err != nil || b.Magic != 2 || b.NumRecords != int32(len(c.want)) || b.Attributes != 0 {
			t.Fatalf("%s: batch %+v (%v)", c.name, b, err)
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
			recs, err := parseMessageSet(conv, 0)
			if err != nil {
				t.Fatalf("%s to format %d: %v", c.name, toMagic, err)
			}
			want := slices.Clone(c.want[1:]) // fetched from offset 41
			for i := range want {
				if toMagic == 0 {
					want[i].timestamp = -1
				}
			}
			if !reflect.DeepEqual(recs, want) {
				t.Fatalf("%s to format %d: %+v, want %+v", c.name, toMagic, recs, want)
			}
			if conv[16] != byte(toMagic) {
				t.Fatalf("%s: magic %d, want %d", c.name, conv[16], toMagic)
			}
		}
	}
}

// TestMessageSetErrors: a bad CRC is CORRUPT_MESSAGE, a snappy wrapper UNSUPPORTED_COMPRESSION_TYPE, and
// a v2 batch sent at an old version is taken as it is (Kafka does not check the magic below v3).
func TestMessageSetErrors(t *testing.T) {
	bad := message(0, 0, 0, -1, nil, []byte("a"))
	bad[12]++ // CRC
	if _, code, _ := messageSetToBatch(bad); code != kerr.CorruptMessage.Code {
		t.Fatalf("bad CRC: code %d, want CORRUPT_MESSAGE", code)
	}
	if _, code, _ := messageSetToBatch(message(1, 0, 2, 5, nil, []byte("snappy bytes"))); code != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("snappy: code %d, want UNSUPPORTED_COMPRESSION_TYPE", code)
	}
	v2 := encodeV2Batch([]legacyRecord{{0, 7, nil, []byte("v")}}, false)
	if got, code, _ := messageSetToBatch(v2); code != 0 || !bytes.Equal(got, v2) {
		t.Fatalf("v2 batch at an old version: code %d, changed %v", code, !bytes.Equal(got, v2))
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

// TestDownConvertedFirstBatchWhole: a gzip batch of one 100 kB record of zeros is about a hundred bytes
// on disk, but its down-converted message is over 100 kB; the answer is sized to hold that first
// message whole, as Kafka's LazyDownConversionRecords sizes it (at least the first converted batch),
// and parses back to the record. Sized to the batch read, a consumer got the message's first
// hundred bytes and could not get past it.
func TestDownConvertedFirstBatchWhole(t *testing.T) {
	value := make([]byte, 100_000)
	var rec []byte
	rec = recordbatch.AppendRecord(rec, recordbatch.Record{Value: value})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(rec)
	zw.Close()
	batch := recordbatch.AppendBatch(nil, recordbatch.Header{BaseOffset: 7, PartitionLeaderEpoch: -1, Attributes: codecGzip,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1, BaseTimestamp: 1000, MaxTimestamp: 1000}, gz.Bytes())
	if len(batch) > 1000 {
		t.Fatalf("the gzip batch is %d bytes: the test needs one far smaller than its record", len(batch))
	}
	for _, magic := range []int8{0, 1} {
		conv, first, err := downConvert(batch, magic, 7)
		if err != nil {
			t.Fatal(err)
		}
		if first != len(conv) || first < len(value) {
			t.Fatalf("magic %d: first batch's messages %d bytes of %d converted", magic, first, len(conv))
		}
		got := fitDownConverted(conv, max(len(batch), first))
		recs, err := parseMessageSet(got, 0)
		if err != nil || len(recs) != 1 || recs[0].offset != 7 || !bytes.Equal(recs[0].value, value) {
			t.Fatalf("magic %d: the %d-byte answer parsed to %d records, %v; want the whole record at offset 7", magic, len(got), len(recs), err)
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
	f.Fuzz(func(t *testing.T, set []byte) {
		batch, code, _ := messageSetToBatch(set)
		if code != 0 || (len(set) > 16 && set[16] == 2) {
			return
		}
		recs, err := parseMessageSet(set, 0)
		if err != nil {
			t.Fatalf("converted, but does not parse: %v", err)
		}
		for _, magic := range []int8{0, 1} {
			conv, _, err := downConvert(batch, magic, 0)
			if err != nil {
				t.Fatalf("format %d: %v", magic, err)
			}
			back, err := parseMessageSet(conv, 0)
			if err != nil || len(back) != len(recs) {
				t.Fatalf("format %d: %d messages back (%v), want %d", magic, len(back), err, len(recs))
			}
		}
	})
}
