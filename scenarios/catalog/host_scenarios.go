package catalog

// The Go of the scenarios over test hosts (Params.Hosts, hosts.go): the scenarios are files
// (catalog/host-link-down.yaml, host-slow-link.yaml); here the helpers their registered relations use.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// downedMembers are the members on the host the script takes down (round-robin placement).
func downedMembers(p Params, script []Step) (down, up []string) {
	host := 0
	for _, st := range script {
		if st.Action == spec.ActHostDown {
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
func survivorOwners(e *eraRun, downed []string, ts int64) map[string]string {
	var recs []timeline.Record
	for _, r := range e.Records {
		if r.TsMs >= ts {
			break
		}
		if !slices.Contains(downed, r.Member) {
			recs = append(recs, r)
		}
	}
	return figures.Compute(recs, e.Era, e.Options).FinalOwners
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

func recordsBefore(recs []timeline.Record, ts int64) []timeline.Record {
	for i, r := range recs {
		if r.TsMs >= ts {
			return recs[:i:i]
		}
	}
	return recs
}

// host-slow-link's fault: delay, loss, and how long they last (catalog/host-slow-link.yaml gives the
// same; the slow-host-windows relation checks its fault windows against these).
const (
	hostSlowDelayMs = 200
	hostSlowLossPct = 5
	hostSlowHoldMs  = 4000
)

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
