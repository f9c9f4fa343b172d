package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/recordbatch"
)

// errCode maps an error to its Kafka code: kerr errors (storage wraps them) keep theirs, anything else
// is KAFKA_STORAGE_ERROR (the log could not be read or written).
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// checkLeaderEpoch is Partition.checkCurrentLeaderEpoch (KIP-320): a client's epoch older than the
// leader's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH; -1 skips the check.
func checkLeaderEpoch(clientEpoch, leaderEpoch int32) int16 {
	switch {
	case clientEpoch < 0 || clientEpoch == leaderEpoch:
		return 0
	case clientEpoch < leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// scanBatches checks the framing of records (batches back to back) for Produce's size limit and counts
// the records (batch header field recordCount). Full validation (CRC, record framing) is the log's.
func scanBatches(records []byte) (maxBatch int, count int64, ok bool) {
	for len(records) > 0 {
		h, err := recordbatch.ReadHeader(records)
		if err != nil {
			return 0, 0, false
		}
		maxBatch = max(maxBatch, h.Size())
		count += int64(h.NumRecords)
		records = records[h.Size():]
	}
	return maxBatch, count, true
}

// handleProduce is KafkaApis.handleProduceRequest for a broker that is the only replica: acks 1 and -1
// both answer once the log has the batches (the ISR is the leader alone); acks 0 answers nothing, and an
// error with acks 0 closes the connection, as Kafka does, so that the client refreshes its metadata.
func (b *Broker) handleProduce(req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TransactionID == nil && hasTransactionalRecords(req) {
		// KafkaApis.handleProduceRequest: transactional records need a transactional id the client may
		// write (ProduceRequest.getErrorResponse for every partition).
		return b.produceErrorResponse(req, resp, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	firstErr := int16(0)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			var msg string
			records := p.Records
			if req.Version < 3 && req.Acks >= -1 && req.Acks <= 1 { // message formats 0 and 1, converted on append
				records, rp.ErrorCode, msg = messageSetToBatch(records)
			}
			switch {
			case rp.ErrorCode != 0:
			case req.Acks == -1 || req.Acks == 0 || req.Acks == 1:
				rp.ErrorCode, msg = b.produceOne(t.Topic, p.Partition, req.Acks, records, &rp)
			default:
				rp.ErrorCode, msg = kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks %d: must be -1, 0 or 1", req.Acks)
			}
			if rp.ErrorCode != 0 {
				// Kafka answers a message only with per-record errors (INVALID_RECORD, KIP-467); the
				// others (INVALID_REQUIRED_ACKS, CORRUPT_MESSAGE, ...) go without one, logged here.
				if msg != "" && rp.ErrorCode == kerr.InvalidRecord.Code {
					rp.ErrorMessage = kmsg.StringPtr(msg)
				}
				if firstErr == 0 {
					firstErr = rp.ErrorCode
				}
				b.log.WithFields(logFields(t.Topic, p.Partition)).Debugf("produce: %s %s", errorLabel(rp.ErrorCode), msg)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		if firstErr != 0 {
			return nil, &errClose{closeAcks0Error, fmt.Errorf("acks=0 produce failed with %s", errorLabel(firstErr))}
		}
		return nil, nil
	}
	if hook := b.opts.produceResponse; hook != nil && hook(resp) {
		return nil, &errClose{closeHookCut, errors.New("the produce response hook cut the connection")}
	}
	return resp, nil
}

// produceErrorResponse answers every partition of req with code (ProduceRequest.getErrorResponse);
// acks 0 closes the connection instead.
func (b *Broker) produceErrorResponse(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, code int16) (kmsg.Response, error) {
	if req.Acks == 0 {
		return nil, &errClose{closeAcks0Error, fmt.Errorf("acks=0 produce failed with %s", errorLabel(code))}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) produceOne(topic string, p int32, acks int16, records []byte, rp *kmsg.ProduceResponseTopicPartition) (int16, string) {
	if topic == OffsetsTopic {
		// ReplicaManager.appendToLocalLog: clients may not write internal topics.
		return kerr.InvalidTopicException.Code, "Cannot append to internal topic " + topic
	}
	part, err := b.leaderPartition(topic, p)
	if err != nil {
		return errCode(err), ""
	}
	maxBatch, count, ok := scanBatches(records)
	if !ok {
		return kerr.CorruptMessage.Code, "record batches are not framed as v2 batches"
	}
	lc := part.config()
	// UnifiedLog.analyzeAndValidateRecords: the topic's max.message.bytes (whose default is the broker's
	// message.max.bytes) bounds every batch.
	if maxBatch > int(lc.maxMessageBytes) {
		return kerr.MessageTooLarge.Code, fmt.Sprintf("The record batch size in the append to %s-%d is %d bytes which exceeds the maximum configured value of %d.", topic, p, maxBatch, lc.maxMessageBytes)
	}
	// Partition.appendRecordsToLeader: with acks=-1 the ISR (here the leader alone) must hold
	// min.insync.replicas.
	if acks == -1 && lc.minInsyncReplicas > 1 {
		return kerr.NotEnoughReplicas.Code, fmt.Sprintf("The size of the current ISR Set(%d) is insufficient to satisfy the min.isr requirement of %d for partition %s-%d", b.id, lc.minInsyncReplicas, topic, p)
	}
	if part.log.Compacted() {
		// LogValidator.validateKey: every record of a compacted topic needs a key.
		if ok, err := storage.CheckKeys(records); err != nil {
			return kerr.CorruptMessage.Code, err.Error()
		} else if !ok {
			return kerr.InvalidRecord.Code, fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d.", topic, p)
		}
	}
	res, err := part.appendRecords(records)
	if err != nil {
		if producerStateError(err) {
			// ReplicaManager.appendToLocalLog: an exception outside its list of known ones is answered
			// with the log start offset and without a message.
			rp.LogStartOffset = part.log.LogStartOffset()
			return errCode(err), ""
		}
		return errCode(err), err.Error()
	}
	if !res.Duplicate {
		b.metrics.messages.Add(float64(count))
	}
	// A duplicate (an idempotent producer's retry) is answered as UnifiedLog answers it: the original
	// batch's offsets, and its max timestamp as the log append time.
	rp.BaseOffset, rp.LogAppendTime = res.BaseOffset, res.LogAppendTime
	rp.LogStartOffset = part.log.LogStartOffset()
	return 0, ""
}

// producerStateError reports the log's refusals of an idempotent producer's batch.
func producerStateError(err error) bool {
	return errors.Is(err, storage.ErrOutOfOrderSequence) || errors.Is(err, storage.ErrInvalidProducerEpoch) ||
		errors.Is(err, storage.ErrInvalidTxnState) || errors.Is(err, storage.ErrInvalidRecord)
}

// hasTransactionalRecords is RequestUtils.hasTransactionalRecords: a batch of the request is
// transactional (v3+: record batches).
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	if req.Version < 3 {
		return false
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			for rec := p.Records; len(rec) > 0; {
				h, err := recordbatch.ReadHeader(rec)
				if err != nil {
					break
				}
				if h.Attributes&recordbatch.TransactionalBit != 0 {
					return true
				}
				rec = rec[h.Size():]
			}
		}
	}
	return false
}

// fetchTarget is one requested partition, resolved once per Fetch.
type fetchTarget struct {
	topic string
	req   kmsg.FetchRequestTopicPartition
}

// handleFetch is KafkaApis.handleFetchRequest + ReplicaManager.fetchMessages without fetch sessions
// (KIP-227: session id 0 in every answer means "no session", and clients keep sending full fetches).
// It answers at once when it has MinBytes, when a partition has an error or when MaxWaitMillis is 0;
// otherwise it parks until an append to one of the partitions (or a leadership change) wakes it, or
// MaxWaitMillis passes. The response holds at most min(MaxBytes, fetch.max.bytes) bytes and each
// partition at most its PartitionMaxBytes, except that the first batch of the first non-empty partition
// is returned whole even if larger (KIP-74).
func (b *Broker) handleFetch(ctx context.Context, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 {
		switch {
		case req.SessionID != 0:
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return resp
		case req.SessionEpoch != 0 && req.SessionEpoch != -1:
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return resp
		}
	}
	maxBytes := b.cfg.FetchMaxBytes
	if req.Version >= 3 && req.MaxBytes >= 0 && req.MaxBytes < maxBytes {
		maxBytes = req.MaxBytes
	}
	var targets []fetchTarget
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			targets = append(targets, fetchTarget{t.Topic, p})
		}
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	wake := make(chan struct{}, 1)
	var watched []*partition
	defer func() {
		for _, p := range watched {
			p.unwatch(wake)
		}
	}()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
			b.metrics.purgatory.WithLabelValues("Fetch").Dec()
		}
	}()
	for {
		// Watch before reading, so an append between the read and the wait is not missed.
		b.partsMu.RLock()
		for _, t := range targets {
			if p := b.parts[topicPartition{t.topic, t.req.Partition}]; p != nil && !containsPartition(watched, p) {
				p.watch(wake)
				watched = append(watched, p)
			}
		}
		b.partsMu.RUnlock()

		resp.Topics = resp.Topics[:0]
		total, anyErr := b.readFetch(req, targets, maxBytes, resp)
		remaining := time.Until(deadline)
		if total >= int64(req.MinBytes) || anyErr || remaining <= 0 || req.MaxWaitMillis <= 0 {
			return resp
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
			b.metrics.purgatory.WithLabelValues("Fetch").Inc() // parked until it answers (Dec with the timer's Stop)
		}
		select {
		case <-wake:
		case <-timer.C:
			resp.Topics = resp.Topics[:0]
			b.readFetch(req, targets, maxBytes, resp)
			return resp
		case <-ctx.Done():
			return resp
		}
	}
}

