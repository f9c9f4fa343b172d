package scenarios

// Scenarios over test hosts (Params.Hosts, hosts.go).

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// hostLinkDown: the last host's link goes down for twice the longer session timeout plus 2 s, then
// comes back. ZooKeeper and the broker are on h1, never the downed host.
func hostLinkDown() *Scenario {
	return &Scenario{
		Name: "host-link-down",
		Description: "members spread over test hosts (network namespaces); the last host's link goes down past the " +
			"session timeout, then comes back: its members' sessions expire and the other hosts' members take every partition over",
		Defaults:     Params{Consumers: 6, Partitions: 6, Hosts: 3},
		Small:        Params{Consumers: 6, Partitions: 6, Hosts: 3},
		MinConsumers: 2,
		MinHosts:     2,
		ZKNodes:      1,
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			s.trigger("host-down").add(Step{Action: ActHostDown, Host: p.Hosts})
			// Past the session timeout (the server expires the downed members) and the survivors' rebalance.
			s.add(Step{DelayMs: 2*t.MaxSessionMs() + 2000, Action: ActTrigger, Name: "host-up"})
			s.add(Step{Action: ActHostUp, Host: p.Hosts}).settle()
			return s.steps
		},
		// Once back, a downed member fetches and delivers the partitions it still believes it owns until
		// it learns its session is gone (its next heartbeat, zk: its reconnect and handleNewSession): the
		// zombie window of split-brain-zombie, behind the new owners' commits. breaksAreTheDowned shows
		// these are the downed members' deliveries alone.
		ByDesign: func() map[spec.Era][]string {
			m := allEras(FigInvConsumedUnowned, FigInvConsumedBehindCommitted)
			m[spec.ZK] = append(m[spec.ZK], FigInvConsumedNotMember)
			return m
		}(),
		Relations: []Relation{
			survivorsOwnAll(),
			survivorsRangeOwners(),
			downedLoseTheirPartitions(),
			breaksAreTheDowned(),
			ownedOnce(nil),
			totalFig(nil, FigLost, eq, 0),
		},
	}
}

// downedMembers are the members on the host the script takes down (round-robin placement).
func downedMembers(p Params, script []Step) (down, up []string) {
	host := 0
	for _, st := range script {
		if st.Action == ActHostDown {
			host = st.Host
		}
	}
	for i := 1; i <= p.Consumers; i++ {
		if p.Hosts > 0 && (i-1)%p.Hosts+1 == host {
			down = append(down, memberName(i))
		} else {
			up = append(up, memberName(i))
		}
	}
	return down, up
}

// triggerTs is the time of the first trigger named name, or 0.
func triggerTs(recs []timeline.Record, name string) int64 {
	for _, r := range recs {
		if r.Kind == timeline.Trigger && r.Name == name {
			return r.TsMs
		}
	}
	return 0
}

// survivorOwners is who owns what, per the survivors' own records before ts (the downed members'
// records left out: they cannot tell the group anything while their link is down).
func survivorOwners(e *EraRun, downed []string, ts int64) map[string]string {
	var recs []timeline.Record
	for _, r := range e.Records {
		if r.TsMs >= ts {
			break
		}
		if !slices.Contains(downed, r.Member) {
			recs = append(recs, r)
		}
	}
	return Compute(recs, e.Era, e.Options).FinalOwners
}

// survivorsOwnAll: just before the link comes back, the other hosts' members own every partition once.
func survivorsOwnAll() Relation {
	return Relation{Text: "host-up: just before the link comes back, the other hosts' members own every partition exactly once, and took over no sooner than a session timeout minus a liveness interval after the link went down",
		check: func(x checkCtx) (bool, string, bool) {
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
		}}
}

func allOnce(owners map[string]string, topic string, partitions int, downed []string) bool {
	for p := 0; p < partitions; p++ {
		o := owners[fmt.Sprintf("%s-%d", topic, p)]
		if o == "" || strings.Contains(o, ",") || slices.Contains(downed, o) {
			return false
		}
	}
	return true
}

// rangeOwners is the range assignment of partitions 0..n-1 over members sorted by name (Kafka's
// RangeAssignor and 0.8.2's range: the first n%len members get one more).
func rangeOwners(members []string, n int) map[int]string {
	ms := slices.Clone(members)
	sort.Strings(ms)
	out := map[int]string{}
	per, extra := n/len(ms), n%len(ms)
	p := 0
	for i, m := range ms {
		k := per
		if i < extra {
			k++
		}
		for range k {
			out[p] = m
			p++
		}
	}
	return out
}

// survivorsRangeOwners: in the range eras (zk, classic, static: member ids and group.instance.ids
// sort as the member names do) the survivors' owners are exactly the range assignment over them.
func survivorsRangeOwners() Relation {
	return Relation{Eras: []spec.Era{spec.ZK, spec.Classic, spec.Static},
		Text: "host-up: the survivors' owners are exactly range's over the survivors sorted by name",
		check: func(x checkCtx) (bool, string, bool) {
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
		}}
}

