package ktools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
)

// ours and kafka share one ZooKeeper (chroots), started once for the package.
var ours, kafka *lab.Lab

// classpath is the interop build's Kafka 3.9 jars (kafka-tools among them), as a java -cp value.
var classpath string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	entry := logrus.NewEntry(log)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := lab.FindKafkaClasspath() // a missing classpath fails with the `make deps` step: never a skip
	if err != nil {
		fmt.Fprintln(os.Stderr, "ktools:", err)
		return 1
	}
	classpath = filepath.Join(dir, "*")
	z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: entry})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ktools: ZooKeeper:", err)
		return 1
	}
	defer z.Close()
	if ours, err = lab.Start(ctx, lab.Options{ExternalZK: z.Connect() + "/rebalancelab", Log: entry}); err != nil {
		fmt.Fprintln(os.Stderr, "ktools: our broker:", err)
		return 1
	}
	defer ours.Close()
	if kafka, err = lab.Start(ctx, lab.Options{ExternalZK: z.Connect() + "/kafka", Broker: lab.BrokerKafka, Log: entry}); err != nil {
		fmt.Fprintln(os.Stderr, "ktools: Kafka broker:", err)
		return 1
	}
	defer kafka.Close()
	return m.Run()
}

// javaArgs are the options of every tool JVM: small, quick to start (C1 only), one GC thread.
func javaArgs(args ...string) []string {
	return append([]string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-cp", classpath}, args...)
}