func containsPartition(ps []*partition, p *partition) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// readFetch fills resp.Topics (request order) and returns the record bytes read and whether a partition
// answered an error.
func (b *Broker) readFetch(req *kmsg.FetchRequest, targets []fetchTarget, maxBytes int32, resp *kmsg.FetchResponse) (int64, bool) {
	var total int64
	anyErr := false
	for i, t := range targets {
		if i == 0 || targets[i-1].topic != t.topic {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = t.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = t.req.Partition
		rp.RecordBatches = []byte{} // empty, not null: Kafka never answers null records (kafka-python chokes on it)
		budget := int64(maxBytes) - total
		rp.ErrorCode = b.fetchPartition(req, t, budget, total == 0, &rp)
		if req.IsolationLevel == 1 {
			rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		if rp.ErrorCode != 0 {
			anyErr = true
			// As Kafka: offsets unknown (UnifiedLog.UnknownOffset) on any error; a partition KafkaApis
			// itself refuses (unknown topic or partition: FetchResponse.partitionResponse) carries the
			// generated default of an empty aborted-transactions list, one ReplicaManager refuses null.
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
		}
		total += int64(len(rp.RecordBatches))
		rt.Partitions = append(rt.Partitions, rp)
	}
	return total, anyErr
}

func (b *Broker) fetchPartition(req *kmsg.FetchRequest, t fetchTarget, budget int64, first bool, rp *kmsg.FetchResponseTopicPartition) int16 {
	part, err := b.leaderPartition(t.topic, t.req.Partition)
	if err != nil {
		return errCode(err)
	}
	if req.Version >= 9 {
		if code := checkLeaderEpoch(t.req.CurrentLeaderEpoch, part.epoch.Load()); code != 0 {
			return code
		}
	}
	lso, hwm := part.log.LogStartOffset(), part.log.HighWatermark()
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hwm, hwm, lso
	off := t.req.FetchOffset
	if off < lso || off > hwm {
		return kerr.OffsetOutOfRange.Code
	}
	if off == hwm {
		return 0
	}
	limit := min(int64(t.req.PartitionMaxBytes), budget)
	if limit <= 0 && !first {
		return 0
	}
	data, err := part.log.Read(off, int32(max(limit, 1)))
	if err != nil {
		return errCode(err)
	}
	if int64(len(data)) > limit && !(first && req.Version >= 3) {
		if req.Version >= 3 {
			return 0 // only the first partition may exceed its limit (KIP-74); this one waits for the next fetch
		}
		// Before v3 the limit is hard (hardMaxBytesLimit): the read is cut there, a partial batch at
		// its end, as FileRecords.slice cuts it; the client fetches again with a larger size.
		data = data[:max(limit, 0)]
	}
	if req.Version <= 3 { // KafkaApis: v0–v1 read message format 0, v2–v3 format 1
		toMagic := int8(1)
		if req.Version <= 1 {
			toMagic = 0
		}
		converted, err := downConvert(data, toMagic, off)
		if err != nil {
			b.log.WithError(err).WithFields(logFields(t.topic, t.req.Partition)).Warn("fetch: down-conversion")
			if errors.Is(err, errUnsupportedCodec) {
				return kerr.UnsupportedCompressionType.Code
			}
			return kerr.CorruptMessage.Code
		}
		data = fitDownConverted(converted, len(data))
	}
	rp.RecordBatches = data
	return 0
}

// handleListOffsets is KafkaApis.handleListOffsetRequest: -1 (latest) answers the high watermark, -2
// (earliest) the log start offset, a timestamp >= 0 the first offset whose record timestamp is at least
// that (per record in uncompressed batches, the batch's base offset in compressed ones), or offset -1
// when there is none. v0 answers in OldStyleOffsets.
func (b *Broker) handleListOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset = -1, -1
			rp.ErrorCode = b.listOffset(req, t.Topic, p, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, topic string, p kmsg.ListOffsetsRequestTopicPartition, rp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	part, err := b.leaderPartition(topic, p.Partition)
	if err != nil {
		return errCode(err)
	}
	epoch := part.epoch.Load()
	if req.Version >= 4 {
		if code := checkLeaderEpoch(p.CurrentLeaderEpoch, epoch); code != 0 {
			return code
		}
	}
	rp.LeaderEpoch = epoch
	var off, ts int64 = -1, -1
	switch {
	case p.Timestamp == -1:
		off = part.log.HighWatermark()
	case p.Timestamp == -2:
		off = part.log.LogStartOffset()
	case p.Timestamp >= 0:
		off, ts, err = offsetForTimestamp(part, p.Timestamp)
		if err != nil {
			return errCode(err)
		}
	case p.Timestamp == -3: // MAX_TIMESTAMP (KIP-734, v7+)
		if req.Version < 7 {
			return kerr.UnsupportedVersion.Code
		}
		off, ts, err = maxTimestampOffset(part)
		if err != nil {
			return errCode(err)
		}
	case p.Timestamp == -4 && req.Version >= 8: // EARLIEST_LOCAL_TIMESTAMP (KIP-405): no remote log, the log start
		off = part.log.LogStartOffset()
	case p.Timestamp == -5 && req.Version >= 9: // LATEST_TIERED_TIMESTAMP (KIP-1005): no remote log, none
		rp.LeaderEpoch = -1
	default:
		return kerr.InvalidRequest.Code
	}
	if req.Version == 0 {
		if off >= 0 && p.MaxNumOffsets > 0 {
			rp.OldStyleOffsets = []int64{off}
		} else {
			rp.OldStyleOffsets = []int64{}
		}
		return 0
	}
	rp.Offset, rp.Timestamp = off, ts
	return 0
}

// errFound stops a walk over a batch's records at the one it looks for.
var errFound = errors.New("found")

// eachBatch calls fn for every record batch of the partition's log from its log start offset below the
// high watermark, in offset order, until fn returns false; from is the first offset of rb not yet
// covered (above BaseOffset when the log starts inside the batch). Errors: the log's, or
// CORRUPT_MESSAGE for a batch that does not decode.
func eachBatch(part *partition, fn func(rb recordbatch.Batch, from int64) (more bool, err error)) error {
	off, hwm := part.log.LogStartOffset(), part.log.HighWatermark()
	for off < hwm {
		data, err := part.log.Read(off, 1<<20)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			rb, err := recordbatch.Read(data)
			if err != nil {
				return kerr.CorruptMessage
			}
			data = data[rb.Size():]
			if rb.LastOffset() < off {
				continue
			}
			from := off
			off = rb.LastOffset() + 1
			if more, err := fn(rb, from); err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// firstRecord returns the offset and timestamp of rb's first record that match accepts; ok=false when
// none does. Errors: CORRUPT_MESSAGE for records that do not decode.
func firstRecord(rb recordbatch.Batch, match func(off, ts int64) bool) (off, ts int64, ok bool, err error) {
	err = recordbatch.ReadRecords(rb.Records, rb.NumRecords, func(r recordbatch.Record) error {
		off, ts = rb.BaseOffset+int64(r.OffsetDelta), rb.BaseTimestamp+r.TimestampDelta
		if match(off, ts) {
			return errFound
		}
		return nil
	})
	switch {
	case err == errFound:
		return off, ts, true, nil
	case err != nil:
		return -1, -1, false, kerr.CorruptMessage
	}
	return -1, -1, false, nil
}

// offsetForTimestamp scans the log from its start (kafka.log.LogSegment.findOffsetByTimestamp without a
// time index): the first record at or after ts, or (-1, -1).
func offsetForTimestamp(part *partition, ts int64) (int64, int64, error) {
	foundOff, foundTS := int64(-1), int64(-1)
	err := eachBatch(part, func(rb recordbatch.Batch, from int64) (bool, error) {
		if rb.MaxTimestamp < ts {
			return true, nil
		}
		if rb.Compression() != 0 { // compressed: batch granularity
			foundOff, foundTS = max(rb.BaseOffset, from), rb.MaxTimestamp
			return false, nil
		}
		o, t, ok, err := firstRecord(rb, func(o, t int64) bool { return o >= from && t >= ts })
		if ok {
			foundOff, foundTS = o, t
		}
		return !ok, err
	})
	if err != nil {
		return -1, -1, err
	}
	return foundOff, foundTS, nil
}

// maxTimestampOffset is UnifiedLog.fetchOffsetByTimestamp for MAX_TIMESTAMP (KIP-734): the first batch
// holding the log's largest timestamp, and in it the first record with that timestamp (the batch's
// base offset when it is compressed or stamped with LogAppendTime); (-1, -1) for an empty log.
func maxTimestampOffset(part *partition) (int64, int64, error) {
	bestTS, bestOff := int64(-1), int64(-1)
	err := eachBatch(part, func(rb recordbatch.Batch, _ int64) (bool, error) {
		if rb.MaxTimestamp <= bestTS {
			return true, nil
		}
		bestTS, bestOff = rb.MaxTimestamp, rb.BaseOffset
		if rb.Compression() != 0 || rb.LogAppendTime() {
			return true, nil
		}
		o, _, ok, err := firstRecord(rb, func(_, t int64) bool { return t == rb.MaxTimestamp })
		if ok {
			bestOff = o
		}
		return true, err
	})
	if err != nil {
		return -1, -1, err
	}
	return bestOff, bestTS, nil
}
