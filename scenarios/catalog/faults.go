package catalog

// The check that a run's faults were earned: every fault step of the script (a crash, a link fault, a
// ZooKeeper node or broker stopped, a test host's link, delay or loss) must have left the fault record
// that shows it took effect, or the run's relations may hold only because nothing happened (zk-quorum-loss's
// all hold when no ZooKeeper node ever stops). The check is derived from the script's steps, so every
// scenario gets it, those added later and Options.Definition's too.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// FaultRelationText is the text of the relation every run gets (faultRelation).
const FaultRelationText = "faults: every scripted fault took effect (its fault record)"

// faultWant is the fault record one fault step must leave: its action (or action prefix), its target
// (or target prefix) and phase ("" for an instant, a crash).
type faultWant struct {
	step           string
	action         string
	actionIsPrefix bool
	target         string
	targetIsPrefix bool
	phase          string
}

func (w faultWant) matches(r timeline.Record) bool {
	if r.Kind != timeline.Fault || r.Phase != w.phase {
		return false
	}
	if w.actionIsPrefix && !strings.HasPrefix(r.Action, w.action) || !w.actionIsPrefix && r.Action != w.action {
		return false
	}
	if w.targetIsPrefix {
		return strings.HasPrefix(r.Target, w.target)
	}
	return r.Target == w.target
}

// faultWants lists, in script order, the fault record each fault step of script must leave on era
// (CoordinationLink resolved for era). Steps that are no fault (trigger, start, stop, settle) want none.
func faultWants(script []Step, era string) []faultWant {
	var out []faultWant
	for _, st := range script {
		w := faultWant{step: st.String()}
		switch st.Action {
		case spec.ActCrash:
			w.action, w.target = "crash", st.Member
		case spec.ActStall, spec.ActCut, spec.ActLatency, spec.ActHeal:
			link := st.Link
			if link == CoordinationLink {
				link = string(spec.Era(era).CoordinationLink())
			}
			w.target, w.phase = st.Member+"/"+link, timeline.FaultBegin
			switch {
			case st.Action == spec.ActHeal:
				// any fault of the link ends
				w.phase, w.actionIsPrefix = timeline.FaultEnd, true
			case st.Action == spec.ActLatency && st.LatencyMs > 0:
				w.action = fmt.Sprintf("latency %dms", st.LatencyMs)
			case st.Action == spec.ActLatency: // latency 0: the link's latency ends
				w.action, w.actionIsPrefix, w.phase = "latency ", true, timeline.FaultEnd
			default:
				w.action = string(st.Action)
			}
		case spec.ActZKStop, spec.ActZKStart:
			w.action, w.target, w.phase = string(spec.ActZKStop), fmt.Sprintf("zookeeper/%d", st.Node), timeline.FaultBegin
			if st.Action == spec.ActZKStart {
				w.phase = timeline.FaultEnd
			}
		case spec.ActBrokerStop, spec.ActBrokerKill:
			// the broker's id is known when the step runs (a role, or the lab's numbering)
			w.action, w.target, w.targetIsPrefix, w.phase = string(st.Action), "broker/", true, timeline.FaultBegin
		case spec.ActBrokerStart: // the end repeats the action that took the broker down
			w.action, w.actionIsPrefix, w.target, w.targetIsPrefix, w.phase = "broker-", true, "broker/", true, timeline.FaultEnd
		case spec.ActHostDown, spec.ActHostUp:
			w.action, w.target, w.phase = string(spec.ActHostDown), fmt.Sprintf("h%d", st.Host), timeline.FaultBegin
			if st.Action == spec.ActHostUp {
				w.phase = timeline.FaultEnd
			}
		case spec.ActPartition, spec.ActPartitionHeal:
			w.action, w.target, w.phase = string(spec.ActPartition), fmt.Sprintf("h%d|h%d", st.Host, st.Peer), timeline.FaultBegin
			if st.Action == spec.ActPartitionHeal {
				w.phase = timeline.FaultEnd
			}
		case spec.ActHostDelay, spec.ActHostLoss:
			w.target, w.phase = fmt.Sprintf("h%d", st.Host), timeline.FaultBegin
			on := st.LatencyMs > 0
			w.action = fmt.Sprintf("%s %dms", spec.ActHostDelay, st.LatencyMs)
			if st.Action == spec.ActHostLoss {
				on = st.LossPct > 0
				w.action = fmt.Sprintf("%s %s%%", spec.ActHostLoss, strconv.FormatFloat(st.LossPct, 'f', -1, 64))
			}
			if !on { // 0: the host's delay (loss) ends
				w.action, w.actionIsPrefix, w.phase = string(st.Action)+" ", true, timeline.FaultEnd
			}
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}

// checkFaults matches each wanted record, in script order, with the first fault record of recs not
// matched yet, and returns the steps (Step.String) that left none.
func checkFaults(wants []faultWant, recs []timeline.Record) (missing []string) {
	used := make([]bool, len(recs))
	for _, w := range wants {
		found := false
		for i, r := range recs {
			if !used[i] && w.matches(r) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, w.step)
		}
	}
	return missing
}

// faultRelation is the relation every consumer-era run gets: each fault step of the script left its
// fault record on the era's timeline (up to the shutdown trigger), the proof that the fault took
// effect. A run without fault steps holds it trivially ("no fault step").
func faultRelation() Relation {
	return namedRel(nil, false, FaultRelationText, relFaultsTookEffect, nil)
}

// streamsFaultRelation is faultRelation for a Streams run: each crash step's instance ended by SIGKILL,
// and each remove-thread / add-thread step shows as the instance's thread_removed / thread_added line.
func streamsFaultRelation() Relation {
	return namedRel(nil, false, FaultRelationText, RelStreamsFaultsTookEffect, nil)
}
