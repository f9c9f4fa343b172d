package zkconsumer

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/kconfig"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// Config is the connector's configuration. Kafka fields carry the 0.8.2 consumer key they mirror
// (kafka.consumer.ConsumerConfig, 0.8.2.2) and its default; start from DefaultConfig or
// FromProperties, since a zero Config is not valid (Kafka's boolean defaults are true).
type Config struct {
	GroupID    string // group.id; required; [a-zA-Z0-9._-]+ (ConsumerConfig.validateGroupId)
	ConsumerID string // consumer.id; default "" = generated "<hostname>-<unix ms>-<8 hex>"
	ClientID   string // client.id; default "" = group.id; sent in every Kafka request header

	ZooKeeperConnect             string // zookeeper.connect: "host:port[,host:port...][/chroot]"; required
	ZooKeeperSessionTimeoutMs    int    // zookeeper.session.timeout.ms, default 6000 (lab: 2000)
	ZooKeeperConnectionTimeoutMs int    // zookeeper.connection.timeout.ms, default 6000: New waits this long for a session
	ZooKeeperSyncTimeMs          int    // zookeeper.sync.time.ms, default 2000; rebalance.backoff.ms defaults to it

	RebalanceMaxRetries int // rebalance.max.retries, default 4: attempts per syncedRebalance
	RebalanceBackoffMs  int // rebalance.backoff.ms, default = zookeeper.sync.time.ms (2000; lab: 500)

	AutoCommitEnable     bool   // auto.commit.enable, default true: periodic commits and commit before release
	AutoCommitIntervalMs int    // auto.commit.interval.ms, default 60000
	AutoOffsetReset      string // auto.offset.reset, default "largest" ("smallest" = earliest offset)

	FetchMessageMaxBytes   int32 // fetch.message.max.bytes, default 1048576: per-partition bytes per Fetch
	FetchWaitMaxMs         int32 // fetch.wait.max.ms, default 100
	FetchMinBytes          int32 // fetch.min.bytes, default 1
	QueuedMaxMessageChunks int   // queued.max.message.chunks, default 2: fetched chunks buffered per consumer thread
	RefreshLeaderBackoffMs int   // refresh.leader.backoff.ms, default 200: leader finder's pause between rounds
	SocketTimeoutMs        int   // socket.timeout.ms, default 30000: bound on one Kafka request (plus fetch.wait.max.ms)

	PartitionAssignmentStrategy string // partition.assignment.strategy, default "range" (or "roundrobin")
	ExcludeInternalTopics       bool   // exclude.internal.topics, default true: wildcards skip __consumer_offsets

	// Offset storage (0.8.2, KAFKA-1012): where CommitOffsets writes and rebalances read offsets.
	OffsetsStorage string // offsets.storage, default "zookeeper"; "kafka": OffsetCommit/OffsetFetch v1 to the offset manager
	// DualCommitEnabled is dual.commit.enabled, default true exactly when offsets.storage=kafka
	// (FromProperties applies that default; a Config built in code sets it): each partition the
	// offset manager accepted is also written to ZooKeeper, and a rebalance takes the larger of the
	// two offsets (the migration setting). Ignored with offsets.storage=zookeeper.
	DualCommitEnabled             bool
	OffsetsChannelBackoffMs       int // offsets.channel.backoff.ms, default 1000: pause before re-locating the offset manager or retrying
	OffsetsChannelSocketTimeoutMs int // offsets.channel.socket.timeout.ms, default 10000: bound on one ConsumerMetadata/OffsetCommit/OffsetFetch
	OffsetsCommitMaxRetries       int // offsets.commit.max.retries, default 5: retries of a failed Kafka commit at shutdown only

	// Not Kafka settings: how the lab reaches ZooKeeper and brokers, and where the connector reports.
	ZKDialer     zk.Dialer          // nil: net.DialTimeout; the lab passes a member's ZooKeeper proxy dialer
	BrokerDialer wire.DialFunc      // nil: net.Dialer; the lab passes a member's fetch-link dialer
	Recorder     *timeline.Recorder // nil: no timeline
	Log          *logrus.Entry      // nil: logrus' standard logger
	Listener     RebalanceListener  // nil: none (0.9's ConsumerRebalanceListener)
}

