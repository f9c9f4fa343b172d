package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// Entity configs in ZooKeeper as Kafka 3.9's AdminZkClient and KafkaZkClient write them (ZkData.scala:
// ConfigEntityZNode, ConfigEntityChangeNotificationSequenceZNode):
//
//	/config/topics/<topic>                 persistent {"version":1,"config":{"<key>":"<value>",...}}
//	/config/brokers/<id> | <default>       persistent {"version":1,"config":{...}}   (dynamic broker configs)
//	/config/changes/config_change_<10 digits>  persistent sequential {"version":2,"entity_path":"topics/<topic>"}
//
// A topic's config node is written before its /brokers/topics node on creation (createTopicWithAssignment);
// an alter rewrites the node and then creates a change notification, which every broker watches
// (ZkConfigManager's ZkNodeChangeNotificationListener) to re-read the entity and apply it live.
const (
	configPath        = "/config"
	configTopicsPath  = "/config/topics"
	configBrokersPath = "/config/brokers"
	configChangesPath = "/config/changes"
	configChangePrefx = "config_change_"
	brokerDefaultName = "<default>"
)

func topicConfigPath(t string) string     { return configTopicsPath + "/" + t }
func brokerConfigPath(name string) string { return configBrokersPath + "/" + name }
func encodeEntityConfig(c map[string]string) []byte {
	if c == nil {
		c = map[string]string{}
	}
	b, _ := json.Marshal(struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}{1, c})
	return b
}

func decodeEntityConfig(data []byte) (map[string]string, error) {
	var z struct {
		Config map[string]any `json:"config"`
	}
	if len(data) == 0 {
		return map[string]string{}, nil
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(z.Config))
	for k, v := range z.Config {
		switch x := v.(type) {
		case string:
			out[k] = x
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out, nil
}

// setOrCreateEntityConfig is KafkaZkClient.setOrCreateEntityConfigs: set the node, creating it (and its
// parents) when it does not exist.
func (b *Broker) setOrCreateEntityConfig(path string, c map[string]string) error {
	data := encodeEntityConfig(c)
	_, err := b.zk.Set(b.zp(path), data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		parent := path[:strings.LastIndexByte(path, '/')]
		if err = b.ensurePath(parent); err != nil {
			return err
		}
		_, err = b.zk.Create(b.zp(path), data, 0, b.acl())
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = b.zk.Set(b.zp(path), data, -1)
		}
	}
	return err
}

// notifyConfigChange is KafkaZkClient.createConfigChangeNotification for "topics/<t>" or "brokers/<id>".
func (b *Broker) notifyConfigChange(entityPath string) error {
	if err := b.ensurePath(configChangesPath); err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]any{"version": 2, "entity_path": entityPath})
	_, err := b.zk.Create(b.zp(configChangesPath+"/"+configChangePrefx), data, zk.FlagSequence, b.acl())
	return err
}

// readEntityConfig reads one entity config node; a missing node is an empty config.
func (b *Broker) readEntityConfig(path string) (map[string]string, error) {
	data, _, err := b.zk.Get(b.zp(path))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeEntityConfig(data)
}

// dynamicBrokerConfigs are the dynamic broker configs from ZooKeeper (DynamicBrokerConfig's
// dynamicDefaultConfigs and dynamicBrokerConfigs).
type dynamicBrokerConfigs struct {
	clusterDefault map[string]string // /config/brokers/<default>
	perBroker      map[string]string // /config/brokers/<this id>
}

func (b *Broker) dynConfigs() *dynamicBrokerConfigs {
	if d := b.dyn.Load(); d != nil {
		return d
	}
	return &dynamicBrokerConfigs{clusterDefault: map[string]string{}, perBroker: map[string]string{}}
}

// brokerConfigSynonyms is DynamicBrokerConfig.brokerConfigSynonyms: the keys that set the same
// setting, in precedence order.
func brokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// overrideProps is DynamicBrokerConfig.overrideProps: each override removes its synonyms first.
func overrideProps(props, over map[string]string) {
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, s := range brokerConfigSynonyms(k) {
			delete(props, s)
		}
		props[k] = over[k]
	}
}

