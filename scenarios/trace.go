package scenarios

import "github.com/rebalancelab/rebalancelab/timeline"

// trace is what the HTML report draws; compute fills it as it replays.
type trace struct {
	firstTs, lastTs int64
	parts           []tp                    // every known partition, by topic then partition
	segments        map[tp][]segment        // ownership intervals, member view
	busy            []span                  // some live member rebalancing or joining
	marks           []mark                  // faults and triggers
	members         []string                // every member seen, sorted
	memberSpans     map[string][]memberSpan // each member's lane state over time, while live
	delivers        map[string][]int64      // each member's deliver records' ts_ms
	lag             map[tp][]lagPoint       // produced-but-not-delivered offsets, after each change
}

// laneState is what a member's lane in the HTML report shows at a moment.
type laneState string

const (
	laneConsuming   laneState = "consuming"   // owns partitions, no rebalance running
	laneRebalancing laneState = "rebalancing" // a rebalance runs while it still owns partitions (assigned, not fetching new work)
	lanePaused      laneState = "paused"      // held partitions when its rebalance began, holds none now (paused_member_ms)
	laneJoining     laneState = "joining"     // joining or rebalancing, never held partitions in this rebalance
	laneIdle        laneState = "idle"        // live, owns nothing, no rebalance running
)

type memberSpan struct {
	state      laneState
	start, end int64
}

type lagPoint struct {
	ts      int64
	pending int
}

func (m *memberState) laneState() laneState {
	switch {
	case !m.live:
		return ""
	case m.paused():
		return lanePaused
	case m.busy() && len(m.owned) > 0:
		return laneRebalancing
	case m.busy():
		return laneJoining
	case len(m.owned) > 0:
		return laneConsuming
	}
	return laneIdle
}

// track records a member's lane state from ts on.
func (tr *trace) track(name string, st laneState, ts int64) {
	spans := tr.memberSpans[name]
	if n := len(spans); n > 0 && spans[n-1].end < 0 {
		if spans[n-1].state == st {
			return
		}
		if spans[n-1].start == ts { // a state that lasted no ms is not drawn
			spans = spans[:n-1]
		} else {
			spans[n-1].end = ts
		}
	}
	if n := len(spans); n > 0 && spans[n-1].end == ts && spans[n-1].state == st {
		spans[n-1].end = -1 // back in the state it left in this ms
	} else if st != "" {
		spans = append(spans, memberSpan{state: st, start: ts, end: -1})
	}
	tr.memberSpans[name] = spans
}

type segment struct {
	member     string
	start, end int64 // ms, absolute
	open       bool  // still owned at the end of the timeline
}

type span struct{ start, end int64 }

type mark struct {
	ts   int64
	kind timeline.Kind
	text string
}
