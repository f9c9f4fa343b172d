package newconsumer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/kconfig"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/newconsumer/assignor"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is the consumer's configuration. Fields carry Kafka 3.9's consumer keys
// (org.apache.kafka.clients.consumer.ConsumerConfig) and defaults; FromProperties reads those keys.
// The lab runs with shorter settings (docs/design.md "Lab timing": session.timeout.ms 2000,
// heartbeat.interval.ms 500), passed as properties like any other.
type Config struct {
	GroupID          string   // group.id (required: this consumer only subscribes)
	GroupInstanceID  string   // group.instance.id; "" = dynamic member, else static (KIP-345)
	BootstrapServers []string // bootstrap.servers, host:port
	ClientID         string   // client.id; default "consumer-<group.id>-<n>" as the Java client names it
	ClientRack       string   // client.rack; sent in the subscription (v3)

	SessionTimeout    time.Duration // session.timeout.ms, default 45000
	HeartbeatInterval time.Duration // heartbeat.interval.ms, default 3000; must be below the session timeout
	MaxPollInterval   time.Duration // max.poll.interval.ms, default 300000; also the rebalance timeout
	MaxPollRecords    int           // max.poll.records, default 500

	// Assignors is partition.assignment.strategy, in preference order: range, roundrobin, sticky,
	// cooperative-sticky (or the Java class names). Default range,cooperative-sticky, whose common
	// rebalance protocol is EAGER; cooperative-sticky alone makes the consumer COOPERATIVE (KIP-429).
	Assignors []string

	EnableAutoCommit   bool          // enable.auto.commit, default true
	AutoCommitInterval time.Duration // auto.commit.interval.ms, default 5000
	AutoOffsetReset    string        // auto.offset.reset: latest (default), earliest or none

	FetchMinBytes          int32         // fetch.min.bytes, default 1
	FetchMaxWait           time.Duration // fetch.max.wait.ms, default 500
	FetchMaxBytes          int32         // fetch.max.bytes, default 52428800
	MaxPartitionFetchBytes int32         // max.partition.fetch.bytes, default 1048576
	IsolationLevel         string        // isolation.level: read_uncommitted (default) or read_committed

	RequestTimeout    time.Duration // request.timeout.ms, default 30000: bound of each request
	RetryBackoff      time.Duration // retry.backoff.ms, default 100
	RetryBackoffMax   time.Duration // retry.backoff.max.ms, default 1000
	MetadataMaxAge    time.Duration // metadata.max.age.ms, default 300000
	DefaultAPITimeout time.Duration // default.api.timeout.ms, default 60000: bound of Close's commit and LeaveGroup

	// CoordinatorDialer dials the group coordinator connection; FetchDialer dials every other
	// connection (bootstrap, Metadata, FindCoordinator, ListOffsets, Fetch). nil: a plain dialer.
	// Like the Java client, the coordinator gets a connection of its own, so a fault can hit one and
	// not the other.
	CoordinatorDialer wire.DialFunc
	FetchDialer       wire.DialFunc

	Listener RebalanceListener  // called on the goroutine that calls Poll; nil: none
	Timeline *timeline.Recorder // nil: no timeline
	Log      *logrus.Entry      // nil: logrus.StandardLogger()

	// coordHook, set only by this package's tests, is called at each step of every coordinator
	// request on the goroutine that makes it; a test blocks in it to script an interleaving.
	coordHook func(step coordStep, key kmsg.Key, sent generation)
}

// coordStep is a step of one coordinator request (JoinGroup, SyncGroup, Heartbeat, OffsetCommit,
// LeaveGroup), for Config.coordHook.
type coordStep int

const (
	stepSend     coordStep = iota // the generation it carries is taken; not written yet
	stepAnswered                  // its answer (or transport error) is in and about to be applied: every earlier answer on the connection has been
	stepQueued                    // its answer is in but waits until an earlier answer on the connection is applied
	stepApplied                   // its answer was applied to the member's state
)

// hook calls Config.coordHook, if set.
func (c *Consumer) hook(step coordStep, key kmsg.Key, sent generation) {
	if c.cfg.coordHook != nil {
		c.cfg.coordHook(step, key, sent)
	}
}

