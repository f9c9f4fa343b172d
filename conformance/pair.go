package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
)

// Chroots of the two brokers on the pair's ZooKeeper.
const (
	OursChroot  = "/rebalancelab"
	KafkaChroot = "/kafka"
)

// Pair is this project's broker and a real Kafka 3.9 broker (ZooKeeper mode, the interop build's
// jars) on one ZooKeeper, each under its own chroot (OursChroot, KafkaChroot), each a one-broker lab
// with the lab's settings (lab.ShortTimings, lab.LabBrokerSettings): the two sides a conformance test
// sends the same requests to.
type Pair struct {
	ZK          *lab.ZooKeeper
	Ours, Kafka *lab.Lab
	// KafkaClasspath is the directory of Kafka 3.9's jars, broker and tools (kafka-tools among them),
	// as lab.FindKafkaClasspath found it: interop/kafka-3.9/target/lib or $REBALANCELAB_KAFKA_CLASSPATH.
	KafkaClasspath string
}

// StartPair starts the pair within ctx: it finds Kafka's classpath, then starts ZooKeeper, this
// project's broker and Kafka 3.9's broker, in that order, logging to log (nil: logrus's standard
// logger). A missing Kafka classpath is an error wrapping lab.ErrNoKafka that names the `make deps`
// step (never a reason to skip); any other error names the side that failed to start. On error,
// what was started is closed.
func StartPair(ctx context.Context, log *logrus.Entry) (*Pair, error) {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	cp, err := lab.FindKafkaClasspath()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	p := &Pair{KafkaClasspath: cp}
	if p.ZK, err = lab.StartZooKeeper(ctx, lab.ZKOptions{Log: log}); err != nil {
		return nil, fmt.Errorf("conformance: ZooKeeper: %w", err)
	}
	if p.Ours, err = lab.Start(ctx, lab.Options{ExternalZK: p.ZK.Connect() + OursChroot, Log: log}); err != nil {
		p.Close()
		return nil, fmt.Errorf("conformance: our broker: %w", err)
	}
	if p.Kafka, err = lab.Start(ctx, lab.Options{ExternalZK: p.ZK.Connect() + KafkaChroot, Broker: lab.BrokerKafka, Log: log}); err != nil {
		p.Close()
		return nil, fmt.Errorf("conformance: Kafka 3.9 broker: %w", err)
	}
	return p, nil
}

// Close stops Kafka's broker, then ours, then ZooKeeper (each only when started) and returns their
// errors joined.
func (p *Pair) Close() error {
	var errs []error
	if p.Kafka != nil {
		errs = append(errs, p.Kafka.Close())
	}
	if p.Ours != nil {
		errs = append(errs, p.Ours.Close())
	}
	if p.ZK != nil {
		errs = append(errs, p.ZK.Close())
	}
	return errors.Join(errs...)
}

// ToolJavaArgs is the java command line of a Kafka 3.9 tool JVM (args appended: a main class or a
// single-file source, then its arguments): small and quick to start (-Xmx128m, C1 only, serial GC,
// class-data sharing when available), on the pair's Kafka classpath.
func (p *Pair) ToolJavaArgs(args ...string) []string {
	return append([]string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
		"-cp", filepath.Join(p.KafkaClasspath, "*")}, args...)
}
