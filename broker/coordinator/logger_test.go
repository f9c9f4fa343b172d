package coordinator

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// The standard library's structured logger is a Logger as it is.
var _ Logger = (*slog.Logger)(nil)

// TestCoreLogLinesThroughLogrus: the core's lines reach the driver's logrus entry with their text,
// level and fields (group, generation, member, partition, error as logrus fields), and lines below the
// logger's level are not written.
func TestCoreLogLinesThroughLogrus(t *testing.T) {
	l, hook := logtest.NewNullLogger()
	l.SetLevel(logrus.InfoLevel)
	core, err := NewCore(cfgNoDelay(), logrusLogger{logrus.NewEntry(l).WithField("broker", 1)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := startedHarness(t, core)
	ms := h.stableGroup("g", 1, joinOpts{version: 4, session: 10000, rebalance: 10000})

	find := func(msg string) *logrus.Entry {
		t.Helper()
		for _, e := range hook.AllEntries() {
			if e.Message == msg {
				return e
			}
		}
		t.Fatalf("no line %q among %d", msg, len(hook.AllEntries()))
		return nil
	}
	e := find("dynamic member with unknown member id joins in state Empty; MEMBER_ID_REQUIRED")
	if e.Level != logrus.InfoLevel || e.Data["group"] != "g" || e.Data["generation"] != int32(0) ||
		e.Data["member"] != ms[0].memberID || e.Data["broker"] != 1 || len(e.Data) != 4 {
		t.Fatalf("join line: level %s fields %v", e.Level, e.Data)
	}
	e = find("stabilized group generation 1 (__consumer_offsets-" + strconv.Itoa(int(core.partitionFor("g"))) + ") with 1 members")
	if e.Data["generation"] != int32(1) || e.Data["group"] != "g" {
		t.Fatalf("stabilized line: fields %v", e.Data)
	}
	for _, e := range hook.AllEntries() {
		if e.Level > logrus.InfoLevel {
			t.Fatalf("a %s line written at level info: %q", e.Level, e.Message)
		}
	}

	core.groups["g"].state = GroupState(42) // an internal fault: logged at error with the error as a field
	h.do(syncReq(3, "g", ms[0].memberID, 1, nil, nil))
	e = find("group coordinator internal error")
	if err, ok := e.Data[logrus.ErrorKey].(error); e.Level != logrus.ErrorLevel || !ok || err != core.Faults()[0] {
		t.Fatalf("fault line: level %s fields %v; faults %v", e.Level, e.Data, core.Faults())
	}
}