// DefaultConfig returns Kafka 0.8.2's defaults with the given group.id and zookeeper.connect.
func DefaultConfig(groupID, zkConnect string) Config {
	return Config{
		GroupID:                       groupID,
		ZooKeeperConnect:              zkConnect,
		ZooKeeperSessionTimeoutMs:     6000,
		ZooKeeperConnectionTimeoutMs:  6000,
		ZooKeeperSyncTimeMs:           2000,
		RebalanceMaxRetries:           4,
		RebalanceBackoffMs:            2000,
		AutoCommitEnable:              true,
		AutoCommitIntervalMs:          60000,
		AutoOffsetReset:               OffsetResetLargest,
		FetchMessageMaxBytes:          1024 * 1024,
		FetchWaitMaxMs:                100,
		FetchMinBytes:                 1,
		QueuedMaxMessageChunks:        2,
		RefreshLeaderBackoffMs:        200,
		SocketTimeoutMs:               30000,
		PartitionAssignmentStrategy:   StrategyRange,
		ExcludeInternalTopics:         true,
		OffsetsStorage:                OffsetsStorageZooKeeper,
		OffsetsChannelBackoffMs:       1000,
		OffsetsChannelSocketTimeoutMs: 10000,
		OffsetsCommitMaxRetries:       5,
	}
}

// auto.offset.reset and partition.assignment.strategy values.
const (
	OffsetResetLargest  = "largest"
	OffsetResetSmallest = "smallest"
	StrategyRange       = "range"
	StrategyRoundRobin  = "roundrobin"

	// offsets.storage values.
	OffsetsStorageZooKeeper = "zookeeper"
	OffsetsStorageKafka     = "kafka"
)

// intKey is one numeric 0.8.2 consumer key: VerifiableProperties.getInt reads a Java int (kconfig.Int),
// and the range is what the connector can run with (0.8.2 has no validators: a 0 or negative value
// there fails later, or spins). FromProperties parses with it, Validate checks a Config with it.
type intKey struct {
	key   string
	r     kconfig.Range
	field func(*Config) *int
}

