package conformance

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The data and admin APIs' scripts: Produce, Fetch, ListOffsets, Metadata, CreateTopics and
// DeleteTopics at every version both brokers advertise, each with its error paths.

// Topics of the data scripts (created by setUp).
const (
	dataTopic   = "dt-data"
	deleteTopic = "dt-delete"
)

// recordTimestamp is every produced record's timestamp (CreateTime), fixed so that both brokers
// store the same bytes: 2100-01-01T00:00:00Z, in the future so that retention (7 days by record
// timestamp; Kafka's first check 30 s after start, which rolls and deletes an expired active segment)
// never deletes what a later case reads.
const recordTimestamp = 4_102_444_800_000

// recordBatch is a magic 2 record batch (KIP-98) of uncompressed records with the given values,
// no producer id, CreateTime recordTimestamp; crcOK false corrupts its CRC.
func recordBatch(crcOK bool, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                          // attributes
		body = binary.AppendVarint(body, 0)             // timestamp delta
		body = binary.AppendVarint(body, int64(i))      // offset delta
		body = binary.AppendVarint(body, int64(len(v))) // key: the value's text as well
		body = append(body, v...)
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	var afterCRC []byte
	afterCRC = binary.BigEndian.AppendUint16(afterCRC, 0)                     // attributes
	afterCRC = binary.BigEndian.AppendUint32(afterCRC, uint32(len(values)-1)) // last offset delta
	afterCRC = binary.BigEndian.AppendUint64(afterCRC, recordTimestamp)       // first timestamp
	afterCRC = binary.BigEndian.AppendUint64(afterCRC, recordTimestamp)       // max timestamp
	afterCRC = binary.BigEndian.AppendUint64(afterCRC, ^uint64(0))            // producer id -1
	afterCRC = binary.BigEndian.AppendUint16(afterCRC, ^uint16(0))            // producer epoch -1
	afterCRC = binary.BigEndian.AppendUint32(afterCRC, ^uint32(0))            // base sequence -1
	afterCRC = binary.BigEndian.AppendUint32(afterCRC, uint32(len(values)))   // records
	afterCRC = append(afterCRC, recs...)
	crc := crc32.Checksum(afterCRC, crc32.MakeTable(crc32.Castagnoli))
	if !crcOK {
		crc++
	}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0)                           // base offset
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(afterCRC))) // length
	b = binary.BigEndian.AppendUint32(b, ^uint32(0))                  // partition leader epoch -1
	b = append(b, 2)                                                  // magic
	b = binary.BigEndian.AppendUint32(b, crc)
	return append(b, afterCRC...)
}

// messageSet is an uncompressed message set of format magic (0 or 1, Produce v0–v1 and v2 carry
// them), keys equal to values, format 1 timestamps recordTimestamp; crcOK false corrupts the first CRC.
func messageSet(magic byte, crcOK bool, values ...string) []byte {
	var out []byte
	for i, v := range values {
		m := []byte{0, 0, 0, 0, magic, 0}
		if magic == 1 {
			m = binary.BigEndian.AppendUint64(m, recordTimestamp)
		}
		for range 2 {
			m = binary.BigEndian.AppendUint32(m, uint32(len(v)))
			m = append(m, v...)
		}
		crc := crc32.ChecksumIEEE(m[4:])
		if !crcOK && i == 0 {
			crc++
		}
		binary.BigEndian.PutUint32(m[:4], crc)
		out = binary.BigEndian.AppendUint64(out, uint64(i))
		out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
		out = append(out, m...)
	}
	return out
}

// records is what a client of Produce version v sends: a message set of format 0 (v0–v1) or 1 (v2),
// a v2 record batch from v3 on.
func records(v int16, crcOK bool, values ...string) []byte {
	switch {
	case v <= 1:
		return messageSet(0, crcOK, values...)
	case v == 2:
		return messageSet(1, crcOK, values...)
	}
	return recordBatch(crcOK, values...)
}

