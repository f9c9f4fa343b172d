package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleApiVersions answers the API versions this broker implements (KafkaApis.handleApiVersionsRequest).
// v3 requests carry the client software name and version, validated as Kafka does.
func (b *Broker) handleApiVersions(req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!validSoftware(req.ClientSoftwareName) || !validSoftware(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = b.advertised()
	resp.FinalizedFeaturesEpoch = b.featureEpoch.Load() - 1 // -1 until /feature was read
	return resp
}

// validSoftware is ApiVersionsRequest.isValid's pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?.
func validSoftware(s string) bool {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// validateTopicName is org.apache.kafka.common.internals.Topic.validate: 1-249 characters of
// [a-zA-Z0-9._-], not "." or "..". The error's message is InvalidTopicException's in 3.9
// ("Topic name is invalid: " and Topic.detectInvalidTopic's reason).
func validateTopicName(name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == "." || name == "..":
		reason = "'" + name + "' is not allowed"
	case len(name) > 249:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length 249", name)
	}
	for i := 0; reason == "" && i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			reason = "'" + name + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	if reason != "" {
		return errors.New("Topic name is invalid: " + reason)
	}
	return nil
}

// handleMetadata answers brokers, controller and topics from the ZooKeeper view
// (KafkaApis.handleTopicMetadataRequest with ZkMetadataCache). A partition without a live leader is
// LEADER_NOT_AVAILABLE with leader -1. A named unknown topic is created when auto.create.topics.enable
// is set and the request allows it (v4+ AllowAutoTopicCreation), answered LEADER_NOT_AVAILABLE meanwhile.
func (b *Broker) handleMetadata(ctx context.Context, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	v := b.view.Load()
	for _, n := range v.sortedBrokers() {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = n.ID, n.Host, n.Port
		resp.Brokers = append(resp.Brokers, mb)
	}
	resp.ControllerID = v.controller
	resp.ClusterID = b.clusterID.Load()

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	var names []string
	if all {
		names = v.sortedTopics()
	}
	for _, t := range req.Topics {
		if t.Topic == nil {
			// v12 lets a client name a topic by id; topics have no ids here (0.8.2 layout).
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = t.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		names = append(names, *t.Topic)
	}
	autoCreate := b.cfg.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation)
	live := v.liveSet()
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.IsInternal = name == OffsetsTopic
		tv, ok := v.topics[name]
		if !ok {
			mt.ErrorCode = b.autoCreate(ctx, v, name, autoCreate)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		for _, p := range sortedPartitions(tv.replicas) {
			resp := kmsg.NewMetadataResponseTopicPartition()
			resp.Partition = p
			resp.Replicas = append([]int32{}, tv.replicas[p]...)
			for _, r := range tv.replicas[p] {
				if !live[r] {
					resp.OfflineReplicas = append(resp.OfflineReplicas, r)
				}
			}
			st := tv.states[p]
			resp.ISR = append([]int32{}, st.ISR...)
			resp.LeaderEpoch = st.LeaderEpoch
			if !st.exists {
				resp.LeaderEpoch = -1
			}
			if st.exists && st.Leader >= 0 && live[st.Leader] {
				resp.Leader = st.Leader
			} else {
				resp.Leader = -1
				resp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			mt.Partitions = append(mt.Partitions, resp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// autoCreate is Metadata's topic auto-creation (AutoTopicCreationManager): the error code to answer
// for an unknown named topic.
func (b *Broker) autoCreate(ctx context.Context, v *clusterView, name string, allowed bool) int16 {
	if err := validateTopicName(name); err != nil {
		return kerr.InvalidTopicException.Code
	}
	if !allowed {
		return kerr.UnknownTopicOrPartition.Code
	}
	partitions, rf := b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor
	if name == OffsetsTopic {
		partitions, rf = b.cfg.OffsetsTopicNumPartitions, b.cfg.OffsetsTopicReplicationFactor
	}
	code, msg := b.createTopic(ctx, name, partitions, rf, nil, nil)
	switch code {
	case 0, kerr.TopicAlreadyExists.Code:
		b.log.WithField("topic", name).Info("auto-created topic")
		return kerr.LeaderNotAvailable.Code
	default:
		b.log.WithField("topic", name).Warnf("auto-creation failed: %s", msg)
		return code
	}
}

// collides reports an existing topic whose name equals name once '.' is read as '_'
// (Topic.hasCollision: both map to the same metric names).
func collides(v *clusterView, name string) string {
	norm := strings.ReplaceAll(name, ".", "_")
	for t := range v.topics {
		if t != name && strings.ReplaceAll(t, ".", "_") == norm {
			return t
		}
	}
	return ""
}
