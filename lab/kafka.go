package lab

// The real Kafka 3.9 broker (ZooKeeper mode) as the lab's broker implementation: Options.Broker =
// BrokerKafka starts `java -cp 'interop/kafka-3.9/target/lib/*' kafka.Kafka server.properties` per
// broker, on the lab's own ZooKeeper, with the lab's timings. The classpath comes from the interop
// build (`make deps`); nothing is downloaded at run time.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
)

// Broker implementations for Options.Broker.
const (
	BrokerRebalancelab = "rebalancelab" // this project's broker (default)
	BrokerKafka        = "kafka"        // Apache Kafka 3.9 in ZooKeeper mode, from the interop build
)

// BrokerImplementations lists the values Options.Broker (and the CLI's --broker) accepts.
var BrokerImplementations = []string{BrokerRebalancelab, BrokerKafka}

// KafkaModule is the interop build's module the lab runs for BrokerKafka; its runtime classpath is
// KafkaModule's target/lib under interop/.
const KafkaModule = "kafka-3.9"

// KafkaClasspathEnv overrides where the Kafka classpath is looked for: a directory of jars (the
// interop build's target/lib).
const KafkaClasspathEnv = "REBALANCELAB_KAFKA_CLASSPATH"

// ErrNoKafka is wrapped by the error returned when the Kafka 3.9 classpath is missing.
var ErrNoKafka = errors.New("no Kafka 3.9 classpath")

// kafkaStamp is the file the interop build (scripts/deps.sh) writes in a module's target/lib once
// every jar is there.
const kafkaStamp = ".complete"

// KafkaHeapOpts bounds each Kafka JVM (Kafka's start script reads KAFKA_HEAP_OPTS, default -Xmx1G
// -Xms1G); the lab's machines are small and run one JVM per broker beside ZooKeeper.
var KafkaHeapOpts = []string{"-Xmx512m", "-Xms128m"}

// KafkaSmallLabSettings are server.properties keys every lab Kafka broker gets, under
// Options.BrokerConfig (Kafka 3.9's defaults in brackets): a small lab on a 2-core machine.
var KafkaSmallLabSettings = map[string]string{
	"num.network.threads":               "2", // [3]
	"num.io.threads":                    "2", // [8]
	"num.recovery.threads.per.data.dir": "1", // [1]
	"background.threads":                "2", // [10]
	// [134217728] The log cleaner (compacting __consumer_offsets) allocates this at start; 16 MiB
	// fits the bounded heap.
	"log.cleaner.dedupe.buffer.size": "16777216",
}

// FindKafkaClasspath returns the directory of the Kafka 3.9 broker's jars: $REBALANCELAB_KAFKA_CLASSPATH
// when set, else interop/kafka-3.9/target/lib of the repository holding the working directory or
// this executable (found by walking up to a directory with interop/kafka-3.9/pom.xml). A directory
// the interop build did not finish (no stamp) counts as missing. The error wraps ErrNoKafka and
// names the `make deps` step that builds it.
func FindKafkaClasspath() (string, error) {
	return interopModule{module: KafkaModule, env: KafkaClasspathEnv, marker: "kafka_2.13-*.jar",
		what: "resolves the pinned org.apache.kafka:kafka_2.13 3.9.x", err: ErrNoKafka}.classpath()
}

// KafkaVersionOf is the Kafka release in a classpath directory, from its kafka_2.13-<version>.jar
// ("3.9.2").
func KafkaVersionOf(classpath string) (string, error) {
	jars, _ := filepath.Glob(filepath.Join(classpath, "kafka_2.13-*.jar"))
	for _, j := range jars {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(j), "kafka_2.13-"), ".jar")
		if v != "" && !strings.ContainsAny(v, "-") { // not -sources, -test
			return v, nil
		}
	}
	return "", fmt.Errorf("lab: %w: no kafka_2.13-<version>.jar in %s", ErrNoKafka, classpath)
}

