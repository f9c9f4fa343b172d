package scenarios

// An existing cluster (Options.Bootstrap; the cluster itself is scenarios/env's): what a script may
// not do there, and the cleanup after each era. And the runner's side of member processes: their
// routes through the member's proxies and their command lines.

import (
	"fmt"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// BrokerExternal is RunResult.Broker on an existing cluster (Options.Bootstrap).
const BrokerExternal = spec.BrokerExternal

// ExternalPrefix begins every topic and group name a run makes on an existing cluster:
// rebalancelab.<run id>.<scenario>.<era> (env.ExternalPrefix).
const ExternalPrefix = env.ExternalPrefix

var errNeedsLab = env.ErrNeedsLab

// ErrExternalNeedsZK: the zk era was asked for on an existing cluster without its ZooKeeper
// (env.ErrNeedsZK).
var ErrExternalNeedsZK = env.ErrNeedsZK

// checkExternal refuses, before anything starts, what the cluster eo cannot do for the script (on an
// existing cluster: stopping ZooKeeper nodes or brokers, and the zk era without its ZooKeeper).
func checkExternal(eo env.Options, sc *Scenario, script []Step, eras []string) error {
	var n env.Needs
	if sc.StopsZKNode {
		n.StopsNodes = "stops ZooKeeper nodes"
	}
	for _, st := range script {
		switch st.Action {
		case ActZKStop, ActZKStart, ActBrokerStop, ActBrokerStart, ActBrokerKill:
			if n.StopsNodes == "" {
				n.StopsNodes = fmt.Sprintf("stops ZooKeeper nodes or brokers (step %q)", st)
			}
		}
	}
	for _, e := range eras {
		if era := spec.Era(e); era.UsesZooKeeper() && sc.NotApplicable[era] == "" {
			n.ZooKeeper = true
		}
	}
	return eo.Check(n)
}

// cleanup removes what the era made on an existing cluster (env.Env.Cleanup: its groups, topics and
// /consumers/<group>), unless Options.Keep, within the longest session plus a minute. Failures are
// the era's errors.
func (r *eraRunner) cleanup() {
	e := r.e
	note, errs := r.env.Cleanup(e.Group, r.topics(), time.Duration(r.t.MaxSessionMs())*time.Millisecond+60*time.Second)
	for _, msg := range errs {
		e.Errors = append(e.Errors, msg)
		r.log.Warn(msg)
	}
	if note != "" {
		r.progress("[%s %s] %s", r.sc.Name, e.Era, note)
	}
}

// ---- member processes ----

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

// newProcess makes the handle of a member process (started by its run) whose records pass sink.
func (r *eraRunner) newProcess(name string, props map[string]string, sink timeline.Sink) (consumer, error) {
	routes, err := r.routesOf(name)
	if err != nil {
		return nil, err
	}
	argv := memberArgv(r.o.MemberBinary, r.o.LabLog.Logger.GetLevel().String(), r.e.Era, name, r.e.Topic, props, routes)
	host := ""
	if h := r.hostOf(name); h != nil { // inside its test host: `ip netns exec` execs the member itself
		argv, host = h.Argv(argv...), h.Name()
	}
	p := newProcConsumer(name, argv, sink, r.o.LabLog.WithField("member", name), func(mp MemberProcess) {
		r.mu.Lock()
		r.e.Processes = append(r.e.Processes, mp)
		r.mu.Unlock()
	})
	p.host = host
	return p, nil
}
