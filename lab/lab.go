package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/broker"
)

// ShortTimings are the broker settings (server.properties keys) the lab passes by default so that runs
// take seconds, not minutes (docs/design.md "Lab timing"). Options.BrokerConfig overrides any of them;
// Options.KafkaDefaults leaves them out (Kafka 3.9's own defaults, in brackets, apply).
var ShortTimings = map[string]string{
	// [18000] The broker's ZooKeeper session; the lab's ZooKeeper (tickTime 200 ms) accepts it unclamped.
	"zookeeper.session.timeout.ms": "2000",
	// [6000] Lowered so consumers may use the lab's session.timeout.ms=2000 (ShortConsumerTimings) and
	// tests may go lower still; JoinGroup below it gets INVALID_SESSION_TIMEOUT as in Kafka.
	"group.min.session.timeout.ms": "500",
	// [3000] No wait for more members before the first rebalance of an empty group.
	"group.initial.rebalance.delay.ms": "0",
}

// LabBrokerSettings are the keys applied to every broker of a lab of the given number of brokers, even
// with KafkaDefaults, because the lab's clusters are small: __consumer_offsets with replication factor
// min(3, brokers) [3] (Kafka enforces the factor strictly, KIP-115: a one-broker lab gets 1, as Kafka's
// own shipped config/server.properties sets for a one-broker cluster). The factor is the lab's, fixed
// at Start: AddBroker's brokers get the same, so every broker would create the topic alike.
func LabBrokerSettings(brokers int) map[string]string {
	return map[string]string{
		"offsets.topic.replication.factor": strconv.Itoa(OffsetsTopicReplicationFactor(brokers)),
	}
}

// OffsetsTopicReplicationFactor is the offsets.topic.replication.factor a lab of the given number of
// brokers sets: min(3, brokers), at least 1.
func OffsetsTopicReplicationFactor(brokers int) int { return max(1, min(3, brokers)) }

// ShortConsumerTimings are the consumer settings the lab's scenarios use with ShortTimings, the same
// for every era (Kafka's defaults in brackets). They are documented here, next to the broker's, so
// that the whole lab timing lives in one place; the consumers read them through their own configs.
var ShortConsumerTimings = map[string]string{
	"zookeeper.session.timeout.ms": "2000", // zkconsumer [6000 in 0.8.2]
	"rebalance.backoff.ms":         "500",  // zkconsumer [2000]
	"session.timeout.ms":           "2000", // newconsumer [45000]
	"heartbeat.interval.ms":        "500",  // newconsumer [3000]
}

// BrokerProfileLabel is the runtime/pprof label (value: the broker id) on every goroutine of an
// in-process broker.
const BrokerProfileLabel = "rebalancelab_broker"

// Broker process modes for Options.BrokersAs.
const (
	BrokersInProcess = "inprocess" // broker.Start in this process (default)
	BrokersProcess   = "process"   // `BrokerBinary broker ...` child processes (can be kill -9'd)
)

// DefaultBrokerStartTimeout bounds one broker's start when ctx has no deadline.
const DefaultBrokerStartTimeout = 60 * time.Second

