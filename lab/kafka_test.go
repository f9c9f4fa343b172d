package lab

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/internal/wire"
)

// TestLabKafkaBroker: Options.Broker = BrokerKafka starts a real Kafka 3.9 JVM on the lab's ZooKeeper
// with the lab's server.properties; when Start returns, its version-5 registration is in ZooKeeper
// with the PLAINTEXT listener as top-level host and port, Metadata v0 (served by 3.9) names it, and
// a kill -9 followed by Start brings it back on the same port. Close leaves no JVM behind.
func TestLabKafkaBroker(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
	l := startLab(t, Options{Broker: BrokerKafka})
	if l.BrokerImpl() != BrokerKafka || !strings.HasPrefix(l.KafkaVersion(), "3.9.") {
		t.Fatalf("BrokerImpl %q, KafkaVersion %q; want kafka, 3.9.x", l.BrokerImpl(), l.KafkaVersion())
	}
	b := l.Brokers()[0]
	props := b.Properties()
	for k, want := range map[string]string{
		"broker.id": "1", "listeners": "PLAINTEXT://" + b.Addr(), "zookeeper.connect": l.ZKConnect(),
		"zookeeper.session.timeout.ms": "2000", "group.min.session.timeout.ms": "500",
		"group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1",
		"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
	} {
		if props[k] != want {
			t.Errorf("server.properties %s = %q, want %q", k, props[k], want)
		}
	}
	written, err := os.ReadFile(filepath.Join(b.dir, "server.properties"))
	if err != nil || !strings.Contains(string(written), "\nlisteners=PLAINTEXT://"+b.Addr()+"\n") {
		t.Fatalf("server.properties on disk (%v):\n%s", err, written)
	}

	c := zkConnect(t, strings.Split(l.ZKConnect(), ","), 4*time.Second, nil)
	data, _, err := c.Get("/brokers/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		Version   int               `json:"version"`
		Host      string            `json:"host"`
		Port      int               `json:"port"`
		Endpoints []string          `json:"endpoints"`
		Protocols map[string]string `json:"listener_security_protocol_map"`
		Features  map[string]any    `json:"features"`
	}
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatalf("/brokers/ids/1 = %s: %v", data, err)
	}
	if reg.Version != 5 || reg.Host != "127.0.0.1" || reg.Port != portOf(t, b.Addr()) ||
		len(reg.Endpoints) != 1 || reg.Endpoints[0] != "PLAINTEXT://"+b.Addr() || reg.Protocols["PLAINTEXT"] != "PLAINTEXT" || reg.Features == nil {
		t.Fatalf("/brokers/ids/1 = %s", data)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metadataV0 := func() *kmsg.MetadataResponse {
		t.Helper()
		conn, err := wire.Dial(ctx, nil, b.Addr(), "lab-test")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(0)
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.MetadataResponse)
	}
	if m := metadataV0(); len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 || m.Brokers[0].Host != "127.0.0.1" || m.Brokers[0].Port != int32(portOf(t, b.Addr())) {
		t.Fatalf("Metadata v0 brokers = %+v", m.Brokers)
	}

	pid := b.PID()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Fatalf("Kafka pid %d alive after Kill", pid)
	}
	// The restart waits out the killed JVM's registration (2 s session), then a new JVM registers.
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b.PID() == pid || b.PID() <= 0 {
		t.Fatalf("restarted PID() = %d (old %d)", b.PID(), pid)
	}
	if m := metadataV0(); len(m.Brokers) != 1 || m.Brokers[0].Port != int32(portOf(t, b.Addr())) {
		t.Fatalf("after restart Metadata v0 brokers = %+v", m.Brokers)
	}
	newPID := b.PID()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if processAlive(newPID) {
		t.Fatalf("Kafka pid %d alive after Close", newPID)
	}
}

// TestKafkaClasspathMissing: without the interop build's output, starting a Kafka lab fails before
// anything starts, with an error wrapping ErrNoKafka that names `make deps`.
func TestKafkaClasspathMissing(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(KafkaClasspathEnv, empty)
	_, err := Start(context.Background(), Options{Broker: BrokerKafka, Log: testLog(t)})
	if !errors.Is(err, ErrNoKafka) || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), empty) {
		t.Fatalf("Start with %s=%s: %v; want ErrNoKafka naming the dir and `make deps`", KafkaClasspathEnv, empty, err)
	}
	t.Setenv(KafkaClasspathEnv, "")
	t.Chdir(empty) // no repository above: FindKafkaClasspath looks here and beside the test binary
	_, err = FindKafkaClasspath()
	if !errors.Is(err, ErrNoKafka) || !strings.Contains(err.Error(), "run `make deps`") {
		t.Fatalf("FindKafkaClasspath outside the repository: %v", err)
	}
	if _, err := Start(context.Background(), Options{Broker: "redpanda"}); err == nil || !strings.Contains(err.Error(), `unknown broker implementation "redpanda"`) {
		t.Fatalf("Broker redpanda: %v", err)
	}
}
