package broker

// The record step of a leader append, as Kafka 3.9's LogValidator takes it
// (org.apache.kafka.storage.internals.log.LogValidator: validateRecord's key and timestamp checks, and
// the max-timestamp setting of assignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed): a topic's
// message.timestamp.type and its bounds (KIP-937's message.timestamp.before.max.ms and
// message.timestamp.after.max.ms, falling back to the deprecated message.timestamp.difference.max.ms),
// applied to a Produce's v2 batches (old message formats already converted to one) before the log
// assigns offsets.

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// timestampPolicy is a topic's effective message.timestamp.* (LogConfig.messageTimestampType,
// messageTimestampBeforeMaxMs, messageTimestampAfterMaxMs).
type timestampPolicy struct {
	// logAppendTime: message.timestamp.type=LogAppendTime; the broker stamps every batch with its
	// append time. false: CreateTime, the producer's timestamps are kept, within the bounds.
	logAppendTime bool
	// beforeMaxMs, afterMaxMs: with CreateTime, a record timestamp more than beforeMaxMs ms before the
	// broker's clock, or more than afterMaxMs ms after it, is refused (math.MaxInt64: no bound).
	beforeMaxMs, afterMaxMs int64
}

// newTimestampPolicy builds the policy from the parsed topic configs. As LogConfig's
// getMessageTimestampBeforeMaxMs / getMessageTimestampAfterMaxMs, a bound left at its default
// (Long.MAX_VALUE) takes the deprecated message.timestamp.difference.max.ms instead.
func newTimestampPolicy(typ string, differenceMaxMs, beforeMaxMs, afterMaxMs int64) timestampPolicy {
	if beforeMaxMs == math.MaxInt64 {
		beforeMaxMs = differenceMaxMs
	}
	if afterMaxMs == math.MaxInt64 {
		afterMaxMs = differenceMaxMs
	}
	return timestampPolicy{logAppendTime: typ == "LogAppendTime", beforeMaxMs: beforeMaxMs, afterMaxMs: afterMaxMs}
}

// bounded reports whether a CreateTime timestamp can be out of range at all.
func (p timestampPolicy) bounded() bool {
	return !p.logAppendTime && (p.beforeMaxMs != math.MaxInt64 || p.afterMaxMs != math.MaxInt64)
}

// recordValidationError is Kafka's RecordValidationException for one partition: its error code
// (INVALID_TIMESTAMP, INVALID_RECORD; or CORRUPT_MESSAGE, which is not one), the exception's message (the Produce answer's error_message, v8+) and one
// entry per refused record of the batch (record_errors, v8+: the record's index in its batch and why).
type recordValidationError struct {
	code    int16
	message string
	records []kmsg.ProduceResponseTopicPartitionErrorRecord
}

func (e *recordValidationError) Error() string { return e.message }

// recordChecks is what validateAppendRecords applies to a partition's records: the topic's timestamp
// policy, whether it is compacted (every record needs a key), and the partition's name for messages
// ("topic-partition").
type recordChecks struct {
	timestamps timestampPolicy
	compacted  bool
	partition  string
}

// validateAppendRecords is LogValidator's record step for a leader append of records (v2 batches back to
// back), at the broker's clock now (Unix ms) — validateRecord's key and timestamp checks, and the
// max-timestamp setting:
//
//   - compacted: a record without a key is refused (validateKey).
//   - CreateTime: every record timestamp other than NO_TIMESTAMP (-1) must lie within
//     [now - beforeMaxMs, now + afterMaxMs]; a record without one in a batch whose producer set the
//     LogAppendTime attribute is refused too. A batch with the LogAppendTime attribute that passes is
//     kept as CreateTime, its max timestamp the largest of its records' (setMaxTimestamp).
//   - LogAppendTime: a batch whose producer set the LogAppendTime attribute is refused ("Producer
//     should not set timestamp type to LogAppendTime"); every other batch is stamped in a copy of
//     records: attribute bit 0x08 set, max timestamp = now, CRC recomputed (the base timestamp and the
//     records' deltas are left as sent, as DefaultRecordBatch.setMaxTimestamp leaves them), and
//     appendTime is now, the Produce answer's log_append_time_ms.
//
// A refusal is a *recordValidationError for the first batch with a bad record, naming each bad record
// of that batch (processRecordErrors): INVALID_TIMESTAMP when a timestamp is among them, else
// INVALID_RECORD; CORRUPT_MESSAGE (no record errors) for records that do not decompress or decode
// where they had to be read. Nothing is to be appended then. appendTime is -1 with CreateTime. A batch
// that does not decode at all is returned as it is, for the log's validation to refuse. Records are
// read (compressed ones decompressed) only when a check needs them: a compacted topic, a bound, the
// attribute. records itself is never modified.
func validateAppendRecords(records []byte, c recordChecks, now int64) (out []byte, appendTime int64, rve *recordValidationError) {
	p := c.timestamps
	out, appendTime = records, -1
	if p.logAppendTime {
		appendTime = now
	}
	for pos := 0; pos < len(records); {
		h, err := recordbatch.ReadHeader(records[pos:])
		if err != nil {
			return records, -1, nil
		}
		if !h.LogAppendTime() && !p.bounded() && !c.compacted && !p.logAppendTime {
			pos += h.Size() // nothing to check or stamp: no CRC pass here (the log makes one)
			continue
		}
		// The CRC is checked before anything is read or stamped: a stamp recomputes it.
		rb, err := recordbatch.Read(records[pos:])
		if err != nil {
			return records, -1, nil
		}
		at := pos
		pos += rb.Size()
		if !rb.LogAppendTime() && !p.bounded() && !c.compacted {
			out = stampMaxTimestamp(out, records, at, rb, true, now) // a LogAppendTime topic
			continue
		}
		var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
		badTimestamp := false
		maxTS := int64(recordbatch.NoTimestamp)
		index := int32(0)
		err = storage.EachRecord(rb, func(r recordbatch.Record) error {
			ts := rb.BaseTimestamp + r.TimestampDelta
			if rb.LogAppendTime() {
				ts = rb.MaxTimestamp
			}
			msg := ""
			if c.compacted && r.Key == nil && !rb.IsControl() {
				msg = "Compacted topic cannot accept message without key in topic partition " + c.partition
			} else if msg = timestampProblem(rb, r, ts, p, now); msg != "" {
				badTimestamp = true
			}
			if msg != "" {
				e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				e.RelativeOffset, e.ErrorMessage = index, kmsg.StringPtr(msg)
				errs = append(errs, e)
			}
			maxTS = max(maxTS, ts)
			index++
			return nil
		})
		if err != nil {
			return nil, -1, &recordValidationError{code: kerr.CorruptMessage.Code, message: err.Error()}
		}
		if len(errs) > 0 {
			return nil, -1, recordErrors(errs, badTimestamp)
		}
		switch {
		case p.logAppendTime:
			out = stampMaxTimestamp(out, records, at, rb, true, now)
		case rb.LogAppendTime() || rb.MaxTimestamp != maxTS:
			out = stampMaxTimestamp(out, records, at, rb, false, maxTS)
		}
	}
	return out, appendTime, nil
}

