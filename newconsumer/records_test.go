package newconsumer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// record encodes one v2 record with its varint length (kmsg.Record, length computed first).
func record(offsetDelta int32, key, value string) []byte {
	r := kmsg.Record{OffsetDelta: offsetDelta, Value: []byte(value), TimestampDelta64: int64(offsetDelta)}
	if key != "" {
		r.Key = []byte(key)
	}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1) // Length 0 took one byte
	return r.AppendTo(nil)
}

func compress(t *testing.T, codec int16, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch codec {
	case 0:
		return data
	case 1:
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case 2: // xerial framing, as the Java producer writes snappy
		b.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0})
		b.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		chunk := snappy.Encode(nil, data)
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(chunk))))
		b.Write(chunk)
	case 3:
		w := lz4.NewWriter(&b)
		w.Write(data)
		w.Close()
	case 4:
		e, _ := zstd.NewWriter(nil)
		defer e.Close()
		return e.EncodeAll(data, nil)
	}
	return b.Bytes()
}

// batch builds a v2 record batch at base with values, codec and control flag; CRC-32C set.
func batch(t *testing.T, base int64, codec int16, control bool, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		recs = append(recs, record(int32(i), "k"+v, v)...)
	}
	attrs := codec
	if control {
		attrs |= 0x20
	}
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: 1000, MaxTimestamp: 1000 + int64(len(values)-1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: compress(t, codec, recs)}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], recordbatch.Checksum(raw))
	return raw
}

func values(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Key)+"="+string(r.Value)+"@"+strconv.FormatInt(r.Offset, 10))
	}
	return out
}

func TestParseBatchesCodecs(t *testing.T) {
	tp := TopicPartition{Topic: "t", Partition: 3}
	for codec := int16(0); codec <= 4; codec++ {
		data := append(batch(t, 10, codec, false, "a", "b"), batch(t, 12, codec, false, "c")...)
		recs, next, err := parseBatches(tp, data, 11)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if got := values(recs); !reflect.DeepEqual(got, []string{"kb=b@11", "kc=c@12"}) || next != 13 {
			t.Fatalf("codec %d: %v next %d", codec, got, next)
		}
		if recs[0].Topic != "t" || recs[0].Partition != 3 || recs[0].Timestamp.UnixMilli() != 1001 {
			t.Fatalf("codec %d: record %+v", codec, recs[0])
		}
	}
	// Raw (unframed) snappy, as franz-go writes it.
	var recs []byte
	recs = append(recs, record(0, "kx", "x")...)
	b := kmsg.RecordBatch{FirstOffset: 0, Magic: 2, Attributes: 2, NumRecords: 1, ProducerID: -1, Records: snappy.Encode(nil, recs)}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], recordbatch.Checksum(raw))
	if got, _, err := parseBatches(tp, raw, 0); err != nil || !reflect.DeepEqual(values(got), []string{"kx=x@0"}) {
		t.Fatalf("raw snappy: %v %v", values(got), err)
	}
}

func TestParseBatchesEdges(t *testing.T) {
	tp := TopicPartition{Topic: "t", Partition: 0}
	// A control batch (transaction marker) is skipped but moves the next offset past it.
	data := append(batch(t, 0, 0, false, "a"), batch(t, 1, 0, true, "marker")...)
	recs, next, err := parseBatches(tp, data, 0)
	if err != nil || !reflect.DeepEqual(values(recs), []string{"ka=a@0"}) || next != 2 {
		t.Fatalf("control batch: %v next %d err %v", values(recs), next, err)
	}
	// A truncated last batch (the response's size limit) is not an error.
	full := append(batch(t, 0, 0, false, "a"), batch(t, 1, 0, false, "b")...)
	recs, next, err = parseBatches(tp, full[:len(full)-5], 0)
	if err != nil || len(recs) != 1 || next != 1 {
		t.Fatalf("truncated: %v next %d err %v", values(recs), next, err)
	}
	// A flipped byte fails the CRC: records before it are kept.
	bad := append([]byte(nil), full...)
	bad[len(bad)-2] ^= 0xff
	recs, next, err = parseBatches(tp, bad, 0)
	if err == nil || !strings.Contains(err.Error(), "CRC mismatch") || len(recs) != 1 || next != 1 {
		t.Fatalf("corrupt: %v next %d err %v", values(recs), next, err)
	}
	// Not v2.
	old := batch(t, 0, 0, false, "a")
	old[16] = 1
	if _, _, err := parseBatches(tp, old, 0); err == nil || !strings.Contains(err.Error(), "magic 1") {
		t.Fatalf("magic 1: %v", err)
	}
	// Empty data: nothing, next stays.
	if recs, next, err := parseBatches(tp, nil, 7); err != nil || len(recs) != 0 || next != 7 {
		t.Fatalf("empty: %v %d %v", recs, next, err)
	}
}

// drainLocked hands out records in offset order up to max.poll.records and moves positions; data
// of a partition no longer owned or moved meanwhile is dropped.
func TestDrain(t *testing.T) {
	c := &Consumer{owned: map[TopicPartition]*partitionState{}}
	a, b := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}
	c.owned[a] = &partitionState{position: 5}
	c.owned[b] = &partitionState{position: 0}
	rec := func(tp TopicPartition, off int64) Record {
		return Record{Topic: tp.Topic, Partition: tp.Partition, Offset: off}
	}
	c.fetched = []*completedFetch{
		{tp: a, pos: 5, records: []Record{rec(a, 5), rec(a, 6), rec(a, 7)}, next: 9},
		{tp: b, pos: 0, records: []Record{rec(b, 0)}, next: 1},
	}
	got := c.drainLocked(2)
	if len(got) != 2 || got[0].Offset != 5 || got[1].Offset != 6 || c.owned[a].position != 7 {
		t.Fatalf("first drain %v, position %d", got, c.owned[a].position)
	}
	got = c.drainLocked(10)
	if len(got) != 2 || got[0].Offset != 7 || got[1].Partition != 1 || c.owned[a].position != 9 || c.owned[b].position != 1 {
		t.Fatalf("second drain %v, positions %d %d", got, c.owned[a].position, c.owned[b].position)
	}
	c.fetched = []*completedFetch{{tp: a, pos: 3, records: []Record{rec(a, 3)}, next: 4}}
	delete(c.owned, b)
	c.fetched = append(c.fetched, &completedFetch{tp: b, pos: 1, records: []Record{rec(b, 1)}, next: 2})
	if got := c.drainLocked(10); len(got) != 0 || len(c.fetched) != 0 {
		t.Fatalf("stale data handed out: %v", got)
	}
}
