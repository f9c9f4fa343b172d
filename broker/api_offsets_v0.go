package broker

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v0 and OffsetFetch v0 are served by the broker from ZooKeeper, not by the group
// coordinator, as Kafka 3.9 in ZooKeeper mode does (KafkaApis.commitOffsetsToZookeeper and
// handleOffsetFetchRequestFromZookeeper; removed in 4.0 by KIP-896): the offset is the decimal text
// of /consumers/<group>/offsets/<topic>/<partition>, the znode 0.8's ZookeeperConsumerConnector
// writes, so an 0.8 client committing through the broker and one committing to ZooKeeper itself see
// each other's offsets. The metadata is not stored.

// consumerOffsetPath is ZkUtils/KafkaZkClient's consumer offset path.
func consumerOffsetPath(group, topic string, p int32) string {
	return consumersPath + "/" + group + "/offsets/" + topic + "/" + strconv.Itoa(int(p))
}

// handleOffsetCommitV0: a partition of an unknown topic, or not in the topic, gets
// UNKNOWN_TOPIC_OR_PARTITION; metadata longer than offset.metadata.max.bytes
// OFFSET_METADATA_TOO_LARGE; a ZooKeeper failure UNKNOWN_SERVER_ERROR. There is no group membership
// check: v0 carries no generation or member id.
func (b *Broker) handleOffsetCommitV0(r *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = r.Version
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		n, known := b.Partitions(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !known || p.Partition < 0 || p.Partition >= n:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > int(b.cfg.OffsetMetadataMaxBytes):
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				if err := b.setConsumerOffset(r.Group, t.Topic, p.Partition, p.Offset); err != nil {
					b.log.WithError(err).WithField("group", r.Group).Warn("OffsetCommit v0: writing the offset to ZooKeeper")
					rp.ErrorCode = kerr.UnknownServerError.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// setConsumerOffset is KafkaZkClient.setOrCreateConsumerOffset: set the node, creating it and its
// parents when absent.
func (b *Broker) setConsumerOffset(group, topic string, p int32, offset int64) error {
	path := consumerOffsetPath(group, topic, p)
	data := []byte(strconv.FormatInt(offset, 10))
	_, err := b.zk.Set(b.zp(path), data, -1)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if err := b.ensurePath(path[:strings.LastIndex(path, "/")]); err != nil {
		return err
	}
	_, err = b.zk.Create(b.zp(path), data, 0, b.acl())
	if errors.Is(err, zk.ErrNodeExists) { // another committer created it in between
		_, err = b.zk.Set(b.zp(path), data, -1)
	}
	return err
}

// handleOffsetFetchV0: the offset in ZooKeeper with metadata ""; a partition with no offset there, or
// not in the topic, is answered as Kafka's OffsetFetchResponse.UNKNOWN_PARTITION (offset -1, error
// UNKNOWN_TOPIC_OR_PARTITION); a node that is not a number, or a ZooKeeper failure,
// UNKNOWN_SERVER_ERROR with offset -1.
func (b *Broker) handleOffsetFetchV0(r *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = r.Version
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		n, known := b.Partitions(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Metadata = p, -1, kmsg.StringPtr("")
			if !known || p < 0 || p >= n {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			data, _, err := b.zk.Get(b.zp(consumerOffsetPath(r.Group, t.Topic, p)))
			switch {
			case errors.Is(err, zk.ErrNoNode):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				rp.ErrorCode = kerr.UnknownServerError.Code
			default:
				off, perr := strconv.ParseInt(string(data), 10, 64)
				if perr != nil {
					rp.ErrorCode = kerr.UnknownServerError.Code
					break
				}
				rp.Offset = off
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
