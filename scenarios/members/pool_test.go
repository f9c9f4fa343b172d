package members

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// A pool skips what is not a command (logged), refuses a bad era before reading any, and answers a
// session question about a member it does not run with 0; the end of its stdin ends it cleanly.
func TestMemberPoolBadCommands(t *testing.T) {
	if err := RunMemberPool(t.Context(), PoolOptions{Era: "kip848", In: strings.NewReader(""), Out: io.Discard, Log: quietLog()}); err == nil ||
		!strings.Contains(err.Error(), `--era "kip848"`) {
		t.Errorf("era kip848: %v", err)
	}
	in := strings.Join([]string{
		`not json`,
		`{"cmd":"start"}`, // no member
		`{"cmd":"dance","member":"m1"}`,
		`{"cmd":"stop","member":"m9"}`,
		`{"cmd":"session","member":"m9"}`,
		`{"cmd":"start","member":"m2","routes":["nonsense"]}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	if err := RunMemberPool(t.Context(), PoolOptions{Era: "classic", Topic: "t", In: strings.NewReader(in), Out: &out, Log: logrus.NewEntry(l)}); err != nil {
		t.Fatal(err)
	}
	var ctl []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(line, `"stats"`) {
			ctl = append(ctl, line)
		}
	}
	want := []string{`{"ctl":"session","member":"m9"}`,
		`{"ctl":"ended","member":"m2","error":"route \"nonsense\": want LINK:UPSTREAM=PROXY (e.g. fetch:127.0.0.1:9092=127.0.0.1:40111)"}`}
	if !slices.Equal(ctl, want) {
		t.Errorf("pool wrote\n%s\nwant\n%s", strings.Join(ctl, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"not a command", "unknown command", "stop of a member that is not running"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("logs lack %q:\n%s", w, logs.String())
		}
	}
}
