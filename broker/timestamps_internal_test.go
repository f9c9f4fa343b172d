package broker

import (
	"bytes"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// TestTimestampPolicyFallback: a bound left at its default takes message.timestamp.difference.max.ms
// (LogConfig.getMessageTimestampBeforeMaxMs / AfterMaxMs); one set keeps its own value.
func TestTimestampPolicyFallback(t *testing.T) {
	for _, c := range []struct {
		diff, before, after        int64
		wantBefore, wantAfter      int64
		typ                        string
		wantLogAppend, wantBounded bool
	}{
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, "CreateTime", false, false},
		{1000, math.MaxInt64, math.MaxInt64, 1000, 1000, "CreateTime", false, true},
		{1000, 5, math.MaxInt64, 5, 1000, "CreateTime", false, true},
		{math.MaxInt64, math.MaxInt64, 7, math.MaxInt64, 7, "CreateTime", false, true},
		{1000, math.MaxInt64, math.MaxInt64, 1000, 1000, "LogAppendTime", true, false},
	} {
		p := newTimestampPolicy(c.typ, c.diff, c.before, c.after)
		if p.beforeMaxMs != c.wantBefore || p.afterMaxMs != c.wantAfter || p.logAppendTime != c.wantLogAppend || p.bounded() != c.wantBounded {
			t.Errorf("%s difference %d before %d after %d: got %+v bounded %v; want before %d after %d, LogAppendTime %v, bounded %v",
				c.typ, c.diff, c.before, c.after, p, p.bounded(), c.wantBefore, c.wantAfter, c.wantLogAppend, c.wantBounded)
		}
	}
}

func stampedTestBatch(attrs int16, maxTS int64, stamps ...int64) []byte {
	var recs []byte
	for i, ts := range stamps {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{TimestampDelta: ts - stamps[0], OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v")})
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, LastOffsetDelta: int32(len(stamps) - 1),
		BaseTimestamp: stamps[0], MaxTimestamp: maxTS, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(stamps))}, recs)
}

// TestValidateAppendRecordsStamps: what the record step leaves in the batches it passes, with the
// input never modified — CreateTime without bounds keeps the bytes; a LogAppendTime topic stamps
// every batch (attribute, max timestamp, a valid CRC, base timestamp kept); on a bounded CreateTime
// topic a producer's LogAppendTime attribute is cleared and a wrong max timestamp is corrected to the
// records' largest (DefaultRecordBatch.setMaxTimestamp), and a record without a timestamp (-1) is
// not checked against the bounds.
func TestValidateAppendRecordsStamps(t *testing.T) {
	const now = 1_000_000
	create := timestampPolicy{beforeMaxMs: math.MaxInt64, afterMaxMs: math.MaxInt64}
	bounded := timestampPolicy{beforeMaxMs: 100, afterMaxMs: 100}
	logAppend := timestampPolicy{logAppendTime: true, beforeMaxMs: math.MaxInt64, afterMaxMs: math.MaxInt64}
	two := append(stampedTestBatch(0, now+5, now, now+5), stampedTestBatch(0, now+2, now+1, now+2)...)
	for _, c := range []struct {
		name       string
		in         []byte
		p          timestampPolicy
		appendTime int64
		attrs      []int16
		maxTS      []int64
		baseTS     []int64
	}{
		{"CreateTime", two, create, -1, []int16{0, 0}, []int64{now + 5, now + 2}, []int64{now, now + 1}},
		{"LogAppendTime", two, logAppend, now, []int16{8, 8}, []int64{now, now}, []int64{now, now + 1}},
		{"bounded, producer's LogAppendTime attribute", stampedTestBatch(8, now+50, now-50), bounded, -1, []int16{0}, []int64{now + 50}, []int64{now - 50}},
		{"bounded, wrong max timestamp", stampedTestBatch(0, now+90, now-50, now+20), bounded, -1, []int16{0}, []int64{now + 20}, []int64{now - 50}},
		{"bounded, no timestamp", stampedTestBatch(0, -1, -1), bounded, -1, []int16{0}, []int64{-1}, []int64{-1}},
	} {
		orig := bytes.Clone(c.in)
		out, at, rve := validateAppendRecords(c.in, recordChecks{timestamps: c.p, partition: "t-0"}, now)
		if rve != nil || at != c.appendTime {
			t.Errorf("%s: error %v, append time %d; want none, %d", c.name, rve, at, c.appendTime)
			continue
		}
		if !bytes.Equal(c.in, orig) {
			t.Errorf("%s: the input was modified", c.name)
		}
		var i int
		for data := out; len(data) > 0; i++ {
			rb, err := recordbatch.Read(data)
			if err != nil {
				t.Fatalf("%s: batch %d: %v", c.name, i, err)
			}
			if rb.Attributes != c.attrs[i] || rb.MaxTimestamp != c.maxTS[i] || rb.BaseTimestamp != c.baseTS[i] {
				t.Errorf("%s: batch %d: attributes %d max %d base %d; want %d, %d, %d", c.name, i, rb.Attributes, rb.MaxTimestamp, rb.BaseTimestamp, c.attrs[i], c.maxTS[i], c.baseTS[i])
			}
			data = data[rb.Size():]
		}
		if i != len(c.attrs) {
			t.Errorf("%s: %d batches, want %d", c.name, i, len(c.attrs))
		}
	}
	// The bounds are inclusive: now-100 and now+100 pass, now-101 does not.
	if _, _, rve := validateAppendRecords(stampedTestBatch(0, now+100, now-100, now+100), recordChecks{timestamps: bounded}, now); rve != nil {
		t.Errorf("timestamps at the bounds: %v", rve)
	}
	if _, _, rve := validateAppendRecords(stampedTestBatch(0, now, now-101, now), recordChecks{timestamps: bounded}, now); rve == nil || rve.code != kerr.InvalidTimestamp.Code ||
		len(rve.records) != 1 || rve.records[0].RelativeOffset != 0 ||
		*rve.records[0].ErrorMessage != "Timestamp 999899 of message with offset 0 is out of range. The timestamp should be within [999900, 1000100]" {
		t.Errorf("timestamp below the bound: %+v", rve)
	}
}
