package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/recordbatch"
)

// idemPartition is the dataTopic partition the idempotent-produce case appends to.
const idemPartition = 1

// idemRecordBatch is recordBatch's records as producer pid sends them: epoch, base sequence seq,
// attributes attrs (recordbatch.TransactionalBit for a transactional batch).
func idemRecordBatch(pid int64, epoch int16, seq int32, attrs int16, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		recs = recordbatch.AppendRecord(recs, recordbatch.Record{OffsetDelta: int32(i), Key: []byte(v), Value: []byte(v)})
	}
	return recordbatch.AppendBatch(nil, recordbatch.Header{
		PartitionLeaderEpoch: -1, Attributes: attrs, LastOffsetDelta: int32(len(values) - 1),
		BaseTimestamp: recordTimestamp, MaxTimestamp: recordTimestamp,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: int32(len(values)),
	}, recs)
}

func initPIDReq(v int16, txnID *string, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.SetVersion(v)
	r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = txnID, 60000, pid, epoch
	return r
}

// produceView is what is compared of an idempotent Produce answer. LogAppendTime is kept as
// AppendTime, compared as it is: -1 for CreateTime, and a duplicate answers the original batch's max
// timestamp there (UnifiedLog.append), the script's fixed timestamp.
func produceView(resp kmsg.Response) any {
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return map[string]any{"ErrorCode": p.ErrorCode, "BaseOffset": p.BaseOffset, "LogStartOffset": p.LogStartOffset,
		"AppendTime": p.LogAppendTime, "ErrorMessage": p.ErrorMessage != nil}
}

// idempotentCase: InitProducerId at every version both brokers serve (a null transactional id; a
// re-init with the producer's id and epoch; bad id/epoch pairs), then Produce v9 of an idempotent
// producer: two batches, the retry of the first (a duplicate: its original offset), a sequence gap,
// an epoch bump at sequence 0, the old epoch again, a new epoch not at 0, an unknown producer at
// sequence 42, a transactional batch outside any transaction, a negative sequence.
func idempotentCase(v versions) kcase {
	steps := []step{{
		// Kafka's producer-id manager answers COORDINATOR_LOAD_IN_PROGRESS until its first block arrives.
		name: "init-until-ready",
		req:  func(*state) kmsg.Request { return initPIDReq(v.max[kmsg.InitProducerID.Int16()], nil, -1, -1) },
		until: func(resp kmsg.Response) bool {
			return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0
		},
		after: func(st *state, resp kmsg.Response) { st.pid["p"] = resp.(*kmsg.InitProducerIDResponse).ProducerID },
	}}
	for _, iv := range v.of(kmsg.InitProducerID) {
		steps = append(steps, step{name: fmt.Sprintf("init-v%d", iv), req: fixedReq(initPIDReq(iv, nil, -1, -1)),
			after: func(st *state, resp kmsg.Response) { st.pid["fresh"] = resp.(*kmsg.InitProducerIDResponse).ProducerID }})
		steps = append(steps, step{name: fmt.Sprintf("init-v%d-empty-transactional-id", iv), req: fixedReq(initPIDReq(iv, kmsg.StringPtr(""), -1, -1))})
		if iv >= 3 {
			steps = append(steps,
				step{name: fmt.Sprintf("init-v%d-reinit", iv), req: func(st *state) kmsg.Request { return initPIDReq(iv, nil, st.pid["p"], 0) }},
				step{name: fmt.Sprintf("init-v%d-id-without-epoch", iv), req: func(st *state) kmsg.Request { return initPIDReq(iv, nil, st.pid["p"], -1) }},
				step{name: fmt.Sprintf("init-v%d-epoch-without-id", iv), req: fixedReq(initPIDReq(iv, nil, -1, 0))})
		}
	}
	pv := v.max[kmsg.Produce.Int16()]
	produce := func(name, who string, epoch int16, seq int32, attrs int16, values ...string) step {
		return step{name: name, view: produceView, req: func(st *state) kmsg.Request {
			return produceReq(pv, -1, dataTopic, idemPartition, idemRecordBatch(st.pid[who], epoch, seq, attrs, values...))
		}}
	}
	steps = append(steps,
		produce("seq-0", "p", 0, 0, 0, "i0", "i1"),
		produce("seq-2", "p", 0, 2, 0, "i2"),
		produce("retry-seq-0", "p", 0, 0, 0, "i0", "i1"),
		produce("retry-seq-2", "p", 0, 2, 0, "i2"),
		produce("gap-seq-5", "p", 0, 5, 0, "i5"),
		produce("epoch-1-seq-0", "p", 1, 0, 0, "j0"),
		produce("old-epoch-0", "p", 0, 3, 0, "i3"),
		produce("epoch-2-seq-1", "p", 2, 1, 0, "k1"),
		produce("unknown-producer-seq-42", "fresh", 0, 42, 0, "f42"),
		produce("transactional-outside-txn", "fresh", 0, 43, recordbatch.TransactionalBit, "t43"),
		produce("negative-sequence", "fresh", 0, -2, 0, "n"),
	)
	return kcase{name: "Idempotent produce", steps: steps}
}
