package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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
	bin := zkCLIBinary(t)
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

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
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
