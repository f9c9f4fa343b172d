package env

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// An existing cluster refuses node stops (ErrNeedsLab) and the zk era without its ZooKeeper
// (ErrNeedsZK); the lab gives both.
func TestCheck(t *testing.T) {
	ext := Options{Bootstrap: "127.0.0.1:1"}
	if err := ext.Check(Needs{StopsNodes: "stops ZooKeeper nodes"}); !errors.Is(err, ErrNeedsLab) || !strings.HasPrefix(err.Error(), "stops ZooKeeper nodes: ") {
		t.Errorf("Check(stops nodes) on an existing cluster = %v, want ErrNeedsLab after the reason", err)
	}
	if err := ext.Check(Needs{ZooKeeper: true}); !errors.Is(err, ErrNeedsZK) {
		t.Errorf("Check(zk era) without --zk = %v, want ErrNeedsZK", err)
	}
	ext.ExternalZK = "127.0.0.1:2"
	if err := ext.Check(Needs{ZooKeeper: true}); err != nil {
		t.Errorf("Check(zk era) with --zk = %v, want nil", err)
	}
	if err := (Options{}).Check(Needs{StopsNodes: "x", ZooKeeper: true}); err != nil {
		t.Errorf("Check on the lab = %v, want nil", err)
	}
}

// On an existing cluster every name carries the run id; Keep leaves the era's topic and group (and
// says so) without a request to the cluster (only Start's reachability dial); nothing is started, so
// Close does nothing.
func TestExternalNamesAndKeep(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // reachable: Start dials it once; nothing more is sent
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e, err := Start(context.Background(), Options{Bootstrap: ln.Addr().String(), RunID: "m3x9k2ab-1f3c", Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.Name("herd-join", "classic"); got != "rebalancelab.m3x9k2ab-1f3c.herd-join.classic" {
		t.Errorf("Name = %q", got)
	}
	if e.Lab() != nil || e.ZKConnect() != "" || e.ZKAddrs() != nil || e.ReplicationFactor() != 1 {
		t.Errorf("existing cluster: Lab %v, ZKConnect %q, ZKAddrs %v, RF %d; want nil, \"\", nil, 1", e.Lab(), e.ZKConnect(), e.ZKAddrs(), e.ReplicationFactor())
	}
	note, errs := e.Cleanup("g", []string{"g"}, time.Second)
	if note != "kept: topic and group g (--keep)" || errs != nil {
		t.Errorf("Cleanup with Keep = %q, %v", note, errs)
	}
	if id := NewRunID(); !strings.Contains(id, "-") || len(id) < 10 {
		t.Errorf("NewRunID() = %q, want <base-36 ms>-<4 hex>", id)
	}
}

// A --bootstrap or --zk that no server answers at is said first, before anything is started or made,
// and once (no "lab: lab: "), naming the flag the user gave.
func TestStartUnreachable(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Bootstrap: "127.0.0.1:1"}, "--bootstrap 127.0.0.1:1: no broker reachable there: dial tcp 127.0.0.1:1: connect: connection refused"},
		{Options{Bootstrap: "127.0.0.1:1", ExternalZK: "127.0.0.1:2"}, "--bootstrap 127.0.0.1:1: no broker reachable there: dial tcp 127.0.0.1:1: connect: connection refused"},
		{Options{ExternalZK: "127.0.0.1:2/chroot", Lab: lab.Options{Brokers: 1}}, "--zk 127.0.0.1:2: no ZooKeeper reachable there: dial tcp 127.0.0.1:2: connect: connection refused"},
	} {
		e, err := Start(context.Background(), c.o)
		if err == nil {
			e.Close()
			t.Errorf("Start(%+v) = nil error, want %q", c.o, c.want)
			continue
		}
		if err.Error() != c.want || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("Start(bootstrap %q, zk %q) = %q, want %q (ECONNREFUSED)", c.o.Bootstrap, c.o.ExternalZK, err, c.want)
		}
	}
}

// Fill gives every runner the same defaults: the standard logger, a warn-level lab log (error level
// when Quiet), our broker, and the lab's timing unless KafkaDefaults.
func TestDefaultsFill(t *testing.T) {
	var d Defaults
	if tm := d.Fill(); tm != spec.LabTiming() {
		t.Errorf("timing = %+v, want LabTiming", tm)
	}
	if d.Log == nil || d.LabLog == nil || d.LabLog.Logger.GetLevel() != logrus.WarnLevel || d.Broker != lab.BrokerRebalancelab {
		t.Errorf("Fill: Log %v, LabLog level %v, Broker %q", d.Log, d.LabLog.Logger.GetLevel(), d.Broker)
	}
	q := Defaults{Quiet: true, KafkaDefaults: true, Broker: lab.BrokerKafka}
	if tm := q.Fill(); tm != spec.KafkaTiming() {
		t.Errorf("timing = %+v, want KafkaTiming", tm)
	}
	if q.LabLog.Logger.GetLevel() != logrus.ErrorLevel || q.Broker != lab.BrokerKafka {
		t.Errorf("Quiet: LabLog level %v, Broker %q; want error, kafka", q.LabLog.Logger.GetLevel(), q.Broker)
	}
}

// The lab: started from lab.Options, its topics made with their leaders (and the ISR full when asked),
// a second create of a name refused with the broker's TOPIC_ALREADY_EXISTS, its versions named.
func TestLabEnv(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{Lab: lab.Options{Log: quietLog()}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Lab() == nil || e.ZKConnect() == "" || len(e.ZKAddrs()) != 1 || e.ReplicationFactor() != 1 {
		t.Fatalf("lab: Lab %v, ZKConnect %q, ZKAddrs %v, RF %d", e.Lab(), e.ZKConnect(), e.ZKAddrs(), e.ReplicationFactor())
	}
	name := e.Name("s", "zk")
	if !strings.HasPrefix(name, "s.zk.") {
		t.Errorf("Name = %q, want s.zk.<time>", name)
	}
	if err := e.CreateTopic(ctx, Topic{Name: name, Partitions: 3, InSync: true}); err != nil {
		t.Fatal(err)
	}
	err = e.CreateTopic(ctx, Topic{Name: name, Partitions: 3})
	if err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") || !strings.Contains(err.Error(), name) {
		t.Errorf("second CreateTopic = %v, want the topic's name and TOPIC_ALREADY_EXISTS", err)
	}
	addrs, err := e.BrokerAddrs(ctx)
	if err != nil || len(addrs) == 0 || addrs[0] != e.Bootstrap() {
		t.Errorf("BrokerAddrs = %v, %v; want the bootstrap first", addrs, err)
	}
	if v := e.Versions(ctx)["zookeeper"]; v == "" || v == "unknown" {
		t.Errorf("Versions[zookeeper] = %q, want mntr's version", v)
	}
	if note, errs := e.Cleanup(name, []string{name}, time.Second); note != "" || errs != nil {
		t.Errorf("lab Cleanup = %q, %v; want nothing (the lab goes away)", note, errs)
	}
}
