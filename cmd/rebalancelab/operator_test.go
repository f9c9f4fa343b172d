package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// freeAddr is 127.0.0.1:P with P free a moment ago (for tools that take a fixed address).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// needTool is the path of an operator's tool that scripts/deps.sh installs; missing, the test fails
// with the command that installs it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run `make deps` (apt-get install %s)", name, pkg)
	}
	return p
}

// child is a process a test started; it is stopped (SIGTERM, then SIGKILL after 10 s) at the end
// of the test at the latest.
type child struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// startChild starts name with args, its output in a file in dir (logs quotes it).
func startChild(t *testing.T, dir, name string, args ...string) *child {
	t.Helper()
	f, err := os.CreateTemp(dir, filepath.Base(name)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(name, args...), logPath: f.Name(), exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = f, f
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); f.Close(); close(c.exited) }()
	t.Cleanup(c.stop)
	return c
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 10 s).
func (c *child) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}

func (c *child) logs() string { b, _ := os.ReadFile(c.logPath); return string(b) }

// promQuery asks Prometheus' HTTP API (/api/v1/query) for an instant vector: its samples' values by
// their labels rendered as "{k=v,...}" (sorted by Prometheus); nil when the query matches nothing.
func promQuery(t *testing.T, base, q string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		return nil
	}
	if len(body.Data.Result) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(r.Value[1]), 64)
		out[fmt.Sprint(r.Metric)] = v
	}
	return out
}

// one is the single value of a query that must match one series (NaN-free); ok false otherwise.
func one(m map[string]float64) (float64, bool) {
	if len(m) != 1 {
		return 0, false
	}
	for _, v := range m {
		return v, true
	}
	return 0, false
}

