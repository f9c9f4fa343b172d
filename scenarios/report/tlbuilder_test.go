package report

// A copy of the runner's test timeline builder (scenarios/tlbuilder_test.go) for the report's tests.

// A copy of scenarios/figures' test builder of hand-written timelines, for the report's tests here
// (the report draws a replay's trace); it goes with them when the report becomes its own stage.

import (
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// base is an arbitrary wall clock so that at_ms is visibly relative.
const base int64 = 1_700_000_000_000

// tlb builds a hand-written timeline: every helper appends one record at base+ms, on topic "t".
type tlb struct {
	era  string
	recs []timeline.Record
}

func newTL(era string) *tlb { return &tlb{era: era} }

func (b *tlb) add(ms int64, member string, kind timeline.Kind, fill func(*timeline.Record)) *tlb {
	r := timeline.Record{TsMs: base + ms, Era: b.era, Member: member, Kind: kind}
	if fill != nil {
		fill(&r)
	}
	b.recs = append(b.recs, r)
	return b
}

func ps(p ...int32) map[string][]int32 {
	if len(p) == 0 {
		return nil // what an empty map becomes after a JSON round trip (omitempty)
	}
	return map[string][]int32{"t": p}
}

func (b *tlb) start(ms int64, m string) *tlb { return b.add(ms, m, timeline.MemberStart, nil) }
func (b *tlb) stop(ms int64, m, how string) *tlb {
	return b.add(ms, m, timeline.MemberStop, func(r *timeline.Record) { r.How = how })
}
func (b *tlb) begin(ms int64, m string) *tlb { return b.add(ms, m, timeline.RebalanceBegin, nil) }
func (b *tlb) end(ms int64, m string, ok bool, attempt int) *tlb {
	return b.add(ms, m, timeline.RebalanceEnd, func(r *timeline.Record) { r.OK, r.Attempt = timeline.Bool(ok), attempt })
}
func (b *tlb) assign(ms int64, m string, p ...int32) *tlb {
	return b.add(ms, m, timeline.Assigned, func(r *timeline.Record) { r.Partitions, r.Generation = ps(p...), timeline.I32(1) })
}
func (b *tlb) revoke(ms int64, m string, p ...int32) *tlb {
	return b.add(ms, m, timeline.Revoked, func(r *timeline.Record) { r.Partitions = ps(p...) })
}
func (b *tlb) deliver(ms int64, m string, p int32, offs ...int64) *tlb {
	for _, o := range offs {
		b.add(ms, m, timeline.Deliver, func(r *timeline.Record) { r.Topic, r.Partition, r.Offset = "t", timeline.I32(p), timeline.I64(o) })
	}
	return b
}
func (b *tlb) produce(ms int64, p int32, offs ...int64) *tlb {
	for _, o := range offs {
		b.add(ms, "producer", timeline.Produce, func(r *timeline.Record) { r.Topic, r.Partition, r.Offset = "t", timeline.I32(p), timeline.I64(o) })
	}
	return b
}
func (b *tlb) commit(ms int64, m string, p int32, off int64, gen int32, result string) *tlb {
	return b.add(ms, m, timeline.Commit, func(r *timeline.Record) {
		r.Topic, r.Partition, r.Offset, r.Generation, r.Result = "t", timeline.I32(p), timeline.I64(off), timeline.I32(gen), result
	})
}
func (b *tlb) zk(ms int64, m, op, path, result string) *tlb {
	return b.add(ms, m, timeline.ZKOp, func(r *timeline.Record) { r.Op, r.Path, r.Result = op, path, result })
}
func (b *tlb) watch(ms int64, m, path string) *tlb {
	return b.add(ms, m, timeline.ZKWatch, func(r *timeline.Record) { r.Path, r.Type = path, "EventNodeChildrenChanged" })
}
func (b *tlb) greq(ms int64, m, api string) *tlb {
	return b.add(ms, m, timeline.GroupRequest, func(r *timeline.Record) { r.API = api })
}
func (b *tlb) trigger(ms int64, name string) *tlb {
	return b.add(ms, "runner", timeline.Trigger, func(r *timeline.Record) { r.Name = name })
}
func (b *tlb) fault(ms int64, action, target string) *tlb {
	return b.add(ms, "runner", timeline.Fault, func(r *timeline.Record) { r.Action, r.Target = action, target })
}

func (b *tlb) faultPhase(ms int64, action, target, phase string) *tlb {
	return b.add(ms, "runner", timeline.Fault, func(r *timeline.Record) { r.Action, r.Target, r.Phase = action, target, phase })
}

// joined is the usual stable start: m joins and gets p at ms.
func (b *tlb) joined(ms int64, m string, p ...int32) *tlb {
	return b.start(ms, m).begin(ms, m).assign(ms, m, p...).end(ms, m, true, 1)
}

func (b *tlb) compute(t *testing.T, opts figures.FigureOptions) figures.Result {
	t.Helper()
	res := figures.Compute(b.recs, b.era, opts)
	if len(res.Warnings) != 0 {
		t.Fatalf("unexpected warnings: %q", res.Warnings)
	}
	return res
}

// sent sets the last record's sent_ms (ms after base) and API: a commit whose request went out at ms.
func (b *tlb) sent(ms int64, api string) *tlb {
	b.recs[len(b.recs)-1].SentMs, b.recs[len(b.recs)-1].API = base+ms, api
	return b
}
