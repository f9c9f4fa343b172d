package lab

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestLossDelayModel: the retransmission model behind Proxy.Loss — no delay when the draw passes, one
// RTO (200 ms) for one loss, 200+400+800 ms for three in a row, capped near TCP's ~15 min at 100 %.
func TestLossDelayModel(t *testing.T) {
	seq := func(v ...float64) func() float64 {
		return func() float64 { x := v[0]; v = v[1:]; return x }
	}
	for _, c := range []struct {
		pct   float64
		draws []float64
		want  time.Duration
	}{
		{0, nil, 0},
		{10, []float64{0.5}, 0},
		{10, []float64{0.05, 0.5}, 200 * time.Millisecond},
		{10, []float64{0.05, 0.01, 0.09, 0.2}, 1400 * time.Millisecond},
	} {
		if got := lossDelay(c.pct, seq(c.draws...)); got != c.want {
			t.Errorf("lossDelay(%v%%, %v) = %v, want %v", c.pct, c.draws, got, c.want)
		}
	}
	if got := lossDelay(100, func() float64 { return 0.99 }); got < 15*time.Minute || got > 17*time.Minute {
		t.Errorf("lossDelay(100%%) = %v, want TCP's give-up bound (~15 min)", got)
	}
}

// echoServer answers every byte it reads with the same byte.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// TestProxyLoss: at 100 % loss a round trip never comes back but the connection stays open (a stall,
// not a reset), and Heal delivers what was held; at 20 % every round trip completes, in order, and some
// take at least one retransmission timeout (200 ms) while the others stay fast. The link's loss is
// reported as a fault window (FaultLoss begin and end).
func TestProxyLoss(t *testing.T) {
	up := echoServer(t)
	m := NewMemberLinksFor("m", LinkFetch)
	defer m.Close()
	var evs []FaultEvent
	m.OnFault(func(ev FaultEvent) { evs = append(evs, ev) })
	addr, err := m.ProxyAddr(LinkFetch, up)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rt := func(b byte, timeout time.Duration) (time.Duration, error) {
		start := time.Now()
		if _, err := c.Write([]byte{b}); err != nil {
			return 0, err
		}
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		got := make([]byte, 1)
		if _, err := io.ReadFull(c, got); err != nil {
			return 0, err
		}
		if got[0] != b {
			t.Fatalf("echo %d, want %d (out of order)", got[0], b)
		}
		return time.Since(start), nil
	}
	if _, err := rt(1, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	if err := m.Loss(LinkFetch, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := rt(2, 700*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("round trip at 100%% loss: %v, want a read timeout on an open connection", err)
	}
	if err := m.Heal(LinkFetch); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	held := make([]byte, 1)
	if _, err := io.ReadFull(c, held); err != nil || held[0] != 2 {
		t.Fatalf("after Heal: %v %v, want the held byte 2 delivered", held, err)
	}

	if err := m.Loss(LinkFetch, 20); err != nil {
		t.Fatal(err)
	}
	slow, fast := 0, 0
	for i := 0; i < 30; i++ {
		d, err := rt(byte(10+i), 30*time.Second)
		if err != nil {
			t.Fatalf("round trip %d at 20%% loss: %v", i, err)
		}
		if d >= lossRTOMin {
			slow++
		} else if d < 100*time.Millisecond {
			fast++
		}
	}
	// P(a round trip loses nothing) = 0.8² = 0.64: over 30, both kinds appear (P(none slow) ≈ 1.5e-6).
	if slow == 0 || fast == 0 {
		t.Fatalf("at 20%% loss: %d round trips ≥ 200 ms, %d under 100 ms; want both", slow, fast)
	}
	if err := m.Loss(LinkFetch, 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Fault == FaultLoss {
			phase := "end"
			if ev.Begin {
				phase = "begin"
			}
			got = append(got, phase)
			if ev.LossPct != 100 && ev.LossPct != 20 {
				t.Errorf("loss event %+v", ev)
			}
		}
	}
	if len(got) != 4 || got[0] != "begin" || got[1] != "end" || got[2] != "begin" || got[3] != "end" {
		t.Fatalf("loss fault events %v, want begin end begin end", got)
	}
}
