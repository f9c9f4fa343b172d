package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestEveryAdvertisedVersion sends every version of every API the broker advertises and checks the
// answer (decoded by kmsg at that version) carries the right data: advertised versions are served.
func TestEveryAdvertisedVersion(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	zc := zkClient(t, z.Connect())
	createTopic(t, tb.addr(), "sweep", 1)
	c := dial(t, tb.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Three records with known timestamps, one batch each (ProduceSync), from a real client. Not
	// idempotent: the sweep sends its first batch again at every Produce version, which an
	// idempotent producer's batch would make a duplicate (answered with offset 0, not appended).
	t0 := time.UnixMilli(1_700_000_000_000)
	prod, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic("sweep"), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < 3; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i)), Timestamp: t0.Add(time.Duration(i) * time.Second)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := tb.b.PartitionLog("sweep", 0)
	if err != nil {
		t.Fatal(err)
	}
	oneBatch, err := batch.Read(0, 1) // the first batch alone (KIP-74: at least one)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(3)

	av := request[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest(), 0)
	waitCoordinator(t, c, "sweep-g")
	for _, k := range av.ApiKeys {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			name := fmt.Sprintf("%s v%d", kmsg.NameForKey(k.ApiKey), v)
			switch kmsg.Key(k.ApiKey) {
			case kmsg.Produce: // the batch is appended at the next offset.
				r := kmsg.NewPtrProduceRequest()
				r.Acks, r.TimeoutMillis = -1, 5000
				r.Topics = []kmsg.ProduceRequestTopic{{Topic: "sweep", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: oneBatch}}}}
				p := request[*kmsg.ProduceResponse](t, c, r, v).Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.BaseOffset != next {
					t.Fatalf("%s: %v base %d, want %d", name, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, next)
				}
				next++
			case kmsg.Fetch: // from 0: the first batch, the high watermark.
				r := kmsg.NewPtrFetchRequest()
				r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.SessionEpoch = 100, 1, 1<<20, -1
				r.Topics = []kmsg.FetchRequestTopic{{Topic: "sweep", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}}}}
				resp := request[*kmsg.FetchResponse](t, c, r, v)
				p := resp.Topics[0].Partitions[0]
				if resp.ErrorCode != 0 || resp.SessionID != 0 || p.ErrorCode != 0 || p.HighWatermark != next || len(p.RecordBatches) < len(oneBatch) {
					t.Fatalf("%s: %v/%v hwm %d bytes %d", name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
				}
			case kmsg.ListOffsets: // latest; from v1 also a timestamp lookup.
				r := kmsg.NewPtrListOffsetsRequest()
				r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "sweep", Partitions: []kmsg.ListOffsetsRequestTopicPartition{
					{Partition: 0, Timestamp: -1, MaxNumOffsets: 1, CurrentLeaderEpoch: -1},
					{Partition: 0, Timestamp: t0.Add(1500 * time.Millisecond).UnixMilli(), MaxNumOffsets: 1, CurrentLeaderEpoch: -1},
				}}}
				ps := request[*kmsg.ListOffsetsResponse](t, c, r, v).Topics[0].Partitions
				latest, byTime := ps[0].Offset, ps[1].Offset
				if v == 0 {
					latest, byTime = ps[0].OldStyleOffsets[0], ps[1].OldStyleOffsets[0]
				}
				if ps[0].ErrorCode != 0 || latest != next || ps[1].ErrorCode != 0 || byTime != 2 {
					t.Fatalf("%s: latest %d (want %d), at t0+1.5s %d (want 2): %v", name, latest, next, byTime, kerr.ErrorForCode(ps[1].ErrorCode))
				}
			case kmsg.Metadata:
				r := kmsg.NewPtrMetadataRequest()
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("sweep")}}
				m := request[*kmsg.MetadataResponse](t, c, r, v)
				if len(m.Brokers) != 1 || m.Brokers[0].Port == 0 || len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || m.Topics[0].Partitions[0].Leader != 1 {
					t.Fatalf("%s: %+v", name, m)
				}
				if v >= 1 && m.ControllerID != 1 {
					t.Fatalf("%s: controller %d", name, m.ControllerID)
				}
			case kmsg.InitProducerID: // null transactional id: a new producer id each time, epoch 0
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionTimeoutMillis = 60000
				resp := request[*kmsg.InitProducerIDResponse](t, c, r, v)
				if resp.ErrorCode != 0 || resp.ProducerID != int64(v) || resp.ProducerEpoch != 0 {
					t.Fatalf("%s: error %d id %d epoch %d, want id %d epoch 0", name, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, v)
				}
			case kmsg.ApiVersions:
				r := kmsg.NewPtrApiVersionsRequest()
				r.ClientSoftwareName, r.ClientSoftwareVersion = "sweep", "1.0"
				if resp := request[*kmsg.ApiVersionsResponse](t, c, r, v); resp.ErrorCode != 0 || len(resp.ApiKeys) != len(av.ApiKeys) {
					t.Fatalf("%s: %+v", name, resp)
				}
			case kmsg.ConsumerGroupHeartbeat: // KIP-848: refused, as by a ZooKeeper-mode Kafka
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Group, r.RebalanceTimeoutMillis = "sweep-848", 30000
				if resp := request[*kmsg.ConsumerGroupHeartbeatResponse](t, c, r, v); resp.ErrorCode != kerr.UnsupportedVersion.Code {
					t.Fatalf("%s: error %d, want UNSUPPORTED_VERSION", name, resp.ErrorCode)
				}
			case kmsg.ConsumerGroupDescribe: // KIP-848: every group refused
				r := kmsg.NewPtrConsumerGroupDescribeRequest()
				r.Groups = []string{"sweep-848", "sweep-g"}
				resp := request[*kmsg.ConsumerGroupDescribeResponse](t, c, r, v)
				if len(resp.Groups) != 2 || resp.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code || resp.Groups[1].Group != "sweep-g" || resp.Groups[1].ErrorCode != kerr.UnsupportedVersion.Code {
					t.Fatalf("%s: %+v", name, resp.Groups)
				}
			case kmsg.DeleteRecords: // before v: the log start offset moves to v
				r := kmsg.NewPtrDeleteRecordsRequest()
				r.TimeoutMillis = 5000
				r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "sweep", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: int64(v)}}}}
				if p := request[*kmsg.DeleteRecordsResponse](t, c, r, v).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != int64(v) {
					t.Fatalf("%s: %v low watermark %d, want %d", name, kerr.ErrorForCode(p.ErrorCode), p.LowWatermark, v)
				}
			case kmsg.OffsetForLeaderEpoch: // epoch 0, the current one: it ends at the log end offset
				r := kmsg.NewPtrOffsetForLeaderEpochRequest()
				r.ReplicaID = -1
				r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "sweep", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: 0, LeaderEpoch: 0}}}}
				p := request[*kmsg.OffsetForLeaderEpochResponse](t, c, r, v).Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.EndOffset != next || (v >= 1 && p.LeaderEpoch != 0) {
					t.Fatalf("%s: %v epoch %d end %d, want epoch 0 end %d", name, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset, next)
				}
			case kmsg.DescribeConfigs: // the topic's 36 configs
				r := kmsg.NewPtrDescribeConfigsRequest()
				r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "sweep"}}
				if res := request[*kmsg.DescribeConfigsResponse](t, c, r, v).Resources[0]; res.ErrorCode != 0 || len(res.Configs) != 36 {
					t.Fatalf("%s: %v, %d configs", name, kerr.ErrorForCode(res.ErrorCode), len(res.Configs))
				}
			case kmsg.AlterConfigs: // the topic's whole config replaced
				r := kmsg.NewPtrAlterConfigsRequest()
				r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "sweep", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.bytes", Value: kmsg.StringPtr("-1")}}}}
				if res := request[*kmsg.AlterConfigsResponse](t, c, r, v).Resources[0]; res.ErrorCode != 0 {
					t.Fatalf("%s: %v %v", name, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
				}
			case kmsg.IncrementalAlterConfigs: // one SET
				r := kmsg.NewPtrIncrementalAlterConfigsRequest()
				r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "sweep", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.bytes", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("-1")}}}}
				if res := request[*kmsg.IncrementalAlterConfigsResponse](t, c, r, v).Resources[0]; res.ErrorCode != 0 {
					t.Fatalf("%s: %v %v", name, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
				}
			case kmsg.DescribeCluster: // this broker, the controller, the cluster id
				r := kmsg.NewPtrDescribeClusterRequest()
				r.EndpointType = 1
				if resp := request[*kmsg.DescribeClusterResponse](t, c, r, v); resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ControllerID != 1 || resp.ClusterID == "" {
					t.Fatalf("%s: %+v", name, resp)
				}
			case kmsg.ControlledShutdown: // the only broker: nothing to move, nothing remaining
				r := kmsg.NewPtrControlledShutdownRequest()
				r.BrokerID = 1
				if resp := request[*kmsg.ControlledShutdownResponse](t, c, r, v); resp.ErrorCode != 0 || len(resp.PartitionsRemaining) != 0 {
					t.Fatalf("%s: %v, %d remaining", name, kerr.ErrorForCode(resp.ErrorCode), len(resp.PartitionsRemaining))
				}
			case kmsg.AlterPartition: // the leader's own ISR, unchanged: accepted, the committed state answered
				mp := metadata(t, c, "sweep").Topics[0].Partitions[0]
				r := kmsg.NewPtrAlterPartitionRequest()
				r.BrokerID, r.BrokerEpoch = 1, -1
				r.Topics = []kmsg.AlterPartitionRequestTopic{{Topic: "sweep", Partitions: []kmsg.AlterPartitionRequestTopicPartition{{Partition: 0, LeaderEpoch: mp.LeaderEpoch, NewISR: []int32{1}, PartitionEpoch: 0}}}}
				resp := request[*kmsg.AlterPartitionResponse](t, c, r, v)
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].LeaderID != 1 || !slices.Equal(resp.Topics[0].Partitions[0].ISR, []int32{1}) {
					t.Fatalf("%s: %+v", name, resp)
				}
			case kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions: // create, add partitions, then delete, at version v each
				if k.ApiKey != 19 {
					continue // exercised below with the topic CreateTopics made
				}
			case kmsg.LeaderAndISR, kmsg.UpdateMetadata, kmsg.StopReplica:
				controlSweep(t, c, k.ApiKey, v, name, "sweep", readControllerEpoch(t, zc), metadata(t, c).Brokers[0])
			default:
				if !groupSweep(t, c, k.ApiKey, v, name) {
					t.Fatalf("advertised API %s has no sweep case", name)
				}
			}
		}
	}
	// Admin APIs: every version of each, on its own topic.
	maxOf := map[int16]int16{}
	for _, k := range av.ApiKeys {
		maxOf[k.ApiKey] = k.MaxVersion
	}
	for v := int16(0); v <= max(maxOf[19], maxOf[20], maxOf[37]); v++ {
		topic := fmt.Sprintf("admin-v%d", v)
		cv, pv, dv := min(v, maxOf[19]), min(v, maxOf[37]), min(v, maxOf[20])
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.TimeoutMillis = 10000
		ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}
		if got := request[*kmsg.CreateTopicsResponse](t, c, ct, cv).Topics[0].ErrorCode; got != 0 {
			t.Fatalf("CreateTopics v%d: %v", cv, kerr.ErrorForCode(got))
		}
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.TimeoutMillis = 10000
		cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: 2}}
		if got := request[*kmsg.CreatePartitionsResponse](t, c, cp, pv).Topics[0].ErrorCode; got != 0 {
			t.Fatalf("CreatePartitions v%d: %v", pv, kerr.ErrorForCode(got))
		}
		if n, _ := tb.b.Partitions(topic); n != 2 {
			t.Fatalf("CreatePartitions v%d: %d partitions", pv, n)
		}
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TimeoutMillis = 10000
		dt.TopicNames = []string{topic}
		dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		if got := request[*kmsg.DeleteTopicsResponse](t, c, dt, dv).Topics[0].ErrorCode; got != 0 {
			t.Fatalf("DeleteTopics v%d: %v", dv, kerr.ErrorForCode(got))
		}
		if _, ok := tb.b.Partitions(topic); ok {
			t.Fatalf("DeleteTopics v%d: topic still known", dv)
		}
	}

	// acks=0: no response; the next request on the connection is answered normally.
	r := kmsg.NewPtrProduceRequest()
	r.Acks, r.TimeoutMillis = 0, 5000
	r.Topics = []kmsg.ProduceRequestTopic{{Topic: "sweep", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: oneBatch}}}}
	r.SetVersion(7)
	if resp, err := c.Request(ctx, r); err != nil || resp != nil {
		t.Fatalf("acks=0 produce: %v %v", resp, err)
	}
	next++
	testutil.WaitFor(t, 5*time.Second, "the acks=0 batch appended", func() bool { return batch.HighWatermark() == next })
	if m := metadata(t, c, "sweep"); m.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata after acks=0: %v", kerr.ErrorForCode(m.Topics[0].ErrorCode))
	}
}
