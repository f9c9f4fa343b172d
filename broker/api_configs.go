package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The config APIs as Kafka 3.9 serves them in ZooKeeper mode: DescribeConfigs (kafka.server.ConfigHelper),
// AlterConfigs and IncrementalAlterConfigs (ZkAdminManager, ConfigAdminManager.preprocess and
// prepareIncrementalConfigs), for topics and brokers.

// Config sources, as DescribeConfigsResponse.ConfigSource numbers them.
const (
	srcTopic          = int8(kmsg.ConfigSourceDynamicTopicConfig)         // 1
	srcDynamicBroker  = int8(kmsg.ConfigSourceDynamicBrokerConfig)        // 2
	srcDynamicDefault = int8(kmsg.ConfigSourceDynamicDefaultBrokerConfig) // 3
	srcStatic         = int8(kmsg.ConfigSourceStaticBrokerConfig)         // 4
	srcDefault        = int8(kmsg.ConfigSourceDefaultConfig)              // 5
)

// brokerKey is a broker config this broker knows: its ConfigDef type, Kafka 3.9's default (nil: null)
// and whether ZooKeeper-mode 3.9 can change it dynamically (DynamicBrokerConfig.AllDynamicConfigs).
type brokerKey struct {
	typ     cfgType
	def     *string
	dynamic bool
}

// brokerKeys: every server.properties key the broker parses (config.go) and the topic-default
// synonyms it keeps (logSynonymKeys). The dynamic ones are DynamicLogConfig.ReconfigurableConfigs (the
// first synonym of each topic config but log.message.format.version) and message.max.bytes.
var brokerKeys = func() map[string]brokerKey {
	m := map[string]brokerKey{
		"broker.id": {typeInt, str("-1"), false}, "listeners": {typeString, str("PLAINTEXT://:9092"), false},
		"advertised.listeners": {typeString, nil, false}, "zookeeper.connect": {typeString, nil, false},
		"zookeeper.session.timeout.ms": {typeInt, str("18000"), false}, "zookeeper.connection.timeout.ms": {typeInt, nil, false},
		"log.dir": {typeString, str("/tmp/kafka-logs"), false}, "log.dirs": {typeString, nil, false},
		"num.partitions": {typeInt, str("1"), false}, "default.replication.factor": {typeInt, str("1"), false},
		"auto.create.topics.enable": {typeBoolean, str("true"), false}, "delete.topic.enable": {typeBoolean, str("true"), false},
		"socket.request.max.bytes": {typeInt, str("104857600"), false}, "connections.max.idle.ms": {typeLong, str("600000"), false},
		"message.max.bytes": {typeInt, str("1048588"), true}, "fetch.max.bytes": {typeInt, str("57671680"), false},
		"log.segment.bytes": {typeInt, str("1073741824"), true}, "log.roll.hours": {typeInt, str("168"), false},
		"log.roll.ms": {typeLong, nil, true}, "log.retention.bytes": {typeLong, str("-1"), true},
		"log.retention.hours": {typeInt, str("168"), false}, "log.retention.minutes": {typeInt, nil, false},
		"log.retention.ms": {typeLong, nil, true}, "log.retention.check.interval.ms": {typeLong, str("300000"), false},
		"log.flush.interval.messages": {typeLong, str(maxLong), true}, "log.index.interval.bytes": {typeInt, str("4096"), true},
		"group.min.session.timeout.ms": {typeInt, str("6000"), false}, "group.max.session.timeout.ms": {typeInt, str("1800000"), false},
		"group.initial.rebalance.delay.ms": {typeInt, str("3000"), false}, "group.max.size": {typeInt, str("2147483647"), false},
		"offsets.topic.num.partitions": {typeInt, str("50"), false}, "offsets.topic.replication.factor": {typeShort, str("3"), false},
		"offsets.topic.segment.bytes": {typeInt, str("104857600"), false}, "offsets.retention.minutes": {typeInt, str("10080"), false},
		"offsets.retention.check.interval.ms": {typeLong, str("600000"), false}, "offsets.commit.timeout.ms": {typeInt, str("5000"), false},
		"offsets.load.buffer.size": {typeInt, str("5242880"), false}, "offset.metadata.max.bytes": {typeInt, str("4096"), false},
		"log.roll.jitter.hours": {typeInt, str("0"), false}, "log.flush.scheduler.interval.ms": {typeLong, str(maxLong), false},
		"log.roll.jitter.ms": {typeLong, nil, true}, "log.flush.interval.ms": {typeLong, nil, true},
	}
	for _, k := range logSynonymKeys {
		if _, ok := m[k]; ok {
			continue
		}
		sk := synonymKey(k)
		var def *string
		for i := range topicConfigKeys {
			if topicConfigKeys[i].synonyms != nil && topicConfigKeys[i].synonyms[0].name == k {
				def = topicConfigKeys[i].def
			}
		}
		m[k] = brokerKey{sk.typ, def, k != "log.message.format.version"}
	}
	return m
}()

