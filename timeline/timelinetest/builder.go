// Package timelinetest builds hand-written timelines for tests: the figures' replay, the relations'
// evaluation and the report's trace are tested on records written one by one here, without a lab.
// Every helper appends one record (Deliver and Produce one per offset) at Base+ms on topic "t" and
// returns the builder, so that a timeline reads as a chain:
//
//	b := timelinetest.New("zk").Joined(0, "m1", 0, 1).Trigger(10, "join").Watch(12, "m1", "/consumers/g/ids")
//
// It imports only timeline, so that the figures' own tests can use it.
package timelinetest

import "github.com/rebalancelab/rebalancelab/timeline"

// Base is an arbitrary wall clock (ms since the epoch) so that a record's at_ms is visibly relative.
const Base int64 = 1_700_000_000_000

// Topic is the topic of every record that names one.
const Topic = "t"

// Builder holds the records of one era's timeline, in the order they were added.
type Builder struct {
	Era  string
	Recs []timeline.Record
}

// New is an empty timeline of era.
func New(era string) *Builder { return &Builder{Era: era} }

// Add appends a record of kind by member at Base+ms; fill sets its other fields (nil: none).
func (b *Builder) Add(ms int64, member string, kind timeline.Kind, fill func(*timeline.Record)) *Builder {
	r := timeline.Record{TsMs: Base + ms, Era: b.Era, Member: member, Kind: kind}
	if fill != nil {
		fill(&r)
	}
	b.Recs = append(b.Recs, r)
	return b
}

// Partitions is the partitions map of p on Topic; none gives nil, what an empty map becomes after a
// JSON round trip (omitempty).
func Partitions(p ...int32) map[string][]int32 {
	if len(p) == 0 {
		return nil
	}
	return map[string][]int32{Topic: p}
}

// Start: member_start of m.
func (b *Builder) Start(ms int64, m string) *Builder { return b.Add(ms, m, timeline.MemberStart, nil) }

// Stop: member_stop of m, how ("graceful", "crash").
func (b *Builder) Stop(ms int64, m, how string) *Builder {
	return b.Add(ms, m, timeline.MemberStop, func(r *timeline.Record) { r.How = how })
}

// Begin: rebalance_begin of m.
func (b *Builder) Begin(ms int64, m string) *Builder {
	return b.Add(ms, m, timeline.RebalanceBegin, nil)
}

// End: rebalance_end of m, its attempt and whether it succeeded.
func (b *Builder) End(ms int64, m string, ok bool, attempt int) *Builder {
	return b.Add(ms, m, timeline.RebalanceEnd, func(r *timeline.Record) { r.OK, r.Attempt = timeline.Bool(ok), attempt })
}

// Assign: m is assigned partitions p in generation 1.
func (b *Builder) Assign(ms int64, m string, p ...int32) *Builder {
	return b.Add(ms, m, timeline.Assigned, func(r *timeline.Record) { r.Partitions, r.Generation = Partitions(p...), timeline.I32(1) })
}

// Revoke: m revokes partitions p.
func (b *Builder) Revoke(ms int64, m string, p ...int32) *Builder {
	return b.Add(ms, m, timeline.Revoked, func(r *timeline.Record) { r.Partitions = Partitions(p...) })
}

// Deliver: m delivers offsets offs of partition p, a record each.
func (b *Builder) Deliver(ms int64, m string, p int32, offs ...int64) *Builder {
	for _, o := range offs {
		b.Add(ms, m, timeline.Deliver, func(r *timeline.Record) { r.Topic, r.Partition, r.Offset = Topic, timeline.I32(p), timeline.I64(o) })
	}
	return b
}

// Produce: the producer writes offsets offs of partition p, a record each.
func (b *Builder) Produce(ms int64, p int32, offs ...int64) *Builder {
	for _, o := range offs {
		b.Add(ms, "producer", timeline.Produce, func(r *timeline.Record) { r.Topic, r.Partition, r.Offset = Topic, timeline.I32(p), timeline.I64(o) })
	}
	return b
}

// Commit: m's commit of offset off for partition p in generation gen, with its result ("ok", an
// error code's name).
func (b *Builder) Commit(ms int64, m string, p int32, off int64, gen int32, result string) *Builder {
	return b.Add(ms, m, timeline.Commit, func(r *timeline.Record) {
		r.Topic, r.Partition, r.Offset, r.Generation, r.Result = Topic, timeline.I32(p), timeline.I64(off), timeline.I32(gen), result
	})
}

// ZK: m's ZooKeeper request op on path with its result.
func (b *Builder) ZK(ms int64, m, op, path, result string) *Builder {
	return b.Add(ms, m, timeline.ZKOp, func(r *timeline.Record) { r.Op, r.Path, r.Result = op, path, result })
}

// Watch: a children-changed notification of path delivered to m.
func (b *Builder) Watch(ms int64, m, path string) *Builder {
	return b.Add(ms, m, timeline.ZKWatch, func(r *timeline.Record) { r.Path, r.Type = path, "EventNodeChildrenChanged" })
}

// GroupRequest: m's group request api (JoinGroup, SyncGroup, Heartbeat, ...).
func (b *Builder) GroupRequest(ms int64, m, api string) *Builder {
	return b.Add(ms, m, timeline.GroupRequest, func(r *timeline.Record) { r.API = api })
}

// Trigger: the runner opens the measured window name.
func (b *Builder) Trigger(ms int64, name string) *Builder {
	return b.Add(ms, "runner", timeline.Trigger, func(r *timeline.Record) { r.Name = name })
}

// Fault: the runner's fault action on target.
func (b *Builder) Fault(ms int64, action, target string) *Builder {
	return b.Add(ms, "runner", timeline.Fault, func(r *timeline.Record) { r.Action, r.Target = action, target })
}

// FaultPhase: the runner's fault action on target with its phase.
func (b *Builder) FaultPhase(ms int64, action, target, phase string) *Builder {
	return b.Add(ms, "runner", timeline.Fault, func(r *timeline.Record) { r.Action, r.Target, r.Phase = action, target, phase })
}

// Joined is the usual stable start: m starts, rebalances and gets p at ms.
func (b *Builder) Joined(ms int64, m string, p ...int32) *Builder {
	return b.Start(ms, m).Begin(ms, m).Assign(ms, m, p...).End(ms, m, true, 1)
}

// Sent sets the last record's sent_ms (Base+ms) and API: a commit whose request went out at ms.
func (b *Builder) Sent(ms int64, api string) *Builder {
	last := &b.Recs[len(b.Recs)-1]
	last.SentMs, last.API = Base+ms, api
	return b
}
