package scenarios

// The runner's members: the incarnation bookkeeping (which incarnation of each member is current, the
// gate that silences a crashed one, its done channel; its links are the eraRunner's, linksOf) and
// runtimeFor, which picks the runtime of package members that runs it.

import (
	"context"
	"slices"
	"sync"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/members"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// gate passes records to a sink until it is closed: a crashed member writes nothing more, as a
// killed process would not.
type gate struct {
	mu     sync.RWMutex
	closed bool
	next   timeline.Sink
}

func (g *gate) Emit(r timeline.Record) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.closed {
		g.next.Emit(r)
	}
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// member is one incarnation of a scenario member (a restart makes a new one under the same name).
type member struct {
	name   string
	rec    *timeline.Recorder
	gate   *gate
	rt     members.Runtime // the runtime it runs in (runtimeFor)
	cancel context.CancelFunc
	done   chan struct{} // its Run returned

	mu    sync.Mutex
	ended bool // member_stop recorded
}

// end records member_stop{how} once; the first caller wins.
func (m *member) end(how string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return false
	}
	m.ended = true
	m.rec.Emit(timeline.Record{Kind: timeline.MemberStop, How: how})
	return true
}

func (m *member) isEnded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended
}

// runtimeFor picks and makes the runtime of member m (its props, recorder and log set): one of
// Kafka's JVMs for a Kafka member (Options.Members), a pooled member (MembersPerProcess, MemberHosts),
// a member process (MembersAs processes, inside its test host if any), else goroutines of this process
// dialling through its links.
func (r *eraRunner) runtimeFor(m members.Member) (members.Runtime, error) {
	name := m.Name
	onExit := func(mp report.MemberProcess) {
		r.mu.Lock()
		r.e.Processes = append(r.e.Processes, mp)
		r.mu.Unlock()
	}
	switch {
	case r.kafka != nil && isKafkaMember(r.o.Members, r.e.Era, name):
		c := members.JVMConfig{Member: m, OnExit: onExit, OnWarning: func(w string) { r.errorf("%s: %s", name, w) }}
		if spec.Era(r.e.Era).UsesZooKeeper() {
			return r.kafka.NewOldConnector(c)
		}
		return r.kafka.NewVerifiableConsumer(c)
	case r.pooled():
		routes, err := r.routesOf(name)
		if err != nil {
			return nil, err
		}
		return r.memberPools().Member(members.PooledConfig{Member: m, Routes: routes})
	case r.o.MembersAs == MembersAsProcesses:
		routes, err := r.routesOf(name)
		if err != nil {
			return nil, err
		}
		return members.NewProcess(members.ProcessConfig{Member: m, Binary: r.o.MemberBinary,
			LogLevel: r.o.LabLog.Logger.GetLevel().String(), Routes: routes, Host: r.hostOf(name), OnExit: onExit}), nil
	}
	return members.NewGoroutine(members.GoroutineConfig{Member: m, Links: r.linksOf(name)})
}

// routesOf creates the member's proxies for every address it will dial on its faulted links and
// returns them as routes (none for a member whose script faults nothing).
func (r *eraRunner) routesOf(name string) ([]lab.Route, error) {
	links := r.linksOf(name)
	targets := map[lab.Link][]string{lab.LinkFetch: r.brokerAddrs}
	if spec.Era(r.e.Era).UsesZooKeeper() {
		targets[lab.LinkZooKeeper] = r.zkAddrs
	} else {
		targets[lab.LinkCoordinator] = r.brokerAddrs
	}
	var routes []lab.Route
	for _, l := range []lab.Link{lab.LinkZooKeeper, lab.LinkCoordinator, lab.LinkFetch} {
		if !links.Proxied(l) {
			continue
		}
		for _, up := range targets[l] {
			addr, err := links.ProxyAddr(l, up)
			if err != nil {
				return nil, err
			}
			routes = append(routes, lab.Route{Link: l, Upstream: up, Proxy: addr})
		}
	}
	return routes, nil
}

// pooled reports whether members run in pools: MembersPerProcess above 1, or on member hosts.
func (r *eraRunner) pooled() bool { return r.o.MembersPerProcess > 1 || len(r.o.MemberHosts) > 0 }

// memberPools are the era's member pools, made with the first pooled member: on the member hosts
// measured at the start (Options.MemberHosts) or as pool processes of MemberBinary. The processes
// they run go to the era's; the members a member host runs to its HostInfo.Runs.
func (r *eraRunner) memberPools() *members.Pools {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pools != nil {
		return r.pools
	}
	c := members.PoolsConfig{Era: r.e.Era, Topic: r.e.Topic, PerProcess: r.o.MembersPerProcess,
		Binary: r.o.MemberBinary, LogLevel: r.o.LabLog.Logger.GetLevel().String(), Log: r.o.LabLog,
		OnExit: func(mp report.MemberProcess) {
			r.mu.Lock()
			r.e.Processes = append(r.e.Processes, mp)
			r.mu.Unlock()
		},
		OnPlace: func(host, name string) {
			r.mu.Lock()
			for i := range r.res.Hosts {
				if h := &r.res.Hosts[i]; h.Name == host && !slices.Contains(h.Runs, name) {
					h.Runs = append(h.Runs, name)
				}
			}
			r.mu.Unlock()
		}}
	if len(r.o.MemberHosts) > 0 {
		for _, h := range r.res.Hosts {
			if h.Namespace == "" { // not a test host (hosts.go): a member host
				c.Hosts = append(c.Hosts, members.RemoteHost{Name: h.Name, Addr: h.Addr})
			}
		}
	}
	r.pools = members.NewPools(r.ctx, c)
	return r.pools
}

// closePools ends every pool (graceful: its stdin closed, its members stopped first; else SIGKILL)
// and waits for them.
func (r *eraRunner) closePools(graceful bool) {
	r.mu.Lock()
	ps := r.pools
	r.mu.Unlock()
	if ps != nil {
		ps.Close(graceful)
	}
}

// childProcesses lists the era's member pools and the lab's broker processes now running.
func (r *eraRunner) childProcesses() []members.ChildProcess {
	r.mu.Lock()
	ps := r.pools
	r.mu.Unlock()
	var out []members.ChildProcess
	if ps != nil {
		out = ps.Processes()
	}
	if r.lab != nil {
		for _, b := range r.lab.Brokers() {
			if pid := b.PID(); pid > 0 {
				out = append(out, members.ChildProcess{Kind: "broker", PID: pid})
			}
		}
	}
	return out
}
