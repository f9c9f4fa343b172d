package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/broker/storage"
	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
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

// ackWait is an acks=all answer waiting for the high watermark (Kafka's DelayedProduce): the
// partition, the leader epoch it was appended in, and the offset after its last record.
type ackWait struct {
	rp       *kmsg.ProduceResponseTopicPartition
	part     *partition
	epoch    int32
	required int64
	minISR   int
}

// handleProduce is KafkaApis.handleProduceRequest: acks 1 answers once the leader's log has the
// batches; acks -1 once every replica of the ISR has them (the high watermark passed them), or
// REQUEST_TIMED_OUT after the request's timeout (DelayedProduce); acks 0 answers nothing, and an
// error with acks 0 closes the connection, as Kafka does, so that the client refreshes its metadata.
func (b *Broker) handleProduce(ctx context.Context, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TransactionID == nil && hasTransactionalRecords(req) {
		// KafkaApis.handleProduceRequest: transactional records need a transactional id the client may
		// write (ProduceRequest.getErrorResponse for every partition).
		return b.produceErrorResponse(req, resp, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	firstErr := int16(0)
	var waits []ackWait
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(t.Partitions))
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
				var w *ackWait
				rp.ErrorCode, msg, w = b.produceOne(req.Version, t.Topic, p.Partition, req.Acks, records, &rp)
				if w != nil {
					w.rp = nil // set below, once rp has its place in the response
					waits = append(waits, *w)
					rt.Partitions = append(rt.Partitions, rp)
					waits[len(waits)-1].rp = &rt.Partitions[len(rt.Partitions)-1]
					continue
				}
			default:
				rp.ErrorCode, msg = kerr.InvalidRequiredAcks.Code, fmt.Sprintf("acks %d: must be -1, 0 or 1", req.Acks)
			}
			if rp.ErrorCode != 0 {
				// Kafka answers a message only with per-record errors (INVALID_RECORD, INVALID_TIMESTAMP,
				// KIP-467); the others (INVALID_REQUIRED_ACKS, CORRUPT_MESSAGE, ...) go without one,
				// logged here.
				if msg != "" && (rp.ErrorCode == kerr.InvalidRecord.Code || rp.ErrorCode == kerr.InvalidTimestamp.Code) {
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
	b.awaitAcks(ctx, waits, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
	if req.Acks == 0 {
		if firstErr != 0 {
			return nil, &errClose{closeAcks0Error, fmt.Errorf("acks=0 produce failed with %s", errorLabel(firstErr))}
		}
		return nil, nil
	}
	b.addProduceLeaderHints(resp)
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

// awaitAcks waits for every acks=all answer until the high watermark passes its records, its
// leader stops leading, timeout passes (REQUEST_TIMED_OUT, as DelayedProduce.onExpiration) or ctx
// ends; it sets each answer's error code.
func (b *Broker) awaitAcks(ctx context.Context, waits []ackWait, timeout time.Duration) {
	if len(waits) == 0 {
		return
	}
	wake := make(chan struct{}, 1)
	for _, w := range waits {
		w.part.watch(wake)
		defer w.part.unwatch(wake)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		pending := 0
		for i := range waits {
			w := &waits[i]
			if w.part == nil {
				continue
			}
			if done, code := w.part.acksAll(w.epoch, w.required, w.minISR); done {
				w.rp.ErrorCode = code
				w.part = nil
				continue
			}
			pending++
		}
		if pending == 0 {
			return
		}
		select {
		case <-wake:
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		for i := range waits {
			if w := &waits[i]; w.part != nil {
				if done, code := w.part.acksAll(w.epoch, w.required, w.minISR); done {
					w.rp.ErrorCode = code
				} else {
					w.rp.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		return
	}
}

func (b *Broker) produceOne(version int16, topic string, p int32, acks int16, records []byte, rp *kmsg.ProduceResponseTopicPartition) (int16, string, *ackWait) {
	if topic == OffsetsTopic {
		// ReplicaManager.appendToLocalLog: clients may not write internal topics.
		return kerr.InvalidTopicException.Code, "Cannot append to internal topic " + topic, nil
	}
	part, err := b.leaderPartition(topic, p)
	if err != nil {
		return errCode(err), "", nil
	}
	if code := validateProduceRecords(version, records); code != 0 {
		// KafkaApis answers these with the code alone (PartitionResponse(Errors.forException(e))).
		return code, "", nil
	}
	return b.appendToLeader(part, acks, records, rp, true)
}

// validateProduceRecords is ProduceRequest.validateRecords, which KafkaApis applies to every partition
// of a Produce v3+ before appending: exactly one batch, of magic 2 (INVALID_RECORD otherwise), and no
// zstd below v7 (UNSUPPORTED_COMPRESSION_TYPE, KIP-110). Bytes that do not frame as a batch are left
// to the log's validation (CORRUPT_MESSAGE). Older versions carry message sets and are not checked.
func validateProduceRecords(version int16, records []byte) int16 {
	if version < 3 {
		return 0
	}
	if len(records) == 0 {
		return kerr.InvalidRecord.Code
	}
	h, err := recordbatch.ReadHeader(records)
	switch {
	case err != nil:
		return 0
	case h.Magic != recordbatch.Magic:
		return kerr.InvalidRecord.Code
	case version < 7 && h.Compression() == 4:
		return kerr.UnsupportedCompressionType.Code
	case h.Size() < len(records):
		return kerr.InvalidRecord.Code
	}
	return 0
}

// appendToLeader is Partition.appendRecordsToLeader for one partition's records: size and key
// checks, min.insync.replicas for acks=all (capped at the replication factor, as 3.9's
// effectiveMinIsr), the append, and for acks=all the wait to come.
// client: the records come from a Produce (counted in the broker's messages-in metric).
func (b *Broker) appendToLeader(part *partition, acks int16, records []byte, rp *kmsg.ProduceResponseTopicPartition, client bool) (int16, string, *ackWait) {
	topic, p := part.topic, part.id
	maxBatch, count, ok := scanBatches(records)
	if !ok {
		return kerr.CorruptMessage.Code, "record batches are not framed as v2 batches", nil
	}
	lc := part.config()
	// UnifiedLog.analyzeAndValidateRecords: the topic's max.message.bytes (whose default is the broker's
	// message.max.bytes) bounds every batch.
	if maxBatch > int(lc.maxMessageBytes) {
		return kerr.MessageTooLarge.Code, fmt.Sprintf("The record batch size in the append to %s-%d is %d bytes which exceeds the maximum configured value of %d.", topic, p, maxBatch, lc.maxMessageBytes), nil
	}
	st, leading := part.leaderState()
	if !leading {
		return kerr.NotLeaderForPartition.Code, "", nil
	}
	minISR := min(int(lc.minInsyncReplicas), len(b.view.Load().replicasOf(topic, p)))
	if acks == -1 && len(st.ISR) < minISR {
		return kerr.NotEnoughReplicas.Code, fmt.Sprintf("The size of the current ISR %s is insufficient to satisfy the min.isr requirement of %d for partition %s-%d", scalaSet(st.ISR), minISR, topic, p), nil
	}
	// LogValidator's record step (timestamps.go): keys of a compacted topic, the topic's timestamp
	// bounds, LogAppendTime stamping.
	records, appendTime, rve := validateAppendRecords(records, recordChecks{timestamps: lc.timestamps,
		compacted: part.log.Compacted(), partition: fmt.Sprintf("%s-%d", topic, p)}, nowMs())
	if rve != nil {
		if rve.code != kerr.CorruptMessage.Code {
			// ReplicaManager.appendToLocalLog: a RecordValidationException is answered with the log
			// start offset, the per-record errors and the exception's message.
			rp.LogStartOffset, rp.ErrorRecords = part.log.LogStartOffset(), rve.records
		}
		return rve.code, rve.message, nil
	}
	// LogValidator: the topic's compression.type (compression.go).
	records, code, msg := applyCompressionType(lc.compression, records, topic, p, lc.maxMessageBytes)
	if code != 0 {
		return code, msg, nil
	}
	res, err := part.appendRecords(records)
	if err != nil {
		if producerStateError(err) {
			// ReplicaManager.appendToLocalLog: an exception outside its list of known ones is answered
			// with the log start offset and without a message.
			rp.LogStartOffset = part.log.LogStartOffset()
			return errCode(err), "", nil
		}
		return errCode(err), err.Error(), nil
	}
	if !res.Duplicate && client {
		b.metrics.messages.Add(float64(count))
	}
	// A duplicate (an idempotent producer's retry) is answered as UnifiedLog answers it: the original
	// batch's offsets, and its max timestamp as the log append time; otherwise the log append time is
	// the stamp of a LogAppendTime topic, -1 with CreateTime.
	rp.BaseOffset, rp.LogAppendTime = res.BaseOffset, res.LogAppendTime
	if !res.Duplicate {
		rp.LogAppendTime = appendTime
	}
	rp.LogStartOffset = part.log.LogStartOffset()
	if acks != -1 {
		return 0, "", nil
	}
	return 0, "", &ackWait{part: part, epoch: st.LeaderEpoch, required: res.LastOffset + 1, minISR: minISR}
}

// scalaSet formats an ISR as Scala prints a Set: "Set(1, 2)".
func scalaSet(ids []int32) string {
	s := "Set("
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(int(id))
	}
	return s + ")"
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
// is returned whole even if larger (KIP-74). A v4+ answer is a *fetchAnswer whose records are slices
// of the segment files (zerocopy.go), which the connection sends and releases.
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
	ans := &fetchAnswer{FetchResponse: resp}
	defer func() {
		if r := recover(); r != nil { // dispatch turns the panic into a closed connection
			ans.release()
			panic(r)
		}
	}()
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
		total, anyErr := b.readFetch(req, targets, maxBytes, ans)
		remaining := time.Until(deadline)
		if total >= int64(req.MinBytes) || anyErr || remaining <= 0 || req.MaxWaitMillis <= 0 {
			return ans
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
			b.metrics.purgatory.WithLabelValues("Fetch").Inc() // parked until it answers (Dec with the timer's Stop)
		}
		ans.release() // every way out of the wait reads again: hold no segment file while parked
		select {
		case <-wake:
		case <-timer.C:
			resp.Topics = resp.Topics[:0]
			b.readFetch(req, targets, maxBytes, ans)
			return ans
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

// readFetch fills ans's Topics (request order) and slices (one per partition) and returns the record
// bytes read and whether a partition answered an error.
func (b *Broker) readFetch(req *kmsg.FetchRequest, targets []fetchTarget, maxBytes int32, ans *fetchAnswer) (int64, bool) {
	resp := ans.FetchResponse
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
		ans.slices = append(ans.slices, storage.Slice{}) // held by ans at once (released even on a panic)
		slice := &ans.slices[len(ans.slices)-1]
		rp.ErrorCode = b.fetchPartition(req, t, budget, total == 0, &rp, slice)
		if b.zstdTopicRefused(req, t.topic, t.req.Partition) {
			rp.ErrorCode, rp.RecordBatches = kerr.UnsupportedCompressionType.Code, []byte{}
			slice.Release()
			*slice = storage.Slice{}
		}
		if req.IsolationLevel == 1 {
			rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		if rp.ErrorCode != 0 {
			anyErr = true
			// As Kafka: offsets unknown (UnifiedLog.UnknownOffset) on any error; a partition KafkaApis
			// itself refuses (unknown topic or partition: FetchResponse.partitionResponse) carries the
			// generated default of an empty aborted-transactions list, one ReplicaManager refuses null.
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code || rp.ErrorCode == kerr.UnsupportedCompressionType.Code {
				rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
		}
		total += int64(len(rp.RecordBatches)) + slice.Size
		rt.Partitions = append(rt.Partitions, rp)
	}
	return total, anyErr
}

// fetchReplicaID is the broker id a Fetch comes from (ReplicaID up to v14, ReplicaState from v15),
// -1 for a consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// fetchPartition answers one partition of a Fetch into rp, its records into slice (the zero Slice when
// none, or when they are in rp.RecordBatches: down-converted for v0–v3).
func (b *Broker) fetchPartition(req *kmsg.FetchRequest, t fetchTarget, budget int64, first bool, rp *kmsg.FetchResponseTopicPartition, slice *storage.Slice) int16 {
	part, err := b.leaderPartition(t.topic, t.req.Partition)
	if err != nil {
		return errCode(err)
	}
	if req.Version >= 9 {
		if code := checkLeaderEpoch(t.req.CurrentLeaderEpoch, part.epoch.Load()); code != 0 {
			return code
		}
	}
	if r := fetchReplicaID(req); r >= 0 {
		return b.followerFetch(req, r, part, t, budget, first, rp, slice)
	}
	// A consumer reads below the high watermark (FetchIsolation.HIGH_WATERMARK); offsets up to the
	// log end offset are in range, answered with no records until the followers have them.
	lso, hwm, leo := part.log.LogStartOffset(), part.log.HighWatermark(), part.log.LogEndOffset()
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hwm, hwm, lso
	off := t.req.FetchOffset
	if off < lso || off > leo {
		return kerr.OffsetOutOfRange.Code
	}
	if off >= hwm {
		return 0
	}
	limit := min(int64(t.req.PartitionMaxBytes), budget)
	if limit <= 0 && !first {
		return 0
	}
	if req.Version >= 4 { // sent from the segment file (zero copy)
		s, err := part.log.SliceUpTo(off, int32(max(limit, 1)), hwm)
		if err != nil {
			return errCode(err)
		}
		if s.Size > limit && !first {
			s.Release()
			return 0 // only the first partition may exceed its limit (KIP-74); this one waits for the next fetch
		}
		*slice = s
		return 0
	}
	data, err := part.log.ReadUpTo(off, int32(max(limit, 1)), hwm)
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
	// Down-converted in memory (v0–v3 are the only versions left here): KafkaApis reads message format
	// 0 for v0–v1, format 1 for v2–v3.
	toMagic := int8(1)
	if req.Version <= 1 {
		toMagic = 0
	}
	converted, firstLen, err := downConvert(data, toMagic, off)
	if err != nil {
		b.log.WithError(err).WithFields(logFields(t.topic, t.req.Partition)).Warn("fetch: down-conversion")
		if errors.Is(err, errUnsupportedCodec) {
			return kerr.UnsupportedCompressionType.Code
		}
		return kerr.CorruptMessage.Code
	}
	rp.RecordBatches = fitDownConverted(converted, max(len(data), firstLen))
	return 0
}

// followerFetch is Partition.fetchRecords for a follower (replica id r): its last fetched epoch is
// checked against this leader's epochs (a diverging follower gets the leader's end of that epoch
// instead of records), records are read up to the log end offset, and the fetch offset is recorded
// as the follower's log end offset (Partition.updateFollowerFetchState), which may move the high
// watermark and propose an ISR change to the controller.
func (b *Broker) followerFetch(req *kmsg.FetchRequest, r int32, part *partition, t fetchTarget, budget int64, first bool, rp *kmsg.FetchResponseTopicPartition, slice *storage.Slice) int16 {
	if _, ok := part.leaderState(); !ok || !slices.Contains(b.view.Load().replicasOf(t.topic, t.req.Partition), r) {
		return kerr.NotLeaderForPartition.Code
	}
	lg := part.log
	off := t.req.FetchOffset
	lso, leo := lg.LogStartOffset(), lg.LogEndOffset()
	if req.Version >= 12 {
		e, end := lg.EndOffsetForEpoch(t.req.LastFetchedEpoch)
		div, diverged, outOfRange := replica.DivergingEpoch(t.req.LastFetchedEpoch, off, lso, replica.EpochEnd{Epoch: e, EndOffset: end})
		if outOfRange {
			return kerr.OffsetOutOfRange.Code
		}
		if diverged {
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = lg.HighWatermark(), lg.HighWatermark(), lso
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = div.Epoch, div.EndOffset
			return 0
		}
	}
	if off < lso || off > leo {
		return kerr.OffsetOutOfRange.Code
	}
	if limit := min(int64(t.req.PartitionMaxBytes), budget); off < leo && (limit > 0 || first) {
		s, err := lg.SliceUpTo(off, int32(max(limit, 1)), math.MaxInt64)
		if err != nil {
			return errCode(err)
		}
		if s.Size <= limit || first {
			*slice = s
		} else {
			s.Release()
		}
	}
	b.alters.submit(part, part.followerFetched(r, off))
	hw := lg.HighWatermark()
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, hw, lso
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
	// ReplicaManager.fetchOffsetForTimestamp: the debugging replica id (-2) may ask any replica, a
	// consumer (-1) and a follower only the leader; only a consumer's "latest" is the high watermark
	// (a follower and the debugger get the log end offset: no isolation).
	var part *partition
	var err error
	if req.ReplicaID == -2 {
		part, err = b.localPartition(topic, p.Partition)
	} else {
		part, err = b.leaderPartition(topic, p.Partition)
	}
	if err != nil {
		return errCode(err)
	}
	epoch := part.epoch.Load()
	if req.Version >= 4 {
		if code := checkLeaderEpoch(p.CurrentLeaderEpoch, epoch); code != 0 {
			return code
		}
	}
	// The leader epoch answered with the offset (UnifiedLog.fetchOffsetByTimestamp's TimestampAndOffset;
	// KafkaApis sets it from v4): latest, the current leader epoch; earliest, the epoch of the log
	// start offset; a timestamp or MAX_TIMESTAMP, the epoch of the batch found; -1 when none.
	var off, ts int64 = -1, -1
	lep := int32(-1)
	switch {
	case p.Timestamp == -1 && req.ReplicaID != -1:
		off, lep = part.log.LogEndOffset(), epoch
	case p.Timestamp == -1:
		off, lep = part.log.HighWatermark(), epoch
	case p.Timestamp == -2, p.Timestamp == -4 && req.Version >= 8: // EARLIEST_LOCAL_TIMESTAMP (KIP-405): no remote log, the log start
		off = part.log.LogStartOffset()
		if e, ok := part.log.LogStartEpoch(); ok {
			lep = e
		}
	case p.Timestamp >= 0:
		off, ts, lep, err = offsetForTimestamp(part, p.Timestamp)
		if err != nil {
			return errCode(err)
		}
	case p.Timestamp == -3: // MAX_TIMESTAMP (KIP-734, v7+)
		if req.Version < 7 {
			return kerr.UnsupportedVersion.Code
		}
		off, ts, lep, err = maxTimestampOffset(part)
		if err != nil {
			return errCode(err)
		}
	case p.Timestamp == -5 && req.Version >= 9: // LATEST_TIERED_TIMESTAMP (KIP-1005): no remote log, none
	default:
		return kerr.InvalidRequest.Code
	}
	if req.Version >= 4 {
		rp.LeaderEpoch = lep
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
		data, err := part.log.ReadUpTo(off, 1<<20, hwm)
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

// recordTimestamp is a record's timestamp as DefaultRecordBatch gives it: the batch's max timestamp
// in a LogAppendTime batch, otherwise the base timestamp plus the record's delta.
func recordTimestamp(rb recordbatch.Batch, r recordbatch.Record) int64 {
	if rb.LogAppendTime() {
		return rb.MaxTimestamp
	}
	return rb.BaseTimestamp + r.TimestampDelta
}

// batchEpoch is a batch's leader epoch as FileRecords.maybeLeaderEpoch gives it: -1 (none) for
// NO_PARTITION_LEADER_EPOCH.
func batchEpoch(rb recordbatch.Batch) int32 { return max(rb.PartitionLeaderEpoch, -1) }

// firstRecord returns the offset and timestamp of rb's first record that match accepts, its records
// decompressed when compressed; ok=false when none does. Errors: CORRUPT_MESSAGE for records that do
// not decompress or decode.
func firstRecord(rb recordbatch.Batch, match func(off, ts int64) bool) (off, ts int64, ok bool, err error) {
	err = storage.EachRecord(rb, func(r recordbatch.Record) error {
		off, ts = rb.BaseOffset+int64(r.OffsetDelta), recordTimestamp(rb, r)
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

// offsetForTimestamp scans the log from its start (FileRecords.searchForTimestamp, without a time
// index): the first record at or after ts — every batch's records, compressed ones decompressed —
// with its timestamp and its batch's leader epoch, or (-1, -1, -1).
func offsetForTimestamp(part *partition, ts int64) (int64, int64, int32, error) {
	foundOff, foundTS, foundEpoch := int64(-1), int64(-1), int32(-1)
	err := eachBatch(part, func(rb recordbatch.Batch, from int64) (bool, error) {
		if rb.MaxTimestamp < ts {
			return true, nil
		}
		o, t, ok, err := firstRecord(rb, func(o, t int64) bool { return o >= from && t >= ts })
		if ok {
			foundOff, foundTS, foundEpoch = o, t, batchEpoch(rb)
		}
		return !ok, err
	})
	if err != nil {
		return -1, -1, -1, err
	}
	return foundOff, foundTS, foundEpoch, nil
}

// maxTimestampOffset is UnifiedLog.fetchOffsetByTimestamp for MAX_TIMESTAMP (KIP-734): the first batch
// holding the log's largest timestamp, and in it the first record with that timestamp
// (RecordBatch.offsetOfMaxTimestamp: a LogAppendTime batch's first record; compressed records are
// decompressed), with the batch's leader epoch; (-1, -1, -1) for an empty log or when no record of
// the batch carries its max timestamp.
func maxTimestampOffset(part *partition) (int64, int64, int32, error) {
	var best recordbatch.Batch
	found := false
	err := eachBatch(part, func(rb recordbatch.Batch, _ int64) (bool, error) {
		if !found || rb.MaxTimestamp > best.MaxTimestamp {
			if rb.MaxTimestamp > recordbatch.NoTimestamp {
				best, found = rb, true
			}
		}
		return true, nil
	})
	if err != nil || !found {
		return -1, -1, -1, err
	}
	o, _, ok, err := firstRecord(best, func(_, t int64) bool { return t == best.MaxTimestamp })
	if err != nil || !ok {
		return -1, -1, -1, err
	}
	return o, best.MaxTimestamp, batchEpoch(best), nil
}