func produceReq(v int16, acks int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(v)
	r.Acks, r.TimeoutMillis = acks, 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, batch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func fetchReq(v int16, topic string, partition int32, offset int64, maxBytes int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(v)
	r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = -1, 0, 0, maxBytes
	r.SessionID, r.SessionEpoch = 0, -1 // no fetch session (KIP-227)
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.LogStartOffset = partition, offset, maxBytes, -1
	p.CurrentLeaderEpoch = -1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func listOffsetsReq(v int16, topic string, partition int32, timestamp int64) *kmsg.ListOffsetsRequest {
	r := kmsg.NewPtrListOffsetsRequest()
	r.SetVersion(v)
	r.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.MaxNumOffsets, p.CurrentLeaderEpoch = partition, timestamp, 1, -1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func metadataReq(v int16, all bool, autoCreate bool, topics ...string) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.SetVersion(v)
	r.AllowAutoTopicCreation = autoCreate
	if all && v >= 1 {
		return r // null topics: every topic
	}
	r.Topics = []kmsg.MetadataRequestTopic{}
	for _, tp := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(tp)
		r.Topics = append(r.Topics, t)
	}
	return r
}

type newTopic struct {
	name       string
	partitions int32
	rf         int16
}

func createTopicsReq(v int16, validateOnly bool, topics ...newTopic) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.SetVersion(v)
	r.TimeoutMillis, r.ValidateOnly = 30000, validateOnly
	for _, nt := range topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = nt.name, nt.partitions, nt.rf
		r.Topics = append(r.Topics, t)
	}
	return r
}

func deleteTopicsReq(v int16, topics ...string) *kmsg.DeleteTopicsRequest {
	r := kmsg.NewPtrDeleteTopicsRequest()
	r.SetVersion(v)
	r.TimeoutMillis = 30000
	r.TopicNames = topics
	for _, tp := range topics {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(tp)
		r.Topics = append(r.Topics, t)
	}
	return r
}

func fixedReq(r kmsg.Request) func(*state) kmsg.Request {
	return func(*state) kmsg.Request { return r }
}

// of lists the versions of key both brokers advertise, lowest first.
func (v versions) of(key kmsg.Key) []int16 {
	lo, ok := v.min[key.Int16()]
	if !ok {
		return nil
	}
	var out []int16
	for x := lo; x <= v.max[key.Int16()]; x++ {
		out = append(out, x)
	}
	return out
}