// staticProps are the server.properties keys the broker was started with (DynamicBrokerConfig's
// staticBrokerConfigs): Config.Properties, or for a Config built in code the log settings that
// differ from Kafka's defaults.
func (c Config) staticProps() map[string]string {
	if c.Properties != nil {
		return c.Properties
	}
	d := DefaultConfig()
	out := map[string]string{}
	add := func(key string, v, def int64) {
		if v != def {
			out[key] = strconv.FormatInt(v, 10)
		}
	}
	add("log.segment.bytes", c.LogSegmentBytes, d.LogSegmentBytes)
	add("log.roll.ms", c.LogRollMs, d.LogRollMs)
	add("log.retention.bytes", c.LogRetentionBytes, d.LogRetentionBytes)
	add("log.retention.ms", c.LogRetentionMs, d.LogRetentionMs)
	add("log.flush.interval.messages", c.LogFlushIntervalMessages, d.LogFlushIntervalMessages)
	add("log.index.interval.bytes", int64(c.LogIndexIntervalBytes), int64(d.LogIndexIntervalBytes))
	add("message.max.bytes", int64(c.MessageMaxBytes), int64(d.MessageMaxBytes))
	if c.LogCleanupPolicy != d.LogCleanupPolicy {
		out["log.cleanup.policy"] = c.LogCleanupPolicy
	}
	add("log.cleaner.delete.retention.ms", c.LogCleanerDeleteRetentionMs, d.LogCleanerDeleteRetentionMs)
	if c.LogCleanerMinCleanableRatio != d.LogCleanerMinCleanableRatio {
		out["log.cleaner.min.cleanable.ratio"] = strconv.FormatFloat(c.LogCleanerMinCleanableRatio, 'g', -1, 64)
	}
	add("log.cleaner.min.compaction.lag.ms", c.LogCleanerMinCompactionLagMs, d.LogCleanerMinCompactionLagMs)
	add("log.cleaner.max.compaction.lag.ms", c.LogCleanerMaxCompactionLagMs, d.LogCleanerMaxCompactionLagMs)
	return out
}

// brokerProps is the broker's current configuration as properties: static, then the dynamic cluster
// default, then this broker's dynamic config (DynamicBrokerConfig.updateCurrentConfig).
func (b *Broker) brokerProps() map[string]string {
	props := maps.Clone(b.cfg.staticProps())
	d := b.dynConfigs()
	overrideProps(props, d.clusterDefault)
	overrideProps(props, d.perBroker)
	return props
}

// brokerLogDefaults is KafkaConfig.extractLogConfigMap: each topic key's value from the broker's
// current configuration (the first of its synonyms that is set, scaled to the topic key's unit), or
// the key's default when none is.
func brokerLogDefaults(props map[string]string) map[string]string {
	out := make(map[string]string, len(topicConfigKeys))
	for i := range topicConfigKeys {
		k := &topicConfigKeys[i]
		for _, s := range k.synonyms {
			v, ok := props[s.name]
			if !ok {
				continue
			}
			if s.scale != 1 {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					v = strconv.FormatInt(n*s.scale, 10)
				}
			}
			out[k.name] = v
			break
		}
	}
	return out
}

// logConfigFor is a topic's effective config now: its overrides (as this broker last read them) over
// the broker's values. __consumer_offsets created before its configs were written keeps
// offsets.topic.segment.bytes, as GroupMetadataManager configures it.
func (b *Broker) logConfigFor(topic string, overrides map[string]string) *logConfig {
	if topic == OffsetsTopic {
		if _, ok := overrides["segment.bytes"]; !ok {
			overrides = maps.Clone(overrides)
			if overrides == nil {
				overrides = map[string]string{}
			}
			overrides["segment.bytes"] = strconv.FormatInt(b.cfg.OffsetsTopicSegmentBytes, 10)
		}
	}
	lc, bad := newLogConfig(brokerLogDefaults(b.brokerProps()), overrides)
	for _, err := range bad {
		b.log.WithField("topic", topic).WithError(err).Warn("ignoring an invalid topic config override from ZooKeeper")
	}
	return lc
}

// offsetsTopicConfigs are the configs Kafka creates __consumer_offsets with
// (GroupCoordinator.offsetsTopicConfigs).
func (c Config) offsetsTopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.FormatInt(c.OffsetsTopicSegmentBytes, 10),
		"compression.type": "producer",
	}
}

