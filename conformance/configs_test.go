package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The config and admin scripts: DescribeConfigs, IncrementalAlterConfigs, AlterConfigs, DescribeCluster
// and DeleteRecords at every version both brokers advertise, with their error paths. Documentation
// strings are not asked for (this broker's are its own); a broker's own configs are compared by name
// in brokerconfigs_test.go (this broker lists only the keys it knows: the fidelity table of docs/reference/fidelity.md).

func createWithConfigs(topic string, configs map[string]string) *kmsg.CreateTopicsRequest {
	r := createTopicsReq(7, false, newTopic{topic, 1, 1})
	for _, k := range sortedKeysOf(configs) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		r.Topics[0].Configs = append(r.Topics[0].Configs, c)
	}
	return r
}

func sortedKeysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out { // a tiny insertion sort keeps the imports short
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func describeConfigsReq(v int16, synonyms bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	r := kmsg.NewPtrDescribeConfigsRequest()
	r.SetVersion(v)
	r.IncludeSynonyms = synonyms
	r.Resources = resources
	return r
}

func topicResource(name string, keys ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, name, keys
	return r
}

func incrementalReq(v int16, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.SetVersion(v)
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = typ, name, ops
	r.Resources = append(r.Resources, res)
	return r
}

func iop(name string, op kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, kmsg.StringPtr(value)
	return c
}

func alterConfigsReq(v int16, topic string, configs map[string]string) *kmsg.AlterConfigsRequest {
	r := kmsg.NewPtrAlterConfigsRequest()
	r.SetVersion(v)
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for _, k := range sortedKeysOf(configs) {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		res.Configs = append(res.Configs, c)
	}
	r.Resources = append(r.Resources, res)
	return r
}

func deleteRecordsReq(v int16, topic string, offset int64) *kmsg.DeleteRecordsRequest {
	r := kmsg.NewPtrDeleteRecordsRequest()
	r.SetVersion(v)
	r.TimeoutMillis = 30000
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Offset = offset
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// ledBarrier waits until Metadata names a leader for the topic's partition 0.
func ledBarrier(topic string) step {
	return step{name: "led", req: fixedReq(metadataReq(7, false, false, topic)), until: func(r kmsg.Response) bool {
		m := r.(*kmsg.MetadataResponse)
		return len(m.Topics) == 1 && m.Topics[0].ErrorCode == 0 && len(m.Topics[0].Partitions) > 0 && m.Topics[0].Partitions[0].Leader >= 0
	}}
}

func configCases(v versions) []kcase {
	var cases []kcase
	for _, dv := range v.of(kmsg.DescribeConfigs) {
		topic := fmt.Sprintf("dt-cfg-v%d", dv)
		cases = append(cases, kcase{name: fmt.Sprintf("DescribeConfigs v%d", dv), steps: []step{
			{name: "create-with-configs", req: fixedReq(createWithConfigs(topic, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "2000"}))},
			{name: "create-bad-value", req: fixedReq(createWithConfigs(topic+"-bad", map[string]string{"retention.ms": "abc"}))},
			{name: "create-unknown-key", req: fixedReq(createWithConfigs(topic+"-unk", map[string]string{"no.such.config": "1"}))},
			ledBarrier(topic),
			{name: "describe", req: fixedReq(describeConfigsReq(dv, false, topicResource(topic)))},
			{name: "describe-synonyms", req: fixedReq(describeConfigsReq(dv, true, topicResource(topic)))},
			{name: "describe-some-keys", req: fixedReq(describeConfigsReq(dv, true, topicResource(topic, "cleanup.policy", "retention.ms", "no.such.config")))},
			{name: "describe-unknown-topic", req: fixedReq(describeConfigsReq(dv, false, topicResource("dt-never")))},
			{name: "describe-invalid-topic", req: fixedReq(describeConfigsReq(dv, false, topicResource("bad name")))},
			{name: "describe-broker-default", req: fixedReq(describeConfigsReq(dv, true, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""}))},
			{name: "describe-other-broker", req: fixedReq(describeConfigsReq(dv, false, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "77"}))},
		}})
	}
	for _, iv := range v.of(kmsg.IncrementalAlterConfigs) {
		topic := fmt.Sprintf("dt-iac-v%d", iv)
		set, del, app, sub := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
		tt, bt := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
		cases = append(cases, kcase{name: fmt.Sprintf("IncrementalAlterConfigs v%d", iv), steps: []step{
			{name: "create", req: fixedReq(createWithConfigs(topic, map[string]string{"retention.ms": "100000"}))},
			ledBarrier(topic),
			{name: "set", req: fixedReq(incrementalReq(iv, tt, topic, iop("retention.bytes", set, "1000000"), iop("retention.ms", del, "")))},
			{name: "append", req: fixedReq(incrementalReq(iv, tt, topic, iop("cleanup.policy", app, "compact")))},
			{name: "subtract", req: fixedReq(incrementalReq(iv, tt, topic, iop("cleanup.policy", sub, "delete")))},
			{name: "described", req: fixedReq(describeConfigsReq(4, true, topicResource(topic, "cleanup.policy", "retention.ms", "retention.bytes")))},
			{name: "append-not-a-list", req: fixedReq(incrementalReq(iv, tt, topic, iop("retention.ms", app, "5")))},
			{name: "bad-value", req: fixedReq(incrementalReq(iv, tt, topic, iop("min.insync.replicas", set, "0")))},
			{name: "unknown-key", req: fixedReq(incrementalReq(iv, tt, topic, iop("no.such.config", set, "1")))},
			{name: "unknown-topic", req: fixedReq(incrementalReq(iv, tt, "dt-never", iop("retention.ms", set, "1")))},
			{name: "duplicate-key", req: fixedReq(incrementalReq(iv, tt, topic, iop("retention.ms", set, "1"), iop("retention.ms", set, "2")))},
			{name: "broker-not-dynamic", req: fixedReq(incrementalReq(iv, bt, "", iop("log.retention.hours", set, "1")))},
			{name: "broker-other-id", req: fixedReq(incrementalReq(iv, bt, "77", iop("log.retention.ms", set, "1")))},
			{name: "broker-bad-value", req: fixedReq(incrementalReq(iv, bt, "", iop("log.retention.ms", set, "abc")))},
		}})
	}
	for _, av := range v.of(kmsg.AlterConfigs) {
		topic := fmt.Sprintf("dt-ac-v%d", av)
		cases = append(cases, kcase{name: fmt.Sprintf("AlterConfigs v%d", av), steps: []step{
			{name: "create", req: fixedReq(createWithConfigs(topic, map[string]string{"retention.ms": "100000"}))},
			ledBarrier(topic),
			{name: "replace", req: fixedReq(alterConfigsReq(av, topic, map[string]string{"segment.ms": "3600000"}))},
			{name: "described", req: fixedReq(describeConfigsReq(4, true, topicResource(topic, "retention.ms", "segment.ms")))},
			{name: "bad-value", req: fixedReq(alterConfigsReq(av, topic, map[string]string{"segment.ms": "0"}))},
			{name: "unknown-topic", req: fixedReq(alterConfigsReq(av, "dt-never", map[string]string{"segment.ms": "1"}))},
		}})
	}
	for _, cv := range v.of(kmsg.DescribeCluster) {
		steps := []step{{name: "describe", req: fixedReq(func() kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.SetVersion(cv)
			r.EndpointType = 1
			return r
		}())}, {name: "with-operations", req: fixedReq(func() kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.SetVersion(cv)
			r.EndpointType, r.IncludeClusterAuthorizedOperations = 1, true
			return r
		}())}}
		if cv >= 1 {
			for _, et := range []int8{2, 9} {
				steps = append(steps, step{name: fmt.Sprintf("endpoint-type-%d", et), req: fixedReq(func() kmsg.Request {
					r := kmsg.NewPtrDescribeClusterRequest()
					r.SetVersion(cv)
					r.EndpointType = et
					return r
				}())})
			}
		}
		cases = append(cases, kcase{name: fmt.Sprintf("DescribeCluster v%d", cv), steps: steps})
	}
	for _, rv := range v.of(kmsg.DeleteRecords) {
		topic := fmt.Sprintf("dt-dr-v%d", rv)
		cases = append(cases, kcase{name: fmt.Sprintf("DeleteRecords v%d", rv), steps: []step{
			{name: "create", req: fixedReq(createTopicsReq(7, false, newTopic{topic, 1, 1}))},
			ledBarrier(topic),
			{name: "produce", req: fixedReq(produceReq(9, -1, topic, 0, records(9, true, "a", "b", "c", "d")))},
			{name: "delete-before-2", req: fixedReq(deleteRecordsReq(rv, topic, 2))},
			{name: "earliest", req: fixedReq(listOffsetsReq(7, topic, 0, -2))},
			{name: "fetch-below", req: fixedReq(fetchReq(12, topic, 0, 1, 1<<20))},
			{name: "delete-lower", req: fixedReq(deleteRecordsReq(rv, topic, 1))},
			{name: "delete-above-high-watermark", req: fixedReq(deleteRecordsReq(rv, topic, 99))},
			{name: "delete-to-high-watermark", req: fixedReq(deleteRecordsReq(rv, topic, -1))},
			{name: "delete-unknown-topic", req: fixedReq(deleteRecordsReq(rv, "dt-never", 0))},
			{name: "delete-internal-topic", req: fixedReq(deleteRecordsReq(rv, "__consumer_offsets", 0))},
		}})
	}
	return cases
}
