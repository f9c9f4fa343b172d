package members

// Kafka's own members (Kafka.NewVerifiableConsumer; the runner's --members kafka or mixed): in the
// coordinator eras a member is a Kafka 3.9 `org.apache.kafka.tools.VerifiableConsumer` JVM (the consumer Kafka's system
// tests drive, kafka-tools on the interop build's classpath) run as a child process, with
// --group-protocol classic, the era's assignor, --group-instance-id for static members, the lab's
// session timeout and --enable-autocommit when the member auto-commits; the other properties (client.id
// = the scenario's member name, heartbeat and auto-commit intervals, ...) go in its --consumer.config.
// Its JSON events on stdout become the project's timeline records (vcTranslator), so that every figure
// and invariant is computed from them as from ours. SIGTERM is the graceful stop (its shutdown hook
// wakes the poll loop and closes the consumer: a last commit without auto-commit, then LeaveGroup
// unless static); SIGKILL is the crash.
//
// What VerifiableConsumer does not say, and how the records are derived:
//   - it has no rebalance events: rebalance_begin is its startup_complete (it subscribes and joins on
//     its first poll), the coordinator's PreparingRebalance of a generation that lists the member (the
//     group observer, broker.WithGroupObserver: our broker only), or its partitions_revoked, whichever
//     comes first; rebalance_end{ok} is its partitions_assigned. A failed JoinGroup/SyncGroup round is
//     invisible, so rebalance_attempts and rebalance_failures are not measured (n/a: the runner's
//     figure options say so), nor are group_requests (it reports none);
//   - with auto-commit it reports no commit (its offsets_committed comes from its own commitSync), so
//     the commit figures and the invariants that read commits are n/a then;
//   - records_consumed gives per-partition offset ranges per poll, expanded to one deliver per offset:
//     exact for the lab's topics (neither compacted nor transactional, so a range has no holes; the
//     count is checked against the range);
//   - partitions_assigned of a cooperative member lists only the added partitions: the translator
//     keeps the owned set (less the revoked, plus the added) and records the FULL set, as the rules of
//     the timeline ask; no generation is known.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// VerifiableConsumerClass is the Kafka 3.9 tool a Kafka member runs.
const VerifiableConsumerClass = "org.apache.kafka.tools.VerifiableConsumer"

// VerifiableConsumerHeap bounds each member JVM (2 cores and several members per run).
var VerifiableConsumerHeap = []string{"-Xmx128m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}

// vcAssignors maps the project's assignor names to the Java classes VerifiableConsumer takes.
var vcAssignors = map[string]string{
	"range":              "org.apache.kafka.clients.consumer.RangeAssignor",
	"roundrobin":         "org.apache.kafka.clients.consumer.RoundRobinAssignor",
	"sticky":             "org.apache.kafka.clients.consumer.StickyAssignor",
	"cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}

// AutoCommits says whether a coordinator-era member's properties auto-commit (enable.auto.commit;
// Kafka's default: true). A VerifiableConsumer that auto-commits reports no commit.
func AutoCommits(props map[string]string) bool { return props["enable.auto.commit"] != "false" }

// vcArgv is the command line of a VerifiableConsumer member for props (Props'), its other
// properties written to a --consumer.config file in dir (client.id = name).
func vcArgv(java, classpath, dir, name, topic string, props map[string]string) ([]string, error) {
	strategy := props["partition.assignment.strategy"]
	class, ok := vcAssignors[strategy]
	if !ok {
		return nil, fmt.Errorf("kafka member %s: assignor %q has no Kafka class here", name, strategy)
	}
	argv := append([]string{java}, VerifiableConsumerHeap...)
	argv = append(argv, "-Dlog4j.configuration=file:"+filepath.Join(dir, "log4j.properties"),
		"-cp", filepath.Join(classpath, "*"), VerifiableConsumerClass,
		"--bootstrap-server", props["bootstrap.servers"], "--group-id", props["group.id"], "--topic", topic,
		"--group-protocol", spec.GroupProtocolClassic, "--assignment-strategy", class, "--reset-policy", props["auto.offset.reset"])
	if id := props["group.instance.id"]; id != "" {
		argv = append(argv, "--group-instance-id", id)
	}
	if s := props["session.timeout.ms"]; s != "" {
		argv = append(argv, "--session-timeout", s)
	}
	if AutoCommits(props) {
		argv = append(argv, "--enable-autocommit")
	}
	var conf strings.Builder
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "bootstrap.servers", "group.id", "partition.assignment.strategy", "group.instance.id",
			"session.timeout.ms", "enable.auto.commit", "auto.offset.reset", "client.id":
			continue
		}
		fmt.Fprintf(&conf, "%s=%s\n", k, props[k])
	}
	fmt.Fprintf(&conf, "client.id=%s\n", name)
	cf := filepath.Join(dir, name+".properties")
	if err := os.WriteFile(cf, []byte(conf.String()), 0o644); err != nil {
		return nil, err
	}
	log4j := "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" +
		"log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return nil, err
	}
	return append(argv, "--consumer.config", cf), nil
}

