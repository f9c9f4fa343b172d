// Package env is the environment stage of a run (spec → environment → members → timeline → figures →
// report): the cluster a run uses, behind one interface, Env, with two implementations.
//
//   - The lab (Options.Bootstrap ""): Start starts a lab.Lab from Options.Lab — ZooKeeper standalone, an
//     ensemble or an external one (Options.ExternalZK), brokers ours or Kafka's, in this process or as
//     processes — and Close stops it. Its topics and groups are named after the scenario and era
//     (Name), and there is nothing to clean up: the lab goes away.
//   - An existing cluster (Options.Bootstrap "host:port,..."): nothing is started; Start checks that
//     ExternalZK, if given, is that cluster's ZooKeeper in ZooKeeper mode. Every name a run makes carries
//     the run id prefix (rebalancelab.<run id>.<scenario>.<era>), and Cleanup removes an era's groups,
//     topics and /consumers/<group> znodes unless Options.Keep. Steps that stop or kill nodes need the
//     lab's processes (ErrNeedsLab; Options.Check refuses them before anything starts).
//
// What flows in: Options (the lab's options, or the existing cluster's addresses) and a run id. What
// flows out: the bootstrap and ZooKeeper connect strings, every broker address a member may dial, the
// lab (for faults on its nodes; nil on an existing cluster), the versions it runs, topics (CreateTopic,
// the project's one topic-creation path, also used outside runs) and cleanup.
//
// Defaults is the one place that fills the options every runner shares (the runner's and the lab's
// logs, the broker implementation, the timing).
package env

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// Env is a cluster to run on: the lab or an existing cluster.
type Env interface {
	// Bootstrap is the brokers' addresses, comma-joined host:port.
	Bootstrap() string
	// ZKConnect is ZooKeeper's connect string ("host:port,..."); "" on an existing cluster without one.
	ZKConnect() string
	// ZKAddrs is ZKConnect split at the commas (nil without ZooKeeper).
	ZKAddrs() []string
	// BrokerAddrs is every address a member may dial a broker at: the bootstrap addresses and those the
	// brokers advertise (learned from the metadata; an error only if it cannot be read).
	BrokerAddrs(ctx context.Context) ([]string, error)
	// Lab is the lab, for faults on its nodes (ZooKeeper, brokers); nil on an existing cluster.
	Lab() *lab.Lab
	// Name is the name of a run's topic and group for one era: "<scenario>.<era>.<time>" in the lab,
	// "rebalancelab.<run id>.<scenario>.<era>" on an existing cluster.
	Name(scenario, era string) string
	// ReplicationFactor is a run's topics' default: min(3, brokers) in the lab, 1 on an existing cluster.
	ReplicationFactor() int
	// CreateTopic creates t on this cluster (the package's CreateTopic).
	CreateTopic(ctx context.Context, t Topic) error
	// Versions are the versions of what runs the cluster: "kafka" (a Kafka broker's) and "zookeeper"
	// (mntr's zk_version, "unknown" if no node answers); absent when not known.
	Versions(ctx context.Context) map[string]string
	// Cleanup removes what an era made (group and the groups named <group>.*, topics, and
	// /consumers/<group> in ZooKeeper) from an existing cluster, within timeout, unless Options.Keep.
	// note says what it did ("removed: ...", "kept: ...", "" in the lab: nothing to do); errs are
	// the failures, each "cleanup: ...".
	Cleanup(group string, topics []string, timeout time.Duration) (note string, errs []string)
	// Close stops the lab (nothing on an existing cluster).
	Close() error
}

// Options chooses and configures the cluster.
type Options struct {
	// Bootstrap, when set, is an existing Kafka cluster ("host:port,..."): nothing is started.
	Bootstrap string
	// ExternalZK is a running ZooKeeper ("host:port,..."): with Bootstrap, that cluster's (needed by the
	// zk era); without, the lab uses it instead of starting one (lab.Options.ExternalZK).
	ExternalZK string
	// Keep leaves an era's topics and groups on an existing cluster (Cleanup does nothing).
	Keep bool
	// RunID is the run's id (NewRunID), in every name on an existing cluster.
	RunID string
	// Lab is what the lab starts with (ignored with Bootstrap); its ExternalZK is Options.ExternalZK.
	Lab lab.Options
}

// ExternalPrefix begins every topic and group name a run makes on an existing cluster:
// rebalancelab.<run id>.<scenario>.<era>.
const ExternalPrefix = "rebalancelab."

// ErrNeedsLab: a step needs the lab's own processes (stopping ZooKeeper nodes or brokers).
var ErrNeedsLab = errors.New("needs the lab's own processes, not an existing cluster (--bootstrap)")

// ErrNeedsZK: the zk era was asked for on an existing cluster without its ZooKeeper.
var ErrNeedsZK = errors.New("the zk era on an existing cluster needs its ZooKeeper: --zk HOST:PORT (a cluster in ZooKeeper mode, Kafka 3.9 or older); or leave the zk era out (--era classic,cooperative,static)")

// Needs is what a run needs of its cluster beyond brokers (Options.Check).
type Needs struct {
	// StopsNodes says why the run stops ZooKeeper nodes or brokers ("stops ZooKeeper nodes", a step);
	// "" when it does not.
	StopsNodes string
	// ZooKeeper: an era that runs uses ZooKeeper (the zk era).
	ZooKeeper bool
}