// Options configures Start.
type Options struct {
	ZK         ZKOptions // the ZooKeeper to start (ignored when ExternalZK is set); ZK.Dir defaults to Dir/zookeeper
	ExternalZK string    // "host:port,..." of a running ZooKeeper: used as is, nothing started
	Brokers    int       // number of brokers (ids 1..N), default 1; 0 brokers: set NoBrokers
	NoBrokers  bool      // start ZooKeeper only
	// BrokerConfig holds server.properties keys for every broker, applied over LabBrokerSettings and
	// ShortTimings. broker.id, listeners, zookeeper.connect and log.dirs are set by the lab.
	BrokerConfig  map[string]string
	KafkaDefaults bool   // leave ShortTimings out (Kafka's own defaults)
	BrokersAs     string // BrokersInProcess (default) or BrokersProcess
	BrokerBinary  string // the rebalancelab binary, for BrokersProcess
	// Broker is the broker implementation: BrokerRebalancelab (default) or BrokerKafka, real Kafka 3.9
	// JVMs (always processes; BrokersAs and BrokerBinary are ignored) from KafkaClasspath, default
	// FindKafkaClasspath's.
	Broker         string
	KafkaClasspath string
	// BrokerOptions are given to every in-process broker of this project (broker.Start), e.g.
	// broker.WithGroupObserver; ignored for broker processes and BrokerKafka.
	BrokerOptions []broker.Option
	Dir           string // default: a temp dir removed by Close
	Log           *logrus.Entry
	// Host, when set, runs ZooKeeper (unless ExternalZK) and every broker inside that test host
	// (CreateHosts; `ip netns exec`), listening on and advertising the host's address. Brokers are
	// then processes (BrokersAs "process", BrokerBinary needed, or Kafka's JVMs).
	Host *Host
}

// Lab is a running environment: a ZooKeeper (or an external one) and brokers.
type Lab struct {
	opts    Options
	dir     string
	ownDir  bool
	zk      *ZooKeeper
	connect string
	brokers []*BrokerNode
	log     *logrus.Entry

	kafkaClasspath string // BrokerKafka: the jars' directory
	kafkaVersion   string // BrokerKafka: "3.9.2"

	closeOnce sync.Once
	closeErr  error
}

