package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLabUpKafka: `lab up --broker kafka` prints the same JSON line, and what it started is a Kafka
// 3.9 broker (it advertises Fetch up to v17, which this project's broker does not): kcat lists it,
// kgo creates a topic and produces to it, and both consumer commands (`zkconsumer`, reading the
// broker's registration from ZooKeeper, and `consumer`) print exactly the records produced. SIGINT
// stops it with exit status 0 and no JVM of it left.
func TestLabUpKafka(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.Kcat)
	bin := testutil.Binary(t)
	u := startLabUp(t, bin, "--broker", "kafka")
	var line string
	select {
	case line = <-u.stdout:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no JSON line from lab up --broker kafka; stderr:\n%s", u.stderr)
	}
	var up labUpLine
	if err := json.Unmarshal([]byte(line), &up); err != nil || up.ZooKeeper == "" || len(up.Brokers) != 1 {
		t.Fatalf("first line %q (%v); stderr:\n%s", line, err, u.stderr)
	}
	jvms := childPIDs(u.cmd.Process.Pid)
	broker := up.Brokers[0]

	out, err := exec.Command("kcat", "-b", broker, "-L", "-m", "10").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "broker 1 at "+broker) {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vs, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if max, ok := v.KeyMaxVersion(kmsg.Fetch.Int16()); !ok || max != 17 {
			t.Fatalf("broker %d: Fetch max version %d (%v), want Kafka 3.9's 17", v.NodeID, max, ok)
		}
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "k"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 4; i++ {
		r := &kgo.Record{Topic: "k", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("k %d %d v%d", r.Partition, r.Offset, i))
	}
	slices.Sort(want)

	for _, args := range [][]string{
		{"zkconsumer", "--zk", up.ZooKeeper, "--group", "zg", "--topic", "k", "--config", "auto.offset.reset=smallest"},
		{"consumer", "--bootstrap", broker, "--group", "ng", "--topic", "k", "--config", "auto.offset.reset=earliest"},
	} {
		cmd := exec.Command(bin, append(args, "--print", "--log-level", "warn")...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var got []string
		for len(got) < len(want) {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s ended after %v; stderr:\n%s", args[0], got, stderr.String())
				}
				got = append(got, l)
			case <-time.After(60 * time.Second):
				t.Fatalf("%s printed %v within 60 s, want %v; stderr:\n%s", args[0], got, want, stderr.String())
			}
		}
		cmd.Process.Signal(syscall.SIGINT)
		for range lines { // drain until it exits
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s after SIGINT: %v; stderr:\n%s", args[0], err, stderr.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s printed %v, want %v", args[0], got, want)
		}
	}

	u.cmd.Process.Signal(syscall.SIGINT)
	if code := u.wait(t, time.Minute); code != 0 {
		t.Fatalf("lab up exit %d; stderr:\n%s", code, u.stderr)
	}
	for _, pid := range jvms {
		if processAlive(pid) {
			t.Fatalf("pid %d of lab up still alive after it exited", pid)
		}
	}
}

