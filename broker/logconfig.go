package broker

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// Topic configs as Kafka 3.9 defines, parses and validates them (org.apache.kafka.storage.internals.log.
// LogConfig, its ConfigDef, and ServerTopicConfigSynonyms for the broker keys that give each its default).
// Values are held as strings, as ZooKeeper holds them (/config/topics/<t>), and parsed with
// ConfigDef.parseType's rules and the key's validator, so that a bad value is refused with the message
// Kafka's ConfigException carries: "Invalid value V for configuration K: ...".

// cfgType is a ConfigDef.Type, numbered as DescribeConfigsResponse.ConfigType (the configType field of
// DescribeConfigs v3+).
type cfgType int8

const (
	typeUnknown  cfgType = 0
	typeBoolean  cfgType = 1
	typeString   cfgType = 2
	typeInt      cfgType = 3
	typeShort    cfgType = 4
	typeLong     cfgType = 5
	typeDouble   cfgType = 6
	typeList     cfgType = 7
	typeClass    cfgType = 8
	typePassword cfgType = 9
)

// String is the ConfigDef.Type name, as "Not a number of type LONG" prints it.
func (t cfgType) String() string {
	return [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}[t]
}

// configError is a ConfigException: "Invalid value <value> for configuration <name>: <msg>", or msg
// alone for the exceptions Kafka builds without a name.
type configError struct {
	name, value, msg string
	bare             bool
}

func (e *configError) Error() string {
	if e.bare {
		return e.msg
	}
	return "Invalid value " + e.value + " for configuration " + e.name + ": " + e.msg
}

func invalid(name, value, msg string) error { return &configError{name: name, value: value, msg: msg} }

// configKey is one ConfigDef.ConfigKey: its type, Kafka's default (nil: null), its validator on the
// parsed value, and, for a topic config, its broker synonyms in precedence order (the first is
// ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS's "server default property").
type configKey struct {
	name     string
	typ      cfgType
	def      *string
	check    func(name string, v any) error
	synonyms []synonym
	doc      string
}

// synonym is a broker key giving a topic config its default, with the factor from its unit (hours,
// minutes) to the topic config's (ms): ConfigSynonym.
type synonym struct {
	name  string
	scale int64
}

func str(s string) *string { return &s }

// atLeast and between are ConfigDef.Range: the message names the bound as Kafka prints the Number.
func atLeast(min float64, minText string) func(string, any) error {
	return func(name string, v any) error {
		if toFloat(v) < min {
			return invalid(name, valueString(v), "Value must be at least "+minText)
		}
		return nil
	}
}

func between(min, max float64, minText, maxText string) func(string, any) error {
	return func(name string, v any) error {
		f := toFloat(v)
		if f < min {
			return invalid(name, valueString(v), "Value must be at least "+minText)
		}
		if f > max {
			return invalid(name, valueString(v), "Value must be no more than "+maxText)
		}
		return nil
	}
}