// downedLoseTheirPartitions: each member of the downed host learns, once its link is back, that its
// session is gone — zk: session_expired; coordinator eras: the coordinator no longer knows its member id
// or generation (a group request answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) — and it revokes
// every partition it owned before the link went down.
func downedLoseTheirPartitions() Relation {
	return Relation{Text: "host-up: each downed member learns its session expired (zk: session_expired; coordinator: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) and revokes all it owned",
		check: func(x checkCtx) (bool, string, bool) {
			downed, _ := downedMembers(x.p, x.run.Script)
			down, up := triggerTs(x.era.Records, "host-down"), triggerTs(x.era.Records, "host-up")
			before := Compute(recordsBefore(x.era.Records, down), x.era.Era, x.era.Options).FinalOwners
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
		}}
}

// breaksAreTheDowned: without the downed members' deliveries and commits from the link's going down on,
// every invariant figure is 0: the by-design breaks are theirs alone (a zk zombie's commits land and
// move the committed offset under the new owner's feet).
func breaksAreTheDowned() Relation {
	return Relation{Text: "without the downed members' deliveries and commits after the link went down, every invariant figure is 0",
		check: func(x checkCtx) (bool, string, bool) {
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
			tot := Compute(recs, x.era.Era, x.era.Options).Totals
			var bad []string
			for _, name := range InvariantNames {
				if v, _ := tot.Get(name); v != 0 {
					bad = append(bad, fmt.Sprintf("%s=%d", name, v))
				}
			}
			if len(bad) > 0 {
				return false, strings.Join(bad, " "), false
			}
			return true, fmt.Sprintf("all 0 without the downed members' %d deliveries and commits", dropped), false
		}}
}

func recordsBefore(recs []timeline.Record, ts int64) []timeline.Record {
	for i, r := range recs {
		if r.TsMs >= ts {
			return recs[:i:i]
		}
	}
	return recs
}

// hostSlowLink: the last host's network turns slow and lossy (host-delay, host-loss) for a while, well
// under the session timeouts, then recovers. Where the kernel has netem it is tc netem on the host's
// interface; where it has not, the host's members' proxies (the run's notes say which). ZooKeeper and
// the broker are on h1, never the slowed host.
func hostSlowLink() *Scenario {
	return &Scenario{
		Name: "host-slow-link",
		Description: "members spread over test hosts (network namespaces); the last host's network gets 200 ms of delay and 5% loss " +
			"for a while (tc netem, or without netem the host's members' proxies), then recovers: the group stays whole",
		Defaults:     Params{Consumers: 6, Partitions: 6, Hosts: 3},
		Small:        Params{Consumers: 6, Partitions: 6, Hosts: 3},
		MinConsumers: 2,
		MinHosts:     2,
		ZKNodes:      1,
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := &script{t: t}
			s.startAll(p.Consumers)
			s.trigger("slow").add(Step{Action: ActHostDelay, Host: p.Hosts, LatencyMs: hostSlowDelayMs})
			s.add(Step{Action: ActHostLoss, Host: p.Hosts, LossPct: hostSlowLossPct})
			s.add(Step{DelayMs: hostSlowHoldMs, Action: ActTrigger, Name: "recover"})
			s.add(Step{Action: ActHostDelay, Host: p.Hosts}).add(Step{Action: ActHostLoss, Host: p.Hosts}).settle()
			return s.steps
		},
		Relations: []Relation{
			slowHostWindows(),
			ownedOnce(nil),
			totalFig(nil, FigLost, eq, 0),
		},
	}
}

// host-slow-link's fault: delay, loss, and how long they last.
const (
	hostSlowDelayMs = 200
	hostSlowLossPct = 5
	hostSlowHoldMs  = 4000
)

// slowHostWindows: the slowed host's host-delay and host-loss are closed fault windows of about the
// hold, and without netem every proxy link of its members had the same delay and loss.
func slowHostWindows() Relation {
	return Relation{Text: "slow: host-delay and host-loss on the last host are closed fault windows of the hold (without netem: on every link of its members too)",
		check: func(x checkCtx) (bool, string, bool) {
			host := fmt.Sprintf("h%d", x.p.Hosts)
			delay := fmt.Sprintf("%s %dms", ActHostDelay, hostSlowDelayMs)
			loss := fmt.Sprintf("%s %d%%", ActHostLoss, hostSlowLossPct)
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
		}}
}

// membersOfHost splits the members into those on host (round-robin placement) and the others.
func membersOfHost(p Params, host int) (on, off []string) {
	for i := 1; i <= p.Consumers; i++ {
		if p.Hosts > 0 && (i-1)%p.Hosts+1 == host {
			on = append(on, memberName(i))
		} else {
			off = append(off, memberName(i))
		}
	}
	return on, off
}