// configSynonyms is ConfigHelper.configSynonyms: the values of names (one setting's broker keys) from
// the dynamic per-broker config, the dynamic cluster default, server.properties and Kafka's defaults,
// in that order, dropping those before the first entry named name.
func (b *Broker) configSynonyms(name string, names []string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	d := b.dynConfigs()
	static := b.cfg.staticProps()
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(m func(string) (string, bool), src int8) {
		for _, n := range names {
			if v, ok := m(n); ok {
				s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				s.Name, s.Value, s.Source = n, kmsg.StringPtr(v), kmsg.ConfigSource(src)
				out = append(out, s)
			}
		}
	}
	lookup := func(mm map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) { v, ok := mm[n]; return v, ok }
	}
	add(lookup(d.perBroker), srcDynamicBroker)
	add(lookup(d.clusterDefault), srcDynamicDefault)
	add(lookup(static), srcStatic)
	add(func(n string) (string, bool) {
		if k, ok := brokerKeys[n]; ok && k.def != nil {
			return *k.def, true
		}
		return "", false
	}, srcDefault)
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	return out
}

// topicConfigEntry is ConfigHelper.createTopicConfigEntry: the value, its source (the topic's own
// override, else the first broker synonym that sets it), synonyms and documentation on request.
func (b *Broker) topicConfigEntry(lc *logConfig, name string, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	k := topicConfigIndex[name]
	value := lc.values[name]
	var all []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if len(k.synonyms) > 0 {
		s0 := k.synonyms[0].name
		all = b.configSynonyms(s0, brokerConfigSynonyms(s0))
	}
	if _, ok := lc.overrides[name]; ok {
		s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		s.Name, s.Value, s.Source = name, kmsg.StringPtr(value), kmsg.ConfigSource(srcTopic)
		all = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{s}, all...)
	}
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value = name, kmsg.StringPtr(value)
	e.Source = kmsg.ConfigSource(srcDefault)
	if len(all) > 0 {
		e.Source = all[0].Source
	}
	if synonyms {
		e.ConfigSynonyms = all
	} else {
		e.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
	}
	e.ConfigType = kmsg.ConfigType(k.typ)
	if docs {
		e.Documentation = kmsg.StringPtr(k.doc)
	}
	return e
}

// brokerConfigEntry is ConfigHelper.createBrokerConfigEntry.
func (b *Broker) brokerConfigEntry(name string, value *string, perBroker, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	k, known := brokerKeys[name]
	all := b.configSynonyms(name, brokerConfigSynonyms(name))
	if !perBroker {
		kept := all[:0]
		for _, s := range all {
			if int8(s.Source) == srcDynamicDefault {
				kept = append(kept, s)
			}
		}
		all = kept
	}
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value = name, value
	e.Source = kmsg.ConfigSource(srcDefault)
	if len(all) > 0 {
		e.Source = all[0].Source
	}
	e.ReadOnly = !known || !(k.dynamic || listenerReconfigurable[name])
	e.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
	if synonyms {
		e.ConfigSynonyms = all
	}
	e.ConfigType = kmsg.ConfigType(k.typ)
	if docs {
		e.Documentation = kmsg.StringPtr("Broker config " + name + " (Kafka 3.9's server.properties key).")
	}
	return e
}