// TestBenchThroughputThreePeers: `bench throughput` measures this broker, Kafka 3.9 and kfake in one
// run: one row per target, the ratios of rebalancelab to each peer, the targets' settings under the
// table (Kafka's reduced heap and threads beside its defaults), and one history line naming the bench,
// the commit, the machine, each peer's version, a positive median and a spread around it for every
// (size, target, figure), each target's settings and the load average.
func TestBenchThroughputThreePeers(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	bin := testutil.Binary(t)
	history := filepath.Join(t.TempDir(), "history.jsonl")
	r := runCLI(t, bin, t.TempDir(), 4*time.Minute, "bench", "throughput", "--duration", "300ms", "--runs", "2", "--warmup", "300ms",
		"--sizes", "1024", "--history", history, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var targets []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "1024" {
			targets = append(targets, f[1])
		}
	}
	if want := []string{"rebalancelab", "kafka", "kfake", "rebalancelab/kafka", "rebalancelab/kfake"}; !slices.Equal(targets, want) {
		t.Fatalf("table rows %v, want %v:\n%s", targets, want, r.stdout)
	}
	for _, want := range []string{
		"settings of kafka: heap -Xmx512m -Xms128m [-Xmx1G -Xms1G]",
		"num.io.threads=2 [8], num.network.threads=2 [3]",
		"settings of kfake: 1 broker(s) in the bench's process, kfake.DataDir",
		"settings of rebalancelab: in the bench's process",
		"load average (1, 5, 15 min): loadavg_after ",
		"medians of 2 windows of 300ms (produce, then fetch) per target after 300ms of discarded warm-up",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	data, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d history lines, want 1:\n%s", len(lines), data)
	}
	var e struct {
		Bench      string                        `json:"bench"`
		Commit     string                        `json:"commit"`
		Machine    struct{ CPUs int }            `json:"machine"`
		Peers      map[string]string             `json:"peers"`
		Medians    map[string]float64            `json:"medians"`
		Spreads    map[string]map[string]float64 `json:"spreads"`
		Settings   map[string]string             `json:"settings"`
		Conditions map[string]string             `json:"conditions"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Settings) != 3 || !strings.Contains(e.Settings["kafka"], "num.io.threads=2 [8]") || e.Conditions["loadavg_before"] == "" {
		t.Fatalf("history line's settings %v, conditions %v", e.Settings, e.Conditions)
	}
	for k, m := range e.Medians {
		sp := e.Spreads[k]
		if sp["median"] != m || sp["min"] > m || sp["max"] < m {
			t.Fatalf("spread of %s: %v, median %v", k, sp, m)
		}
	}
	if e.Bench != "throughput" || e.Commit == "" || e.Machine.CPUs < 1 || !strings.HasPrefix(e.Peers["kafka"], "3.9.") || e.Peers["kfake"] == "" {
		t.Fatalf("history line %s", lines[0])
	}
	if len(e.Medians) != 12 {
		t.Fatalf("%d medians, want 12 (1 size x 3 targets x 4 figures): %v", len(e.Medians), e.Medians)
	}
	for k, v := range e.Medians {
		if v <= 0 {
			t.Fatalf("median %s = %v", k, v)
		}
	}
}

// TestBenchThroughputReplicated: `bench throughput --replication-factor 3` runs on three brokers per
// target, waits for every partition's three replicas to be in the ISR before measuring (acks=all then
// waits for the followers), and says so: the table's note names the factor and the JSON's params hold
// it; out-of-range factors are refused before anything starts.
func TestBenchThroughputReplicated(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := testutil.Binary(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	r := runCLI(t, bin, t.TempDir(), 4*time.Minute, "bench", "throughput", "--broker", "rebalancelab", "--replication-factor", "3",
		"--duration", "300ms", "--runs", "1", "--warmup", "0s", "--sizes", "1024", "--history", "", "--json", out, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "replication factor 3 on 3 broker(s) per target") {
		t.Fatalf("no replication note in the output:\n%s", r.stdout)
	}
	var rows []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "1024" {
			rows = append(rows, f[1])
		}
	}
	if want := []string{"rebalancelab", "kfake", "rebalancelab/kfake"}; !slices.Equal(rows, want) {
		t.Fatalf("table rows %v, want %v:\n%s", rows, want, r.stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Params struct {
			RF int `json:"replication_factor"`
		} `json:"params"`
		Runs []struct {
			Target   string  `json:"target"`
			Produced int     `json:"produced_records"`
			Fetched  int     `json:"fetched_records"`
			FetchS   float64 `json:"fetch_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Params.RF != 3 || len(doc.Runs) != 2 {
		t.Fatalf("JSON params/runs: %s", data)
	}
	for _, run := range doc.Runs {
		if run.Produced < 1 || run.Fetched < 1 || run.FetchS < 0.3 {
			t.Fatalf("window %+v: want records produced and fetched over at least the 300ms window", run)
		}
	}
	for _, bad := range []string{"0", "6"} {
		r := runCLI(t, bin, t.TempDir(), time.Minute, "bench", "throughput", "--replication-factor", bad, "--history", "")
		if r.code == 0 || !strings.Contains(r.stderr, "--replication-factor "+bad+": must be 1 to 5") {
			t.Fatalf("--replication-factor %s: exit %d, stderr %s", bad, r.code, r.stderr)
		}
	}
	for _, bad := range [][2]string{{"--duration=50ms", "--duration 50ms: a window must last at least 100ms"}, {"--warmup=-1s", "--warmup -1s: must not be negative"}} {
		r := runCLI(t, bin, t.TempDir(), time.Minute, "bench", "throughput", bad[0], "--history", "")
		if r.code == 0 || !strings.Contains(r.stderr, bad[1]) {
			t.Fatalf("%s: exit %d, stderr %s", bad[0], r.code, r.stderr)
		}
	}
}