// loadConfigChanges reads /config/changes (children watch) and queues the re-read of every entity named
// by a notification newer than the last one processed (ZkNodeChangeNotificationListener). The first
// read only notes where the sequence stands: the topics' and brokers' configs are read in full when
// the session starts. Notifications are not purged here (Kafka deletes those older than 15 minutes).
func (b *Broker) loadConfigChanges(s *zkState) error {
	names, _, _, err := b.zk.ChildrenW(b.zp(configChangesPath))
	if errors.Is(err, zk.ErrNoNode) {
		if err = b.ensurePath(configChangesPath); err == nil {
			names, _, _, err = b.zk.ChildrenW(b.zp(configChangesPath))
		}
	}
	if err != nil {
		return err
	}
	s.armed[configChangesPath] = true
	type change struct {
		seq  int64
		name string
	}
	var changes []change
	for _, n := range names {
		if seq, err := strconv.ParseInt(strings.TrimPrefix(n, configChangePrefx), 10, 64); err == nil && strings.HasPrefix(n, configChangePrefx) {
			changes = append(changes, change{seq, n})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].seq < changes[j].seq })
	if !s.changesPrimed {
		s.changesPrimed = true
		s.lastChange = -1 // the sequence starts at config_change_0000000000
		if len(changes) > 0 {
			s.lastChange = changes[len(changes)-1].seq
		}
		return nil
	}
	for _, c := range changes {
		if c.seq <= s.lastChange {
			continue
		}
		data, _, err := b.zk.Get(b.zp(configChangesPath + "/" + c.name))
		if errors.Is(err, zk.ErrNoNode) {
			s.lastChange = c.seq
			continue
		}
		if err != nil {
			return err
		}
		var n struct {
			Version    int    `json:"version"`
			EntityPath string `json:"entity_path"`
			EntityType string `json:"entity_type"` // version 1
			EntityName string `json:"entity_name"`
		}
		if err := json.Unmarshal(data, &n); err != nil {
			b.log.WithError(err).WithField("node", c.name).Warn("ignoring an unreadable config change notification")
		}
		path := n.EntityPath
		if n.Version == 1 {
			path = n.EntityType + "/" + n.EntityName
		}
		kind, name, _ := strings.Cut(path, "/")
		switch kind {
		case "topics":
			s.pending[zkTask{kind: taskTopicConfig, topic: name}] = struct{}{}
		case "brokers":
			s.pending[zkTask{kind: taskBrokerConfig}] = struct{}{}
		}
		b.log.WithField("entity", path).Debug("config change notification")
		s.lastChange = c.seq
	}
	return nil
}

// loadTopicConfig reads /config/topics/<topic> for a topic this broker knows (in its metadata, the
// controller's context, or hosted) into s.topicConfigs and both views.
func (b *Broker) loadTopicConfig(s *zkState, topic string) error {
	known := s.work.topics[topic] != nil || s.hostsTopic(topic)
	var cc *topicView
	if s.ctrl.active {
		cc = s.ctrl.view.topics[topic]
	}
	if !known && cc == nil {
		return nil
	}
	c, err := b.readEntityConfig(topicConfigPath(topic))
	if err != nil {
		return err
	}
	if c == nil {
		c = map[string]string{}
	}
	old, had := s.topicConfigs[topic]
	if !had || !maps.Equal(old, c) {
		if had {
			b.log.WithFields(logrus.Fields{"topic": topic, "config": c}).Info("topic config changed")
		}
		s.configDirty = true
	}
	if known {
		s.topicConfigs[topic] = c
	}
	if tv := s.work.topics[topic]; tv != nil {
		tv.configs = c
	}
	if cc != nil {
		cc.configs = c
	}
	return nil
}

// hostsTopic reports whether a partition of topic is hosted here.
func (s *zkState) hostsTopic(topic string) bool {
	for tp := range s.hosted {
		if tp.Topic == topic {
			return true
		}
	}
	return false
}

// loadBrokerConfigs reads the dynamic broker configs (this broker's and the cluster default).
func (b *Broker) loadBrokerConfigs(s *zkState) error {
	def, err := b.readEntityConfig(brokerConfigPath(brokerDefaultName))
	if err != nil {
		return err
	}
	own, err := b.readEntityConfig(brokerConfigPath(strconv.Itoa(int(b.id))))
	if err != nil {
		return err
	}
	cur := b.dynConfigs()
	if !maps.Equal(cur.clusterDefault, def) || !maps.Equal(cur.perBroker, own) || b.dyn.Load() == nil {
		b.dyn.Store(&dynamicBrokerConfigs{clusterDefault: def, perBroker: own})
		s.configDirty = true
		if len(def)+len(own) > 0 {
			b.log.WithFields(logrus.Fields{"default": def, "broker": own}).Info("dynamic broker configs")
		}
	}
	return nil
}

// applyConfigs gives every open partition its topic's current effective config (UnifiedLog.updateConfig
// after a config change): the storage settings live, and the limits Produce checks.
func (b *Broker) applyConfigs(s *zkState) {
	if !s.configDirty {
		return
	}
	s.configDirty = false
	b.partsMu.RLock()
	parts := make([]*partition, 0, len(b.parts))
	for _, p := range b.parts {
		parts = append(parts, p)
	}
	b.partsMu.RUnlock()
	for _, p := range parts {
		c, ok := s.topicConfigs[p.topic]
		if !ok {
			continue
		}
		lc := b.logConfigFor(p.topic, c)
		if lc.sameValues(p.config()) {
			continue
		}
		if err := p.log.SetConfig(lc.storageConfig(b.cfg.storageConfig(p.topic, p.epoch.Load()))); err != nil {
			b.log.WithFields(logFields(p.topic, p.id)).WithError(err).Warn("applying the topic config")
			continue
		}
		p.cfg.Store(lc)
		b.log.WithFields(logFields(p.topic, p.id)).Debug("topic config applied")
	}
}