// Start brings up ZooKeeper (unless o.ExternalZK) and o.Brokers brokers on free loopback ports, each
// registered in ZooKeeper when Start returns. On error (e.g. no session with o.ExternalZK within the
// brokers' zookeeper.connection.timeout.ms: see broker.Start) everything started is stopped and the
// lab's temp dir removed.
func Start(ctx context.Context, o Options) (*Lab, error) {
	if o.Brokers < 0 {
		return nil, fmt.Errorf("lab: Options.Brokers = %d", o.Brokers)
	}
	if o.Brokers == 0 && !o.NoBrokers {
		o.Brokers = 1
	}
	if o.NoBrokers {
		o.Brokers = 0
	}
	switch o.Broker {
	case "":
		o.Broker = BrokerRebalancelab
	case BrokerRebalancelab:
	case BrokerKafka:
		o.BrokersAs = BrokersProcess
	default:
		return nil, fmt.Errorf("lab: unknown broker implementation %q (want one of %s)", o.Broker, strings.Join(BrokerImplementations, ", "))
	}
	if o.Host != nil && o.Brokers > 0 && o.Broker == BrokerRebalancelab {
		if o.BrokersAs == BrokersInProcess {
			return nil, fmt.Errorf("lab: brokers inside a test host (Options.Host) run as processes, not %q", BrokersInProcess)
		}
		o.BrokersAs = BrokersProcess
	}
	if o.Host != nil {
		o.ZK.Host = o.Host
	}
	switch o.BrokersAs {
	case "":
		o.BrokersAs = BrokersInProcess
	case BrokersInProcess:
	case BrokersProcess:
		if o.Broker == BrokerKafka {
			break
		}
		if o.BrokerBinary == "" {
			return nil, fmt.Errorf("lab: BrokersAs %q needs BrokerBinary (a built rebalancelab binary: go build ./cmd/rebalancelab)", BrokersProcess)
		}
		if !isExecutable(o.BrokerBinary) {
			return nil, fmt.Errorf("lab: BrokerBinary %q is not an executable file", o.BrokerBinary)
		}
	default:
		return nil, fmt.Errorf("lab: unknown BrokersAs %q (want %q or %q)", o.BrokersAs, BrokersInProcess, BrokersProcess)
	}
	for _, k := range []string{"broker.id", "listeners", "zookeeper.connect", "log.dirs", "log.dir"} {
		if _, ok := o.BrokerConfig[k]; ok {
			return nil, fmt.Errorf("lab: BrokerConfig %q is set by the lab (per broker)", k)
		}
	}
	if o.Log == nil {
		o.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	l := &Lab{opts: o, dir: o.Dir, log: o.Log.WithField("component", "lab")}
	if o.Broker == BrokerKafka && o.Brokers > 0 {
		cp := o.KafkaClasspath
		if cp == "" {
			var err error
			if cp, err = FindKafkaClasspath(); err != nil {
				return nil, err
			}
		}
		v, err := KafkaVersionOf(cp)
		if err != nil {
			return nil, err
		}
		l.kafkaClasspath, l.kafkaVersion = cp, v
	}
	if l.dir == "" {
		d, err := os.MkdirTemp("", "rebalancelab-lab-")
		if err != nil {
			return nil, fmt.Errorf("lab: temp dir: %w", err)
		}
		l.dir, l.ownDir = d, true
	} else if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}

	if o.ExternalZK != "" {
		l.connect = o.ExternalZK
	} else {
		zo := o.ZK
		if zo.Dir == "" {
			zo.Dir = filepath.Join(l.dir, "zookeeper")
		}
		if zo.Log == nil {
			zo.Log = o.Log
		}
		z, err := StartZooKeeper(ctx, zo)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.zk, l.connect = z, z.Connect()
	}

	for i := 1; i <= o.Brokers; i++ {
		port, err := freePort()
		if err != nil {
			l.Close()
			return nil, err
		}
		n := &BrokerNode{l: l, id: int32(i), port: port, dir: filepath.Join(l.dir, fmt.Sprintf("broker-%d", i))}
		n.props = l.brokerProps(n)
		l.brokers = append(l.brokers, n)
		if err := n.Start(ctx); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.log.WithFields(logrus.Fields{"zookeeper": l.connect, "bootstrap": l.Bootstrap(), "broker": o.Broker, "brokers_as": o.BrokersAs}).Info("lab up")
	return l, nil
}

// AddBroker starts one more broker in the running lab (the next id, a free port, its own data dir) and
// returns once it is registered, as Start's brokers are. It is a replica of nothing that exists
// already (Kafka does not reassign partitions by itself); topics created from now on, and
// __consumer_offsets if it was waiting for enough brokers, may place replicas on it.
func (l *Lab) AddBroker(ctx context.Context) (*BrokerNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	i := len(l.brokers) + 1
	n := &BrokerNode{l: l, id: int32(i), port: port, dir: filepath.Join(l.dir, fmt.Sprintf("broker-%d", i))}
	n.props = l.brokerProps(n)
	l.brokers = append(l.brokers, n)
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// brokerProps is the broker's server.properties: LabBrokerSettings (for the lab's Options.Brokers),
// ShortTimings (unless KafkaDefaults), Options.BrokerConfig, then the per-broker keys.
func (l *Lab) brokerProps(n *BrokerNode) map[string]string {
	props := LabBrokerSettings(l.opts.Brokers)
	if !l.opts.KafkaDefaults {
		maps.Copy(props, ShortTimings)
	}
	if l.opts.Broker == BrokerKafka {
		l.kafkaProps(props)
	}
	maps.Copy(props, l.opts.BrokerConfig)
	props["broker.id"] = strconv.Itoa(int(n.id))
	props["listeners"] = "PLAINTEXT://" + n.Addr()
	props["zookeeper.connect"] = l.connect
	props["log.dirs"] = filepath.Join(n.dir, "data")
	return props
}

// BrokerImpl is the brokers' implementation: BrokerRebalancelab or BrokerKafka.
func (l *Lab) BrokerImpl() string { return l.opts.Broker }

// KafkaVersion is the Kafka release the brokers run ("3.9.2") with BrokerKafka, else "".
func (l *Lab) KafkaVersion() string { return l.kafkaVersion }

// ZKConnect is the ZooKeeper connect string the brokers use.
func (l *Lab) ZKConnect() string { return l.connect }

// ZooKeeper is the lab's own ZooKeeper, nil when Options.ExternalZK is used.
func (l *Lab) ZooKeeper() *ZooKeeper { return l.zk }

// Brokers returns the brokers in id order (Brokers()[0] has id 1).
func (l *Lab) Brokers() []*BrokerNode { return l.brokers }

// Bootstrap is every broker's address, comma-joined ("127.0.0.1:p1,127.0.0.1:p2").
func (l *Lab) Bootstrap() string {
	addrs := make([]string, len(l.brokers))
	for i, b := range l.brokers {
		addrs[i] = b.Addr()
	}
	return strings.Join(addrs, ",")
}

// Dir is the lab's directory (ZooKeeper and broker data and logs).
func (l *Lab) Dir() string { return l.dir }

// Close stops every broker (gracefully, SIGKILL after 10 s for a process), then ZooKeeper, and removes
// the directory when the lab created it. Safe to call twice.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		for _, b := range l.brokers {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := b.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
		if l.zk != nil {
			errs = append(errs, l.zk.Close())
		}
		if l.ownDir {
			if err := os.RemoveAll(l.dir); err != nil {
				errs = append(errs, fmt.Errorf("lab: remove %s: %w", l.dir, err))
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// BrokerNode is one lab broker. Its id, port and data dir stay fixed across Stop/Kill/Start.
type BrokerNode struct {
	l     *Lab
	id    int32
	port  int
	dir   string
	props map[string]string

	mu sync.Mutex
	b  *broker.Broker // BrokersInProcess, while running
	p  *proc          // BrokersProcess
}

// ID is the broker's broker.id (1-based in the lab).
func (n *BrokerNode) ID() int32 { return n.id }

// Addr is the broker's listener (also advertised), "127.0.0.1:port" (the test host's address with
// Options.Host).
func (n *BrokerNode) Addr() string {
	if h := n.l.opts.Host; h != nil {
		return fmt.Sprintf("%s:%d", h.Addr(), n.port)
	}
	return fmt.Sprintf("127.0.0.1:%d", n.port)
}

// Properties is a copy of the server.properties the broker runs with.
func (n *BrokerNode) Properties() map[string]string { return maps.Clone(n.props) }

// Broker is the in-process broker (BrokersInProcess) while it runs, else nil.
func (n *BrokerNode) Broker() *broker.Broker {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b
}

// PID is the broker process's id (BrokersProcess) while it runs, else 0.
func (n *BrokerNode) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p == nil || n.p.exited() {
		return 0
	}
	return n.p.pid()
}

// LogPath is the broker process's stdout+stderr log (BrokersProcess, BrokerKafka).
func (n *BrokerNode) LogPath() string { return filepath.Join(n.dir, "broker.log") }

// Running reports whether the broker is running.
func (n *BrokerNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked()
}

func (n *BrokerNode) runningLocked() bool {
	return n.b != nil || (n.p != nil && !n.p.exited())
}

// Start starts the broker (again) with the same id, port and data dir, and returns once it is
// listening and registered in ZooKeeper. It fails as broker.Start does (no ZooKeeper session within
// zookeeper.connection.timeout.ms, broker.id held by another live session, ...), the broker stopped.
// A running broker is left alone. Errors of a process carry its log tail.
func (n *BrokerNode) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultBrokerStartTimeout)
		defer cancel()
	}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	if n.l.opts.Broker == BrokerKafka {
		return n.startKafka(ctx)
	}
	if n.l.opts.BrokersAs == BrokersProcess {
		return n.startProcess(ctx)
	}
	cfg, err := broker.ConfigFromProperties(n.props)
	if err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	// Every goroutine the broker starts carries the profiler label BrokerProfileLabel (goroutines
	// inherit their creator's labels), so that a CPU profile of this process tells the broker's
	// (its request handlers and group coordinator) CPU from the members' (bench storm's coordinator CPU).
	var b *broker.Broker
	pprof.Do(ctx, pprof.Labels(BrokerProfileLabel, strconv.Itoa(int(n.id))), func(ctx context.Context) {
		b, err = broker.Start(ctx, cfg, n.l.opts.Log, n.l.opts.BrokerOptions...)
	})
	if err != nil {
		return fmt.Errorf("lab: %w", err) // broker.Start's errors name the broker
	}
	n.b = b
	return nil
}

