package broker

import (
	"fmt"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerConfigNames lists, sorted, the broker configs this broker knows and DescribeConfigs lists for
// a BROKER resource naming it: its server.properties keys and the topic defaults' broker synonyms
// (Kafka 3.9 lists every KafkaConfig key; these are the ones this broker has).
func BrokerConfigNames() []string { return sortedKeys(brokerKeys) }

// listenerReconfigurable are the keys Kafka 3.9 reconfigures per broker
// (DynamicListenerConfig.ReconfigurableConfigs), so DescribeConfigs answers them read_only=false;
// this broker cannot change its listener while it runs, and AlterConfigs refuses them as read-only.
var listenerReconfigurable = map[string]bool{"listeners": true, "advertised.listeners": true}

// rootLogger is log4j's root logger name (Log4jController.ROOT_LOGGER).
const rootLogger = "root"

// log4jLevel names a logrus level as log4j does.
func log4jLevel(l logrus.Level) string {
	switch l {
	case logrus.TraceLevel:
		return "TRACE"
	case logrus.DebugLevel:
		return "DEBUG"
	case logrus.InfoLevel:
		return "INFO"
	case logrus.WarnLevel:
		return "WARN"
	case logrus.ErrorLevel:
		return "ERROR"
	default:
		return "FATAL"
	}
}

// describeBrokerLoggers is ConfigHelper.describeConfigs for a BROKER_LOGGER resource (type 8): the
// broker's loggers and their levels (Log4jController.loggers), each with source
// DYNAMIC_BROKER_LOGGER_CONFIG, not read-only, no synonyms, documentation ""; names restricts them. This broker has one
// logger, the root one ("root"), at the level of its logrus logger (named as log4j names levels);
// Kafka also lists every log4j logger its classes created. Errors (INVALID_REQUEST, Kafka's
// messages): an empty name, a name that is not an integer, another broker's id.
func (b *Broker) describeBrokerLoggers(r kmsg.DescribeConfigsRequestResource, rr *kmsg.DescribeConfigsResponseResource) {
	fail := func(msg string) {
		rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
	}
	if r.ResourceName == "" {
		fail("Broker id must not be empty")
		return
	}
	id, err := strconv.ParseInt(r.ResourceName, 10, 32)
	if err != nil {
		fail("Broker id must be an integer, but it is: " + r.ResourceName)
		return
	}
	if int32(id) != b.id {
		fail(fmt.Sprintf("Unexpected broker id, expected %d but received %s", b.id, r.ResourceName))
		return
	}
	loggers := map[string]string{rootLogger: log4jLevel(b.log.Logger.GetLevel())}
	for _, name := range sortedKeys(loggers) {
		if !wanted(r.ConfigNames, name) {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value = name, kmsg.StringPtr(loggers[name])
		e.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		e.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
		e.Documentation = kmsg.StringPtr("") // the schema's default: ConfigHelper sets none (v3+)
		rr.Configs = append(rr.Configs, e)
	}
}
