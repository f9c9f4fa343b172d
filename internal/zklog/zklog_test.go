package zklog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestNew: a line goes to the logrus entry at debug level with the "zk: " prefix and the entry's
// fields; nothing is written above debug; a nil entry and Discard write nothing (and do not panic).
func TestNew(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})
	l.SetLevel(logrus.InfoLevel)
	New(logrus.NewEntry(l).WithField("component", "zookeeper")).Printf("connected to %s", "127.0.0.1:2181")
	if buf.Len() != 0 {
		t.Fatalf("at info level: wrote %q, want nothing", buf.String())
	}
	l.SetLevel(logrus.DebugLevel)
	New(logrus.NewEntry(l).WithField("component", "zookeeper")).Printf("connected to %s", "127.0.0.1:2181")
	got := strings.TrimSpace(buf.String())
	want := `level=debug msg="zk: connected to 127.0.0.1:2181" component=zookeeper`
	if got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	New(nil).Printf("dropped %d", 1)
	Discard.Printf("dropped %d", 2)
	if New(nil) != Discard {
		t.Fatalf("New(nil) = %#v, want Discard", New(nil))
	}
}
