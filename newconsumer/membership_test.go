package newconsumer

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func str(s string) *string { return &s }

// joined returns a membership STABLE in generation 5 as member "m".
func joined(static bool) (*membership, generation) {
	m := newMembership(static)
	g := generation{id: 5, memberID: "m", protocol: "range"}
	m.state, m.gen, m.rejoinNeeded, m.needsJoinPrepare = stable, g, false, false
	return m, g
}

func TestJoinGroupResponses(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		m := newMembership(false)
		m.startJoin()
		o := m.onJoinGroupResponse(noGeneration, joinResponse{generation: 3, memberID: "m-1", protocolType: str("consumer"), protocol: str("range")})
		if o.err != nil || m.state != completingRebalance || m.gen != (generation{3, "m-1", "range"}) {
			t.Fatalf("outcome %+v state %v gen %+v", o, m.state, m.gen)
		}
	})
	t.Run("MEMBER_ID_REQUIRED rejoins at once with the given id", func(t *testing.T) {
		m := newMembership(false)
		m.needsJoinPrepare = false // Poll ran onJoinPrepare; the rejoin must not run it again
		m.startJoin()
		o := m.onJoinGroupResponse(noGeneration, joinResponse{code: kerr.MemberIDRequired.Code, generation: -1, memberID: "m-7"})
		if !errors.Is(o.err, kerr.MemberIDRequired) || o.retry != retryNow || m.gen != (generation{-1, "m-7", ""}) || !m.rejoinNeeded || m.needsJoinPrepare {
			t.Fatalf("outcome %+v gen %+v rejoin %v prepare %v", o, m.gen, m.rejoinNeeded, m.needsJoinPrepare)
		}
	})
	t.Run("UNKNOWN_MEMBER_ID resets the member id when the generation is unchanged", func(t *testing.T) {
		m, g := joined(false)
		m.startJoin()
		o := m.onJoinGroupResponse(g, joinResponse{code: kerr.UnknownMemberID.Code})
		if o.retry != retryNow || m.gen != noGeneration || m.state != unjoined || !m.needsJoinPrepare {
			t.Fatalf("outcome %+v gen %+v state %v", o, m.gen, m.state)
		}
		m2, _ := joined(false)
		m2.startJoin()
		m2.onJoinGroupResponse(generation{id: 4, memberID: "m"}, joinResponse{code: kerr.UnknownMemberID.Code})
		if m2.gen.id != 5 || m2.gen.memberID != "m" {
			t.Fatalf("a stale request's error reset the generation: %+v", m2.gen)
		}
	})
	for _, c := range []struct {
		name  string
		code  int16
		retry retry
		lost  bool
	}{
		{"REBALANCE_IN_PROGRESS", kerr.RebalanceInProgress.Code, retryNow, false},
		{"COORDINATOR_LOAD_IN_PROGRESS", kerr.CoordinatorLoadInProgress.Code, retryBackoff, false},
		{"NOT_COORDINATOR", kerr.NotCoordinator.Code, retryBackoff, true},
		{"COORDINATOR_NOT_AVAILABLE", kerr.CoordinatorNotAvailable.Code, retryBackoff, true},
		{"FENCED_INSTANCE_ID", kerr.FencedInstanceID.Code, fatal, false},
		{"INCONSISTENT_GROUP_PROTOCOL", kerr.InconsistentGroupProtocol.Code, fatal, false},
		{"INVALID_SESSION_TIMEOUT", kerr.InvalidSessionTimeout.Code, fatal, false},
		{"GROUP_MAX_SIZE_REACHED", kerr.GroupMaxSizeReached.Code, fatal, false},
		{"UNKNOWN_SERVER_ERROR", kerr.UnknownServerError.Code, fatal, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, g := joined(false)
			m.startJoin()
			o := m.onJoinGroupResponse(g, joinResponse{code: c.code})
			if o.err == nil || o.retry != c.retry || o.coordinatorLost != c.lost || !m.rejoinNeeded {
				t.Fatalf("outcome %+v rejoin %v", o, m.rejoinNeeded)
			}
			if !errors.Is(o.err, kerr.ErrorForCode(c.code)) {
				t.Fatalf("error %v is not %v", o.err, kerr.ErrorForCode(c.code))
			}
		})
	}
	t.Run("wrong protocol type", func(t *testing.T) {
		m := newMembership(false)
		m.startJoin()
		o := m.onJoinGroupResponse(noGeneration, joinResponse{generation: 1, memberID: "m", protocolType: str("connect")})
		if !errors.Is(o.err, kerr.InconsistentGroupProtocol) || o.retry != fatal {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("left meanwhile", func(t *testing.T) {
		m := newMembership(false) // UNJOINED: not waiting for a JoinGroup response
		o := m.onJoinGroupResponse(noGeneration, joinResponse{generation: 1, memberID: "m"})
		if o.err == nil || o.retry != retryBackoff || m.state != unjoined {
			t.Fatalf("outcome %+v state %v", o, m.state)
		}
	})
}

func TestSyncGroupResponses(t *testing.T) {
	completing := func() (*membership, generation) {
		m := newMembership(false)
		m.startJoin()
		m.onJoinGroupResponse(noGeneration, joinResponse{generation: 6, memberID: "m", protocol: str("range")})
		return m, m.gen
	}
	t.Run("success", func(t *testing.T) {
		m, g := completing()
		o := m.onSyncGroupResponse(g, syncResponse{protocolType: str("consumer"), protocol: str("range")})
		if o.err != nil || m.state != stable || m.rejoinNeeded {
			t.Fatalf("outcome %+v state %v rejoin %v", o, m.state, m.rejoinNeeded)
		}
	})
	t.Run("REBALANCE_IN_PROGRESS keeps heartbeating with the join's generation", func(t *testing.T) {
		m, g := completing()
		o := m.onSyncGroupResponse(g, syncResponse{code: kerr.RebalanceInProgress.Code})
		if o.retry != retryNow || m.state != completingRebalance || m.gen != g || !m.heartbeatEnabled() || !m.rejoinNeeded {
			t.Fatalf("outcome %+v state %v gen %+v", o, m.state, m.gen)
		}
	})
	t.Run("ILLEGAL_GENERATION keeps the member id", func(t *testing.T) {
		m, g := completing()
		o := m.onSyncGroupResponse(g, syncResponse{code: kerr.IllegalGeneration.Code})
		if o.retry != retryNow || m.gen != (generation{-1, "m", ""}) || m.state != unjoined || !m.needsJoinPrepare {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("UNKNOWN_MEMBER_ID drops the member id", func(t *testing.T) {
		m, g := completing()
		m.onSyncGroupResponse(g, syncResponse{code: kerr.UnknownMemberID.Code})
		if m.gen != noGeneration {
			t.Fatalf("gen %+v", m.gen)
		}
	})
	t.Run("generation reset by the heartbeat thread meanwhile", func(t *testing.T) {
		m, g := completing()
		m.resetStateAndRejoin("heartbeat said so", true)
		o := m.onSyncGroupResponse(g, syncResponse{})
		if !errors.Is(o.err, kerr.IllegalGeneration) || o.retry != retryNow || m.state == stable {
			t.Fatalf("outcome %+v state %v", o, m.state)
		}
	})
	t.Run("protocol name differs from the join's", func(t *testing.T) {
		m, g := completing()
		o := m.onSyncGroupResponse(g, syncResponse{protocol: str("roundrobin")})
		if !errors.Is(o.err, kerr.InconsistentGroupProtocol) || o.retry != fatal {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("FENCED_INSTANCE_ID", func(t *testing.T) {
		m, g := completing()
		if o := m.onSyncGroupResponse(g, syncResponse{code: kerr.FencedInstanceID.Code}); o.retry != fatal {
			t.Fatalf("outcome %+v", o)
		}
	})
}

func TestHeartbeatResponses(t *testing.T) {
	t.Run("NONE", func(t *testing.T) {
		m, g := joined(false)
		if o := m.onHeartbeatResponse(g, 0, nil); o.err != nil || !o.heartbeatReceived {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("REBALANCE_IN_PROGRESS when stable: rejoin, heartbeat counts", func(t *testing.T) {
		m, g := joined(false)
		o := m.onHeartbeatResponse(g, kerr.RebalanceInProgress.Code, nil)
		if !o.heartbeatReceived || !m.rejoinNeeded || m.state != stable || m.gen != g {
			t.Fatalf("outcome %+v rejoin %v", o, m.rejoinNeeded)
		}
	})
	t.Run("REBALANCE_IN_PROGRESS while completing: ignored", func(t *testing.T) {
		m, g := joined(false)
		m.state, m.rejoinNeeded = completingRebalance, false
		if o := m.onHeartbeatResponse(g, kerr.RebalanceInProgress.Code, nil); o.err != nil || !o.heartbeatReceived || m.rejoinNeeded {
			t.Fatalf("outcome %+v rejoin %v", o, m.rejoinNeeded)
		}
	})
	t.Run("ILLEGAL_GENERATION resets the generation, keeps the member id", func(t *testing.T) {
		m, g := joined(false)
		o := m.onHeartbeatResponse(g, kerr.IllegalGeneration.Code, nil)
		if o.heartbeatReceived || o.heartbeatFatal || m.gen != (generation{-1, "m", ""}) || m.state != unjoined || !m.needsJoinPrepare {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("UNKNOWN_MEMBER_ID resets the member id", func(t *testing.T) {
		m, g := joined(false)
		m.onHeartbeatResponse(g, kerr.UnknownMemberID.Code, nil)
		if m.gen != noGeneration {
			t.Fatalf("gen %+v", m.gen)
		}
	})
	t.Run("FENCED_INSTANCE_ID is fatal", func(t *testing.T) {
		m, g := joined(true)
		o := m.onHeartbeatResponse(g, kerr.FencedInstanceID.Code, nil)
		if !o.heartbeatFatal || !errors.Is(o.err, kerr.FencedInstanceID) || m.gen != noGeneration {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("an older generation's error is ignored", func(t *testing.T) {
		m, _ := joined(false)
		o := m.onHeartbeatResponse(generation{4, "m", "range"}, kerr.IllegalGeneration.Code, nil)
		if o.err != nil || !o.heartbeatReceived || m.gen.id != 5 {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("NOT_COORDINATOR and transport errors lose the coordinator", func(t *testing.T) {
		m, g := joined(false)
		if o := m.onHeartbeatResponse(g, kerr.NotCoordinator.Code, nil); !o.coordinatorLost || o.heartbeatReceived {
			t.Fatalf("outcome %+v", o)
		}
		if o := m.onHeartbeatResponse(g, 0, errors.New("i/o timeout")); !o.coordinatorLost || o.heartbeatReceived || o.err == nil {
			t.Fatalf("outcome %+v", o)
		}
		if m.state != stable || m.gen != g {
			t.Fatalf("state %v gen %+v", m.state, m.gen)
		}
	})
}

func TestCommitErrors(t *testing.T) {
	t.Run("ILLEGAL_GENERATION: CommitFailed, generation reset, member id kept", func(t *testing.T) {
		m, g := joined(false)
		o := m.onCommitError(g, kerr.IllegalGeneration.Code)
		if !errors.Is(o.err, ErrCommitFailed) || o.retry != fatal || m.gen != (generation{-1, "m", ""}) {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("UNKNOWN_MEMBER_ID: CommitFailed, member id reset", func(t *testing.T) {
		m, g := joined(false)
		o := m.onCommitError(g, kerr.UnknownMemberID.Code)
		if !errors.Is(o.err, ErrCommitFailed) || m.gen != noGeneration {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("stale generation while rejoining: RebalanceInProgress, no reset", func(t *testing.T) {
		m, g := joined(false)
		m.startJoin()
		m.gen.id = 6
		o := m.onCommitError(g, kerr.IllegalGeneration.Code)
		if !errors.Is(o.err, ErrRebalanceInProgress) || m.gen.id != 6 {
			t.Fatalf("outcome %+v gen %+v", o, m.gen)
		}
	})
	t.Run("stale generation after the JoinGroup answer: RebalanceInProgress, no reset", func(t *testing.T) {
		m, g := joined(false)
		m.startJoin()
		m.state, m.gen = completingRebalance, generation{id: 6, memberID: "m", protocol: "range"}
		o := m.onCommitError(g, kerr.IllegalGeneration.Code)
		if !errors.Is(o.err, ErrRebalanceInProgress) || m.state != completingRebalance || m.gen.id != 6 || m.needsJoinPrepare {
			t.Fatalf("outcome %+v state %s gen %+v", o, m.state, m.gen)
		}
	})
	t.Run("stale generation once stable in the next: CommitFailed, no reset", func(t *testing.T) {
		m, g := joined(false)
		m.gen = generation{id: 6, memberID: "m", protocol: "range"}
		o := m.onCommitError(g, kerr.UnknownMemberID.Code)
		if !errors.Is(o.err, ErrCommitFailed) || m.state != stable || m.gen.id != 6 || m.rejoinNeeded {
			t.Fatalf("outcome %+v state %s gen %+v rejoin %v", o, m.state, m.gen, m.rejoinNeeded)
		}
	})
	t.Run("REBALANCE_IN_PROGRESS: rejoin", func(t *testing.T) {
		m, g := joined(false)
		o := m.onCommitError(g, kerr.RebalanceInProgress.Code)
		if !errors.Is(o.err, ErrRebalanceInProgress) || !m.rejoinNeeded || m.gen != g {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("retriable ones", func(t *testing.T) {
		m, g := joined(false)
		if o := m.onCommitError(g, kerr.NotCoordinator.Code); o.retry != retryBackoff || !o.coordinatorLost {
			t.Fatalf("NOT_COORDINATOR %+v", o)
		}
		if o := m.onCommitError(g, kerr.CoordinatorLoadInProgress.Code); o.retry != retryBackoff || o.coordinatorLost {
			t.Fatalf("COORDINATOR_LOAD_IN_PROGRESS %+v", o)
		}
	})
	t.Run("FENCED_INSTANCE_ID in the same generation", func(t *testing.T) {
		m, g := joined(true)
		if o := m.onCommitError(g, kerr.FencedInstanceID.Code); !errors.Is(o.err, kerr.FencedInstanceID) || o.retry != fatal {
			t.Fatalf("outcome %+v", o)
		}
	})
}

func TestLeaveGroup(t *testing.T) {
	m, _ := joined(false)
	if send, id := m.leaveGroup(true, "closing"); !send || id != "m" || m.gen != noGeneration || m.state != unjoined || !m.rejoinNeeded {
		t.Fatalf("dynamic: send %v id %q gen %+v", send, id, m.gen)
	}
	if send, _ := m.leaveGroup(true, "again"); send {
		t.Fatal("an UNJOINED member sent LeaveGroup")
	}
	s, _ := joined(true)
	if send, _ := s.leaveGroup(true, "closing"); send || s.gen != noGeneration {
		t.Fatalf("static member: send %v gen %+v (KIP-345: never LeaveGroup)", send, s.gen)
	}
}

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, backoff(100*ms, 1000*ms, i))
	}
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
	}
}

func TestHeartbeatTimers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SessionTimeout, cfg.HeartbeatInterval, cfg.MaxPollInterval = 2000*time.Millisecond, 500*time.Millisecond, 5000*time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := newHeartbeatTimers(&cfg, t0)
	if h.shouldHeartbeat(at(499)) || !h.shouldHeartbeat(at(500)) {
		t.Fatal("first heartbeat due at heartbeat.interval.ms")
	}
	h.sent(at(500))
	if h.shouldHeartbeat(at(999)) || !h.shouldHeartbeat(at(1000)) {
		t.Fatal("next heartbeat an interval after sending")
	}
	if h.sessionExpired(at(1999)) || !h.sessionExpired(at(2000)) {
		t.Fatal("session expires session.timeout.ms after the last successful heartbeat")
	}
	h.received(at(1500))
	if h.sessionExpired(at(3499)) || !h.sessionExpired(at(3500)) {
		t.Fatal("a received heartbeat restarts the session")
	}
	h.failed(at(1600)) // retry after retry.backoff.ms (100), then 200
	if !h.nextHeartbeat.Equal(at(1700)) {
		t.Fatalf("retry at %v", h.nextHeartbeat.Sub(t0))
	}
	h.failed(at(1700))
	if !h.nextHeartbeat.Equal(at(1900)) {
		t.Fatalf("second retry at %v", h.nextHeartbeat.Sub(t0))
	}
	if h.pollExpired(at(4999)) || !h.pollExpired(at(5000)) {
		t.Fatal("poll timer: max.poll.interval.ms from the last poll")
	}
	h.poll(at(4000))
	if h.pollExpired(at(8999)) || !h.pollExpired(at(9000)) {
		t.Fatal("a poll restarts the poll timer")
	}
	if !h.next().Equal(at(1900)) {
		t.Fatalf("next timer at %v", h.next().Sub(t0))
	}
}
