package env

import (
	"os"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// Defaults are the options every runner shares — scenarios.Run, streams.Run (the Streams driver),
// connect.Run (scenarios/connect), bench storm — filled in one place (Fill).
type Defaults struct {
	// Log is the runner's log; nil: logrus' standard logger.
	Log *logrus.Entry
	// LabLog is the lab's, the brokers' and the members' log; nil: a logger on stderr at warn level
	// (error level with Quiet).
	LabLog *logrus.Entry
	// Quiet: the default LabLog logs errors only (bench storm: thousands of members' warnings).
	Quiet bool
	// Broker is the lab's broker implementation; "": lab.BrokerRebalancelab.
	Broker string
	// KafkaDefaults: Kafka's own timing instead of the lab's (Timing).
	KafkaDefaults bool
}

// Fill sets d's zero fields to their defaults and returns d with the members' timing: spec.LabTiming,
// or spec.KafkaTiming with KafkaDefaults.
func (d *Defaults) Fill() spec.Timing {
	if d.Log == nil {
		d.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	if d.LabLog == nil {
		l := logrus.New()
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.WarnLevel)
		if d.Quiet {
			l.SetLevel(logrus.ErrorLevel)
		}
		d.LabLog = logrus.NewEntry(l)
	}
	if d.Broker == "" {
		d.Broker = lab.BrokerRebalancelab
	}
	return Timing(d.KafkaDefaults)
}
