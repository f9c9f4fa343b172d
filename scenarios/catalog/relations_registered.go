package catalog

// The relations registered in Go (namedRelations): what a comparison of the vocabulary cannot say.
// A scenario names one (spec.Relation.Named) with its Args; each reads one era of a run (checkCtx).

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
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
	// cluster_scenarios.go
	relDeliversAgainBeforeReturn      = "delivers-again-before-return"
	relCoordinatorFoundAgain          = "coordinator-found-again"
	relStableAfterFailover            = "stable-after-failover"
	relDuplicatesBoundedByUncommitted = "duplicates-bounded-by-uncommitted"
	// host_scenarios.go
	relSurvivorsOwnAll           = "survivors-own-all"
	relSurvivorsRangeOwners      = "survivors-range-owners"
	relDownedLoseTheirPartitions = "downed-lose-their-partitions"
	relBreaksAreTheDowned        = "breaks-are-the-downed"
	relSlowHostWindows           = "slow-host-windows"
	// systemtests.go
	relCrashStableWithinTwoSessions = "crash-stable-within-two-sessions"
	relPerPartition                 = "per-partition"
	// cluster_scenarios.go, durability: on the producer args["producer"]
	relProducerKeptAcknowledged     = "producer-kept-acknowledged"
	relProducerCarriedOn            = "producer-carried-on"
	relProducerLostOnlyWhereDownLed = "producer-lost-only-where-down-led"
	// faults.go: every era's
	relFaultsTookEffect        = "faults-took-effect"
	RelStreamsFaultsTookEffect = "streams-faults-took-effect"
)

// namedRel is the catalogue's Relation naming the registered relation name, reported as text.
func namedRel(eras []spec.Era, crossEra bool, text, name string, args map[string]string) Relation {
	return dataRelation(spec.Relation{Eras: eras, CrossEra: crossEra, Text: text, Named: name, Args: args})
}