// vcEvent is one line of VerifiableConsumer's stdout (its ConsumerEvent classes as Jackson writes them).
type vcEvent struct {
	Timestamp  int64  `json:"timestamp"`
	Name       string `json:"name"`
	Count      int64  `json:"count"`
	Success    *bool  `json:"success"`
	Error      string `json:"error"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Count     int64  `json:"count"`
		MinOffset int64  `json:"minOffset"`
		MaxOffset int64  `json:"maxOffset"`
	} `json:"partitions"`
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	} `json:"offsets"`
}

// vcTranslator turns one VerifiableConsumer incarnation's events into timeline records (rec: the
// member's recorder, behind its gate). Safe for the stdout reader and the group observer at once.
type vcTranslator struct {
	rec *timeline.Recorder

	mu        sync.Mutex
	owned     map[string][]int32
	inReb     bool
	lastEnd   int64 // ts_ms of the last rebalance_end: an observer's older PreparingRebalance is past
	lastPoll  int64 // ts_ms of the last records_consumed: the sent_ms of the commitSync that follows it
	stopping  bool  // SIGTERM sent: the revocation of close() is a leave, not a rebalance
	warnings  []string
	delivered int64
}

func newVCTranslator(rec *timeline.Recorder) *vcTranslator {
	return &vcTranslator{rec: rec, owned: map[string][]int32{}}
}

func (v *vcTranslator) beginLocked(ts int64) {
	if v.inReb || v.stopping {
		return
	}
	v.inReb = true
	v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.RebalanceBegin})
}

// preparing: the coordinator moved the member's group to PreparingRebalance at ts (the observer).
func (v *vcTranslator) preparing(ts int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ts >= v.lastEnd { // the same ms as the last end: the next generation's (a generation's PreparingRebalance precedes its assignment)
		v.beginLocked(ts)
	}
}

func (v *vcTranslator) setStopping() {
	v.mu.Lock()
	v.stopping = true
	v.mu.Unlock()
}

// line translates one stdout line; lines that are not events (a JVM's own chatter) are ignored.
func (v *vcTranslator) line(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var ev vcEvent
	if err := json.Unmarshal(b, &ev); err != nil || ev.Name == "" {
		return
	}
	ts := ev.Timestamp
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Name {
	case "startup_complete": // subscribe() follows, and the first poll joins
		v.beginLocked(ts)
	case "partitions_revoked":
		v.beginLocked(ts)
		parts := map[string][]int32{}
		for _, p := range ev.Partitions {
			parts[p.Topic] = append(parts[p.Topic], p.Partition)
			v.owned[p.Topic] = slices.DeleteFunc(v.owned[p.Topic], func(x int32) bool { return x == p.Partition })
		}
		if len(parts) > 0 {
			v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Revoked, Partitions: sortedParts(parts)})
		}
	case "partitions_assigned":
		for _, p := range ev.Partitions {
			if !slices.Contains(v.owned[p.Topic], p.Partition) {
				v.owned[p.Topic] = append(v.owned[p.Topic], p.Partition)
			}
		}
		full := map[string][]int32{}
		for t, ps := range v.owned {
			if len(ps) > 0 {
				full[t] = slices.Clone(ps)
			}
		}
		v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Assigned, Partitions: sortedParts(full)})
		if v.inReb {
			v.inReb = false
			v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: 1})
		}
		v.lastEnd = ts
	case "records_consumed":
		v.lastPoll = ts
		for _, p := range ev.Partitions {
			if n := p.MaxOffset - p.MinOffset + 1; n != p.Count {
				v.warnings = append(v.warnings, fmt.Sprintf("%s-%d: %d records in offsets %d..%d (a hole: not exact)",
					p.Topic, p.Partition, p.Count, p.MinOffset, p.MaxOffset))
			}
			for off := p.MinOffset; off <= p.MaxOffset; off++ {
				v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Deliver, Topic: p.Topic,
					Partition: timeline.I32(p.Partition), Offset: timeline.I64(off)})
				v.delivered++
			}
		}
	case "offsets_committed":
		res, errText := timeline.CommitApplied, ""
		if ev.Success != nil && !*ev.Success {
			res, errText = timeline.CommitRejected, ev.Error
		}
		for _, o := range ev.Offsets {
			v.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Commit, Topic: o.Topic,
				Partition: timeline.I32(o.Partition), Offset: timeline.I64(o.Offset), Result: res, Err: errText,
				SentMs: v.lastPoll, API: "OffsetCommit"})
		}
	}
}

func sortedParts(m map[string][]int32) map[string][]int32 {
	for _, ps := range m {
		slices.Sort(ps)
	}
	return m
}

// vcConsumer is the runner's handle on one VerifiableConsumer process: a procConsumer whose stdout
// the translator reads.
type vcConsumer struct {
	*procConsumer
	tr  *vcTranslator
	dir string
}

func (c *vcConsumer) Stop(graceful bool) {
	if graceful {
		c.tr.setStopping()
	}
	c.procConsumer.Stop(graceful)
}

func (c *vcConsumer) Run(ctx context.Context) error {
	defer os.RemoveAll(c.dir)
	return c.procConsumer.Run(ctx)
}

func (c *vcConsumer) ZKSession() int64 { return 0 }

// Kafka is a run's state for Kafka's members: java and the classpaths of Kafka 3.9's tools and of the
// 0.8.2.2 connector's harness, and the group observer's dispatch to the members of the era running.
type Kafka struct {
	java, classpath string
	// oldClasspath is the 0.8.2.2 connector's (interop/kafka-0.8.2), "" with oldErr when missing.
	oldClasspath string
	oldErr       error

	mu    sync.Mutex
	group string                   // the era's group now running ("" between eras)
	live  map[string]*vcTranslator // client.id (the member name) → the current incarnation's translator
}

// NewKafka finds java and Kafka 3.9's classpath (lab.FindJava, lab.FindKafkaClasspath: errors name
// what is missing) and, if built, the 0.8.2.2 connector's (without it NewOldConnector fails).
func NewKafka() (*Kafka, error) {
	cp, err := lab.FindKafkaClasspath()
	if err != nil {
		return nil, fmt.Errorf("members kafka: %w", err)
	}
	java, err := lab.FindJava()
	if err != nil {
		return nil, fmt.Errorf("members kafka: %w", err)
	}
	k := &Kafka{java: java, classpath: cp, live: map[string]*vcTranslator{}}
	k.oldClasspath, k.oldErr = lab.FindOldConsumerClasspath()
	return k, nil
}

// KafkaVersion is the version of the Kafka 3.9 classpath VerifiableConsumer runs from.
func (k *Kafka) KafkaVersion() (string, error) { return lab.KafkaVersionOf(k.classpath) }

// OldConnectorVersion is the 0.8.2.2 connector's version from its classpath, "" without one.
func (k *Kafka) OldConnectorVersion() string { return oldConsumerVersion(k.oldClasspath) }

// SetGroup names the group of the coordinator era now running, whose PreparingRebalance Observe
// passes to its VerifiableConsumer members ("" at the era's end); it forgets the last era's members.
func (k *Kafka) SetGroup(group string) {
	k.mu.Lock()
	k.group, k.live = group, map[string]*vcTranslator{}
	k.mu.Unlock()
}

// Observe is the broker's group observer (broker.WithGroupObserver): a PreparingRebalance of the
// era's group begins a rebalance for every VerifiableConsumer member it lists.
func (k *Kafka) Observe(ev coordinator.GroupChanged) {
	if ev.State != coordinator.PreparingRebalance {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.group == "" || ev.Group != k.group {
		return
	}
	for _, m := range ev.Members {
		if tr := k.live[m.ClientID]; tr != nil {
			tr.preparing(ev.TimeMs)
		}
	}
}

// JVMConfig configures a member that is one of Kafka's JVMs (NewVerifiableConsumer, NewOldConnector).
// Such a member dials the cluster itself (no links: the runner cannot fault them) and its crash is
// its kill -9.
type JVMConfig struct {
	Member
	// OnExit, when set, gets how the JVM ended, once it has been waited for.
	OnExit func(MemberProcess)
	// OnWarning, when set, gets at the JVM's end each way its records are not exact (a
	// records_consumed range with a hole).
	OnWarning func(string)
}

// NewVerifiableConsumer makes the runtime of a VerifiableConsumer member (coordinator eras), started
// by its Run, whose events go to c.Rec as records. Errors: a temporary directory, or an assignor
// that has no Kafka class.
func (k *Kafka) NewVerifiableConsumer(c JVMConfig) (Runtime, error) {
	name := c.Name
	dir, err := os.MkdirTemp("", "rbl-vc-"+name+"-")
	if err != nil {
		return nil, err
	}
	argv, err := vcArgv(k.java, k.classpath, dir, name, c.Topic, c.Props)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tr := newVCTranslator(c.Rec)
	p := newProcConsumer(name, argv, c.Rec.Sink, c.Log, func(mp MemberProcess) {
		if c.OnExit != nil {
			c.OnExit(mp)
		}
		tr.mu.Lock()
		warnings := slices.Clone(tr.warnings)
		tr.mu.Unlock()
		if c.OnWarning != nil {
			for _, w := range warnings {
				c.OnWarning(w)
			}
		}
	})
	p.onLine = tr.line
	k.mu.Lock()
	k.live[name] = tr
	k.mu.Unlock()
	return &vcConsumer{procConsumer: p, tr: tr, dir: dir}, nil
}
