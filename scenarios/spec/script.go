package spec

// The scripted events of a scenario: a pure function of (scenario, params, timing, seed). The runner
// performs the steps in order; nothing here touches a clock or the network, so the same seed gives the
// same byte-for-byte script (FormatScript), which the result JSON carries and tests compare.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Action is what one scripted step does.
type Action string

// The step actions. Member steps name a member ("m1", ...); link steps also name a lab link
// ("zookeeper", "coordinator", "fetch" — lab.Link's values; the coordination link of an era is
// CoordinationLink); ZooKeeper and broker steps name a node index (0-based).
const (
	// ActTrigger emits trigger{name}: a measured window starts here (figures.Compute's events).
	ActTrigger Action = "trigger"
	// ActStart starts a member: member_start, then the consumer is created and subscribes (in the
	// background: a zk connector's initial rebalance, or a coordinator member's first poll). A member
	// that was stopped before starts again under the same name (and group.instance.id in the static era).
	// With As, the member takes As's identity instead of its own (static era: group.instance.id = As;
	// zk era: consumer.id = As), as a second process started with the same configuration would.
	ActStart Action = "start"
	// ActStop stops a member gracefully (zk: Shutdown, which commits and closes the session; coordinator
	// eras: Close, which commits and sends LeaveGroup unless static) and then records member_stop{graceful}.
	ActStop Action = "stop"
	// ActCrash cuts every link of the member, records member_stop{crash} and drops it without a goodbye
	// (no commit, no closeSession, no LeaveGroup); nothing it does afterwards is recorded.
	ActCrash Action = "crash"
	// ActStall makes the member's link accept bytes and deliver none, keeping the TCP connections.
	ActStall Action = "stall"
	// ActLatency delays every byte on the member's link by LatencyMs.
	ActLatency Action = "latency"
	// ActCut closes the member's connections on the link and refuses new ones.
	ActCut Action = "cut"
	// ActHeal removes every fault from the member's link.
	ActHeal Action = "heal"
	// ActZKStop / ActZKStart stop (SIGTERM) and restart ZooKeeper node Node (lab ensemble only).
	ActZKStop  Action = "zk-stop"
	ActZKStart Action = "zk-start"
	// ActBrokerStop / ActBrokerStart stop and restart broker Node (same port and data dir); a stop is
	// graceful (SIGTERM or Close: controlled shutdown first, KafkaServer.shutdown's order). ActBrokerKill
	// kills broker Node's process with SIGKILL (the lab's brokers then run as processes: Scenario.Brokers
	// with a kill in the script). With Broker set, the broker is chosen when the step runs (BrokerRole*).
	ActBrokerStop  Action = "broker-stop"
	ActBrokerStart Action = "broker-start"
	ActBrokerKill  Action = "broker-kill"
	// ActSettle waits until the group is stable (every partition owned by exactly one live member, no
	// member rebalancing or joining, figures.Compute's definition) and has stayed so for QuietMs, or
	// until TimeoutMs passed; it never fails the run (a window that never became stable shows it).
	ActSettle Action = "settle"
	// ActHostDown / ActHostUp take test host Host (1-based, scenario run --hosts) off the network and
	// put it back: its link goes down (lab.Host.LinkDown), so its members' connections go silent.
	ActHostDown Action = "host-down"
	ActHostUp   Action = "host-up"
	// ActPartition / ActPartitionHeal drop and restore the traffic between test hosts Host and Peer.
	ActPartition     Action = "partition"
	ActPartitionHeal Action = "partition-heal"
	// ActHostDelay delays everything test host Host sends by LatencyMs (0: no more delay) and
	// ActHostLoss loses LossPct percent of it (0: no more loss): tc netem on the host's interface
	// where the kernel has netem, else every proxy link of the host's members (lab.MemberLinks.Latency
	// and Loss; a TCP proxy's loss shows as retransmission delays, not as missing packets: lab.Proxy.Loss).
	ActHostDelay Action = "host-delay"
	ActHostLoss  Action = "host-loss"
)