func dataCases(v versions) []kcase {
	var cases []kcase
	for _, pv := range v.of(kmsg.Produce) {
		cases = append(cases, kcase{name: fmt.Sprintf("Produce v%d", pv), steps: []step{
			{name: "produce", req: fixedReq(produceReq(pv, -1, dataTopic, 0, records(pv, true, fmt.Sprintf("p%d-a", pv), fmt.Sprintf("p%d-b", pv))))},
			{name: "produce-acks-1", req: fixedReq(produceReq(pv, 1, dataTopic, 1, records(pv, true, fmt.Sprintf("p%d-c", pv))))},
			{name: "produce-unknown-topic", req: fixedReq(produceReq(pv, -1, "dt-never", 0, records(pv, true, "x")))},
			{name: "produce-unknown-partition", req: fixedReq(produceReq(pv, -1, dataTopic, 9, records(pv, true, "x")))},
			{name: "produce-invalid-acks", req: fixedReq(produceReq(pv, 2, dataTopic, 0, records(pv, true, "x")))},
			{name: "produce-corrupt", req: fixedReq(produceReq(pv, -1, dataTopic, 0, records(pv, false, "x")))},
		}})
	}
	for _, fv := range v.of(kmsg.Fetch) {
		cases = append(cases, kcase{name: fmt.Sprintf("Fetch v%d", fv), steps: []step{
			{name: "fetch", req: fixedReq(fetchReq(fv, dataTopic, 0, 0, 1<<20))},
			{name: "fetch-from-3", req: fixedReq(fetchReq(fv, dataTopic, 0, 3, 1<<20))},
			{name: "fetch-max-bytes-1", req: fixedReq(fetchReq(fv, dataTopic, 1, 0, 1))},
			{name: "fetch-out-of-range", req: fixedReq(fetchReq(fv, dataTopic, 0, 1_000_000, 1<<20))},
			{name: "fetch-unknown-topic", req: fixedReq(fetchReq(fv, "dt-never", 0, 0, 1<<20))},
			{name: "fetch-unknown-partition", req: fixedReq(fetchReq(fv, dataTopic, 9, 0, 1<<20))},
		}})
	}
	for _, lv := range v.of(kmsg.ListOffsets) {
		steps := []step{
			{name: "earliest", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, -2))},
			{name: "latest", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, -1))},
			{name: "latest-empty-partition", req: fixedReq(listOffsetsReq(lv, deleteTopic, 0, -1))},
			{name: "unknown-topic", req: fixedReq(listOffsetsReq(lv, "dt-never", 0, -1))},
			{name: "unknown-partition", req: fixedReq(listOffsetsReq(lv, dataTopic, 9, -1))},
		}
		if lv >= 1 {
			steps = append(steps,
				step{name: "by-timestamp", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, recordTimestamp))},
				step{name: "by-timestamp-after-all", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, recordTimestamp+1))})
		}
		if lv >= 7 { // KIP-734
			steps = append(steps,
				step{name: "max-timestamp", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, -3))},
				step{name: "max-timestamp-empty-partition", req: fixedReq(listOffsetsReq(lv, deleteTopic, 0, -3))})
		}
		if lv >= 8 { // KIP-405: earliest local
			steps = append(steps, step{name: "earliest-local", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, -4))})
		}
		if lv >= 9 { // KIP-1005: latest tiered
			steps = append(steps, step{name: "latest-tiered", req: fixedReq(listOffsetsReq(lv, dataTopic, 0, -5))})
		}
		cases = append(cases, kcase{name: fmt.Sprintf("ListOffsets v%d", lv), steps: steps})
	}
	for _, mv := range v.of(kmsg.Metadata) {
		steps := []step{
			{name: "topic", req: fixedReq(metadataReq(mv, false, false, dataTopic))},
			{name: "invalid-topic-name", req: fixedReq(metadataReq(mv, false, false, "bad name"))},
		}
		if mv >= 4 {
			steps = append(steps, step{name: "unknown-topic-no-auto-create", req: fixedReq(metadataReq(mv, false, false, "dt-never"))})
		} else {
			// Below v4 auto.create.topics.enable (true) decides: the topic is created. Kafka's metadata
			// cache learns of it asynchronously (UpdateMetadata): a barrier waits for its leader.
			auto := fmt.Sprintf("dt-auto-v%d", mv)
			steps = append(steps,
				step{name: "unknown-topic-auto-create", req: fixedReq(metadataReq(mv, false, true, auto))},
				step{name: "auto-created-topic-led", req: fixedReq(metadataReq(mv, false, false, auto)), until: func(r kmsg.Response) bool {
					m := r.(*kmsg.MetadataResponse)
					return len(m.Topics) == 1 && m.Topics[0].ErrorCode == 0 && len(m.Topics[0].Partitions) > 0 && m.Topics[0].Partitions[0].Leader >= 0
				}})
		}
		steps = append(steps, step{name: "all-topics", req: fixedReq(metadataReq(mv, true, false))})
		cases = append(cases, kcase{name: fmt.Sprintf("Metadata v%d", mv), steps: steps})
	}
	for _, cv := range v.of(kmsg.CreateTopics) {
		name := fmt.Sprintf("dt-c-v%d", cv)
		steps := []step{
			{name: "create", req: fixedReq(createTopicsReq(cv, false, newTopic{name, 2, 1}))},
			{name: "already-exists", req: fixedReq(createTopicsReq(cv, false, newTopic{name, 2, 1}))},
			{name: "invalid-name", req: fixedReq(createTopicsReq(cv, false, newTopic{"bad name", 1, 1}))},
			{name: "zero-partitions", req: fixedReq(createTopicsReq(cv, false, newTopic{name + "-p0", 0, 1}))},
			{name: "replication-factor-above-brokers", req: fixedReq(createTopicsReq(cv, false, newTopic{name + "-rf3", 1, 3}))},
			{name: "duplicate-in-request", req: fixedReq(createTopicsReq(cv, false, newTopic{name + "-dup", 1, 1}, newTopic{name + "-dup", 1, 1}))},
		}
		if cv >= 1 {
			steps = append(steps, step{name: "validate-only", req: fixedReq(createTopicsReq(cv, true, newTopic{name + "-vo", 3, 1}))})
		}
		if cv >= 4 {
			steps = append(steps, step{name: "broker-defaults", req: fixedReq(createTopicsReq(cv, false, newTopic{name + "-def", -1, -1}))})
		}
		cases = append(cases, kcase{name: fmt.Sprintf("CreateTopics v%d", cv), steps: steps})
	}
	for _, dv := range v.of(kmsg.DeleteTopics) {
		cases = append(cases, kcase{name: fmt.Sprintf("DeleteTopics v%d", dv), steps: []step{
			{name: "delete", req: fixedReq(deleteTopicsReq(dv, fmt.Sprintf("dt-c-v%d", dv)))},
			{name: "unknown-topic", req: fixedReq(deleteTopicsReq(dv, "dt-never"))},
			{name: "invalid-name", req: fixedReq(deleteTopicsReq(dv, "bad name"))},
		}})
	}
	return cases
}