// Check refuses, before anything starts, what the cluster cannot give the run: on an existing cluster,
// stopping nodes (wraps ErrNeedsLab) and the zk era without ExternalZK (ErrNeedsZK). The lab gives all.
func (o Options) Check(n Needs) error {
	if o.Bootstrap == "" {
		return nil
	}
	if n.StopsNodes != "" {
		return fmt.Errorf("%s: %w", n.StopsNodes, ErrNeedsLab)
	}
	if n.ZooKeeper && o.ExternalZK == "" {
		return ErrNeedsZK
	}
	return nil
}

// Start starts the lab (lab.Start with o.Lab; its errors begin "lab: ") or, with o.Bootstrap, checks
// the existing cluster's ZooKeeper (o.ExternalZK, if set: brokers registered under /brokers/ids). A
// given o.Bootstrap or o.ExternalZK that no server answers at is said first, before anything is
// started or made ("--bootstrap HOST:PORT: no broker reachable there: <dial error>", "--zk HOST:PORT:
// no ZooKeeper reachable there: ..."). The caller Closes the Env.
func Start(ctx context.Context, o Options) (Env, error) {
	if o.Bootstrap != "" {
		if err := reachable(ctx, "--bootstrap", "broker", o.Bootstrap); err != nil {
			return nil, err
		}
	}
	if o.ExternalZK != "" {
		hosts, _, _ := strings.Cut(o.ExternalZK, "/") // without a chroot
		if err := reachable(ctx, "--zk", "ZooKeeper", hosts); err != nil {
			return nil, err
		}
	}
	if o.Bootstrap != "" {
		x := &external{o: o}
		if o.ExternalZK != "" {
			if err := checkZKMode(ctx, o.ExternalZK); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	lo := o.Lab
	lo.ExternalZK = o.ExternalZK
	l, err := lab.Start(ctx, lo)
	if err != nil {
		return nil, err
	}
	return &labEnv{l: l}, nil
}

// reachable is nil when a TCP connection can be made to one of addrs' servers (comma-separated
// HOST:PORT; within 5 s each, or ctx); otherwise "<flag> <addrs>: no <what> reachable there: <the last
// dial's error>".
func reachable(ctx context.Context, flag, what, addrs string) error {
	var last error
	for _, addr := range splitAddrs(addrs) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		last = err
	}
	return fmt.Errorf("%s %s: no %s reachable there: %w", flag, addrs, what, last)
}

// NewRunID is a run's id: the start time in base 36 and 16 random bits ("m3x9k2ab-1f3c").
func NewRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(b[:])
}

// ---- the lab ----

type labEnv struct{ l *lab.Lab }

func (e *labEnv) Bootstrap() string { return e.l.Bootstrap() }
func (e *labEnv) ZKConnect() string { return e.l.ZKConnect() }
func (e *labEnv) ZKAddrs() []string { return splitAddrs(e.l.ZKConnect()) }
func (e *labEnv) Lab() *lab.Lab     { return e.l }
func (e *labEnv) Close() error      { return e.l.Close() }

func (e *labEnv) BrokerAddrs(ctx context.Context) ([]string, error) {
	return brokerAddrs(ctx, e.Bootstrap())
}

// Name: the time in ms modulo 36^6, in base 36, tells apart the eras of runs in one lab.
func (e *labEnv) Name(scenario, era string) string {
	runID := strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36*36), 36)
	return fmt.Sprintf("%s.%s.%s", scenario, era, runID)
}

func (e *labEnv) ReplicationFactor() int {
	return lab.OffsetsTopicReplicationFactor(len(e.l.Brokers()))
}

func (e *labEnv) CreateTopic(ctx context.Context, t Topic) error {
	return CreateTopic(ctx, e.Bootstrap(), t)
}

func (e *labEnv) Versions(ctx context.Context) map[string]string {
	v := map[string]string{"zookeeper": zkVersion(ctx, e.ZKAddrs())}
	if k := e.l.KafkaVersion(); k != "" {
		v["kafka"] = k
	}
	return v
}

func (e *labEnv) Cleanup(string, []string, time.Duration) (string, []string) { return "", nil }

// ---- helpers ----

func splitAddrs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// brokerAddrs is bootstrap's addresses and those the brokers advertise.
func brokerAddrs(ctx context.Context, bootstrap string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, a := range strings.Split(bootstrap, ",") {
		add(strings.TrimSpace(a))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return out, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bs, err := kadm.NewClient(cl).ListBrokers(cctx)
	if err != nil {
		return out, err
	}
	for _, b := range bs {
		add(net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return out, nil
}

// zkVersion asks the first node that answers (mntr zk_version, "3.8.0-<commit>, built on ...").
func zkVersion(ctx context.Context, addrs []string) string {
	for _, a := range addrs {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lab.FourLetter(c, a, "mntr")
		cancel()
		if err != nil {
			continue
		}
		v := lab.ParseMntrStrings(s)["zk_version"]
		if i := strings.IndexAny(v, "-, "); i > 0 {
			v = v[:i]
		}
		if v != "" {
			return v
		}
	}
	return "unknown"
}

// Timing is the members' timing: the lab's (spec.LabTiming) or, with kafkaDefaults, Kafka's own.
func Timing(kafkaDefaults bool) spec.Timing {
	if kafkaDefaults {
		return spec.KafkaTiming()
	}
	return spec.LabTiming()
}