// Step is one scripted event. DelayMs is waited after the previous step finished (a settle finishes
// when the group is stable, a stop when the member has stopped; a start returns at once).
type Step struct {
	DelayMs   int64   `json:"delay_ms" yaml:"delay_ms"`
	Action    Action  `json:"action" yaml:"action"`
	Name      string  `json:"name,omitempty" yaml:"name,omitempty"`             // trigger name
	Member    string  `json:"member,omitempty" yaml:"member,omitempty"`         // member steps
	As        string  `json:"as,omitempty" yaml:"as,omitempty"`                 // start: the identity the member takes (see ActStart)
	Link      string  `json:"link,omitempty" yaml:"link,omitempty"`             // stall, latency, cut, heal
	Node      int     `json:"node,omitempty" yaml:"node,omitempty"`             // zk-* and broker-* steps: node index
	LatencyMs int64   `json:"latency_ms,omitempty" yaml:"latency_ms,omitempty"` // latency
	QuietMs   int64   `json:"quiet_ms,omitempty" yaml:"quiet_ms,omitempty"`     // settle: how long stable must last
	TimeoutMs int64   `json:"timeout_ms,omitempty" yaml:"timeout_ms,omitempty"` // settle: give up after this long
	Host      int     `json:"host,omitempty" yaml:"host,omitempty"`             // host-down, host-up, partition*: test host (1-based)
	Peer      int     `json:"peer,omitempty" yaml:"peer,omitempty"`             // partition*: the other host
	LossPct   float64 `json:"loss_pct,omitempty" yaml:"loss_pct,omitempty"`     // host-loss
	Broker    string  `json:"broker,omitempty" yaml:"broker,omitempty"`         // broker-*: a BrokerRole* chosen at run time instead of Node
}

// Broker roles of broker steps (Step.Broker), resolved when the step runs, against the era's group
// and topic as the cluster's metadata shows them then.
const (
	// BrokerRoleCoordinator is the broker coordinating the era's group (FindCoordinator).
	BrokerRoleCoordinator = "coordinator"
	// BrokerRoleLeader is the leader of the era's topic's lowest partition whose leader is not the
	// group's coordinator (Metadata), so that losing it costs a partition leader and not the coordinator.
	BrokerRoleLeader = "leader"
	// BrokerRoleDown is the broker the script stopped or killed last and has not started since.
	BrokerRoleDown = "down"
)

func (s Step) String() string {
	switch s.Action {
	case ActTrigger:
		return fmt.Sprintf("trigger %s", s.Name)
	case ActRemoveThread, ActAddThread:
		return fmt.Sprintf("%s %s", s.Action, s.Member)
	case ActStart, ActStop, ActCrash:
		if s.As != "" {
			return fmt.Sprintf("%s %s as %s", s.Action, s.Member, s.As)
		}
		return fmt.Sprintf("%s %s", s.Action, s.Member)
	case ActStall, ActCut, ActHeal:
		return fmt.Sprintf("%s %s/%s", s.Action, s.Member, s.Link)
	case ActLatency:
		return fmt.Sprintf("latency %s/%s %d ms", s.Member, s.Link, s.LatencyMs)
	case ActZKStop, ActZKStart:
		return fmt.Sprintf("%s %d", s.Action, s.Node)
	case ActBrokerStop, ActBrokerStart, ActBrokerKill:
		if s.Broker != "" {
			return fmt.Sprintf("%s %s", s.Action, s.Broker)
		}
		return fmt.Sprintf("%s %d", s.Action, s.Node)
	case ActSettle:
		return "settle"
	case ActHostDown, ActHostUp:
		return fmt.Sprintf("%s h%d", s.Action, s.Host)
	case ActPartition, ActPartitionHeal:
		return fmt.Sprintf("%s h%d|h%d", s.Action, s.Host, s.Peer)
	case ActHostDelay:
		return fmt.Sprintf("host-delay h%d %d ms", s.Host, s.LatencyMs)
	case ActHostLoss:
		return fmt.Sprintf("host-loss h%d %s%%", s.Host, strconv.FormatFloat(s.LossPct, 'f', -1, 64))
	}
	return string(s.Action)
}