// TestPrometheusScrapesLab: Debian's Prometheus scrapes a running lab — `lab up --metrics-addr`
// (the broker), a `consumer --metrics-addr` (group pg) and a `zkconsumer --metrics-addr` (group zg),
// each alone in its group on topic pt's 2 partitions holding 10 records each — and its HTTP API
// answers: the coordinator completed exactly 1 rebalance and holds 1 Stable group; the 3.9 member
// completed 1 rebalance (rebalance-total) in generation 1 with 2 partitions, records-lag 0 on each;
// the 0.8.2 connector ran 1 syncedRebalance (RebalanceRateAndTime's count), owns 2 partitions,
// ConsumerLag 0 on each; the broker counted 20 messages in.
func TestPrometheusScrapesLab(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Prometheus)
	prom := needTool(t, "prometheus", "prometheus")
	bin := testutil.Binary(t)
	dir := t.TempDir()
	u := startLabUp(t, bin, "--metrics-addr", "127.0.0.1:0")
	var line labUpLine
	select {
	case s := <-u.stdout:
		if err := json.Unmarshal([]byte(s), &line); err != nil || line.Metrics == "" {
			t.Fatalf("lab up's first line %q: want a metrics URL (%v); stderr:\n%s", s, err, u.stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no first line from lab up; stderr:\n%s", u.stderr)
	}
	bootstrap := line.Brokers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "pt"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: "pt", Partition: p, Value: []byte(strconv.Itoa(i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	consumerAddr, zkAddr, promAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	consumer := startChild(t, dir, bin, "consumer", "--bootstrap", bootstrap, "--group", "pg", "--topic", "pt",
		"--metrics-addr", consumerAddr, "--config", "auto.offset.reset=earliest", "--log-level", "warn")
	zkc := startChild(t, dir, bin, "zkconsumer", "--zk", line.ZooKeeper, "--group", "zg", "--topic", "pt",
		"--metrics-addr", zkAddr, "--config", "auto.offset.reset=smallest", "--log-level", "warn")

	brokerTarget := strings.TrimSuffix(strings.TrimPrefix(line.Metrics, "http://"), "/metrics")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: broker
    static_configs: [{targets: [%q]}]
  - job_name: consumer
    static_configs: [{targets: [%q]}]
  - job_name: zkconsumer
    static_configs: [{targets: [%q]}]
`, brokerTarget, consumerAddr, zkAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promc := startChild(t, dir, prom, "--config.file", cfgPath, "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
		"--web.listen-address", promAddr)
	base := "http://" + promAddr

	// The members have formed their groups and consumed everything, as Prometheus last scraped them.
	settled := map[string]float64{
		`kafka_coordinator_group_groups{state="Stable"}`:                           1,
		`kafka_consumer_coordinator_assigned_partitions{group="pg"}`:               2,
		`sum(kafka_consumer_fetch_manager_records_lag{group="pg"})`:                0,
		`count(kafka_consumer_fetch_manager_records_lag{group="pg"})`:              2,
		`kafka_consumer_zookeeper_consumer_connector_owned_partitions{group="zg"}`: 2,
		`sum(kafka_server_fetcher_lag_metrics_consumer_lag{group="zg"})`:           0,
		`count(kafka_server_fetcher_lag_metrics_consumer_lag{group="zg"})`:         2,
		`kafka_server_messages_in_total{job="broker"}`:                             20,
	}
	testutil.WaitFor(t, 90*time.Second, "Prometheus to see both groups formed and caught up", func() bool {
		for q, want := range settled {
			if v, ok := one(promQuery(t, base, q)); !ok || v != want {
				return false
			}
		}
		return true
	})
	exact := map[string]float64{
		`kafka_coordinator_group_completed_rebalances_total`:                                1,
		`kafka_coordinator_group_num_groups`:                                                1,
		`kafka_consumer_coordinator_rebalance_total{group="pg"}`:                            1,
		`kafka_consumer_coordinator_generation{group="pg"}`:                                 1,
		`kafka_consumer_zookeeper_consumer_connector_rebalance_rate_and_time_seconds_count`: 1,
	}
	for q, want := range exact {
		v, ok := one(promQuery(t, base, q))
		if !ok || v != want {
			t.Errorf("Prometheus: %s = %v (found %v), want %v", q, v, ok, want)
		}
	}
	if t.Failed() {
		t.Logf("prometheus log:\n%s\nconsumer log:\n%s\nzkconsumer log:\n%s", promc.logs(), consumer.logs(), zkc.logs())
	}
}

// burrowLag is the answer of Burrow's /v3/kafka/<cluster>/consumer/<group>/lag.
type burrowLag struct {
	Error   bool
	Message string
	Status  struct {
		Status     string
		Complete   float64
		TotalLag   int64 `json:"totallag"`
		Partitions []struct {
			Topic      string
			Partition  int32
			Status     string
			CurrentLag int64 `json:"current_lag"`
			End        struct{ Offset int64 }
		}
	}
}

func (b burrowLag) String() string {
	s := fmt.Sprintf("%s total lag %d:", b.Status.Status, b.Status.TotalLag)
	for _, p := range b.Status.Partitions {
		s += fmt.Sprintf(" %s-%d %s end %d lag %d;", p.Topic, p.Partition, p.Status, p.End.Offset, p.CurrentLag)
	}
	return s
}

func burrowGroupLag(base, group string) (burrowLag, bool) {
	var b burrowLag
	resp, err := http.Get(base + "/v3/kafka/lab/consumer/" + group + "/lag")
	if err != nil {
		return b, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&b) != nil || b.Error {
		return b, false
	}
	return b, true
}

// TestBurrowWatchesLab: Debian's Burrow 1.2.1 watches a running lab with a short-interval burrow.toml:
// its kafka cluster module (sarama, kafka-version 2.1.0) reads the broker's topics and high
// watermarks, its kafka_zk consumer module the zk era's offsets under /consumers, and its kafka
// consumer module __consumer_offsets (OffsetCommitValue v3, which 1.2.1 decodes; its GroupMetadataValue
// v3 it cannot: Burrow 1.2.1 decodes group metadata values v0-v1 only, as for Kafka 3.9's own). With a
// zkconsumer (group bz) and a 3.9 consumer (group bk) caught up on topic bt's 2 × 10 records, Burrow
// reports both groups OK with total lag 0 and each partition's committed end offset 10; once both
// stop (graceful: a last commit) and 5 more records go to each partition, it reports every partition
// of each group STOP (or STALL) with current lag 5 and end offset 10, the group ERR with total lag
// exactly 10.
func TestBurrowWatchesLab(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Burrow)
	burrow := needTool(t, "Burrow", "burrow")
	bin := testutil.Binary(t)
	dir := t.TempDir()
	u := startLabUp(t, bin, "--metrics-addr", "127.0.0.1:0")
	var line labUpLine
	select {
	case s := <-u.stdout:
		if err := json.Unmarshal([]byte(s), &line); err != nil {
			t.Fatalf("lab up's first line %q: %v", s, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no first line from lab up; stderr:\n%s", u.stderr)
	}
	bootstrap := line.Brokers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "bt"); err != nil {
		t.Fatal(err)
	}
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for p := int32(0); p < 2; p++ {
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: "bt", Partition: p, Value: []byte(strconv.Itoa(i))})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(10)
	zkc := startChild(t, dir, bin, "zkconsumer", "--zk", line.ZooKeeper, "--group", "bz", "--topic", "bt",
		"--config", "auto.offset.reset=smallest", "--config", "auto.commit.interval.ms=500", "--log-level", "warn")
	kc := startChild(t, dir, bin, "consumer", "--bootstrap", bootstrap, "--group", "bk", "--topic", "bt",
		"--config", "auto.offset.reset=earliest", "--config", "auto.commit.interval.ms=500", "--log-level", "warn")
	// Burrow's kafka consumer module needs __consumer_offsets to exist when it starts: the 3.9
	// member's first commit is the barrier.
	adm := kadm.NewClient(cl)
	testutil.WaitFor(t, time.Minute, "group bk to commit offset 10 on both partitions", func() bool {
		os, err := adm.FetchOffsets(ctx, "bk")
		if err != nil {
			return false
		}
		a, _ := os.Lookup("bt", 0)
		b, _ := os.Lookup("bt", 1)
		return a.At == 10 && b.At == 10
	})

	httpAddr := freeAddr(t)
	cfg := fmt.Sprintf(`[general]
pidfile=%q
[logging]
level="info"
[zookeeper]
servers=[%q]
timeout=6
root-path="/burrow"
[client-profile.lab]
client-id="burrow-lab"
kafka-version="2.1.0"
[cluster.lab]
class-name="kafka"
servers=[%q]
client-profile="lab"
topic-refresh=2
offset-refresh=1
[consumer.lab-kafka]
class-name="kafka"
cluster="lab"
servers=[%q]
client-profile="lab"
[consumer.lab-zk]
class-name="kafka_zk"
cluster="lab"
servers=[%q]
zookeeper-timeout=6
[httpserver.default]
address=%q
[storage.default]
class-name="inmemory"
workers=4
intervals=3
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
`, filepath.Join(dir, "burrow.pid"), line.ZooKeeper, bootstrap, bootstrap, line.ZooKeeper, httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bc := startChild(t, dir, burrow, "--config-dir", dir)
	base := "http://" + httpAddr
	defer func() {
		if t.Failed() {
			t.Logf("burrow log:\n%s\nzkconsumer log:\n%s\nconsumer log:\n%s", bc.logs(), zkc.logs(), kc.logs())
		}
	}()

	// check waits until Burrow reports group's status as want with totalLag, and for every partition
	// a status among wantPart, current lag perPartition and end, its last commit.
	check := func(within time.Duration, group, want string, wantPart []string, totalLag, perPartition, end int64) {
		t.Helper()
		var last burrowLag
		defer func() {
			if t.Failed() {
				t.Logf("Burrow's last answer for %s: %v", group, last)
			}
		}()
		testutil.WaitFor(t, within, fmt.Sprintf("Burrow: group %s %s, partitions %v, total lag %d", group, want, wantPart, totalLag), func() bool {
			b, ok := burrowGroupLag(base, group)
			if !ok {
				return false
			}
			last = b
			if b.Status.TotalLag != totalLag || len(b.Status.Partitions) != 2 {
				return false
			}
			for _, p := range b.Status.Partitions {
				if p.Topic != "bt" || p.CurrentLag != perPartition || p.End.Offset != end || !slices.Contains(wantPart, p.Status) {
					return false
				}
			}
			return b.Status.Status == want
		})
		t.Logf("Burrow, group %s: %v", group, last)
	}
	// Burrow starts its consumer modules one after the other, the kafka one subscribing to the 50
	// partitions of __consumer_offsets one by one (12 s here): the first answer can take a while.
	check(2*time.Minute, "bz", "OK", []string{"OK"}, 0, 0, 10)
	check(time.Minute, "bk", "OK", []string{"OK"}, 0, 0, 10)

	zkc.stop()
	kc.stop()
	produce(5)
	// A partition's STOP or STALL makes the group's status ERR (Burrow's group status is the worst
	// partition's, capped at ERR).
	check(time.Minute, "bz", "ERR", []string{"STOP", "STALL"}, 10, 5, 10)
	check(time.Minute, "bk", "ERR", []string{"STOP", "STALL"}, 10, 5, 10)

	// What the broker answered with an error, by API (sarama's requests among them), for the log.
	if resp, err := http.Get(line.Metrics); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "kafka_server_requests_total{") && !strings.Contains(l, `error="NONE"`) {
				t.Logf("broker: %s", l)
			}
		}
	}
}
