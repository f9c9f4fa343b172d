package zkconsumer

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/wire"
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
		GroupID:                      groupID,
		ZooKeeperConnect:             zkConnect,
		ZooKeeperSessionTimeoutMs:    6000,
		ZooKeeperConnectionTimeoutMs: 6000,
		ZooKeeperSyncTimeMs:          2000,
		RebalanceMaxRetries:          4,
		RebalanceBackoffMs:           2000,
		AutoCommitEnable:             true,
		AutoCommitIntervalMs:         60000,
		AutoOffsetReset:              OffsetResetLargest,
		FetchMessageMaxBytes:         1024 * 1024,
		FetchWaitMaxMs:               100,
		FetchMinBytes:                1,
		QueuedMaxMessageChunks:       2,
		RefreshLeaderBackoffMs:       200,
		SocketTimeoutMs:              30000,
		PartitionAssignmentStrategy:  StrategyRange,
		ExcludeInternalTopics:        true,
	}
}

// auto.offset.reset and partition.assignment.strategy values.
const (
	OffsetResetLargest  = "largest"
	OffsetResetSmallest = "smallest"
	StrategyRange       = "range"
	StrategyRoundRobin  = "roundrobin"
)

// LabProperties are the lab's documented short settings (DESIGN.md "Lab timing"), applied by the
// scenario runner unless --kafka-defaults: sessions expire in 2 s instead of 6 s and failed
// rebalance attempts are retried after 500 ms instead of 2 s.
func LabProperties() map[string]string {
	return map[string]string{
		"zookeeper.session.timeout.ms": "2000",
		"rebalance.backoff.ms":         "500",
	}
}