// checkCrashedOwnNothing: end: the crashed member owns nothing
func checkCrashedOwnNothing(x checkCtx, args map[string]string) (bool, string, bool) {
	crashed := crashed(x.run)
	for k, o := range x.era.EndOwners {
		for _, m := range strings.Split(o, ",") {
			if crashed[m] {
				return false, fmt.Sprintf("%s owned by crashed %s", k, m), false
			}
		}
	}
	return true, fmt.Sprintf("crashed: %s", strings.Join(slices.Sorted(maps.Keys(crashed)), ",")), false
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
	classic := eraOf(x.run, string(spec.Classic))
	if classic == nil || !classic.Applies {
		return false, "classic did not run", true
	}
	sum := func(e *eraRun) (n int64) {
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
	return ev.End == figures.EndStable, fmt.Sprintf("window end %s after %d ms", ev.End, ev.Figures.TimeToStableMs), false
}

// checkDeliversAgainBeforeReturn: failure: every partition delivers again before the broker returns (the
// fetchers found the new leaders)
func checkDeliversAgainBeforeReturn(x checkCtx, args map[string]string) (bool, string, bool) {
	n := x.era.partitionsDeliveredBetween("broker-failure", "broker-return")
	return n == int64(x.p.Partitions), fmt.Sprintf("%d of %d partitions", n, x.p.Partitions), false
}

// checkCoordinatorFoundAgain: failover: every member looks the coordinator up again and reaches it
// (coordinator_found_ms >= 0)
func checkCoordinatorFoundAgain(x checkCtx, args map[string]string) (bool, string, bool) {
	ms := x.era.coordinatorFoundMs("coordinator-failover")
	return ms >= 0, fmt.Sprintf("%d ms after the kill", ms), false
}

// checkStableAfterFailover: failover: the group is stable again, or never stopped being (time_to_stable_ms
// is not never)
func checkStableAfterFailover(x checkCtx, args map[string]string) (bool, string, bool) {
	ev, ok := x.era.eventNamed("coordinator-failover")
	if !ok {
		return false, "no coordinator-failover event", false
	}
	return ev.Figures.TimeToStableMs != figures.NeverStable,
		fmt.Sprintf("window end %s, time_to_stable_ms %d", ev.End, ev.Figures.TimeToStableMs), false
}

// checkDuplicatesBoundedByUncommitted: failover: duplicates <= records delivered past the commits
// acknowledged before the kill
func checkDuplicatesBoundedByUncommitted(x checkCtx, args map[string]string) (bool, string, bool) {
	bound := x.era.uncommittedAt("coordinator-failover", "coordinator-return")
	d, err := fig(figures.FigDuplicates, x.era.Result.Totals)
	if err != nil {
		return false, err.Error(), false
	}
	return bound >= 0 && d <= bound, fmt.Sprintf("%d duplicates, bound %d", d, bound), false
}

// checkSurvivorsOwnAll: host-up: just before the link comes back, the other hosts' members own every
// partition exactly once, and took over no sooner than a session timeout minus a liveness interval after
// the link went down
func checkSurvivorsOwnAll(x checkCtx, args map[string]string) (bool, string, bool) {
	downed, _ := downedMembers(x.p, x.run.Script)
	up := triggerTs(x.era.Records, "host-up")
	down := triggerTs(x.era.Records, "host-down")
	if up == 0 || down == 0 {
		return false, "no host-down / host-up trigger", false
	}
	owners := survivorOwners(x.era, downed, up)
	var bad []string
	count := map[string]int{}
	for p := 0; p < x.p.Partitions; p++ {
		key := fmt.Sprintf("%s-%d", x.era.Topic, p)
		o := owners[key]
		if o == "" || strings.Contains(o, ",") || slices.Contains(downed, o) {
			bad = append(bad, fmt.Sprintf("%s=%q", key, o))
			continue
		}
		count[o]++
	}
	if len(bad) > 0 {
		return false, "not owned once by a survivor: " + strings.Join(bad, " "), false
	}
	// When did they first own it all? Scan the survivors' assignment changes after the down.
	var takeover int64
	for _, r := range x.era.Records {
		if r.TsMs <= down || r.TsMs >= up || slices.Contains(downed, r.Member) || (r.Kind != timeline.Assigned && r.Kind != timeline.Revoked) {
			continue
		}
		if allOnce(survivorOwners(x.era, downed, r.TsMs+1), x.era.Topic, x.p.Partitions, downed) {
			takeover = r.TsMs - down
			break
		}
	}
	bound := x.t.SessionTimeoutMs - x.t.HeartbeatIntervalMs
	if spec.Era(x.era.Era).UsesZooKeeper() {
		bound = x.t.ZKSessionTimeoutMs - x.t.ZKSessionTimeoutMs/3
	}
	got := fmt.Sprintf("owners %s; taken over %d ms after the link went down (bound %d ms)", formatCounts(count), takeover, bound)
	return takeover >= bound, got, false
}

// checkSurvivorsRangeOwners: host-up: the survivors' owners are exactly range's over the survivors sorted
// by name
func checkSurvivorsRangeOwners(x checkCtx, args map[string]string) (bool, string, bool) {
	downed, survivors := downedMembers(x.p, x.run.Script)
	owners := survivorOwners(x.era, downed, triggerTs(x.era.Records, "host-up"))
	want := rangeOwners(survivors, x.p.Partitions)
	var diff, got []string
	for p := 0; p < x.p.Partitions; p++ {
		o := owners[fmt.Sprintf("%s-%d", x.era.Topic, p)]
		got = append(got, fmt.Sprintf("%d:%s", p, o))
		if o != want[p] {
			diff = append(diff, fmt.Sprintf("p%d %q want %q", p, o, want[p]))
		}
	}
	if len(diff) > 0 {
		return false, strings.Join(diff, ", "), false
	}
	return true, strings.Join(got, " "), false
}

// checkDownedLoseTheirPartitions: host-up: each downed member learns its session expired (zk:
// session_expired; coordinator: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) and revokes all it owned
func checkDownedLoseTheirPartitions(x checkCtx, args map[string]string) (bool, string, bool) {
	downed, _ := downedMembers(x.p, x.run.Script)
	down, up := triggerTs(x.era.Records, "host-down"), triggerTs(x.era.Records, "host-up")
	before := figures.Compute(recordsBefore(x.era.Records, down), x.era.Era, x.era.Options).FinalOwners
	var parts []string
	for _, m := range downed {
		owned := map[string]bool{}
		for k, o := range before {
			if slices.Contains(strings.Split(o, ","), m) {
				owned[k] = true
			}
		}
		expired := false
		revoked := map[string]bool{}
		for _, r := range x.era.Records {
			if r.Member != m || r.TsMs < up {
				continue
			}
			switch r.Kind {
			case timeline.SessionExpired:
				expired = expired || spec.Era(x.era.Era).UsesZooKeeper()
			case timeline.GroupRequest:
				expired = expired || r.Err == "UNKNOWN_MEMBER_ID" || r.Err == "ILLEGAL_GENERATION"
			case timeline.Revoked:
				if expired {
					for topic, ps := range r.Partitions {
						for _, p := range ps {
							revoked[fmt.Sprintf("%s-%d", topic, p)] = true
						}
					}
				}
			}
		}
		var missing []string
		for k := range owned {
			if !revoked[k] {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		switch {
		case len(owned) == 0:
			return false, fmt.Sprintf("%s owned nothing before the link went down", m), false
		case !expired:
			return false, fmt.Sprintf("%s: no sign of its expired session after the link came back", m), false
		case len(missing) > 0:
			return false, fmt.Sprintf("%s did not revoke %s after learning it", m, strings.Join(missing, ",")), false
		}
		parts = append(parts, fmt.Sprintf("%s revoked %d", m, len(owned)))
	}
	return true, strings.Join(parts, "; "), false
}

// checkBreaksAreTheDowned: without the downed members' deliveries and commits after the link went down,
// every invariant figure is 0
func checkBreaksAreTheDowned(x checkCtx, args map[string]string) (bool, string, bool) {
	downed, _ := downedMembers(x.p, x.run.Script)
	down := triggerTs(x.era.Records, "host-down")
	var recs []timeline.Record
	dropped := 0
	for _, r := range x.era.Records {
		if (r.Kind == timeline.Deliver || r.Kind == timeline.Commit) && r.TsMs >= down && slices.Contains(downed, r.Member) {
			dropped++
			continue
		}
		recs = append(recs, r)
	}
	tot := figures.Compute(recs, x.era.Era, x.era.Options).Totals
	var bad []string
	for _, name := range figures.InvariantNames {
		if v, _ := tot.Get(name); v != 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", name, v))
		}
	}
	if len(bad) > 0 {
		return false, strings.Join(bad, " "), false
	}
	return true, fmt.Sprintf("all 0 without the downed members' %d deliveries and commits", dropped), false
}

// checkSlowHostWindows: slow: host-delay and host-loss on the last host are closed fault windows of the
// hold (without netem: on every link of its members too)
func checkSlowHostWindows(x checkCtx, args map[string]string) (bool, string, bool) {
	host := fmt.Sprintf("h%d", x.p.Hosts)
	delay := fmt.Sprintf("%s %dms", spec.ActHostDelay, hostSlowDelayMs)
	loss := fmt.Sprintf("%s %d%%", spec.ActHostLoss, hostSlowLossPct)
	found := map[string]bool{}
	links := map[string]bool{}
	var got []string
	for _, f := range x.era.Result.Faults {
		switch {
		case f.Target == host && (f.Action == delay || f.Action == loss):
			if f.Open || f.DurationMs < hostSlowHoldMs {
				return false, fmt.Sprintf("%s on %s: %d ms (open %v), want closed and >= %d ms", f.Action, host, f.DurationMs, f.Open, hostSlowHoldMs), false
			}
			found[f.Action] = true
		case strings.Contains(f.Target, "/") && (f.Action == fmt.Sprintf("latency %dms", hostSlowDelayMs) || f.Action == fmt.Sprintf("loss %d%%", hostSlowLossPct)):
			links[f.Target+" "+f.Action] = true
		}
	}
	if !found[delay] || !found[loss] {
		return false, fmt.Sprintf("fault windows on %s: %v", host, found), false
	}
	got = append(got, fmt.Sprintf("%s and %s on %s", delay, loss, host))
	if x.run.HostCapabilities != nil && !x.run.HostCapabilities.Netem {
		slowed, _ := membersOfHost(x.p, x.p.Hosts)
		for _, m := range slowed {
			for _, a := range []string{fmt.Sprintf("latency %dms", hostSlowDelayMs), fmt.Sprintf("loss %d%%", hostSlowLossPct)} {
				ok := false
				for k := range links {
					if strings.HasPrefix(k, m+"/") && strings.HasSuffix(k, " "+a) {
						ok = true
					}
				}
				if !ok {
					return false, fmt.Sprintf("no netem, but no %s window on a link of %s", a, m), false
				}
			}
		}
		got = append(got, fmt.Sprintf("and on %d links of %s (proxies, no netem)", len(links)/2, strings.Join(slowed, " ")))
	}
	return true, strings.Join(got, " "), false
}

// checkCrashStableWithinTwoSessions: crash: time_to_stable_ms <= 2 x session timeout + 5 s
func checkCrashStableWithinTwoSessions(x checkCtx, args map[string]string) (bool, string, bool) {
	ev, ok := x.era.eventNamed("crash")
	if !ok {
		return false, "no crash event", false
	}
	session := x.t.SessionTimeoutMs
	if spec.Era(x.era.Era).UsesZooKeeper() {
		session = x.t.ZKSessionTimeoutMs
	}
	bound, got := 2*session+5000, ev.Figures.TimeToStableMs
	return got >= 0 && got <= bound, fmt.Sprintf("%d ms (bound %d ms)", got, bound), false
}

// checkFaultsTookEffect: FaultRelationText: each fault step of the script left its fault record on the
// era's timeline (faultRelation).
func checkFaultsTookEffect(x checkCtx, args map[string]string) (bool, string, bool) {
	wants := faultWants(x.run.Script, x.era.Era)
	if len(wants) == 0 {
		return true, "no fault step", false
	}
	if missing := checkFaults(wants, x.era.Records); len(missing) > 0 {
		return false, fmt.Sprintf("%d of %d fault steps left no fault record: %s", len(missing), len(wants), strings.Join(missing, "; ")), false
	}
	return true, fmt.Sprintf("%d fault steps, each with its record", len(wants)), false
}
