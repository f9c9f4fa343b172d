package figures

import "github.com/rebalancelab/rebalancelab/timeline"

// Trace is what the HTML report draws (one era's lanes); the replay fills it as it goes. Times are
// absolute ts_ms (Unix ms of the records).
type Trace struct {
	FirstTs, LastTs int64
	Parts           []tp                    // every known partition, by topic then partition
	Segments        map[tp][]Segment        // ownership intervals, member view
	Busy            []Span                  // some live member rebalancing or joining
	Marks           []Mark                  // faults and triggers
	Members         []string                // every member seen, sorted
	MemberSpans     map[string][]MemberSpan // each member's lane state over time, while live
	Delivers        map[string][]int64      // each member's deliver records' ts_ms
	Lag             map[tp][]LagPoint       // produced-but-not-delivered offsets, after each change
}

// LaneState is what a member's lane in the HTML report shows at a moment.
type LaneState string

const (
	LaneConsuming   LaneState = "consuming"   // owns partitions, no rebalance running
	LaneRebalancing LaneState = "rebalancing" // a rebalance runs while it still owns partitions (assigned, not fetching new work)
	LanePaused      LaneState = "paused"      // held partitions when its rebalance began, holds none now (paused_member_ms)
	LaneJoining     LaneState = "joining"     // joining or rebalancing, never held partitions in this rebalance
	LaneIdle        LaneState = "idle"        // live, owns nothing, no rebalance running
)

// MemberSpan is a member's lane in one state from Start to End (ms, absolute; End -1 while open).
type MemberSpan struct {
	State      LaneState
	Start, End int64
}

// LagPoint is a partition's produced-but-not-delivered offsets (Pending) from Ts on.
type LagPoint struct {
	Ts      int64
	Pending int
}

func (m *memberState) laneState() LaneState {
	switch {
	case !m.live:
		return ""
	case m.paused():
		return LanePaused
	case m.busy() && len(m.owned) > 0:
		return LaneRebalancing
	case m.busy():
		return LaneJoining
	case len(m.owned) > 0:
		return LaneConsuming
	}
	return LaneIdle
}

// track records a member's lane state from ts on.
func (tr *Trace) track(name string, st LaneState, ts int64) {
	spans := tr.MemberSpans[name]
	if n := len(spans); n > 0 && spans[n-1].End < 0 {
		if spans[n-1].State == st {
			return
		}
		if spans[n-1].Start == ts { // a state that lasted no ms is not drawn
			spans = spans[:n-1]
		} else {
			spans[n-1].End = ts
		}
	}
	if n := len(spans); n > 0 && spans[n-1].End == ts && spans[n-1].State == st {
		spans[n-1].End = -1 // back in the state it left in this ms
	} else if st != "" {
		spans = append(spans, MemberSpan{State: st, Start: ts, End: -1})
	}
	tr.MemberSpans[name] = spans
}

// Segment is one member's ownership of a partition, from Start to End (ms, absolute).
type Segment struct {
	Member     string
	Start, End int64 // ms, absolute
	Open       bool  // still owned at the end of the timeline
}

// Span is a time interval, ms, absolute.
type Span struct{ Start, End int64 }

// Mark is a fault or trigger record at Ts: its kind and what it says.
type Mark struct {
	Ts   int64
	Kind timeline.Kind
	Text string
}