// startProcess runs `BrokerBinary broker --id N --zk Z --listen A --data D --config k=v ...` and waits
// for the first stdout line ({"broker_id":...}), printed once broker.Start has returned.
func (n *BrokerNode) startProcess(ctx context.Context) error {
	argv := []string{n.l.opts.BrokerBinary, "broker",
		"--id", n.props["broker.id"], "--zk", n.props["zookeeper.connect"],
		"--listen", n.Addr(), "--data", n.props["log.dirs"]}
	for _, k := range slices.Sorted(maps.Keys(n.props)) {
		switch k {
		case "broker.id", "zookeeper.connect", "listeners", "log.dirs":
			continue
		}
		argv = append(argv, "--config", k+"="+n.props[k])
	}
	if h := n.l.opts.Host; h != nil {
		argv = h.Argv(argv...)
	}
	var off int64
	if st, err := os.Stat(n.LogPath()); err == nil {
		off = st.Size()
	}
	p, err := startProc(argv, n.dir, os.Environ(), n.LogPath())
	if err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	n.p = p
	n.l.log.WithFields(logrus.Fields{"broker": n.id, "pid": p.pid(), "addr": n.Addr()}).Info("broker process started")
	err = p.waitUp(ctx, 50*time.Millisecond, fmt.Sprintf("broker %d's first stdout line", n.id), func() bool { return upLineAfter(n.LogPath(), off) })
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("lab: broker %d process exited (%v) before it was up; log tail:\n%s", n.id, p.err, p.logTail())
	case err != nil:
		return fmt.Errorf("lab: broker %d process not up: %w; log tail:\n%s", n.id, err, p.logTail())
	}
	return nil
}

