package lab

// Kafka Connect 3.9 distributed workers beside the lab's broker (issue 17): StartConnectWorker runs
// `java -cp 'interop/connect-3.9/target/lib/*' org.apache.kafka.connect.cli.ConnectDistributed
// worker.properties` with the lab's timings, and ConnectREST drives it over Connect's REST API. The
// classpath comes from the interop build (`make deps`); nothing is downloaded at run time.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// ConnectModule is the interop build's module holding Connect's runtime classpath and the
// verifiable connectors (io.github.rebalancelab.connect.*).
const ConnectModule = "connect-3.9"

// ConnectClasspathEnv overrides where the Connect classpath is looked for (a directory of jars).
const ConnectClasspathEnv = "REBALANCELAB_CONNECT_CLASSPATH"

// The verifiable connectors of interop/connect-3.9 (their task count follows tasks.max).
const (
	VerifiableSourceConnector = "io.github.rebalancelab.connect.VerifiableSourceConnector"
	VerifiableSinkConnector   = "io.github.rebalancelab.connect.VerifiableSinkConnector"
)

// ConnectHeapOpts bounds each worker JVM (Connect's start script: -Xmx2G); the lab runs up to three
// beside the broker on a 2-core machine.
var ConnectHeapOpts = []string{"-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// ConnectLabSettings are the worker.properties keys every lab worker gets under
// ConnectWorkerOptions.Config (Kafka 3.9's defaults in brackets): the lab's timings and a
// one-broker cluster's internal topics.
var ConnectLabSettings = map[string]string{
	"session.timeout.ms":                "2000",  // [10000] the lab's consumers' (ShortConsumerTimings)
	"heartbeat.interval.ms":             "500",   // [3000]
	"rebalance.timeout.ms":              "10000", // [60000] how long a rebalance waits for workers to rejoin
	"scheduled.rebalance.max.delay.ms":  "3000",  // [300000] sessioned/compatible: a departed worker's tasks wait this long
	"task.shutdown.graceful.timeout.ms": "2000",  // [5000]
	"offset.flush.interval.ms":          "1000",  // [60000] source offsets committed every second
	"config.storage.replication.factor": "1",     // [3] the Connect lab has one broker
	"offset.storage.replication.factor": "1",
	"status.storage.replication.factor": "1",
	"offset.storage.partitions":         "5", // [25]
	"status.storage.partitions":         "1", // [5]
	"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
	"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
	// [hybrid_warn] Scan the classpath only (no ServiceLoader manifests to check): faster start.
	"plugin.discovery":    "only_scan",
	"metadata.max.age.ms": "5000", // [300000]
}

// Connect's internal topics under the lab's names (ConnectWorkerOptions.GroupID prefixes them).
const (
	ConnectConfigTopicSuffix = "-configs"
	ConnectOffsetTopicSuffix = "-offsets"
	ConnectStatusTopicSuffix = "-status"
)

// FindConnectClasspath returns interop/connect-3.9/target/lib ($REBALANCELAB_CONNECT_CLASSPATH when
// set), found as FindKafkaClasspath finds Kafka's; the error wraps ErrNoKafka and names `make deps`.
func FindConnectClasspath() (string, error) {
	return interopModule{module: ConnectModule, env: ConnectClasspathEnv, marker: "connect-runtime-*.jar",
		what: "resolves org.apache.kafka:connect-runtime 3.9.2 and compiles the lab's connectors", err: ErrNoKafka}.classpath()
}

// ConnectWorkerOptions configures StartConnectWorker.
type ConnectWorkerOptions struct {
	Name      string // the worker's name in the lab (its dir, -Drebalancelab.worker, the events' "worker")
	Dir       string // its dir: worker.properties, log4j.properties, worker.log
	Bootstrap string // bootstrap.servers
	GroupID   string // group.id; the internal topics are <GroupID>-configs, -offsets, -status
	// Config: worker.properties keys over ConnectLabSettings (e.g. connect.protocol=eager).
	Config    map[string]string
	Classpath string // default FindConnectClasspath's
	Log       *logrus.Entry
}

// ConnectWorker is one running ConnectDistributed JVM.
type ConnectWorker struct {
	Name string
	URL  string // its REST listener, http://127.0.0.1:PORT
	Dir  string
	p    *proc
	log  *logrus.Entry
}

// StartConnectWorker writes worker.properties and starts the worker; it returns once the REST API
// answers GET / (the herder may still be joining the group). Errors carry the worker log's tail.
func StartConnectWorker(ctx context.Context, o ConnectWorkerOptions) (*ConnectWorker, error) {
	if o.Classpath == "" {
		cp, err := FindConnectClasspath()
		if err != nil {
			return nil, err
		}
		o.Classpath = cp
	}
	if o.Log == nil {
		o.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: connect worker %s: %w", o.Name, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("lab: connect worker %s: %w", o.Name, err)
	}
	props := maps.Clone(ConnectLabSettings)
	maps.Copy(props, map[string]string{
		"bootstrap.servers":         o.Bootstrap,
		"group.id":                  o.GroupID,
		"config.storage.topic":      o.GroupID + ConnectConfigTopicSuffix,
		"offset.storage.topic":      o.GroupID + ConnectOffsetTopicSuffix,
		"status.storage.topic":      o.GroupID + ConnectStatusTopicSuffix,
		"listeners":                 "http://127.0.0.1:" + strconv.Itoa(port),
		"rest.advertised.host.name": "127.0.0.1",
		"rest.advertised.port":      strconv.Itoa(port),
	})
	maps.Copy(props, o.Config)
	var b strings.Builder
	b.WriteString("# Written by the rebalancelab lab for Kafka Connect (distributed).\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	workerProps := filepath.Join(o.Dir, "worker.properties")
	if err := os.WriteFile(workerProps, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(o.Dir, "log4j.properties")
	const l4j = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.reflections=ERROR
log4j.logger.org.apache.kafka.clients.consumer.ConsumerConfig=WARN
log4j.logger.org.apache.kafka.clients.producer.ProducerConfig=WARN
log4j.logger.org.apache.kafka.clients.admin.AdminClientConfig=WARN
log4j.logger.org.apache.kafka.connect.runtime.distributed.DistributedConfig=WARN
`
	if err := os.WriteFile(log4j, []byte(l4j), 0o644); err != nil {
		return nil, err
	}
	argv := append([]string{java}, ConnectHeapOpts...)
	argv = append(argv, "-Djava.awt.headless=true", "-Drebalancelab.worker="+o.Name, "-Dlog4j.configuration=file:"+log4j,
		"-cp", filepath.Join(o.Classpath, "*"), "org.apache.kafka.connect.cli.ConnectDistributed", workerProps)
	logPath := filepath.Join(o.Dir, "worker.log")
	p, err := startProc(argv, o.Dir, os.Environ(), logPath)
	if err != nil {
		return nil, fmt.Errorf("lab: connect worker %s: %w", o.Name, err)
	}
	w := &ConnectWorker{Name: o.Name, URL: "http://127.0.0.1:" + strconv.Itoa(port), Dir: o.Dir, p: p, log: o.Log}
	o.Log.WithFields(logrus.Fields{"worker": o.Name, "pid": p.pid(), "rest": w.URL}).Info("Connect worker process started")
	rest := ConnectREST{URL: w.URL}
	err = p.waitUp(ctx, 200*time.Millisecond, "Connect worker "+o.Name+"'s REST API", func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := rest.do(c, http.MethodGet, "/", nil)
		return err == nil
	})
	switch {
	case errors.Is(err, errExited):
		return nil, fmt.Errorf("lab: Connect worker %s exited (%v) before its REST API answered; log tail (%s):\n%s", o.Name, p.err, logPath, p.logTail())
	case err != nil:
		return nil, fmt.Errorf("lab: Connect worker %s: REST API %s not up: %w; log tail (%s):\n%s", o.Name, w.URL, err, logPath, p.logTail())
	}
	return w, nil
}

// Pid is the worker JVM's process id.
func (w *ConnectWorker) Pid() int { return w.p.pid() }

// LogPath is the worker's log (stdout and stderr).
func (w *ConnectWorker) LogPath() string { return w.p.logPath }

// Exited reports whether the JVM has exited.
func (w *ConnectWorker) Exited() bool { return w.p.exited() }

// Kill sends SIGKILL (kill -9: no LeaveGroup, no task stop) and waits for the exit.
func (w *ConnectWorker) Kill() {
	w.p.kill()
	w.log.WithField("worker", w.Name).Info("Connect worker killed (SIGKILL)")
}

// Stop sends SIGTERM (Connect's shutdown hook stops the tasks and leaves the group) and waits; when
// ctx ends first the JVM is killed.
func (w *ConnectWorker) Stop(ctx context.Context) error { return w.p.stop(ctx) }

// ConnectREST is a client of one worker's REST API (Kafka 3.9's ConnectorsResource).
type ConnectREST struct {
	URL    string
	Client *http.Client // nil: http.DefaultClient
}

// ErrConnectREST is wrapped by the errors of a request answered with a status >= 400.
var ErrConnectREST = errors.New("connect REST")

func (c ConnectREST) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	hc := c.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return out, fmt.Errorf("%w: %s %s: %s: %s", ErrConnectREST, method, path, resp.Status, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// PutConnector creates or updates connector name (PUT /connectors/{name}/config). A worker that is
// not the leader forwards it; during a rebalance Connect answers 409, which is returned.
func (c ConnectREST) PutConnector(ctx context.Context, name string, config map[string]string) error {
	_, err := c.do(ctx, http.MethodPut, "/connectors/"+name+"/config", config)
	return err
}

// ConnectorStatus is GET /connectors/{name}/status.
type ConnectorStatus struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace,omitempty"`
	} `json:"tasks"`
	Type string `json:"type"`
}

// Status returns connector name's status.
func (c ConnectREST) Status(ctx context.Context, name string) (ConnectorStatus, error) {
	var s ConnectorStatus
	b, err := c.do(ctx, http.MethodGet, "/connectors/"+name+"/status", nil)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// StopConnector stops connector name and its tasks (PUT /connectors/{name}/stop, KIP-875; a pause
// would only stop polling).
func (c ConnectREST) StopConnector(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, "/connectors/"+name+"/stop", nil)
	return err
}
