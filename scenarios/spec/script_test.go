package spec

import "testing"

// TestTimingDerived: the lab timing's derived waits, as the recorded scripts carry them (settle
// quiet_ms 1200, timeout_ms 31000), and a bounced member's down time.
func TestTimingDerived(t *testing.T) {
	lt := LabTiming()
	if got := lt.MaxSessionMs(); got != 2000 {
		t.Errorf("MaxSessionMs = %d, want 2000", got)
	}
	if got := lt.SettleTimeoutMs(); got != 31000 {
		t.Errorf("SettleTimeoutMs = %d, want 6·2000 + 8·500 + 15000 = 31000", got)
	}
	if got := lt.QuietMs(); got != 1200 {
		t.Errorf("QuietMs = %d, want max(2·500, 2·500) + 200 = 1200", got)
	}
	if got := lt.DownTimeMs(); got != 1000 {
		t.Errorf("DownTimeMs = %d, want 2000/2", got)
	}
	if got := (Params{}).DownMsOr(lt); got != 1000 {
		t.Errorf("Params{}.DownMsOr = %d, want the timing's 1000", got)
	}
	if got := (Params{DownMs: 700}).DownMsOr(lt); got != 700 {
		t.Errorf("Params{DownMs: 700}.DownMsOr = %d, want 700", got)
	}
	if got := KafkaTiming().SettleTimeoutMs(); got != 6*45000+8*2000+15000 {
		t.Errorf("Kafka's SettleTimeoutMs = %d", got)
	}
}

// TestFormatScript: one JSON line per step, zero fields left out; Step.String as the CLI prints steps.
func TestFormatScript(t *testing.T) {
	steps := []Step{{Action: ActTrigger, Name: "join"}, {DelayMs: 50, Action: ActStall, Member: "m2", Link: "coordination"},
		{Action: ActSettle, QuietMs: 1200, TimeoutMs: 31000}}
	want := `{"delay_ms":0,"action":"trigger","name":"join"}
{"delay_ms":50,"action":"stall","member":"m2","link":"coordination"}
{"delay_ms":0,"action":"settle","quiet_ms":1200,"timeout_ms":31000}
`
	if got := string(FormatScript(steps)); got != want {
		t.Errorf("FormatScript:\n%s\nwant:\n%s", got, want)
	}
	for i, w := range []string{"trigger join", "stall m2/coordination", "settle"} {
		if got := steps[i].String(); got != w {
			t.Errorf("step %d String() = %q, want %q", i, got, w)
		}
	}
}

// TestNewRand: the same seed and scenario draw the same sequence; another scenario another one.
func TestNewRand(t *testing.T) {
	a, b, c := NewRand(7, "herd-effect"), NewRand(7, "herd-effect"), NewRand(7, "rolling-restart")
	same, differ := true, false
	for i := 0; i < 8; i++ {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed same scenario equal: %v (want true); other scenario differs: %v (want true)", same, differ)
	}
	if MemberName(3) != "m3" {
		t.Errorf("MemberName(3) = %q", MemberName(3))
	}
}