var intKeys = []intKey{
	{"zookeeper.session.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int { return &c.ZooKeeperSessionTimeoutMs }},
	{"zookeeper.connection.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int { return &c.ZooKeeperConnectionTimeoutMs }},
	{"zookeeper.sync.time.ms", kconfig.AtLeast(0), func(c *Config) *int { return &c.ZooKeeperSyncTimeMs }},
	{"rebalance.max.retries", kconfig.AtLeast(1), func(c *Config) *int { return &c.RebalanceMaxRetries }},
	{"rebalance.backoff.ms", kconfig.AtLeast(0), func(c *Config) *int { return &c.RebalanceBackoffMs }},
	{"auto.commit.interval.ms", kconfig.AtLeast(1), func(c *Config) *int { return &c.AutoCommitIntervalMs }},
	{"queued.max.message.chunks", kconfig.AtLeast(1), func(c *Config) *int { return &c.QueuedMaxMessageChunks }},
	{"refresh.leader.backoff.ms", kconfig.AtLeast(0), func(c *Config) *int { return &c.RefreshLeaderBackoffMs }},
	{"socket.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int { return &c.SocketTimeoutMs }},
	{"offsets.channel.backoff.ms", kconfig.AtLeast(0), func(c *Config) *int { return &c.OffsetsChannelBackoffMs }},
	{"offsets.channel.socket.timeout.ms", kconfig.AtLeast(1), func(c *Config) *int { return &c.OffsetsChannelSocketTimeoutMs }},
	{"offsets.commit.max.retries", kconfig.AtLeast(0), func(c *Config) *int { return &c.OffsetsCommitMaxRetries }},
}

// int32Key is an intKey whose field is an int32 (sizes and waits sent in Fetch requests).
type int32Key struct {
	key   string
	r     kconfig.Range
	field func(*Config) *int32
}

var int32Keys = []int32Key{
	{"fetch.message.max.bytes", kconfig.AtLeast(1), func(c *Config) *int32 { return &c.FetchMessageMaxBytes }},
	{"fetch.wait.max.ms", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.FetchWaitMaxMs }},
	{"fetch.min.bytes", kconfig.AtLeast(0), func(c *Config) *int32 { return &c.FetchMinBytes }},
}

// LabProperties are the lab's documented short settings (docs/design.md "Lab timing"), applied by the
// scenario runner unless --kafka-defaults: sessions expire in 2 s instead of 6 s and failed
// rebalance attempts are retried after 500 ms instead of 2 s.
func LabProperties() map[string]string {
	return map[string]string{
		"zookeeper.session.timeout.ms": "2000",
		"rebalance.backoff.ms":         "500",
	}
}

// FromProperties builds a Config from Kafka consumer properties (0.8.2 keys) over DefaultConfig.
// rebalance.backoff.ms defaults to the given zookeeper.sync.time.ms and dual.commit.enabled to
// offsets.storage=kafka, as in Kafka. Errors name the key: an unknown key, a number that is no Java
// int or is outside the key's range (kconfig's message: key, type, allowed range), another value that
// does not parse, or one Validate refuses.
func FromProperties(props map[string]string) (Config, error) {
	c := DefaultConfig(props["group.id"], props["zookeeper.connect"])
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic first error
	backoffSet, dualSet := false, false
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		if f := intField(k); f != nil {
			n, err := kconfig.ParseInt(k, v, f.r)
			if err != nil {
				return Config{}, fmt.Errorf("zkconsumer: %w", err)
			}
			*f.field(&c) = int(n)
			backoffSet = backoffSet || k == "rebalance.backoff.ms"
			continue
		}
		if f := int32Field(k); f != nil {
			n, err := kconfig.ParseInt(k, v, f.r)
			if err != nil {
				return Config{}, fmt.Errorf("zkconsumer: %w", err)
			}
			*f.field(&c) = n
			continue
		}
		var err error
		switch k {
		case "group.id", "zookeeper.connect":
		case "consumer.id":
			c.ConsumerID = v
		case "client.id":
			c.ClientID = v
		case "auto.commit.enable":
			c.AutoCommitEnable, err = strconv.ParseBool(v)
		case "auto.offset.reset":
			c.AutoOffsetReset = v
		case "partition.assignment.strategy":
			c.PartitionAssignmentStrategy = v
		case "exclude.internal.topics":
			c.ExcludeInternalTopics, err = strconv.ParseBool(v)
		case "offsets.storage":
			c.OffsetsStorage = strings.ToLower(v) // ConsumerConfig lower-cases it
		case "dual.commit.enabled":
			c.DualCommitEnabled, err = strconv.ParseBool(v)
			dualSet = true
		default:
			return Config{}, fmt.Errorf("zkconsumer: unknown consumer property %q (supported: %s)", k, strings.Join(supportedKeys, ", "))
		}
		if err != nil {
			return Config{}, fmt.Errorf("zkconsumer: %s=%q: %w", k, props[k], err)
		}
	}
	if !backoffSet {
		c.RebalanceBackoffMs = c.ZooKeeperSyncTimeMs
	}
	if !dualSet {
		c.DualCommitEnabled = c.OffsetsStorage == OffsetsStorageKafka
	}
	return c, c.Validate()
}

func intField(key string) *intKey {
	for i := range intKeys {
		if intKeys[i].key == key {
			return &intKeys[i]
		}
	}
	return nil
}

func int32Field(key string) *int32Key {
	for i := range int32Keys {
		if int32Keys[i].key == key {
			return &int32Keys[i]
		}
	}
	return nil
}

var supportedKeys = []string{
	"group.id", "consumer.id", "client.id", "zookeeper.connect", "zookeeper.session.timeout.ms",
	"zookeeper.connection.timeout.ms", "zookeeper.sync.time.ms", "rebalance.max.retries",
	"rebalance.backoff.ms", "auto.commit.enable", "auto.commit.interval.ms", "auto.offset.reset",
	"fetch.message.max.bytes", "fetch.wait.max.ms", "fetch.min.bytes", "queued.max.message.chunks",
	"refresh.leader.backoff.ms", "socket.timeout.ms", "partition.assignment.strategy",
	"exclude.internal.topics", "offsets.storage", "dual.commit.enabled", "offsets.channel.backoff.ms",
	"offsets.channel.socket.timeout.ms", "offsets.commit.max.retries",
}

// legalChars is Kafka's rule for group and topic names (ConsumerConfig.validateChars, Topic.legalChars).
var legalChars = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// splitConnect splits zookeeper.connect into servers and chroot ("" when none), as Kafka does.
func splitConnect(connect string) (servers []string, chroot string) {
	hosts := connect
	if i := strings.Index(connect, "/"); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
	}
	for _, s := range strings.Split(hosts, ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	return servers, chroot
}

func validChroot(connect string) bool {
	servers, chroot := splitConnect(connect)
	if len(servers) == 0 {
		return false
	}
	if chroot == "" {
		return true
	}
	return chroot != "/" && !strings.HasSuffix(chroot, "/") && !strings.Contains(chroot, "//")
}

// Validate reports the first invalid setting, naming its key. Numeric settings are checked against
// the same type and range as FromProperties parses them with (kconfig's message).
func (c Config) Validate() error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("zkconsumer: %s=%v: %s", key, v, want)
	}
	for _, f := range intKeys {
		if err := kconfig.Check(f.key, int64(*f.field(&c)), kconfig.Int, f.r); err != nil {
			return fmt.Errorf("zkconsumer: %w", err)
		}
	}
	for _, f := range int32Keys {
		if err := kconfig.Check(f.key, int64(*f.field(&c)), kconfig.Int, f.r); err != nil {
			return fmt.Errorf("zkconsumer: %w", err)
		}
	}
	switch {
	case !legalChars.MatchString(c.GroupID):
		return bad("group.id", strconv.Quote(c.GroupID), "required, characters [a-zA-Z0-9._-] only")
	case strings.ContainsAny(c.ConsumerID, "/") || strings.TrimSpace(c.ConsumerID) != c.ConsumerID:
		return bad("consumer.id", strconv.Quote(c.ConsumerID), "must not contain '/' or surrounding spaces (it names a znode)")
	case c.ZooKeeperConnect == "":
		return bad("zookeeper.connect", `""`, "required (host:port[,host:port...])")
	case !validChroot(c.ZooKeeperConnect):
		return bad("zookeeper.connect", c.ZooKeeperConnect, "want host:port[,host:port...][/chroot] with a chroot like /a/b")
	case c.AutoOffsetReset != OffsetResetLargest && c.AutoOffsetReset != OffsetResetSmallest:
		return bad("auto.offset.reset", strconv.Quote(c.AutoOffsetReset), `want "largest" or "smallest"`)
	case c.PartitionAssignmentStrategy != StrategyRange && c.PartitionAssignmentStrategy != StrategyRoundRobin:
		return bad("partition.assignment.strategy", strconv.Quote(c.PartitionAssignmentStrategy), `want "range" or "roundrobin"`)
	case c.OffsetsStorage != OffsetsStorageZooKeeper && c.OffsetsStorage != OffsetsStorageKafka:
		// ConsumerConfig.validateOffsetsStorage
		return bad("offsets.storage", strconv.Quote(c.OffsetsStorage), `want "zookeeper" or "kafka"`)
	case int(c.FetchWaitMaxMs) > c.SocketTimeoutMs:
		// ConsumerConfig: require(fetchWaitMaxMs <= socketTimeoutMs)
		return bad("socket.timeout.ms", c.SocketTimeoutMs, fmt.Sprintf("must be at least fetch.wait.max.ms (%d)", c.FetchWaitMaxMs))
	}
	return nil
}
