package testutil

import (
	"strings"
	"testing"
)

// The fast tier: `go test -short ./...` runs the pure cores, the figures, the codecs, the CLI's parsing
// and the in-process tests (our broker, kfake, our own binary), and skips every test that needs what a
// developer's machine may lack or that takes minutes. A test says what it needs with one call at its
// top (or in the helper that starts it, so that every caller gets it):
//
//	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
//
// Needs skips only under -short: without -short it does nothing, and a missing ZooKeeper, JVM or tool
// fails the test where it is started (make test runs everything and reports 0 skipped tests).

// Need is one thing outside the Go process a test needs, as the skip message names it.
type Need string

// What the tests need besides Go and our own binary.
const (
	// ZooKeeper: a real ZooKeeper server (lab.StartZooKeeper, a JVM).
	ZooKeeper Need = "ZooKeeper (JVM)"
	// Kafka: real Apache Kafka 3.9 brokers (lab.Start with Kafka brokers, JVMs).
	Kafka Need = "Kafka 3.9 brokers (JVM)"
	// Connect: real Kafka Connect 3.9 workers (JVMs).
	Connect Need = "Kafka Connect 3.9 workers (JVM)"
	// Streams: real Kafka Streams 3.9 instances (JVMs).
	Streams Need = "Kafka Streams 3.9 (JVM)"
	// OldConnector: the real Kafka 0.8.2.2 high-level consumer harness (interop/kafka-0.8.2, a JVM).
	OldConnector Need = "the Kafka 0.8.2.2 connector (JVM)"
	// JVM: any other JVM (the Java clients of interop/).
	JVM Need = "a JVM"
	// Interop: the interop build's output (interop/*/target/lib, made by `make deps` with Maven).
	Interop Need = "the interop build (make deps)"
	// Kcat: the kcat tool (librdkafka's client).
	Kcat Need = "kcat"
	// KafkaPython: python3 with the kafka-python package.
	KafkaPython Need = "kafka-python"
	// Chromium: a headless Chromium.
	Chromium Need = "Chromium"
	// Site: the documentation site's generator and mermaid (make site-deps: .cache/site-venv, .cache/site-npm).
	Site Need = "the site tools (make site-deps)"
	// Prometheus: the prometheus server.
	Prometheus Need = "Prometheus"
	// Burrow: LinkedIn's Burrow.
	Burrow Need = "Burrow"
	// Root: root, for network namespaces, test hosts (lab.CreateHosts) or other users' processes.
	Root Need = "root (network namespaces)"
)

// Needs marks t as needing needs (at least one): under -short (testing.Short) it skips t with a
// one-line reason naming them; otherwise it does nothing. Call it at the top of a test, before
// anything that starts what it names, or first thing in a helper that starts them.
func Needs(t testing.TB, needs ...Need) {
	t.Helper()
	if len(needs) == 0 {
		panic("testutil.Needs: no need given")
	}
	if !testing.Short() {
		return
	}
	names := make([]string, len(needs))
	for i, n := range needs {
		names[i] = string(n)
	}
	t.Skip("-short: needs " + strings.Join(names, ", "))
}
