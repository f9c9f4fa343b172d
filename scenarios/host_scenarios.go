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
	return namedRel(nil, false, "host-up: just before the link comes back, the other hosts' members own every partition exactly once, and took over no sooner than a session timeout minus a liveness interval after the link went down", relSurvivorsOwnAll, nil)
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
	return namedRel([]spec.Era{spec.ZK, spec.Classic, spec.Static}, false, "host-up: the survivors' owners are exactly range's over the survivors sorted by name", relSurvivorsRangeOwners, nil)
}

// downedLoseTheirPartitions: each member of the downed host learns, once its link is back, that its
// session is gone — zk: session_expired; coordinator eras: the coordinator no longer knows its member id
// or generation (a group request answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) — and it revokes
// every partition it owned before the link went down.
func downedLoseTheirPartitions() Relation {
	return namedRel(nil, false, "host-up: each downed member learns its session expired (zk: session_expired; coordinator: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) and revokes all it owned", relDownedLoseTheirPartitions, nil)
}

// breaksAreTheDowned: without the downed members' deliveries and commits from the link's going down on,
// every invariant figure is 0: the by-design breaks are theirs alone (a zk zombie's commits land and
// move the committed offset under the new owner's feet).
func breaksAreTheDowned() Relation {
	return namedRel(nil, false, "without the downed members' deliveries and commits after the link went down, every invariant figure is 0", relBreaksAreTheDowned, nil)
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
	return namedRel(nil, false, "slow: host-delay and host-loss on the last host are closed fault windows of the hold (without netem: on every link of its members too)", relSlowHostWindows, nil)
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
