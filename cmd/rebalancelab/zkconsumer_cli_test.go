package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// `rebalancelab zkconsumer --zk ... --group g --topic t --print` against a lab: it prints
// "topic partition offset value" for every record, as it delivers them (the records there before it
// started, from auto.offset.reset=smallest, and those produced while it runs); SIGINT ends it
// with exit status 0 after committing (auto.commit.enable's default): the offset znodes hold the
// high watermarks the broker reports, and its session was closed (its registration and owner
// znodes are gone at once, not after an expiry).
func TestZKConsumerCLIPrintsAndCommits(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	bin := testutil.Binary(t)
	quiet := logrus.New()
	quiet.SetLevel(logrus.ErrorLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Brokers: 1, Log: logrus.NewEntry(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(l.Bootstrap()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const parts = 3
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 10000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", parts, 1
	create.Topics = append(create.Topics, ct)
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cresp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating t: %v", err)
	}
	var want []string
	produce := func(round string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for p := int32(0); p < parts; p++ {
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", round, p, i))})
			}
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer pcancel()
		res := cl.ProduceSync(pctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, r := range res {
			want = append(want, fmt.Sprintf("t %d %d %s", r.Record.Partition, r.Record.Offset, r.Record.Value))
		}
	}
	produce("before", 10)

	cmd := exec.Command(bin, "zkconsumer", "--zk", l.ZKConnect(), "--group", "g", "--topic", "t", "--print",
		"--consumer-id", "cli", "--config", "auto.offset.reset=smallest", "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "zkconsumer.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()
	logTail := func() string {
		b, _ := os.ReadFile(logPath)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		return string(b)
	}
	printed := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := append([]string(nil), lines...)
		sort.Strings(out)
		return out
	}
	seenAll := func() bool { return len(printed()) >= len(want) }
	waitPrinted := func(what string) {
		t.Helper()
		if err := testutil.Await(context.Background(), 60*time.Second, what, seenAll); err != nil {
			t.Fatalf("%v: %d of %d lines printed; log:\n%s", err, len(printed()), len(want), logTail())
		}
	}
	waitPrinted("the records produced before the start")
	produce("while", 5) // consumed live
	waitPrinted("the records produced while it runs")
	sort.Strings(want)
	if got := printed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	zc, _, err := zk.Connect([]string{l.ZKConnect()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	for p := 0; p < parts; p++ {
		if data, _, err := zc.Get(fmt.Sprintf("/consumers/g/owners/t/%d", p)); err != nil || string(data) != "g_cli-0" {
			t.Fatalf("owner of partition %d = %q, %v; want g_cli-0", p, data, err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("zkconsumer exited with %v after SIGINT; log:\n%s", err, logTail())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("zkconsumer still running 30 s after SIGINT; log:\n%s", logTail())
	}
	if got := printed(); len(got) != len(want) {
		t.Fatalf("%d lines after exit, want %d", len(got), len(want))
	}
	for _, path := range []string{"/consumers/g/ids/g_cli", "/consumers/g/owners/t/0"} {
		if ok, _, err := zc.Exists(path); ok || err != nil {
			t.Fatalf("%s exists (%v, %v) right after a clean exit: the session was not closed", path, ok, err)
		}
	}

	// The committed offsets are the broker's high watermarks (ListOffsets, latest).
	lreq := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	for p := int32(0); p < parts; p++ {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lreq.Topics = append(lreq.Topics, lt)
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	hwm := map[int32]int64{}
	for _, rt := range lresp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatal(err)
			}
			hwm[rp.Partition] = rp.Offset
		}
	}
	for p := int32(0); p < parts; p++ {
		if hwm[p] != 15 {
			t.Fatalf("high watermark of partition %d = %d, want 15 (10 + 5 produced)", p, hwm[p])
		}
		data, _, err := zc.Get(fmt.Sprintf("/consumers/g/offsets/t/%d", p))
		if errors.Is(err, zk.ErrNoNode) || err != nil || string(data) != fmt.Sprint(hwm[p]) {
			t.Fatalf("offset znode of partition %d = %q, %v; want %d, the high watermark", p, data, err, hwm[p])
		}
	}
}