// topicOverrides is the topic's config as this broker's view holds it; ok=false for an unknown topic.
func (b *Broker) topicOverrides(topic string) (map[string]string, bool) {
	tv, ok := b.view.Load().topics[topic]
	if !ok {
		return nil, false
	}
	return tv.configs, true
}

func wanted(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	return contains(names, name)
}

// resourceString is ConfigResource.toString.
func resourceString(t kmsg.ConfigResourceType, name string) string {
	typ := map[kmsg.ConfigResourceType]string{kmsg.ConfigResourceTypeTopic: "TOPIC", kmsg.ConfigResourceTypeBroker: "BROKER", kmsg.ConfigResourceTypeBrokerLogger: "BROKER_LOGGER"}[t]
	if typ == "" {
		typ = "UNKNOWN"
	}
	return "ConfigResource(type=" + typ + ", name='" + name + "')"
}

// handleDescribeConfigs is ConfigHelper.describeConfigs. Topics: every LogConfig key; brokers: the
// keys this broker knows (brokerKeys; Kafka lists all of KafkaConfig's), or for the empty name the
// dynamic cluster defaults alone. v0's IsDefault stays false, as Kafka leaves it.
func (b *Broker) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		rr.ErrorMessage = kmsg.StringPtr("") // the schema's default, which ConfigHelper leaves but on its error path
		fail := func(code int16, msg string) {
			rr.ErrorCode = code
			if msg != "" {
				rr.ErrorMessage = kmsg.StringPtr(msg)
			}
		}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := validateTopicName(r.ResourceName); err != nil {
				fail(kerr.InvalidTopicException.Code, err.Error())
				break
			}
			overrides, ok := b.topicOverrides(r.ResourceName)
			if !ok {
				fail(kerr.UnknownTopicOrPartition.Code, "")
				break
			}
			// ZkConfigRepository reads the topic's config from ZooKeeper, not from what the broker applied.
			if b.zk != nil {
				if cur, err := b.readEntityConfig(topicConfigPath(r.ResourceName)); err == nil {
					overrides = cur
				}
			}
			lc := b.logConfigFor(r.ResourceName, overrides)
			for i := range topicConfigKeys {
				if n := topicConfigKeys[i].name; wanted(r.ConfigNames, n) {
					rr.Configs = append(rr.Configs, b.topicConfigEntry(lc, n, req.IncludeSynonyms, req.IncludeDocumentation))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName == "" {
				def := b.dynConfigs().clusterDefault
				for _, n := range sortedKeys(def) {
					if wanted(r.ConfigNames, n) {
						rr.Configs = append(rr.Configs, b.brokerConfigEntry(n, kmsg.StringPtr(def[n]), false, req.IncludeSynonyms, req.IncludeDocumentation))
					}
				}
				break
			}
			id, err := strconv.ParseInt(r.ResourceName, 10, 32)
			if err != nil {
				fail(kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: "+r.ResourceName)
				break
			}
			if int32(id) != b.id {
				fail(kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.id, r.ResourceName))
				break
			}
			props := b.brokerProps()
			names := sortedKeys(brokerKeys)
			for n := range props { // custom properties set dynamically
				if _, ok := brokerKeys[n]; !ok {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				if !wanted(r.ConfigNames, n) {
					continue
				}
				var v *string
				if pv, ok := props[n]; ok {
					v = kmsg.StringPtr(pv)
				} else if k := brokerKeys[n]; k.def != nil {
					v = kmsg.StringPtr(*k.def)
				}
				rr.Configs = append(rr.Configs, b.brokerConfigEntry(n, v, true, req.IncludeSynonyms, req.IncludeDocumentation))
			}
		case kmsg.ConfigResourceTypeBrokerLogger:
			b.describeBrokerLoggers(r, &rr) // api_brokerconfigs.go
		default:
			fail(kerr.InvalidRequest.Code, "Unsupported resource type: "+resourceTypeName(r.ResourceType))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func resourceTypeName(t kmsg.ConfigResourceType) string {
	s := resourceString(t, "")
	return strings.TrimSuffix(strings.TrimPrefix(s, "ConfigResource(type="), ", name='')")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// alterOp is one change of an alter request (AlterConfigOp).
type alterOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// prepareIncremental is ConfigAdminManager.prepareIncrementalConfigs: SET, DELETE, and APPEND or
// SUBTRACT on a LIST key (the current value, else the key's default, split on ","). An APPEND or
// SUBTRACT on a key the entity does not define fails as Kafka's map lookup does: UNKNOWN_SERVER_ERROR.
func prepareIncremental(ops []alterOp, props map[string]string, keyType func(string) (cfgType, *string, bool)) (int16, string) {
	for _, o := range ops {
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			props[o.name] = *o.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(props, o.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			typ, def, ok := keyType(o.name)
			if !ok {
				return kerr.UnknownServerError.Code, ""
			}
			verb := "append"
			if o.op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if typ != typeList {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, o.name)
			}
			cur, ok := props[o.name]
			if !ok && def != nil {
				cur, ok = *def, true
			}
			var old []string
			if ok && cur != "" {
				old = strings.Split(cur, ",")
			} else if o.op == kmsg.IncrementalAlterConfigOpSubtract {
				old = []string{""}
			}
			var next []string
			if o.op == kmsg.IncrementalAlterConfigOpAppend {
				next = old
				for _, v := range strings.Split(*o.value, ",") {
					if !contains(old, v) {
						next = append(next, v)
					}
				}
			} else {
				remove := map[string]int{}
				for _, v := range strings.Split(*o.value, ",") {
					remove[v]++
				}
				for _, v := range old { // Scala's List.diff: each removal takes one occurrence
					if remove[v] > 0 {
						remove[v]--
						continue
					}
					next = append(next, v)
				}
			}
			props[o.name] = strings.Join(next, ",")
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown operations type %d", o.op)
		}
	}
	return 0, ""
}

func topicKeyType(name string) (cfgType, *string, bool) {
	k := topicConfigIndex[name]
	if k == nil {
		return 0, nil, false
	}
	return k.typ, k.def, true
}

func brokerKeyType(name string) (cfgType, *string, bool) {
	k, ok := brokerKeys[name]
	return k.typ, k.def, ok
}

// alterTopic is ZkAdminManager.alterTopicConfigs with the entity's new full config: the topic must
// exist, the config validates (LogConfig.validate), then /config/topics/<t> is rewritten and a change
// notification created (AdminZkClient.changeTopicConfig).
func (b *Broker) alterTopic(topic string, props map[string]string, validateOnly bool) (int16, string) {
	if topic == "" {
		return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
	}
	if _, ok := b.topicOverrides(topic); !ok {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", topic)
	}
	if err := validateTopicConfigs(props); err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			return kerr.InvalidConfig.Code, "Invalid config value for resource " + resourceString(kmsg.ConfigResourceTypeTopic, topic) + ": " + err.Error()
		}
		return kerr.InvalidConfig.Code, err.Error()
	}
	if validateOnly {
		return 0, ""
	}
	if b.zk == nil {
		return kerr.UnknownServerError.Code, ""
	}
	if err := b.setOrCreateEntityConfig(topicConfigPath(topic), props); err != nil {
		return kerr.UnknownServerError.Code, ""
	}
	if err := b.notifyConfigChange("topics/" + topic); err != nil {
		return kerr.UnknownServerError.Code, ""
	}
	b.log.WithFields(logrus.Fields{"topic": topic, "config": props}).Info("updating topic with new configuration")
	return 0, ""
}

// validateBrokerProps is DynamicBrokerConfig.validateConfigs for ZooKeeper mode: keys that are not
// dynamic are refused ("Cannot update these configs dynamically: Set(...)"), values are parsed as their
// types; keys Kafka does not know are custom configs and accepted. A ConfigException's message.
func validateBrokerProps(props map[string]string) error {
	var static []string
	for n := range props {
		if k, ok := brokerKeys[n]; ok && !k.dynamic {
			static = append(static, n)
		}
	}
	if len(static) > 0 {
		sort.Strings(static)
		return &configError{bare: true, msg: "Cannot update these configs dynamically: Set(" + strings.Join(static, ", ") + ")"}
	}
	for _, n := range sortedKeys(props) {
		k, ok := brokerKeys[n]
		if !ok {
			continue
		}
		ck := synonymKey(n)
		if ck == nil {
			ck = &configKey{name: n, typ: k.typ}
		}
		if _, err := parseValue(ck, props[n]); err != nil {
			return err
		}
	}
	return nil
}

// brokerResource checks a BROKER resource name: "" (the cluster default) or this broker's id
// (ConfigAdminManager.validateResourceNameIsCurrentNodeId, ZkAdminManager.getBrokerId).
func (b *Broker) brokerResource(name string, node string) (entity string, code int16, msg string) {
	if name == "" {
		return brokerDefaultName, 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return "", kerr.InvalidRequest.Code, node + " id must be an integer, but it is: " + name
	}
	if int32(id) != b.id {
		return "", kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", b.id, name)
	}
	return name, 0, ""
}

// alterBroker writes a broker entity's new full dynamic config (AdminZkClient.changeBrokerConfig) and
// notifies every broker.
func (b *Broker) alterBroker(entity string, props map[string]string, validateOnly bool) (int16, string) {
	if validateOnly {
		return 0, ""
	}
	if b.zk == nil {
		return kerr.UnknownServerError.Code, ""
	}
	if err := b.setOrCreateEntityConfig(brokerConfigPath(entity), props); err != nil {
		return kerr.UnknownServerError.Code, ""
	}
	if err := b.notifyConfigChange("brokers/" + entity); err != nil {
		return kerr.UnknownServerError.Code, ""
	}
	b.log.WithFields(logrus.Fields{"entity": entity, "config": props}).Info("updating brokers with new configuration")
	return 0, ""
}

// handleIncrementalAlterConfigs is KafkaApis.handleIncrementalAlterConfigsRequest in ZooKeeper mode:
// ConfigAdminManager.preprocess (a resource listed twice, duplicate keys, null values, the broker
// checks, which answer INVALID_REQUEST), then ZkAdminManager.incrementalAlterConfigs on the entity's
// stored config.
func (b *Broker) handleIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[string]int{}
	for _, r := range req.Resources {
		seen[fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)]++
	}
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		code, msg := b.incrementalAlter(r, req.ValidateOnly, seen[fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)] > 1)
		rr.ErrorCode = code
		if code != 0 && msg != "" {
			rr.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (b *Broker) incrementalAlter(r kmsg.IncrementalAlterConfigsRequestResource, validateOnly, duplicate bool) (int16, string) {
	if duplicate {
		return kerr.InvalidRequest.Code, "Each resource must appear at most once."
	}
	names := map[string]bool{}
	var nulls []string
	ops := make([]alterOp, 0, len(r.Configs))
	for _, c := range r.Configs {
		if names[c.Name] {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		names[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
		ops = append(ops, alterOp{c.Name, c.Op, c.Value})
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if r.ResourceName == "" {
			return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
		}
		props := map[string]string{}
		if b.zk != nil {
			cur, err := b.readEntityConfig(topicConfigPath(r.ResourceName))
			if err != nil {
				return kerr.UnknownServerError.Code, ""
			}
			props = cur
		}
		if code, msg := prepareIncremental(ops, props, topicKeyType); code != 0 {
			return code, msg
		}
		return b.alterTopic(r.ResourceName, props, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		entity, code, msg := b.brokerResource(r.ResourceName, "Node")
		if code != 0 {
			return code, msg
		}
		props := map[string]string{}
		if b.zk != nil {
			cur, err := b.readEntityConfig(brokerConfigPath(entity))
			if err != nil {
				return kerr.UnknownServerError.Code, ""
			}
			props = cur
		}
		if code, msg := prepareIncremental(ops, props, brokerKeyType); code != 0 {
			return code, msg
		}
		if err := validateBrokerProps(props); err != nil {
			return kerr.InvalidRequest.Code, err.Error() // ConfigAdminManager: KAFKA-13609
		}
		return b.alterBroker(entity, props, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d", r.ResourceType)
}

// handleAlterConfigs is KafkaApis.handleAlterConfigsRequest in ZooKeeper mode (ZkAdminManager.alterConfigs):
// the resource's whole config is replaced by the request's entries (null values dropped).
func (b *Broker) handleAlterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[string]int{}
	for _, r := range req.Resources {
		seen[fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)]++
	}
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		props := map[string]string{}
		for _, c := range r.Configs {
			if c.Value != nil {
				props[c.Name] = *c.Value
			}
		}
		var code int16
		var msg string
		switch {
		case seen[fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)] > 1:
			code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
		case r.ResourceType == kmsg.ConfigResourceTypeTopic:
			code, msg = b.alterTopic(r.ResourceName, props, req.ValidateOnly)
		case r.ResourceType == kmsg.ConfigResourceTypeBroker:
			var entity string
			entity, code, msg = b.brokerResource(r.ResourceName, "Broker")
			if code == 0 {
				if err := validateBrokerProps(props); err != nil {
					code, msg = kerr.InvalidConfig.Code, "Invalid config value for resource "+resourceString(r.ResourceType, r.ResourceName)+": "+err.Error()
				} else {
					code, msg = b.alterBroker(entity, props, req.ValidateOnly)
				}
			}
		default:
			code, msg = kerr.InvalidRequest.Code, "AlterConfigs is only supported for topics and brokers, but resource type is "+resourceTypeName(r.ResourceType)
		}
		rr.ErrorCode = code
		if code != 0 && msg != "" {
			rr.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// clusterOperations is AuthHelper.authorizedOperations for the cluster without an authorizer: every
// operation AclEntry.supportedOperations(CLUSTER) lists (CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION
// 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12) as a bit field.
const clusterOperations = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

// handleDescribeCluster is KafkaApis.handleDescribeCluster (AuthHelper.computeDescribeClusterResponse):
// the live brokers, the controller (-1 when it is not among them), the cluster id, and the cluster's
// authorized operations on request (else Integer.MIN_VALUE, the schema default). v1 asks for an
// endpoint type: brokers (1) are served, controllers (2) MISMATCHED_ENDPOINT_TYPE, others
// UNSUPPORTED_ENDPOINT_TYPE (v0: INVALID_REQUEST for both).
func (b *Broker) handleDescribeCluster(ctx context.Context, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	et := int8(1)
	if req.Version >= 1 {
		et = req.EndpointType
	}
	switch et {
	case 1:
	case 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		if req.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.ErrorMessage = kmsg.StringPtr("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return resp
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		if req.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Unsupported endpoint type %d", et))
		return resp
	}
	resp.EndpointType = 1
	resp.ClusterAuthorizedOperations = -2147483648
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations
	}
	if id := b.clusterID.Load(); id != nil {
		resp.ClusterID = *id
	}
	v := b.view.Load()
	resp.ControllerID = -1
	for _, n := range v.sortedBrokers() {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = n.ID, n.Host, n.Port
		resp.Brokers = append(resp.Brokers, rb)
		if n.ID == v.controller {
			resp.ControllerID = n.ID
		}
	}
	_ = ctx
	return resp
}

// topicConfigsForCreate is ZkAdminManager.maybePopulateMetadataAndConfigs: a new topic's every config
// with its value and source (CreateTopics v5+, KIP-525), as DescribeConfigs without synonyms gives them.
func (b *Broker) topicConfigsForCreate(topic string, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	lc := b.logConfigFor(topic, overrides)
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(topicConfigKeys))
	for i := range topicConfigKeys {
		e := b.topicConfigEntry(lc, topicConfigKeys[i].name, false, false)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.Name, e.Value, int8(e.Source)
		out = append(out, c)
	}
	return out
}

var _ = maps.Clone[map[string]string]
