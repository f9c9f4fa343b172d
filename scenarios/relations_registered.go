package scenarios

// The relations registered in Go (namedRelations): what a comparison of the vocabulary cannot say.
// A scenario names one (spec.Relation.Named) with its Args; each reads one era of a run (checkCtx).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// The relations registered in Go, by name (spec.Relation.Named).
const (
	relCrashedOwnNothing              = "crashed-own-nothing"
	relCrashNoticedAfterSession       = "crash-noticed-after-session"
	relRestartRebalancesTwice         = "restart-rebalances-twice"
	relRestartRevocationsBelowClassic = "restart-revocations-below-classic"
	relRestartOthersPause             = "restart-others-pause"
	relStaticRestartNoPause           = "static-restart-no-pause"
	relNoRebalanceThroughOutage       = "no-rebalance-through-outage"
	relWindowEndsStable               = "window-ends-stable"
)

// namedRel is the catalogue's Relation naming the registered relation name, reported as text.
func namedRel(eras []spec.Era, crossEra bool, text, name string, args map[string]string) Relation {
	return dataRelation(spec.Relation{Eras: eras, CrossEra: crossEra, Text: text, Named: name, Args: args})
}

// checkCrashedOwnNothing: end: the crashed member owns nothing
func checkCrashedOwnNothing(x checkCtx, args map[string]string) (bool, string, bool) {
	crashed := x.run.crashed()
	for k, o := range x.era.EndOwners {
		for _, m := range strings.Split(o, ",") {
			if crashed[m] {
				return false, fmt.Sprintf("%s owned by crashed %s", k, m), false
			}
		}
	}
	return true, fmt.Sprintf("crashed: %s", strings.Join(sortedKeys(crashed), ",")), false
}

// checkCrashNoticedAfterSession: crash: time_to_stable_ms >= session timeout - liveness interval (the
// server cannot know sooner)
func checkCrashNoticedAfterSession(x checkCtx, args map[string]string) (bool, string, bool) {
	ev, ok := x.era.eventNamed("crash")
	if !ok {
		return false, "no crash event", false
	}
	// The last sign of life reaches the server at most one liveness interval before the
	// crash: go-zookeeper pings every session/3; a coordinator member heartbeats every
	// heartbeat.interval.ms. The session then runs its full length from there.
	bound := x.t.SessionTimeoutMs - x.t.HeartbeatIntervalMs
	session := x.t.SessionTimeoutMs
	if spec.Era(x.era.Era).UsesZooKeeper() {
		session = x.t.ZKSessionTimeoutMs
		bound = session - session/3
	}
	got := ev.Figures.TimeToStableMs
	return got >= bound, fmt.Sprintf("%d ms (session %d ms, bound %d ms)", got, session, bound), false
}

// checkRestartRebalancesTwice: each restart rebalances the whole group twice: rebalance_participants == N-1
// on the leave, N on the rejoin
func checkRestartRebalancesTwice(x checkCtx, args map[string]string) (bool, string, bool) {
	var got []string
	ok := true
	for prefix, want := range map[string]int{"restart-": x.p.Consumers - 1, "rejoin-": x.p.Consumers} {
		evs := x.era.eventsPrefixed(prefix)
		ok = ok && len(evs) == x.p.Consumers
		for _, ev := range evs {
			got = append(got, fmt.Sprintf("%s:%d", ev.Trigger, ev.Figures.RebalanceParticipants))
			ok = ok && ev.Figures.RebalanceParticipants == int64(want)
		}
	}
	sort.Strings(got)
	return ok, strings.Join(got, " "), false
}

// checkRestartRevocationsBelowClassic: restarts: revocations below classic's
func checkRestartRevocationsBelowClassic(x checkCtx, args map[string]string) (bool, string, bool) {
	classic := x.run.era(string(spec.Classic))
	if classic == nil || !classic.Applies {
		return false, "classic did not run", true
	}
	sum := func(e *EraRun) (n int64) {
		for _, ev := range append(e.eventsPrefixed("restart-"), e.eventsPrefixed("rejoin-")...) {
			n += ev.Figures.Revocations
		}
		return n
	}
	co, cl := sum(x.era), sum(classic)
	return co < cl, fmt.Sprintf("cooperative %d, classic %d", co, cl), false
}

// checkRestartOthersPause: each leave and rejoin: every other member pauses (revokes everything it held)
func checkRestartOthersPause(x checkCtx, args map[string]string) (bool, string, bool) {
	got := x.era.restartPausedOthers()
	ok := len(got) == 2*x.p.Consumers
	var parts []string
	for _, w := range got {
		ok = ok && w.paused == x.p.Consumers-1
		parts = append(parts, fmt.Sprintf("%s:%d", w.trigger, w.paused))
	}
	return ok, strings.Join(parts, " "), false
}

// checkStaticRestartNoPause: each restart: no member pauses, and the restarted member's partitions wait
// about the down time
func checkStaticRestartNoPause(x checkCtx, args map[string]string) (bool, string, bool) {
	evs := x.era.eventsPrefixed("restart-") // from the stop to the start
	ok := len(evs) == x.p.Consumers
	lo, hi := staticRestartUnownedBounds(x.p, x.t)
	var parts []string
	for _, ev := range evs {
		m := strings.TrimPrefix(ev.Trigger, "restart-")
		rejoin, found := x.era.eventNamed("rejoin-" + m) // from the start until it owns them again
		u := ev.Figures.UnownedPartitionMs + rejoin.Figures.UnownedPartitionMs
		ok = ok && found && ev.Figures.PausedMemberMs == 0 && u >= lo && u <= hi
		parts = append(parts, fmt.Sprintf("%s: paused %d ms, unowned %d+%d partition-ms", m,
			ev.Figures.PausedMemberMs, ev.Figures.UnownedPartitionMs, rejoin.Figures.UnownedPartitionMs))
	}
	return ok, fmt.Sprintf("%s (want paused 0, %d <= unowned down+rejoin <= %d)", strings.Join(parts, "; "), lo, hi), false
}

// checkNoRebalanceThroughOutage: outage and recovery: rebalance_participants == 0 (no session expires
// without a quorum)
func checkNoRebalanceThroughOutage(x checkCtx, args map[string]string) (bool, string, bool) {
	var n int64
	for _, name := range []string{"quorum-loss", "recover"} {
		ev, ok := x.era.eventNamed(name)
		if !ok {
			return false, "no " + name + " event", false
		}
		n += ev.Figures.RebalanceParticipants
	}
	return n == 0, fmt.Sprintf("%d", n), false
}

// checkWindowEndsStable: the window of the event args["event"] ends with the group stable (e.g. "storm:
// the group converges (window ends stable)")
func checkWindowEndsStable(x checkCtx, args map[string]string) (bool, string, bool) {
	ev, ok := x.era.eventNamed(args["event"])
	if !ok {
		return false, "no " + args["event"] + " event", false
	}
	return ev.End == EndStable, fmt.Sprintf("window end %s after %d ms", ev.End, ev.Figures.TimeToStableMs), false
}
