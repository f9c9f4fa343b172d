package scenarios

// An existing cluster (Options.Bootstrap; the cluster itself is scenarios/env's): what a script may
// not do there, and the cleanup after each era.

import (
	"fmt"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
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
func checkExternal(eo env.Options, sc *catalog.Scenario, script []spec.Step, eras []string) error {
	var n env.Needs
	if sc.StopsZKNode {
		n.StopsNodes = "stops ZooKeeper nodes"
	}
	for _, st := range script {
		switch st.Action {
		case spec.ActZKStop, spec.ActZKStart, spec.ActBrokerStop, spec.ActBrokerStart, spec.ActBrokerKill:
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
