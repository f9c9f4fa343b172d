package connect

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/broker/coordinator"
	"github.com/rebalancelab/rebalancelab/internal/groupview"
)

// observe is the broker's group observer: each Stable generation of the Connect group, decoded
// (groupview), becomes a Generation of the result with what each worker holds.
func (r *run) observe(ev coordinator.GroupChanged) {
	if ev.Group != connectGroup || ev.State != coordinator.Stable {
		return
	}
	g := groupview.Decode(ev)
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[string]Holding{}
	cg := Generation{TsMs: g.TsMs, Generation: g.Generation, Protocol: g.Protocol, Phase: r.phase}
	for _, m := range g.Members {
		h := r.held[m.MemberID]
		if m.ConnectVersion == 0 {
			h = Holding{}
		}
		h.Worker = strings.TrimSuffix(m.ConnectURL, "/") // the worker's name once known: resolveLocked
		h.Connectors = union(minus(h.Connectors, m.RevokedConnectors), m.Connectors)
		h.Tasks = union(minus(h.Tasks, m.RevokedTasks), m.Tasks)
		h.DelayMs = m.ConnectDelayMs
		next[m.MemberID] = h
		cg.Workers = append(cg.Workers, h)
	}
	r.held = next
	r.res.Generations = append(r.res.Generations, cg)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// resolve is resolveLocked under the lock.
func (r *run) resolve() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolveLocked()
}

// resolveLocked names the workers of every generation by their REST URL (a worker joins the group
// before StartConnectWorker returns its URL).
func (r *run) resolveLocked() {
	for _, g := range r.res.Generations {
		for i, h := range g.Workers {
			if n, ok := r.names[h.Worker]; ok {
				g.Workers[i].Worker = n
			}
		}
		sort.Slice(g.Workers, func(i, j int) bool { return g.Workers[i].Worker < g.Workers[j].Worker })
	}
}

// last returns the latest generation, if any, its workers named.
func (r *run) last() (Generation, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolveLocked()
	if len(r.res.Generations) == 0 {
		return Generation{}, false
	}
	return r.res.Generations[len(r.res.Generations)-1], true
}

// wantHeld reports whether g has exactly workers members, holds every connector and task of l once,
// and spreads them as Connect's assignors do (connectors and tasks each within one of even).
func wantHeld(g Generation, workers []string, l Layout) bool {
	if len(g.Workers) != len(workers) {
		return false
	}
	var conns, tasks []string
	minC, maxC, minT, maxT := 1<<30, 0, 1<<30, 0
	for _, w := range g.Workers {
		if !slices.Contains(workers, w.Worker) {
			return false
		}
		conns, tasks = append(conns, w.Connectors...), append(tasks, w.Tasks...)
		minC, maxC = min(minC, len(w.Connectors)), max(maxC, len(w.Connectors))
		minT, maxT = min(minT, len(w.Tasks)), max(maxT, len(w.Tasks))
	}
	want := []string{}
	for i := range l.SourceTasks {
		want = append(want, fmt.Sprintf("%s-%d", connectSource, i))
	}
	for i := range l.SinkTasks {
		want = append(want, fmt.Sprintf("%s-%d", connectSink, i))
	}
	slices.Sort(want)
	slices.Sort(tasks)
	slices.Sort(conns)
	return slices.Equal(tasks, want) && slices.Equal(conns, []string{connectSink, connectSource}) && maxC-minC <= 1 && maxT-minT <= 1
}

func formatHoldings(ws []Holding) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s{%s | %s}", w.Worker, strings.Join(w.Connectors, " "), strings.Join(w.Tasks, " ")))
	}
	return strings.Join(parts, "  ")
}