// upLineAfter reports whether the file has, after byte off, the broker command's first stdout line: a
// JSON object with a "broker_id" key.
func upLineAfter(path string, off int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var up map[string]json.RawMessage
		if strings.HasPrefix(sc.Text(), "{") && json.Unmarshal(sc.Bytes(), &up) == nil && up["broker_id"] != nil {
			return true
		}
	}
	return false
}

// Stop stops the broker gracefully (broker.Close: ZooKeeper session closed, logs flushed; for a
// process SIGTERM, then SIGKILL if ctx ends first). Stopping a stopped broker is a no-op.
func (n *BrokerNode) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.b != nil {
		err := n.b.Close()
		n.b = nil
		if err != nil {
			return fmt.Errorf("lab: broker %d: close: %w", n.id, err)
		}
		return nil
	}
	if n.p != nil && !n.p.exited() {
		return n.p.stop(ctx)
	}
	return nil
}

// ErrKillInProcess: an in-process broker cannot be killed like a process; use BrokersAs "process"
// (Kafka brokers are always processes).
var ErrKillInProcess = errors.New(`lab: Kill needs BrokersAs "process" (an in-process broker shares this process; Stop closes it gracefully)`)

// Kill kills the broker process with SIGKILL (no goodbye: its ZooKeeper session stays until it
// expires, unflushed data is lost) and waits for it to exit. In-process brokers: ErrKillInProcess.
func (n *BrokerNode) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.l.opts.BrokersAs != BrokersProcess {
		return ErrKillInProcess
	}
	if n.p != nil && !n.p.exited() {
		n.l.log.WithFields(logrus.Fields{"broker": n.id, "pid": n.p.pid()}).Info("kill -9 broker")
		n.p.signal(syscall.SIGKILL)
		<-n.p.done
	}
	return nil
}

// Host is the test host ZooKeeper and the brokers run in (Options.Host), or nil.
func (l *Lab) Host() *Host { return l.opts.Host }