// oneOf is ConfigDef.ValidString.in; for a LIST (ValidList.in) each element is checked and named.
func oneOf(valid ...string) func(string, any) error {
	return func(name string, v any) error {
		vals, isList := v.([]string)
		if !isList {
			vals = []string{v.(string)}
		}
		for _, s := range vals {
			if !contains(valid, s) {
				return invalid(name, s, "String must be one of: "+strings.Join(valid, ", "))
			}
		}
		return nil
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gzipLevel is GzipCompression.LevelValidator.
func gzipLevel(name string, v any) error {
	if l := v.(int64); l > 9 || (l < 1 && l != -1) {
		return invalid(name, valueString(v), "Value must be between 1 and 9 or equal to -1")
	}
	return nil
}

var throttledEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas is ThrottledReplicaListValidator: "*" or partition:broker pairs. Kafka prints the
// value as Java prints a List.
func throttledReplicas(name string, v any) error {
	list := v.([]string)
	ok := true
	for _, s := range list {
		if !throttledEntry.MatchString(strings.TrimSpace(s)) {
			ok = false
		}
	}
	if !ok && strings.Join(list, "") != "*" {
		return invalid(name, "["+strings.Join(list, ", ")+"]", name+" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
	}
	return nil
}

var metadataVersion = regexp.MustCompile(`^(0\.(8\.[0-2]|9\.0|10\.[0-2]|11\.0)|1\.[01]|2\.[0-8]|3\.[0-9])(\.[0-9]+)?(-IV[0-9]+)?$`)

// messageFormatVersion is MetadataVersionValidator (MetadataVersion.fromVersionString): a Kafka
// version string such as 0.10.2, 2.8-IV1 or 3.0-IV1.
func messageFormatVersion(name string, v any) error {
	if s := v.(string); !metadataVersion.MatchString(s) {
		return invalid(name, s, "Version "+s+" is not a valid version")
	}
	return nil
}

const maxLong = "9223372036854775807"

func logSyn(names ...string) []synonym {
	out := make([]synonym, len(names))
	for i, n := range names {
		out[i] = synonym{name: n, scale: 1}
	}
	return out
}

// topicConfigKeys are LogConfig's keys in the order LogConfig defines them (ConfigDef parses and
// validates in that order, so the first bad value in that order is the one reported).
var topicConfigKeys = []configKey{
	{name: "segment.bytes", typ: typeInt, def: str("1073741824"), check: atLeast(14, "14"), synonyms: logSyn("log.segment.bytes"), doc: "Size of a log segment file in bytes; a new segment is rolled when the active one would grow past it."},
	{name: "segment.ms", typ: typeLong, def: str("604800000"), check: atLeast(1, "1"), synonyms: []synonym{{"log.roll.ms", 1}, {"log.roll.hours", 3600000}}, doc: "Time in ms after which the active segment is rolled even if it is not full."},
	{name: "segment.jitter.ms", typ: typeLong, def: str("0"), check: atLeast(0, "0"), synonyms: []synonym{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", 3600000}}, doc: "Maximum random jitter subtracted from segment.ms (not applied by this broker)."},
	{name: "segment.index.bytes", typ: typeInt, def: str("10485760"), check: atLeast(4, "4"), synonyms: logSyn("log.index.size.max.bytes"), doc: "Size of the offset index of a segment in bytes (this broker's index grows as needed)."},
	{name: "flush.messages", typ: typeLong, def: str(maxLong), check: atLeast(1, "1"), synonyms: logSyn("log.flush.interval.messages"), doc: "Number of messages after which the log is fsynced."},
	{name: "flush.ms", typ: typeLong, def: str(maxLong), check: atLeast(0, "0"), synonyms: logSyn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), doc: "Time in ms after which the log is fsynced (not applied by this broker)."},
	{name: "retention.bytes", typ: typeLong, def: str("-1"), synonyms: logSyn("log.retention.bytes"), doc: "Largest size in bytes a partition's log may keep before old segments are deleted (with cleanup.policy delete); -1: no limit."},
	{name: "retention.ms", typ: typeLong, def: str("604800000"), check: atLeast(-1, "-1"), synonyms: []synonym{{"log.retention.ms", 1}, {"log.retention.minutes", 60000}, {"log.retention.hours", 3600000}}, doc: "Time in ms a segment is kept before it is deleted (with cleanup.policy delete); -1: forever."},
	{name: "max.message.bytes", typ: typeInt, def: str("1048588"), check: atLeast(0, "0"), synonyms: logSyn("message.max.bytes"), doc: "Largest record batch size in bytes this topic accepts; larger batches are refused with MESSAGE_TOO_LARGE."},
	{name: "index.interval.bytes", typ: typeInt, def: str("4096"), check: atLeast(0, "0"), synonyms: logSyn("log.index.interval.bytes"), doc: "Bytes of batches between two entries of the offset index."},
	{name: "delete.retention.ms", typ: typeLong, def: str("86400000"), check: atLeast(0, "0"), synonyms: logSyn("log.cleaner.delete.retention.ms"), doc: "Time in ms tombstones are kept in a compacted topic."},
	{name: "min.compaction.lag.ms", typ: typeLong, def: str("0"), check: atLeast(0, "0"), synonyms: logSyn("log.cleaner.min.compaction.lag.ms"), doc: "Minimum time in ms a record stays uncompacted."},
	{name: "max.compaction.lag.ms", typ: typeLong, def: str(maxLong), check: atLeast(1, "1"), synonyms: logSyn("log.cleaner.max.compaction.lag.ms"), doc: "Maximum time in ms a record stays ineligible for compaction."},
	{name: "file.delete.delay.ms", typ: typeLong, def: str("60000"), check: atLeast(0, "0"), synonyms: logSyn("log.segment.delete.delay.ms"), doc: "Time in ms before a deleted segment's file is removed (this broker removes at once)."},
	{name: "min.cleanable.dirty.ratio", typ: typeDouble, def: str("0.5"), check: between(0, 1, "0", "1"), synonyms: logSyn("log.cleaner.min.cleanable.ratio"), doc: "Least ratio of uncompacted to total log that makes a log eligible for compaction."},
	{name: "cleanup.policy", typ: typeList, def: str("delete"), check: oneOf("compact", "delete"), synonyms: logSyn("log.cleanup.policy"), doc: "delete (retention deletes old segments), compact (the cleaner keeps the latest record per key), or both."},
	{name: "unclean.leader.election.enable", typ: typeBoolean, def: str("false"), synonyms: logSyn("unclean.leader.election.enable"), doc: "Whether a replica outside the ISR may become leader."},
	{name: "min.insync.replicas", typ: typeInt, def: str("1"), check: atLeast(1, "1"), synonyms: logSyn("min.insync.replicas"), doc: "Least ISR size for a produce with acks=-1 to succeed, else NOT_ENOUGH_REPLICAS."},
	{name: "compression.type", typ: typeString, def: str("producer"), check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), synonyms: logSyn("compression.type"), doc: "Compression of stored batches: producer keeps the producer's codec, any other value recompresses batches on append into it (uncompressed: none)."},
	{name: "compression.gzip.level", typ: typeInt, def: str("-1"), check: gzipLevel, synonyms: logSyn("compression.gzip.level"), doc: "gzip level when compression.type is gzip."},
	{name: "compression.lz4.level", typ: typeInt, def: str("9"), check: between(1, 17, "1", "17"), synonyms: logSyn("compression.lz4.level"), doc: "lz4 level when compression.type is lz4."},
	{name: "compression.zstd.level", typ: typeInt, def: str("3"), check: between(-131072, 22, "-131072", "22"), synonyms: logSyn("compression.zstd.level"), doc: "zstd level when compression.type is zstd."},
	{name: "preallocate", typ: typeBoolean, def: str("false"), synonyms: logSyn("log.preallocate"), doc: "Whether segment files are preallocated."},
	{name: "message.format.version", typ: typeString, def: str("3.0-IV1"), check: messageFormatVersion, synonyms: logSyn("log.message.format.version"), doc: "Deprecated; ignored from inter-broker protocol 3.0 on."},
	{name: "message.timestamp.type", typ: typeString, def: str("CreateTime"), check: oneOf("CreateTime", "LogAppendTime"), synonyms: logSyn("log.message.timestamp.type"), doc: "CreateTime or LogAppendTime."},
	{name: "message.timestamp.difference.max.ms", typ: typeLong, def: str(maxLong), check: atLeast(0, "0"), synonyms: logSyn("log.message.timestamp.difference.max.ms"), doc: "Deprecated; see message.timestamp.before.max.ms and .after.max.ms."},
	{name: "message.timestamp.before.max.ms", typ: typeLong, def: str(maxLong), check: atLeast(0, "0"), synonyms: logSyn("log.message.timestamp.before.max.ms"), doc: "Largest allowed distance in ms of a record timestamp before the broker's clock."},
	{name: "message.timestamp.after.max.ms", typ: typeLong, def: str(maxLong), check: atLeast(0, "0"), synonyms: logSyn("log.message.timestamp.after.max.ms"), doc: "Largest allowed distance in ms of a record timestamp after the broker's clock."},
	{name: "leader.replication.throttled.replicas", typ: typeList, def: str(""), check: throttledReplicas, doc: "Replicas whose replication is throttled on the leader side."},
	{name: "follower.replication.throttled.replicas", typ: typeList, def: str(""), check: throttledReplicas, doc: "Replicas whose replication is throttled on the follower side."},
	{name: "message.downconversion.enable", typ: typeBoolean, def: str("true"), synonyms: logSyn("log.message.downconversion.enable"), doc: "Whether Fetch v0-v3 down-converts batches for old consumers."},
	{name: "remote.storage.enable", typ: typeBoolean, def: str("false"), doc: "Tiered storage (KIP-405); refused in ZooKeeper mode without the remote log system."},
	{name: "local.retention.ms", typ: typeLong, def: str("-2"), check: atLeast(-2, "-2"), synonyms: logSyn("log.local.retention.ms"), doc: "Local retention in ms with tiered storage; -2: retention.ms."},
	{name: "local.retention.bytes", typ: typeLong, def: str("-2"), check: atLeast(-2, "-2"), synonyms: logSyn("log.local.retention.bytes"), doc: "Local retention in bytes with tiered storage; -2: retention.bytes."},
	{name: "remote.log.copy.disable", typ: typeBoolean, def: str("false"), doc: "Stops copying segments to remote storage."},
	{name: "remote.log.delete.on.disable", typ: typeBoolean, def: str("false"), doc: "Deletes remote data when tiered storage is disabled."},
}

var topicConfigIndex = func() map[string]*configKey {
	m := make(map[string]*configKey, len(topicConfigKeys))
	for i := range topicConfigKeys {
		m[topicConfigKeys[i].name] = &topicConfigKeys[i]
	}
	return m
}()

// listSplit is ConfigDef's COMMA_WITH_WHITESPACE.
var listSplit = regexp.MustCompile(`\s*,\s*`)

// parseValue is ConfigDef.parseType followed by the key's validator. The parsed value is bool,
// string, int64 (INT, SHORT, LONG), float64 or []string.
func parseValue(k *configKey, raw string) (any, error) {
	t := strings.TrimSpace(raw)
	var v any
	switch k.typ {
	case typeBoolean:
		switch strings.ToLower(t) {
		case "true":
			v = true
		case "false":
			v = false
		default:
			return nil, invalid(k.name, raw, "Expected value to be either true or false")
		}
	case typeString, typePassword, typeClass:
		v = t
	case typeInt, typeShort, typeLong:
		bits := map[cfgType]int{typeInt: 32, typeShort: 16, typeLong: 64}[k.typ]
		n, err := strconv.ParseInt(t, 10, bits)
		if err != nil {
			return nil, invalid(k.name, raw, "Not a number of type "+k.typ.String())
		}
		v = n
	case typeDouble:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || strings.ContainsAny(t, "_") || strings.HasPrefix(strings.ToLower(strings.TrimLeft(t, "+-")), "0x") {
			return nil, invalid(k.name, raw, "Not a number of type DOUBLE")
		}
		v = f
	case typeList:
		if t == "" {
			v = []string{}
		} else {
			v = listSplit.Split(t, -1)
		}
	}
	if k.check != nil {
		if err := k.check(k.name, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// valueString is ConfigDef.convertToString: how Kafka prints a parsed value (in messages and in
// DescribeConfigs).
func valueString(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return javaDouble(x)
	case []string:
		return strings.Join(x, ",")
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// javaDouble is Java's Double.toString: "0.5", "1.0", "1.0E-5", "1.0E7".
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1E-05
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// validateTopicConfigs is LogConfig.validate as AdminZkClient calls it for a topic's overrides (ZooKeeper
// mode, no remote log system): unknown names first ("Unknown topic config name: x", an
// InvalidConfigurationException), then every value in definition order, then the checks across keys.
// A *configError comes from a ConfigException (CreateTopics answers its message as INVALID_CONFIG; the
// alter APIs prefix the resource); the unknown-name error is an unknownConfigError.
func validateTopicConfigs(overrides map[string]string) error {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if topicConfigIndex[n] == nil {
			return unknownConfigError("Unknown topic config name: " + n)
		}
	}
	parsed := map[string]any{}
	for i := range topicConfigKeys {
		k := &topicConfigKeys[i]
		raw, ok := overrides[k.name]
		if !ok {
			continue
		}
		v, err := parseValue(k, raw)
		if err != nil {
			return err
		}
		parsed[k.name] = v
	}
	// LogConfig.validateValues; the broker defaults of both are 0 and Long.MAX_VALUE.
	minLag, maxLag := int64(0), int64(math.MaxInt64)
	if v, ok := parsed["min.compaction.lag.ms"]; ok {
		minLag = v.(int64)
	}
	if v, ok := parsed["max.compaction.lag.ms"]; ok {
		maxLag = v.(int64)
	}
	if minLag > maxLag {
		return unknownConfigError(fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag))
	}
	// validateNoInvalidRemoteStorageConfigsInZK, validateRemoteStorageOnlyIfSystemEnabled.
	if parsed["remote.log.delete.on.disable"] == true || parsed["remote.log.copy.disable"] == true {
		return unknownConfigError("It is invalid to set `remote.log.delete.on.disable` or `remote.log.copy.disable` under Zookeeper's mode.")
	}
	if parsed["remote.storage.enable"] == true {
		return &configError{bare: true, msg: "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."}
	}
	return nil
}

// unknownConfigError is an InvalidConfigurationException raised directly (not a ConfigException):
// the alter APIs answer its message without the resource prefix.
type unknownConfigError string

func (e unknownConfigError) Error() string { return string(e) }

// logConfig is a topic's effective configuration (LogConfig.fromProps(broker defaults, overrides)):
// every topic key's value as DescribeConfigs shows it, which keys the topic overrides, and the parsed
// values the broker applies.
type logConfig struct {
	values    map[string]string // every topic key → effective value (convertToString)
	overrides map[string]string // the topic's own, as stored in /config/topics/<t>

	segmentBytes, segmentMs, retentionBytes, retentionMs, flushMessages int64
	indexInterval, maxMessageBytes, minInsyncReplicas                   int32
	compact, delete                                                     bool
	uncleanLeaderElection                                               bool // unclean.leader.election.enable
	// The cleaner's (compact in cleanup.policy).
	deleteRetentionMs, minCompactionLagMs, maxCompactionLagMs int64
	minCleanableDirtyRatio                                    float64
	timestamps                                                timestampPolicy   // message.timestamp.*, applied on append (timestamps.go)
	compression                                               compressionConfig // compression.type and its levels (compression.go)
}

// newLogConfig merges a topic's overrides over the broker's values for the topic keys
// (brokerLogDefaults). An override that does not parse (written to ZooKeeper by another tool) is
// ignored and reported in bad, so the topic keeps working on the broker's value.
func newLogConfig(brokerVals, overrides map[string]string) (lc *logConfig, bad []error) {
	lc = &logConfig{values: make(map[string]string, len(topicConfigKeys)), overrides: overrides}
	parsed := make(map[string]any, len(topicConfigKeys))
	for i := range topicConfigKeys {
		k := &topicConfigKeys[i]
		raw, ok := overrides[k.name]
		if ok {
			v, err := parseValue(k, raw)
			if err == nil {
				parsed[k.name] = v
				continue
			}
			bad = append(bad, err)
		}
		if bv, ok := brokerVals[k.name]; ok {
			if v, err := parseValue(k, bv); err == nil {
				parsed[k.name] = v
				continue
			}
		}
		v, _ := parseValue(k, *k.def)
		parsed[k.name] = v
	}
	for n, v := range parsed {
		lc.values[n] = valueString(v)
	}
	lc.segmentBytes = parsed["segment.bytes"].(int64)
	lc.segmentMs = parsed["segment.ms"].(int64)
	lc.retentionBytes = parsed["retention.bytes"].(int64)
	lc.retentionMs = parsed["retention.ms"].(int64)
	lc.flushMessages = parsed["flush.messages"].(int64)
	lc.indexInterval = int32(parsed["index.interval.bytes"].(int64))
	lc.maxMessageBytes = int32(parsed["max.message.bytes"].(int64))
	lc.minInsyncReplicas = int32(parsed["min.insync.replicas"].(int64))
	lc.uncleanLeaderElection, _ = parsed["unclean.leader.election.enable"].(bool)
	lc.deleteRetentionMs = parsed["delete.retention.ms"].(int64)
	lc.minCompactionLagMs = parsed["min.compaction.lag.ms"].(int64)
	lc.maxCompactionLagMs = parsed["max.compaction.lag.ms"].(int64)
	lc.minCleanableDirtyRatio = parsed["min.cleanable.dirty.ratio"].(float64)
	lc.timestamps = newTimestampPolicy(parsed["message.timestamp.type"].(string), parsed["message.timestamp.difference.max.ms"].(int64),
		parsed["message.timestamp.before.max.ms"].(int64), parsed["message.timestamp.after.max.ms"].(int64))
	lc.compression = compressionConfigOf(parsed)
	for _, p := range parsed["cleanup.policy"].([]string) {
		switch strings.ToLower(p) {
		case "compact":
			lc.compact = true
		case "delete":
			lc.delete = true
		}
	}
	return lc, bad
}

// storageConfig is the one place a topic's effective config becomes its partition logs' settings
// (LogManager handing UnifiedLog its LogConfig); every other storage.Config field is the caller's.
// Retention runs only with delete in cleanup.policy (UnifiedLog.deleteOldSegments: config.delete);
// retention.ms 0 (delete at once) is 1 ms here, since storage's zero means its default.
func (lc *logConfig) storageConfig(sc storage.Config) storage.Config {
	sc.SegmentBytes = lc.segmentBytes
	sc.SegmentMs = lc.segmentMs
	sc.RetentionBytes, sc.RetentionMs = lc.retentionBytes, lc.retentionMs
	if sc.RetentionBytes < -1 { // retention.bytes has no validator in Kafka; any negative is "no limit"
		sc.RetentionBytes = -1
	}
	if sc.RetentionMs == 0 {
		sc.RetentionMs = 1
	}
	if !lc.delete {
		sc.RetentionBytes, sc.RetentionMs = -1, -1
	}
	sc.FlushIntervalMessages = lc.flushMessages
	sc.IndexIntervalBytes = lc.indexInterval
	if sc.IndexIntervalBytes == 0 {
		sc.IndexIntervalBytes = 1 // 0 would mean "default" to storage; Kafka's 0 indexes every batch
	}
	switch {
	case lc.compact && lc.delete:
		sc.CleanupPolicy = "compact,delete"
	case lc.compact:
		sc.CleanupPolicy = "compact"
	default:
		sc.CleanupPolicy = "delete" // not compacted; without delete in the list, retention was turned off above
	}
	// Zero means "default" to storage; Kafka's 0 means at once / always.
	sc.DeleteRetentionMs = max(lc.deleteRetentionMs, 1)
	sc.MinCleanableDirtyRatio = lc.minCleanableDirtyRatio
	if sc.MinCleanableDirtyRatio == 0 {
		sc.MinCleanableDirtyRatio = math.SmallestNonzeroFloat64
	}
	sc.MinCompactionLagMs, sc.MaxCompactionLagMs = lc.minCompactionLagMs, lc.maxCompactionLagMs
	return sc
}

// sameSettings reports whether two configs give the same values.
func (lc *logConfig) sameValues(o *logConfig) bool {
	if o == nil || len(lc.values) != len(o.values) {
		return false
	}
	for k, v := range lc.values {
		if o.values[k] != v {
			return false
		}
	}
	return true
}
