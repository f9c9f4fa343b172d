// Package zklog is the one adapter from go-zookeeper's logger (zk.Logger, a Printf; set with
// zk.WithLogger) to this project's logrus logs, for every ZooKeeper client the project opens: the
// broker's (broker/zk.go), the zk-era consumer's (zkconsumer), the lab's, and the tests'.
package zklog

import (
	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// New is a zk.Logger that writes each of go-zookeeper's lines (connection attempts, session
// expiries, reconnects) to log at debug level, prefixed "zk: ". A nil log discards them (Discard).
func New(log *logrus.Entry) zk.Logger {
	if log == nil {
		return Discard
	}
	return logger{log}
}

// Discard is a zk.Logger that drops every line: for clients whose connection chatter is noise
// (tests, short-lived admin connections).
var Discard zk.Logger = discard{}

type logger struct{ log *logrus.Entry }

func (l logger) Printf(format string, args ...any) { l.log.Debugf("zk: "+format, args...) }

type discard struct{}

func (discard) Printf(string, ...any) {}