// kafkaProps adds to props (the lab's keys for every broker) what a small lab of real Kafka brokers
// needs: KafkaSmallLabSettings under the caller's keys, and the internal topics' replication fitted
// to the number of brokers (offsets.topic.replication.factor [3] is not capped by the live brokers:
// until that many are up, FindCoordinator answers COORDINATOR_NOT_AVAILABLE).
func (l *Lab) kafkaProps(props map[string]string) {
	rf := strconv.Itoa(min(l.opts.Brokers, 3))
	minISR := strconv.Itoa(min(l.opts.Brokers, 2))
	fitted := map[string]string{
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            minISR, // [2]
	}
	for k, v := range KafkaSmallLabSettings {
		if _, ok := l.opts.BrokerConfig[k]; !ok {
			props[k] = v
		}
	}
	for k, v := range fitted {
		if _, ok := l.opts.BrokerConfig[k]; !ok {
			props[k] = v
		}
	}
}

// writeKafkaConfig writes server.properties and log4j.properties (Kafka's log4j 1 / reload4j
// format: everything to stdout, which the lab sends to LogPath) in the broker's dir.
func (n *BrokerNode) writeKafkaConfig() (serverProps, log4j string, err error) {
	var b strings.Builder
	b.WriteString("# Written by the rebalancelab lab for Kafka " + n.l.kafkaVersion + " (ZooKeeper mode).\n")
	for _, k := range slices.Sorted(maps.Keys(n.props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, n.props[k])
	}
	serverProps = filepath.Join(n.dir, "server.properties")
	if err := os.WriteFile(serverProps, []byte(b.String()), 0o644); err != nil {
		return "", "", err
	}
	log4j = filepath.Join(n.dir, "log4j.properties")
	const l4j = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
`
	if err := os.WriteFile(log4j, []byte(l4j), 0o644); err != nil {
		return "", "", err
	}
	return serverProps, log4j, nil
}

// startKafka starts the Kafka JVM and waits until it is ready: its /brokers/ids/<id> registration
// exists, an ApiVersions round trip on its listener answers without error, and its Metadata answer
// lists itself (Kafka fills a broker's metadata cache from the controller's UpdateMetadata, after
// the listener opens: until then a client bootstrapping from it sees no brokers). A registration left
// by a previous run of this broker (killed, its ZooKeeper session not yet expired) is waited out
// first, since Kafka refuses to start while another session holds its id. Errors carry the tail of
// the broker's log.
func (n *BrokerNode) startKafka(ctx context.Context) error {
	serverProps, log4j, err := n.writeKafkaConfig()
	if err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	java, err := findJava()
	if err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	// zookeeper.connect is "host:port,...[/chroot]": the chroot prefixes every path.
	servers, chroot, _ := strings.Cut(n.l.connect, "/")
	if chroot != "" {
		chroot = "/" + strings.TrimSuffix(chroot, "/")
	}
	zc, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(zklog.New(n.l.log)))
	if err != nil {
		return fmt.Errorf("lab: broker %d: ZooKeeper %s: %w", n.id, n.l.connect, err)
	}
	defer zc.Close()
	idPath := chroot + "/brokers/ids/" + strconv.Itoa(int(n.id))
	every100ms := poll.Backoff{First: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	if err := every100ms.UntilErr(ctx, 0, idPath+" to be free", func() error {
		ok, _, err := zc.Exists(idPath)
		if err == nil && ok {
			err = errors.New("it exists")
		}
		return err
	}); err != nil {
		return fmt.Errorf("lab: broker %d: %s still held by an earlier session: %w", n.id, idPath, err)
	}

	argv := append([]string{java}, KafkaHeapOpts...)
	argv = append(argv, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
		"-Dlog4j.configuration=file:"+log4j, "-Dkafka.logs.dir="+filepath.Join(n.dir, "logs"),
		"-cp", filepath.Join(n.l.kafkaClasspath, "*"), "kafka.Kafka", serverProps)
	if h := n.l.opts.Host; h != nil {
		argv = h.Argv(argv...)
	}
	p, err := startProc(argv, n.dir, os.Environ(), n.LogPath())
	if err != nil {
		return fmt.Errorf("lab: broker %d: %w", n.id, err)
	}
	n.p = p
	n.l.log.WithFields(logrus.Fields{"broker": n.id, "pid": p.pid(), "addr": n.Addr(), "kafka": n.l.kafkaVersion}).Info("Kafka broker process started")
	err = p.waitUp(ctx, 100*time.Millisecond, fmt.Sprintf("Kafka broker %d", n.id), func() bool {
		ok, _, err := zc.Exists(idPath)
		return err == nil && ok && kafkaReady(ctx, n.Addr(), n.id)
	})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("lab: Kafka broker %d process exited (%v) before it was up; log tail (%s):\n%s", n.id, p.err, n.LogPath(), p.logTail())
	case err != nil:
		return fmt.Errorf("lab: Kafka broker %d not up (%s registered, ApiVersions and a Metadata answer listing it on %s): %w; log tail (%s):\n%s",
			n.id, idPath, n.Addr(), err, n.LogPath(), p.logTail())
	}
	return nil
}

// kafkaReady reports whether an ApiVersions v3 round trip on addr answers with error code 0 and a
// Metadata v1 answer lists broker id.
func kafkaReady(ctx context.Context, addr string, id int32) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, nil, addr, "rebalancelab-lab")
	if err != nil {
		return false
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "rebalancelab-lab", "1"
	resp, err := c.Request(ctx, req)
	if err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		return false
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	md.Topics = []kmsg.MetadataRequestTopic{} // no topics: brokers and controller only
	mresp, err := c.Request(ctx, md)
	if err != nil {
		return false
	}
	for _, b := range mresp.(*kmsg.MetadataResponse).Brokers {
		if b.NodeID == id {
			return true
		}
	}
	return false
}

// findJava is $JAVA_HOME/bin/java, else java on PATH.
func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if p := filepath.Join(jh, "bin", "java"); isExecutable(p) {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(dir, "java"); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no java ($JAVA_HOME unset or without bin/java, none on PATH); run `make deps` (it installs openjdk-17-jdk-headless)", ErrNoKafka)
}

// FindJava is the java the lab runs its JVMs with (Kafka's brokers and tools, Streams, Connect, the
// old connector): $JAVA_HOME/bin/java, else java on PATH; the error wraps ErrNoKafka and names the
// `make deps` step that installs one.
func FindJava() (string, error) { return findJava() }

// KafkaDefaultHeapOpts is the heap Kafka's start script gives a broker when KAFKA_HEAP_OPTS is unset
// (bin/kafka-server-start.sh); KafkaHeapOpts is the lab's.
var KafkaDefaultHeapOpts = []string{"-Xmx1G", "-Xms1G"}

// KafkaDefaults are Kafka 3.9's defaults (KafkaConfig / the ConfigDefs it includes) of the keys the
// lab may set on a broker (ShortTimings, KafkaSmallLabSettings, the fitted replication keys,
// LabBrokerSettings), so that a summary can print each lab value beside the default it replaces.
var KafkaDefaults = map[string]string{
	"zookeeper.session.timeout.ms":             "18000",
	"group.min.session.timeout.ms":             "6000",
	"group.initial.rebalance.delay.ms":         "3000",
	"num.network.threads":                      "3",
	"num.io.threads":                           "8",
	"num.recovery.threads.per.data.dir":        "1",
	"background.threads":                       "10",
	"log.cleaner.dedupe.buffer.size":           "134217728",
	"offsets.topic.replication.factor":         "3",
	"transaction.state.log.replication.factor": "3",
	"transaction.state.log.min.isr":            "2",
}

// KafkaSettingsSummary is one line naming how a lab Kafka broker with server.properties props runs
// beside Kafka's shipped defaults: its heap (KafkaHeapOpts; Kafka's KafkaDefaultHeapOpts in
// brackets), then every key of props that KafkaDefaults knows and that differs from its default, as
// key=value [default], sorted, then any other key of props that is not per-broker wiring (broker.id,
// listeners, zookeeper.connect, log.dirs), as key=value. Benchmarks print it beside each ratio against
// Kafka: a peer run with a reduced heap and fewer threads is not Kafka as shipped.
func KafkaSettingsSummary(props map[string]string) string {
	parts := []string{fmt.Sprintf("heap %s [%s], G1GC MaxGCPauseMillis=20", strings.Join(KafkaHeapOpts, " "), strings.Join(KafkaDefaultHeapOpts, " "))}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		switch k {
		case "broker.id", "listeners", "zookeeper.connect", "log.dirs":
			continue
		}
		def, known := KafkaDefaults[k]
		switch {
		case !known:
			parts = append(parts, k+"="+props[k])
		case def != props[k]:
			parts = append(parts, fmt.Sprintf("%s=%s [%s]", k, props[k], def))
		}
	}
	return strings.Join(parts, ", ")
}
