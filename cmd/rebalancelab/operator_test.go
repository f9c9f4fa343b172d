package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
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

// startChild starts a child process killed at the end of the test, its output in a file in dir
// (quoted by the test on failure through logs).
func startChild(t *testing.T, dir, name string, args ...string) (logs func() string) {
	t.Helper()
	logPath := filepath.Join(dir, filepath.Base(name)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		f.Close()
	})
	return func() string { b, _ := os.ReadFile(logPath); return string(b) }
}

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
	prom := needTool(t, "prometheus", "prometheus")
	bin := zkCLIBinary(t)
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
	consumerLog := startChild(t, dir, bin, "consumer", "--bootstrap", bootstrap, "--group", "pg", "--topic", "pt",
		"--metrics-addr", consumerAddr, "--config", "auto.offset.reset=earliest", "--log-level", "warn")
	zkLog := startChild(t, dir, bin, "zkconsumer", "--zk", line.ZooKeeper, "--group", "zg", "--topic", "pt",
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
	promLog := startChild(t, dir, prom, "--config.file", cfgPath, "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
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
		t.Logf("prometheus log:\n%s\nconsumer log:\n%s\nzkconsumer log:\n%s", promLog(), consumerLog(), zkLog())
	}
}