// FormatScript renders a script as JSON lines, one step per line: the byte-exact form two runs with
// the same seed must share.
func FormatScript(steps []Step) []byte {
	var b bytes.Buffer
	for _, s := range steps {
		line, _ := json.Marshal(s) // a Step always encodes
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Timing holds the settings a script depends on (docs/design.md "Lab timing"). The same values go to every
// era, so the eras face the same script.
type Timing struct {
	ZKSessionTimeoutMs   int64 // zookeeper.session.timeout.ms (zk era)
	RebalanceBackoffMs   int64 // rebalance.backoff.ms (zk era)
	ZKAutoCommitMs       int64 // auto.commit.interval.ms (zk era)
	SessionTimeoutMs     int64 // session.timeout.ms (coordinator eras)
	HeartbeatIntervalMs  int64 // heartbeat.interval.ms (coordinator eras)
	AutoCommitIntervalMs int64 // auto.commit.interval.ms (coordinator eras)
	ProduceIntervalMs    int64 // the runner's producer: one record per tick
	// BrokerZKSessionTimeoutMs is the brokers' zookeeper.session.timeout.ms: a killed broker's death
	// reaches the controller (and the ISRs shrink, and leaders move) only when its session expires.
	BrokerZKSessionTimeoutMs int64
}

// LabTiming is the lab's short settings, the same for every era: ZooKeeper sessions of 2 s (Kafka 0.8
// default 6000), rebalance.backoff.ms 500 (default 2000), session.timeout.ms 2000 (default 45000, the
// broker's group.min.session.timeout.ms is lowered to allow it), heartbeat.interval.ms 500 (default
// 3000), auto-commit every second (defaults 60000 for 0.8, 5000 for the new consumer).
func LabTiming() Timing {
	return Timing{ZKSessionTimeoutMs: 2000, RebalanceBackoffMs: 500, ZKAutoCommitMs: 1000,
		SessionTimeoutMs: 2000, HeartbeatIntervalMs: 500, AutoCommitIntervalMs: 1000, ProduceIntervalMs: 20,
		BrokerZKSessionTimeoutMs: 2000}
}

// KafkaTiming is Kafka's own defaults (--kafka-defaults): 0.8.2's for the zk era, 3.9's otherwise.
func KafkaTiming() Timing {
	return Timing{ZKSessionTimeoutMs: 6000, RebalanceBackoffMs: 2000, ZKAutoCommitMs: 60000,
		SessionTimeoutMs: 45000, HeartbeatIntervalMs: 3000, AutoCommitIntervalMs: 5000, ProduceIntervalMs: 20,
		BrokerZKSessionTimeoutMs: 18000}
}

// MaxSessionMs is the longer of the two eras' session timeouts: scripts wait on it so that one script
// serves every era.
func (t Timing) MaxSessionMs() int64 { return max(t.ZKSessionTimeoutMs, t.SessionTimeoutMs) }

// SettleTimeoutMs bounds a settle: long enough for a session to expire, a zk rebalance to exhaust its
// retries (4 attempts, 3 backoffs) and a ZooKeeper client to reconnect after a stall.
func (t Timing) SettleTimeoutMs() int64 { return 6*t.MaxSessionMs() + 8*t.RebalanceBackoffMs + 15000 }

// QuietMs is how long the group must stay stable for a settle to end (the scenarios' settle steps):
// past a zk backoff and two heartbeats, so that a rebalance that is about to start has started.
func (t Timing) QuietMs() int64 { return max(2*t.RebalanceBackoffMs, 2*t.HeartbeatIntervalMs) + 200 }

// DownTimeMs is how long a bounced member stays down: half the shorter session timeout, so that a static
// member is back before its session expires in every era (Kafka's static bounce test keeps it below the
// session timeout).
func (t Timing) DownTimeMs() int64 { return min(t.ZKSessionTimeoutMs, t.SessionTimeoutMs) / 2 }

// Params are a run's knobs; zero values take the scenario's defaults (Scenario.Defaults).
type Params struct {
	Consumers  int   `json:"consumers" yaml:"consumers"`
	Partitions int   `json:"partitions" yaml:"partitions"`
	Seed       int64 `json:"seed" yaml:"seed"`
	// DownMs is how long a restarted member stays down (rolling-restart, static-member-bounce), in ms;
	// 0 takes half the shorter session timeout of the run's timing (Timing.downTime).
	DownMs int64 `json:"down_ms,omitempty" yaml:"down_ms,omitempty"`
	// Hosts is the number of test hosts (network namespaces, scenario run --hosts): members as processes
	// spread round-robin over them (m1 on h1, m2 on h2, ...), ZooKeeper and the broker on h1. 0: none,
	// everything on this host's loopback.
	Hosts int `json:"hosts,omitempty" yaml:"hosts,omitempty"`
}

// DownMsOr is p.DownMs, or t's default down time (Timing.DownTimeMs) when it is 0.
func (p Params) DownMsOr(t Timing) int64 {
	if p.DownMs > 0 {
		return p.DownMs
	}
	return t.DownTimeMs()
}

// NewRand returns the scenario's random source for seed: PCG (its sequence is fixed by Go's
// math/rand/v2), keyed by the scenario's name so that scenarios draw independent sequences.
func NewRand(seed int64, scenario string) *rand.Rand {
	var h uint64 = 14695981039346656037 // FNV-1a
	for i := 0; i < len(scenario); i++ {
		h = (h ^ uint64(scenario[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(uint64(seed), h))
}

// Streams script actions (member: the instance).
const (
	// ActRemoveThread: KafkaStreams.removeStreamThread() on the instance (its thread's consumer
	// leaves the group).
	ActRemoveThread Action = "remove-thread"
	// ActAddThread: KafkaStreams.addStreamThread().
	ActAddThread Action = "add-thread"
)

// MemberName is the scenario's stable name of member i (1-based): m1, m2, ...
func MemberName(i int) string { return fmt.Sprintf("m%d", i) }
