package members

// The zk era's Kafka member (Kafka.NewOldConnector; the runner's --members kafka, or the even members
// of mixed): the
// real Kafka 0.8.2.2 ZookeeperConsumerConnector in a JVM, the harness of interop/kafka-0.8.2
// (lab.OldConsumerMain) with one stream, consumer.id = the member's name, the era's properties
// (zookeeper.session.timeout.ms, rebalance.backoff.ms, auto.commit.interval.ms, the scenario's own)
// as --config. Its ZooKeeper session goes through a lab.ZKCountingProxy of its own, which writes the
// member's zk_op and zk_watch records; the harness's JSON lines write the rest (ocTranslator):
//   - rebalance_begin: the connector's "begin rebalancing ... try #0" (a retry's "try #n" opens no new
//     rebalance); rebalance_end{ok, attempt}: its "end rebalancing ... try #n", ok when that try
//     reached updateFetcher ("selected partitions", logged only once every claim succeeded);
//   - assigned: at "selected partitions", the full set its thread claimed in that try ("successfully
//     owned partition"), also when empty;
//   - revoked: the owner znodes it deletes (releasePartitionOwnership, after closeFetchers committed),
//     as the proxy sees each delete of /consumers/<g>/owners/<t>/<p> it owns;
//   - deliver: each "delivered" line (the message handed to the application's stream);
//   - zk_op{op: read|write, path, result}: every getData, getChildren(2), exists (read) and create,
//     setData, delete (write) request, at the proxy's time; a create of an owner znode answered
//     NODEEXISTS is result conflict (0.8.2.2 retries the attempt; it would take a node holding its own
//     thread id as a success, which only a ZooKeeper retry after a connection loss leaves behind);
//   - zk_watch{path, type}: every watch notification (xid -1) the server sends it.
//
// The connector auto-commits to ZooKeeper (setData on /consumers/<g>/offsets/<t>/<p>, counted in
// zk_offset_writes) and the harness reports no commit, so the commit figures are n/a (the runner's
// figure options say so).
// A graceful stop is the harness's "stop" line on stdin (connector.shutdown(): the last commit, then
// closeSession); a crash is SIGKILL.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// ocTranslator turns one old-connector incarnation's harness lines and proxy events into records.
type ocTranslator struct {
	rec    *timeline.Recorder
	chroot string // of zookeeper.connect: stripped from the proxy's paths
	owners string // /consumers/<group>/owners/

	mu       sync.Mutex
	owned    map[string][]int32 // as last assigned, less what it released since
	claims   map[string][]int32 // this try's claims
	inReb    bool
	selected bool
	attempt  int
}

func newOCTranslator(rec *timeline.Recorder, chroot, group string) *ocTranslator {
	return &ocTranslator{rec: rec, chroot: chroot, owners: "/consumers/" + group + "/owners/",
		owned: map[string][]int32{}, claims: map[string][]int32{}}
}

// line translates one harness line (lab.OldConsumerEvent); anything else is ignored.
func (t *ocTranslator) line(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var ev lab.OldConsumerEvent
	if err := json.Unmarshal(b, &ev); err != nil || ev.Event == "" {
		return
	}
	ts := ev.TS
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Event {
	case "rebalance_begin":
		if !t.inReb {
			t.inReb = true
			t.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.RebalanceBegin})
		}
		t.claims, t.selected, t.attempt = map[string][]int32{}, false, ev.Attempt+1
	case "owned":
		if !slices.Contains(t.claims[ev.Topic], ev.Partition) {
			t.claims[ev.Topic] = append(t.claims[ev.Topic], ev.Partition)
		}
	case "selected":
		t.selected = true
		full := map[string][]int32{}
		for tp, ps := range t.claims {
			full[tp] = slices.Clone(ps)
		}
		t.owned = full
		t.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Assigned, Partitions: sortedParts(t.claims)})
		t.claims = map[string][]int32{}
	case "rebalance_end":
		if !t.inReb {
			return
		}
		attempt := ev.Attempt + 1
		if attempt < t.attempt {
			attempt = t.attempt
		}
		t.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.RebalanceEnd, OK: timeline.Bool(t.selected), Attempt: attempt})
		if t.selected {
			t.inReb = false
		}
	case "delivered":
		t.rec.Emit(timeline.Record{TsMs: ts, Kind: timeline.Deliver, Topic: ev.Topic,
			Partition: timeline.I32(ev.Partition), Offset: timeline.I64(ev.Offset)})
	}
}

// zk records one proxy event of the member's ZooKeeper connection.
func (t *ocTranslator) zk(ev lab.ZKProxyEvent) {
	path := ev.Path
	if t.chroot != "" {
		if !strings.HasPrefix(path, t.chroot+"/") && path != t.chroot {
			return // outside the chroot: not the connector's
		}
		path = strings.TrimPrefix(path, t.chroot)
	}
	switch ev.Kind {
	case lab.ZKProxyRead:
		t.rec.Emit(timeline.Record{Kind: timeline.ZKOp, Op: "read", Path: path})
	case lab.ZKProxyWrite:
		res := ""
		if ev.Result == lab.ZKProxyNodeExists && strings.HasPrefix(path, t.owners) {
			res = timeline.ZKOwnerConflict
		}
		if ev.Op == "delete" && strings.HasPrefix(path, t.owners) {
			t.release(path)
		}
		t.rec.Emit(timeline.Record{Kind: timeline.ZKOp, Op: "write", Path: path, Result: res})
	case lab.ZKProxyWatch:
		t.rec.Emit(timeline.Record{Kind: timeline.ZKWatch, Path: path, Type: ev.Op})
	}
}