// FromProperties builds a Config from Kafka consumer properties (0.8.2 keys) over DefaultConfig.
// rebalance.backoff.ms defaults to the given zookeeper.sync.time.ms as in Kafka. Errors name the
// key: an unknown key, a value that does not parse, or one Validate refuses. offsets.storage is
// accepted only as "zookeeper" (the ZooKeeper era's storage).
func FromProperties(props map[string]string) (Config, error) {
	c := DefaultConfig(props["group.id"], props["zookeeper.connect"])
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic first error
	backoffSet := false
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		var err error
		switch k {
		case "group.id", "zookeeper.connect":
		case "consumer.id":
			c.ConsumerID = v
		case "client.id":
			c.ClientID = v
		case "zookeeper.session.timeout.ms":
			c.ZooKeeperSessionTimeoutMs, err = strconv.Atoi(v)
		case "zookeeper.connection.timeout.ms":
			c.ZooKeeperConnectionTimeoutMs, err = strconv.Atoi(v)
		case "zookeeper.sync.time.ms":
			c.ZooKeeperSyncTimeMs, err = strconv.Atoi(v)
		case "rebalance.max.retries":
			c.RebalanceMaxRetries, err = strconv.Atoi(v)
		case "rebalance.backoff.ms":
			c.RebalanceBackoffMs, err = strconv.Atoi(v)
			backoffSet = true
		case "auto.commit.enable":
			c.AutoCommitEnable, err = strconv.ParseBool(v)
		case "auto.commit.interval.ms":
			c.AutoCommitIntervalMs, err = strconv.Atoi(v)
		case "auto.offset.reset":
			c.AutoOffsetReset = v
		case "fetch.message.max.bytes":
			c.FetchMessageMaxBytes, err = atoi32(v)
		case "fetch.wait.max.ms":
			c.FetchWaitMaxMs, err = atoi32(v)
		case "fetch.min.bytes":
			c.FetchMinBytes, err = atoi32(v)
		case "queued.max.message.chunks":
			c.QueuedMaxMessageChunks, err = strconv.Atoi(v)
		case "refresh.leader.backoff.ms":
			c.RefreshLeaderBackoffMs, err = strconv.Atoi(v)
		case "socket.timeout.ms":
			c.SocketTimeoutMs, err = strconv.Atoi(v)
		case "partition.assignment.strategy":
			c.PartitionAssignmentStrategy = v
		case "exclude.internal.topics":
			c.ExcludeInternalTopics, err = strconv.ParseBool(v)
		case "offsets.storage":
			if v != "zookeeper" {
				return Config{}, fmt.Errorf("zkconsumer: offsets.storage=%q: only \"zookeeper\" is modelled (offsets live in /consumers/<group>/offsets)", v)
			}
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
	return c, c.Validate()
}

var supportedKeys = []string{
	"group.id", "consumer.id", "client.id", "zookeeper.connect", "zookeeper.session.timeout.ms",
	"zookeeper.connection.timeout.ms", "zookeeper.sync.time.ms", "rebalance.max.retries",
	"rebalance.backoff.ms", "auto.commit.enable", "auto.commit.interval.ms", "auto.offset.reset",
	"fetch.message.max.bytes", "fetch.wait.max.ms", "fetch.min.bytes", "queued.max.message.chunks",
	"refresh.leader.backoff.ms", "socket.timeout.ms", "partition.assignment.strategy",
	"exclude.internal.topics", "offsets.storage",
}

func atoi32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
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

// Validate reports the first invalid setting, naming its key.
func (c Config) Validate() error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("zkconsumer: %s=%v: %s", key, v, want)
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
	case c.ZooKeeperSessionTimeoutMs <= 0:
		return bad("zookeeper.session.timeout.ms", c.ZooKeeperSessionTimeoutMs, "must be > 0")
	case c.ZooKeeperConnectionTimeoutMs <= 0:
		return bad("zookeeper.connection.timeout.ms", c.ZooKeeperConnectionTimeoutMs, "must be > 0")
	case c.ZooKeeperSyncTimeMs < 0:
		return bad("zookeeper.sync.time.ms", c.ZooKeeperSyncTimeMs, "must be >= 0")
	case c.RebalanceMaxRetries <= 0:
		return bad("rebalance.max.retries", c.RebalanceMaxRetries, "must be > 0")
	case c.RebalanceBackoffMs < 0:
		return bad("rebalance.backoff.ms", c.RebalanceBackoffMs, "must be >= 0")
	case c.AutoCommitEnable && c.AutoCommitIntervalMs <= 0:
		return bad("auto.commit.interval.ms", c.AutoCommitIntervalMs, "must be > 0")
	case c.AutoOffsetReset != OffsetResetLargest && c.AutoOffsetReset != OffsetResetSmallest:
		return bad("auto.offset.reset", strconv.Quote(c.AutoOffsetReset), `want "largest" or "smallest"`)
	case c.FetchMessageMaxBytes <= 0:
		return bad("fetch.message.max.bytes", c.FetchMessageMaxBytes, "must be > 0")
	case c.FetchWaitMaxMs < 0:
		return bad("fetch.wait.max.ms", c.FetchWaitMaxMs, "must be >= 0")
	case c.FetchMinBytes < 0:
		return bad("fetch.min.bytes", c.FetchMinBytes, "must be >= 0")
	case c.QueuedMaxMessageChunks <= 0:
		return bad("queued.max.message.chunks", c.QueuedMaxMessageChunks, "must be > 0")
	case c.RefreshLeaderBackoffMs < 0:
		return bad("refresh.leader.backoff.ms", c.RefreshLeaderBackoffMs, "must be >= 0")
	case c.SocketTimeoutMs <= 0:
		return bad("socket.timeout.ms", c.SocketTimeoutMs, "must be > 0")
	case c.PartitionAssignmentStrategy != StrategyRange && c.PartitionAssignmentStrategy != StrategyRoundRobin:
		return bad("partition.assignment.strategy", strconv.Quote(c.PartitionAssignmentStrategy), `want "range" or "roundrobin"`)
	}
	return nil
}
