package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/broker"
	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// freeAddr returns a loopback address nothing listens on (a port the kernel just handed out).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestStartFailsWithoutZooKeeper: with nothing listening at zookeeper.connect, Start fails once
// zookeeper.connection.timeout.ms has passed without a session (KafkaZkClient: "Timed out waiting for
// connection while in state: CONNECTING"), saying what to do, and stops what it started: the listener
// no longer accepts (goleak in TestMain checks the goroutines).
func TestStartFailsWithoutZooKeeper(t *testing.T) {
	listen := freeAddr(t)
	props := labProps(7, "127.0.0.1:1", t.TempDir())
	props["listeners"] = "PLAINTEXT://" + listen
	props["zookeeper.connection.timeout.ms"] = "1000"
	cfg, err := broker.ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	b, err := broker.Start(ctx, cfg, logrus.NewEntry(newTestLog(t)))
	elapsed := time.Since(start)
	if err == nil {
		b.Close()
		t.Fatal("Start succeeded with no ZooKeeper at 127.0.0.1:1")
	}
	t.Logf("Start after %v: %v", elapsed.Round(time.Millisecond), err)
	want := "broker 7: zookeeper.connect 127.0.0.1:1: Timed out waiting for connection while in state: CONNECTING (zookeeper.connection.timeout.ms=1000); " +
		"is ZooKeeper running at 127.0.0.1:1? start one with `rebalancelab lab up` or pass --zk HOST:PORT of a running one"
	if err.Error() != want {
		t.Fatalf("error:\n %s\nwant:\n %s", err, want)
	}
	// The timeout plus go-zookeeper's close (at most 1 s) plus polling.
	if elapsed < time.Second || elapsed > 3500*time.Millisecond {
		t.Fatalf("Start failed after %v, want between 1s (zookeeper.connection.timeout.ms) and 3.5s", elapsed)
	}
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		t.Fatalf("listener %s still accepts after the failed Start", listen)
	}
}

// TestStartFailsWhenBrokerIDTaken: a second broker with the id of a live one waits one session timeout
// (the node might be its own previous incarnation's), then fails with NodeExists naming the id and the
// live broker's session; the live broker keeps its registration.
func TestStartFailsWhenBrokerIDTaken(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	live := startBroker(t, z.Connect(), 1, nil)
	zc := zkClient(t, z.Connect())
	_, st := getZ(t, zc, "/brokers/ids/1")
	owner := st.EphemeralOwner

	listen := freeAddr(t)
	props := labProps(1, z.Connect(), t.TempDir())
	props["listeners"] = "PLAINTEXT://" + listen
	cfg, err := broker.ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	b, err := broker.Start(ctx, cfg, logrus.NewEntry(newTestLog(t)))
	elapsed := time.Since(start)
	if err == nil {
		b.Close()
		t.Fatal("a second broker with id 1 started")
	}
	t.Logf("Start after %v: %v", elapsed.Round(time.Millisecond), err)
	if !errors.Is(err, broker.ErrBrokerIDRegistered) {
		t.Fatalf("error %v, want ErrBrokerIDRegistered", err)
	}
	for _, want := range []string{
		"broker 1: broker.id already registered (NodeExists): /brokers/ids/1 is held by ZooKeeper session " + fmt.Sprintf("0x%x,", owner),
		"zookeeper.session.timeout.ms=2000 +1s",
		"another live broker uses broker.id 1 (zookeeper.connect " + z.Connect() + "); stop it or start this one with another --id",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not contain %q", err, want)
		}
	}
	// It kept the wait of one session timeout (+1 s) before giving up.
	if elapsed < 3*time.Second || elapsed > 6*time.Second {
		t.Fatalf("failed after %v, want 3s (zookeeper.session.timeout.ms 2000 + 1s) to 6s", elapsed)
	}
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		t.Fatalf("listener %s still accepts after the failed Start", listen)
	}
	if _, st := getZ(t, zc, "/brokers/ids/1"); st.EphemeralOwner != owner {
		t.Fatalf("/brokers/ids/1 owner 0x%x, want the live broker's 0x%x", st.EphemeralOwner, owner)
	}
	if !live.b.Registered() {
		t.Fatal("the live broker lost its registration")
	}
}

// TestRecoveryTruncationLogged: bytes torn off the end of a partition's segment (a crash mid-write)
// are cut by log recovery when the broker opens the log again, and the broker says so at WARN with the
// topic, partition, problem and the exact byte count, as Kafka warns about invalid bytes it truncates.
// An intact log is reported at DEBUG only.
func TestRecoveryTruncationLogged(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	tb := startBroker(t, z.Connect(), 1, nil)
	createTopic(t, tb.addr(), "rec", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr()), kgo.DefaultProduceTopic("rec"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	recoveryEntries := func(h *logtest.Hook) []*logrus.Entry {
		var out []*logrus.Entry
		for _, e := range h.AllEntries() {
			if e.Data["topic"] == "rec" && strings.HasPrefix(e.Message, "log recovery") {
				out = append(out, e)
			}
		}
		return out
	}

	// Clean restart: DEBUG, nothing repaired.
	tb.stop()
	hook := logtest.NewLocal(tb.log)
	tb.start()
	testutil.WaitFor(t, 10*time.Second, "the recovery report of rec-0", func() bool { return len(recoveryEntries(hook)) > 0 })
	if es := recoveryEntries(hook); len(es) != 1 || es[0].Level != logrus.DebugLevel || es[0].Data["truncated_bytes"] != int64(0) || es[0].Data["high_watermark"] != int64(3) {
		t.Fatalf("clean reopen: recovery entries %+v, want one DEBUG with truncated_bytes 0, high_watermark 3", es)
	}

	// A torn tail: 22 bytes of a batch that never finished (base offset 3, length 256, 10 bytes of it).
	tb.stop()
	seg := filepath.Join(tb.props["log.dirs"], "rec-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x01\x00torn-write")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	hook.Reset()
	tb.start()
	testutil.WaitFor(t, 10*time.Second, "the recovery report of rec-0", func() bool { return len(recoveryEntries(hook)) > 0 })
	es := recoveryEntries(hook)
	if len(es) != 1 {
		t.Fatalf("%d recovery entries, want 1: %+v", len(es), es)
	}
	e := es[0]
	if e.Level != logrus.WarnLevel || e.Data["partition"] != int32(0) || e.Data["truncated_bytes"] != int64(22) ||
		e.Data["deleted_segments"] != 0 || e.Data["high_watermark"] != int64(3) || e.Data["broker"] != int32(1) {
		t.Fatalf("recovery entry %s %q %+v, want WARN partition 0, truncated_bytes 22, deleted_segments 0, high_watermark 3", e.Level, e.Message, e.Data)
	}
	if p, _ := e.Data["problem"].(string); !strings.HasPrefix(p, "segment 0: ") {
		t.Fatalf("problem %q, want the torn batch of segment 0", p)
	}
	if !strings.Contains(e.Message, "truncated 22 bytes") {
		t.Fatalf("message %q does not give the truncated byte count", e.Message)
	}
}