// Property keys FromProperties accepts, with Kafka 3.9's defaults.
var defaultProperties = map[string]string{
	"group.id":                      "",
	"group.instance.id":             "",
	"bootstrap.servers":             "",
	"client.id":                     "",
	"client.rack":                   "",
	"session.timeout.ms":            "45000",
	"heartbeat.interval.ms":         "3000",
	"max.poll.interval.ms":          "300000",
	"max.poll.records":              "500",
	"partition.assignment.strategy": "range,cooperative-sticky",
	"enable.auto.commit":            "true",
	"auto.commit.interval.ms":       "5000",
	"auto.offset.reset":             "latest",
	"fetch.min.bytes":               "1",
	"fetch.max.wait.ms":             "500",
	"fetch.max.bytes":               "52428800",
	"max.partition.fetch.bytes":     "1048576",
	"isolation.level":               "read_uncommitted",
	"request.timeout.ms":            "30000",
	"retry.backoff.ms":              "100",
	"retry.backoff.max.ms":          "1000",
	"metadata.max.age.ms":           "300000",
	"default.api.timeout.ms":        "60000",
	"group.protocol":                "classic",
}

// DefaultConfig returns Kafka 3.9's defaults (group.id and bootstrap.servers still to set).
func DefaultConfig() Config {
	c, err := FromProperties(nil)
	if err != nil {
		panic(err) // the defaults are valid apart from the required keys, checked in Validate
	}
	return c
}

// FromProperties builds a Config from Kafka consumer keys (values as in a .properties file), on top
// of Kafka 3.9's defaults. Numbers are read as their ConfigDef type (INT or LONG) and checked against
// its validator (kconfig's error: key, type, allowed range). An unknown key, a bad value, or group.protocol=consumer (KIP-848, not
// implemented) is an error naming the key. Required keys are checked by Validate, not here.
func FromProperties(props map[string]string) (Config, error) {
	all := map[string]string{}
	for k, v := range defaultProperties {
		all[k] = v
	}
	var unknown []string
	for k, v := range props {
		if _, ok := defaultProperties[k]; !ok {
			unknown = append(unknown, k)
			continue
		}
		all[k] = strings.TrimSpace(v)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("newconsumer: unknown consumer config %s (known: %s)", strings.Join(unknown, ", "), strings.Join(knownKeys(), ", "))
	}
	var c Config
	var err error
	// num reads a numeric key as its ConfigDef type and validator (kconfig: key, type and range in
	// the error); the first error wins.
	num := func(key string, t kconfig.Type, r kconfig.Range) int64 {
		if err != nil {
			return 0
		}
		n, e := kconfig.Parse(key, all[key], t, r)
		if e != nil {
			err = fmt.Errorf("newconsumer: %w", e)
		}
		return n
	}
	msInt := func(key string, r kconfig.Range) time.Duration { return kconfig.Millis(num(key, kconfig.Int, r)) }
	msLong := func(key string, r kconfig.Range) time.Duration { return kconfig.Millis(num(key, kconfig.Long, r)) }
	i32 := func(key string, r kconfig.Range) int32 { return int32(num(key, kconfig.Int, r)) }
	atLeast0, atLeast1 := kconfig.AtLeast(0), kconfig.AtLeast(1)
	c.GroupID = all["group.id"]
	c.GroupInstanceID = all["group.instance.id"]
	c.BootstrapServers = splitList(all["bootstrap.servers"])
	c.ClientID = all["client.id"]
	c.ClientRack = all["client.rack"]
	c.SessionTimeout = msInt("session.timeout.ms", kconfig.Any)
	c.HeartbeatInterval = msInt("heartbeat.interval.ms", kconfig.Any)
	c.MaxPollInterval = msInt("max.poll.interval.ms", atLeast1)
	c.MaxPollRecords = int(i32("max.poll.records", atLeast1))
	c.Assignors = splitList(all["partition.assignment.strategy"])
	c.AutoCommitInterval = msInt("auto.commit.interval.ms", atLeast0)
	c.AutoOffsetReset = all["auto.offset.reset"]
	c.FetchMinBytes = i32("fetch.min.bytes", atLeast0)
	c.FetchMaxWait = msInt("fetch.max.wait.ms", atLeast0)
	c.FetchMaxBytes = i32("fetch.max.bytes", atLeast0)
	c.MaxPartitionFetchBytes = i32("max.partition.fetch.bytes", atLeast0)
	c.IsolationLevel = all["isolation.level"]
	c.RequestTimeout = msInt("request.timeout.ms", atLeast0)
	c.RetryBackoff = msLong("retry.backoff.ms", atLeast0)
	c.RetryBackoffMax = msLong("retry.backoff.max.ms", atLeast0)
	c.MetadataMaxAge = msLong("metadata.max.age.ms", atLeast0)
	c.DefaultAPITimeout = msInt("default.api.timeout.ms", atLeast0)
	if err != nil {
		return Config{}, err
	}
	switch all["enable.auto.commit"] {
	case "true":
		c.EnableAutoCommit = true
	case "false":
	default:
		return Config{}, fmt.Errorf("newconsumer: enable.auto.commit=%q: want true or false", all["enable.auto.commit"])
	}
	if p := all["group.protocol"]; p != "classic" {
		return Config{}, fmt.Errorf("newconsumer: group.protocol=%q: only classic is implemented (the consumer protocol is KIP-848)", p)
	}
	return c, c.check()
}

