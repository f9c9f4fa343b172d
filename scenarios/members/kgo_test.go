package members

import (
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// A kgo pool member's configs are Kafka's names: missing and bad ones are refused naming the config,
// and a pool refuses a client it does not know before reading a command.
func TestKgoOptionsRefuse(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"bootstrap.servers": "127.0.0.1:9092", "group.id": "g", "client.id": "k1"}
	}
	if opts, err := KgoOptions("t", base(), nil); err != nil || len(opts) != 11 {
		t.Fatalf("KgoOptions(the required three) = %d options, %v; want 11 (Kafka's defaults), nil", len(opts), err)
	}
	for _, tc := range []struct {
		key, value, want string
	}{
		{"group.id", "", "kgo member: group.id is required"},
		{"client.id", "", "kgo member: client.id is required"},
		{"session.timeout.ms", "soon", `kgo member: session.timeout.ms="soon": want a positive number of ms`},
		{"heartbeat.interval.ms", "0", `kgo member: heartbeat.interval.ms="0": want a positive number of ms`},
		{"partition.assignment.strategy", "roundrobin", `kgo member: partition.assignment.strategy="roundrobin": want range or cooperative-sticky`},
	} {
		p := base()
		p[tc.key] = tc.value
		if _, err := KgoOptions("t", p, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%s=%q: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	err := RunMemberPool(t.Context(), PoolOptions{Era: "classic", Topic: "t", Client: "sarama", In: strings.NewReader(""), Out: io.Discard, Log: quietLog()})
	if err == nil || err.Error() != `member-pool: --client "sarama": want kgo, or none for the era's own consumer` {
		t.Errorf("--client sarama: %v", err)
	}
}

// quietLog is a logger that says nothing below fatal.
func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.FatalLevel)
	return logrus.NewEntry(l)
}
