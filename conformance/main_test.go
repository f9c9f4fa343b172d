package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
	"github.com/rebalancelab/rebalancelab/lab"
)

// pair is started once for the package by TestMain (nil under -short); ours and kafka are its two
// sides. The tests share them: TestDifferential adds a second broker to each side for its last cases
// (leading no __consumer_offsets partition, so the first broker stays every group's coordinator), so
// a test must not assume one broker: it seeds clients with every address of Bootstrap() and dials
// Brokers()[0] for a coordinator.
var (
	pair        *Pair
	ours, kafka *lab.Lab
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "conformance: -short: ZooKeeper and Kafka 3.9 not started; the tests that need them skip")
		return m.Run()
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	if pair, err = StartPair(ctx, logrus.NewEntry(log)); err != nil { // a missing classpath names `make deps`: never a skip
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pair.Close()
	ours, kafka = pair.Ours, pair.Kafka
	return m.Run()
}

// needPair skips t under -short (the package starts no ZooKeeper or JVM then), and only then (testutil.Needs).
func needPair(t *testing.T) {
	t.Helper()
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka)
}

// javaArgs are the options of every tool JVM (Pair.ToolJavaArgs).
func javaArgs(args ...string) []string { return pair.ToolJavaArgs(args...) }