func knownKeys() []string {
	ks := make([]string, 0, len(defaultProperties))
	for k := range defaultProperties {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// check validates what does not depend on required keys being set.
func (c *Config) check() error {
	if id := c.GroupInstanceID; id != "" {
		// JoinGroupRequest.validateGroupInstanceId: at most 249 of [a-zA-Z0-9._-].
		if len(id) > 249 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			return fmt.Errorf("newconsumer: group.instance.id=%q: at most 249 characters of [a-zA-Z0-9._-]", id)
		}
	}
	switch {
	case c.SessionTimeout <= 0:
		return fmt.Errorf("newconsumer: session.timeout.ms must be positive")
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.SessionTimeout:
		// Heartbeat's constructor: "Heartbeat must be set lower than the session timeout".
		return fmt.Errorf("newconsumer: heartbeat.interval.ms (%d) must be positive and lower than session.timeout.ms (%d)",
			c.HeartbeatInterval.Milliseconds(), c.SessionTimeout.Milliseconds())
	case c.MaxPollInterval <= 0:
		return fmt.Errorf("newconsumer: max.poll.interval.ms must be positive")
	case c.MaxPollRecords < 1:
		return fmt.Errorf("newconsumer: max.poll.records must be at least 1")
	case c.EnableAutoCommit && c.AutoCommitInterval <= 0:
		return fmt.Errorf("newconsumer: auto.commit.interval.ms must be positive")
	case c.RequestTimeout <= 0:
		return fmt.Errorf("newconsumer: request.timeout.ms must be positive")
	}
	switch c.AutoOffsetReset {
	case "latest", "earliest", "none":
	default:
		return fmt.Errorf("newconsumer: auto.offset.reset=%q: want latest, earliest or none", c.AutoOffsetReset)
	}
	switch c.IsolationLevel {
	case "read_uncommitted", "read_committed":
	default:
		return fmt.Errorf("newconsumer: isolation.level=%q: want read_uncommitted or read_committed", c.IsolationLevel)
	}
	if len(c.Assignors) == 0 {
		return fmt.Errorf("newconsumer: partition.assignment.strategy is empty")
	}
	as := make([]assignor.Assignor, 0, len(c.Assignors))
	for _, n := range c.Assignors {
		a, err := assignor.New(n)
		if err != nil {
			return fmt.Errorf("newconsumer: %w", err)
		}
		as = append(as, a)
	}
	if _, err := assignor.ProtocolFor(as); err != nil {
		return fmt.Errorf("newconsumer: %w", err)
	}
	return nil
}

// Validate checks the whole configuration: the values (as FromProperties does) and the keys the
// consumer cannot run without (group.id, bootstrap.servers).
func (c *Config) Validate() error {
	if c.GroupID == "" {
		return fmt.Errorf("newconsumer: group.id is required (this consumer subscribes through a group)")
	}
	if len(c.BootstrapServers) == 0 {
		return fmt.Errorf("newconsumer: bootstrap.servers is required")
	}
	return c.check()
}
