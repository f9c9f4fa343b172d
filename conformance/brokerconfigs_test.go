package conformance

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/broker"
)

// The broker's own configs: DescribeConfigs of a BROKER resource naming the broker (id 1 in both
// labs), asked for every key this broker knows (broker.BrokerConfigNames; Kafka 3.9 would list all
// of KafkaConfig's when asked for none), with and without synonyms. Values that differ by
// construction between the two labs are blanked: addresses and ports (listeners,
// advertised.listeners), the ZooKeeper chroot (zookeeper.connect) and the log directories. And a
// BROKER_LOGGER resource (type 8): the root logger and the error paths (its level is blanked).

// varyingBrokerConfigs are the keys whose values (and their synonyms' values) are blanked.
var varyingBrokerConfigs = map[string]bool{"listeners": true, "advertised.listeners": true, "zookeeper.connect": true,
	"log.dirs": true, "log.dir": true}

func brokerResource(id string, keys ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, id, keys
	return r
}

// loggerResource is a BROKER_LOGGER resource (type 8): a broker's loggers and their levels.
func loggerResource(id string, loggers ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBrokerLogger, id, loggers
	return r
}

// brokerConfigsView is a DescribeConfigs answer with the varying values blanked.
func brokerConfigsView(resp kmsg.Response) any {
	r := resp.(*kmsg.DescribeConfigsResponse)
	blank := kmsg.StringPtr("<varies>")
	for i := range r.Resources {
		for j := range r.Resources[i].Configs {
			c := &r.Resources[i].Configs[j]
			// A logger's level is the lab's logging setup (log4j.properties for Kafka, the test's logrus
			// level here), not the broker's answer.
			if (varyingBrokerConfigs[c.Name] || r.Resources[i].ResourceType == kmsg.ConfigResourceTypeBrokerLogger) && c.Value != nil {
				c.Value = blank
			}
			for k := range c.ConfigSynonyms {
				if s := &c.ConfigSynonyms[k]; varyingBrokerConfigs[s.Name] && s.Value != nil {
					s.Value = blank
				}
			}
		}
	}
	return r
}

func brokerConfigCases(v versions) []kcase {
	var cases []kcase
	names := broker.BrokerConfigNames()
	for _, dv := range v.of(kmsg.DescribeConfigs) {
		cases = append(cases, kcase{name: fmt.Sprintf("DescribeConfigs v%d broker", dv), steps: []step{
			{name: "known-keys", req: fixedReq(describeConfigsReq(dv, false, brokerResource("1", names...))), view: brokerConfigsView},
			{name: "known-keys-synonyms", req: fixedReq(describeConfigsReq(dv, true, brokerResource("1", names...))), view: brokerConfigsView},
			{name: "logger-root", req: fixedReq(describeConfigsReq(dv, true, loggerResource("1", "root"))), view: brokerConfigsView},
			{name: "logger-empty-name", req: fixedReq(describeConfigsReq(dv, false, loggerResource("")))},
			{name: "logger-not-an-id", req: fixedReq(describeConfigsReq(dv, false, loggerResource("x")))},
			{name: "logger-other-broker", req: fixedReq(describeConfigsReq(dv, false, loggerResource("77")))},
		}})
	}
	return cases
}