// release: the connector deletes the owner znode <owners><topic>/<p>: a revocation when it owns it.
func (t *ocTranslator) release(path string) {
	rest := strings.TrimPrefix(path, t.owners)
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return
	}
	topic := rest[:i]
	p, err := strconv.ParseInt(rest[i+1:], 10, 32)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.owned[topic], int32(p)) {
		return // a claim of a failed try, never assigned
	}
	t.owned[topic] = slices.DeleteFunc(t.owned[topic], func(x int32) bool { return x == int32(p) })
	t.rec.Emit(timeline.Record{Kind: timeline.Revoked, Partitions: map[string][]int32{topic: {int32(p)}}})
}

// ocConsumer is the runner's handle on one old-connector JVM.
type ocConsumer struct {
	*procConsumer
	tr    *ocTranslator
	proxy *lab.ZKCountingProxy
}

func (c *ocConsumer) Run(ctx context.Context) error {
	defer c.proxy.Close()
	return c.procConsumer.Run(ctx)
}

// Stop: graceful, the harness's "stop" line (connector.shutdown()) and a wait for the exit (SIGKILL
// after memberStopWait); not graceful, SIGKILL.
func (c *ocConsumer) Stop(graceful bool) {
	p := c.procConsumer
	if !graceful {
		p.Stop(false)
		return
	}
	<-p.started
	p.mu.Lock()
	if p.stopReq == "" {
		p.stopReq = "stop"
	}
	stdin := p.stdin
	p.mu.Unlock()
	if stdin != nil {
		_, _ = io.WriteString(stdin, "stop\n")
		if awaitStop(p.log, "old connector did not stop within 60 s of its stop line: killed", p.exited) {
			return
		}
	}
	p.signal("sigkill", 9)
}

// ZKSession is the session the connector opened through its proxy.
func (c *ocConsumer) ZKSession() int64 {
	select {
	case <-c.exited:
		return 0
	default:
	}
	return c.proxy.SessionID()
}

// ocArgv is the harness's command line for props (Props' for the zk era), ZooKeeper at zk.
func ocArgv(java, classpath, zk, topic string, props map[string]string) []string {
	argv := append([]string{java}, lab.OldConsumerJVMFlags...)
	argv = append(argv, "-Xss512k", "-cp", filepath.Join(classpath, "*"), lab.OldConsumerMain,
		"--zookeeper", zk, "--group", props["group.id"], "--topic", topic, "--streams", "1",
		"--consumer-id", props["consumer.id"])
	keys := make([]string, 0, len(props))
	for k := range props {
		switch k {
		case "zookeeper.connect", "group.id", "consumer.id":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		argv = append(argv, "--config", k+"="+props[k])
	}
	return argv
}

// splitZKConnect is the first server of a zookeeper.connect string and its chroot ("" or "/path").
func splitZKConnect(connect string) (first, chroot string) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		if chroot == "/" {
			chroot = ""
		}
	}
	first, _, _ = strings.Cut(hosts, ",")
	return first, chroot
}

// NewOldConnector makes the runtime of a 0.8.2.2 connector member (zk era), started by its Run: its
// ZooKeeper session goes through a counting proxy of its own (started here) to the first server of
// zookeeper.connect, and the harness's lines and the proxy's events go to c.Rec as records. Errors: no
// connector classpath (interop/kafka-0.8.2 not built), a proxy that cannot listen.
func (k *Kafka) NewOldConnector(c JVMConfig) (Runtime, error) {
	name := c.Name
	if k.oldClasspath == "" {
		return nil, fmt.Errorf("kafka member %s: %v", name, k.oldErr)
	}
	upstream, chroot := splitZKConnect(c.Props["zookeeper.connect"])
	proxy, err := lab.StartZKCountingProxy(upstream)
	if err != nil {
		return nil, err
	}
	tr := newOCTranslator(c.Rec, chroot, c.Props["group.id"])
	proxy.OnEvent = tr.zk
	argv := ocArgv(k.java, k.oldClasspath, proxy.Addr+chroot, c.Topic, c.Props)
	p := newProcConsumer(name, argv, c.Rec.Sink, c.Log, c.OnExit)
	p.onLine = tr.line
	return &ocConsumer{procConsumer: p, tr: tr, proxy: proxy}, nil
}

// oldConsumerVersion is the connector's version from its classpath (kafka_2.11-<v>.jar).
func oldConsumerVersion(classpath string) string {
	jars, _ := filepath.Glob(filepath.Join(classpath, "kafka_2.11-*.jar"))
	for _, j := range jars {
		if v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(j), "kafka_2.11-"), ".jar"); v != "" && !strings.Contains(v, "-") {
			return v
		}
	}
	return ""
}