// recordErrors is LogValidator.processRecordErrors: any bad timestamp makes the exception an
// InvalidTimestampException, otherwise an InvalidRecordException naming the first three errors.
func recordErrors(errs []kmsg.ProduceResponseTopicPartitionErrorRecord, badTimestamp bool) *recordValidationError {
	if badTimestamp {
		return &recordValidationError{code: kerr.InvalidTimestamp.Code,
			message: "One or more records have been rejected due to invalid timestamp", records: errs}
	}
	shown := make([]string, 0, 3)
	for _, e := range errs[:min(len(errs), 3)] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	return &recordValidationError{code: kerr.InvalidRecord.Code, records: errs,
		message: fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
			len(errs), strings.Join(shown, ", "))}
}

// timestampProblem is LogValidator.validateTimestamp for one record whose timestamp is ts: the
// record error's message, "" when it passes.
func timestampProblem(rb recordbatch.Batch, r recordbatch.Record, ts int64, p timestampPolicy, now int64) string {
	if !p.logAppendTime && ts != recordbatch.NoTimestamp {
		// recordHasInvalidTimestamp, with Java's long arithmetic (Go's wraps the same way).
		if diff := now - ts; diff > p.beforeMaxMs || -diff > p.afterMaxMs {
			return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, rb.BaseOffset+int64(r.OffsetDelta), now-p.beforeMaxMs, now+p.afterMaxMs)
		}
		return ""
	}
	if rb.LogAppendTime() {
		return fmt.Sprintf("Invalid timestamp type in message %s. Producer should not set timestamp type to LogAppendTime.", recordString(rb, r, ts))
	}
	return ""
}

// recordString is the record's toString as LogValidator prints it: DefaultRecord's for an uncompressed
// batch, PartialDefaultRecord's for a compressed one (read with skipKeyValueIterator, the batch being
// kept in place when compression.type is producer).
func recordString(rb recordbatch.Batch, r recordbatch.Record, ts int64) string {
	kind := "DefaultRecord"
	if rb.Compression() != 0 {
		kind = "PartialDefaultRecord"
	}
	return fmt.Sprintf("%s(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes)",
		kind, rb.BaseOffset+int64(r.OffsetDelta), ts, len(r.Key), len(r.Value))
}

// stampMaxTimestamp is DefaultRecordBatch.setMaxTimestamp on the batch rb at byte at of records,
// written into out (a copy of records, made here on the first change: out == records until then):
// the LogAppendTime attribute set (logAppend) or cleared, the max timestamp ts, the CRC recomputed.
func stampMaxTimestamp(out, records []byte, at int, rb recordbatch.Batch, logAppend bool, ts int64) []byte {
	attrs := rb.Attributes &^ recordbatch.LogAppendTimeBit
	if logAppend {
		attrs |= recordbatch.LogAppendTimeBit
	}
	if attrs == rb.Attributes && ts == rb.MaxTimestamp {
		return out
	}
	if &out[0] == &records[0] {
		out = append([]byte(nil), records...)
	}
	b := out[at : at+rb.Size()]
	binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(b[recordbatch.OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[recordbatch.OffCRC:], recordbatch.Checksum(b))
	return out
}
