package catalog

// The scenarios (issue #5): each is an environment, N members of one era, a script, and the relations
// between figures that the run must show. The relations are checked on every run (CheckRelations; printed
// by the CLI, written to the JSON) and asserted by the tests.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// CoordinationLink is the pseudo link of scripts meaning "the member's group coordination link": the
// ZooKeeper link in the zk era, the coordinator link in the others. The runner resolves it per era.
const CoordinationLink = "coordination"

// Scenario is one entry of `rebalancelab scenario list`.
type Scenario struct {
	Name        string
	Description string // one line
	// Defaults are the params a run takes when the caller gives zeros; MinConsumers and MaxConsumers
	// (0: MaxMembers; above MaxInProcessMembers the members run in member pools, PoolMembers) bound
	// --consumers.
	Defaults Params
	// Small is the small size the scenario's test runs it at (scenarios/*_test.go) and `make
	// kafka-scenarios` too (`scenario list --json`): consumers, partitions and test hosts (the seed is
	// the run's).
	Small        Params
	MinConsumers int
	MaxConsumers int
	// ZKNodes is the ZooKeeper ensemble the scenario needs (1 or 3). A scenario that stops ZooKeeper
	// nodes cannot run on an external ensemble (--zk): every era is then not applicable.
	ZKNodes     int
	StopsZKNode bool
	// Brokers is the lab's number of brokers (0: 1). With more than one, the era's topic gets
	// replication factor min(3, Brokers), as __consumer_offsets does (lab.LabBrokerSettings); a script
	// that kills a broker (spec.ActBrokerKill) runs the brokers as processes (Options.MemberBinary).
	Brokers int
	// TopicReplicationFactor, when set, is the era's topic's replication factor on the lab instead of
	// min(3, Brokers) (bench storm --replication-factor: 10,000 partitions at factor 3 would pass the
	// brokers' descriptor limits, two files a replica).
	TopicReplicationFactor int
	// MinHosts: the scenario needs this many test hosts (Params.Hosts, --hosts); 0: none.
	MinHosts int
	// NotApplicable: era → why the scenario does not apply there (the run says so and skips the era).
	NotApplicable map[spec.Era]string
	// MemberProps: era → consumer properties on top of the era's (e.g. a shorter auto-commit interval).
	MemberProps func(era string, t Timing) map[string]string
	// Script builds the scripted events; pure (seeded by rng).
	Script func(p Params, t Timing, r *scriptRand) []Step
	// Relations the figures must show. Every scenario also gets invariantRelations: each of Kafka's
	// consumer invariants holds (its figure is 0) on every era, except those listed in ByDesign.
	Relations []Relation
	// ByDesign: era → the invariant figures (figures.InvariantNames) this scenario breaks on that era because the
	// era's architecture does (the zk split brain, the coordinator era's zombie window): there the count
	// is the measurement, not a failure.
	ByDesign map[spec.Era][]string
	// GivesUp are the members whose giving up (the application closes its consumer after a fatal
	// error, e.g. a fenced static member) is what the scenario measures: the era records it in GaveUp,
	// not as an error that fails the run. Any other member that gives up is the run's error.
	GivesUp []string
	// Extra computes scenario-specific counters from the era's timeline (reported in the JSON).
	Extra func(e *report.EraRun) map[string]int64
	// Streams, when set, makes this a Streams scenario (the Streams driver, scenarios/streams): its
	// members are Kafka Streams instances, its one era is "streams", and its relations read
	// report.RunResult.Streams.
	Streams *spec.Streams
	// Durability, when set, makes the runner write a side topic with producers of several acks
	// settings and read it back after the script; the relations read report.EraRun.Durability.
	Durability *DurabilitySpec
}

// scriptRand is the scenario's seeded source (spec.NewRand).
type scriptRand = rand.Rand

// Relation is one expected relation between figures, for some eras (nil: every era). CrossEra relations
// compare eras of the same run and are checked once, on the first listed era.
//
// A relation is data (Spec: a comparison of the vocabulary, or a relation registered in Go by name,
// relations_registered.go), which relation_eval.go evaluates.
type Relation struct {
	Eras     []spec.Era
	Text     string // e.g. "join: rebalance_participants == N+1"
	CrossEra bool
	// Fig is the figure the relation reads, when it reads one (eventFig, totalFig): a relation on a
	// figure the era's run did not measure (its Result.NotApplicable) is skipped, never checked on a 0.
	Fig string
	// Spec is the relation as data, which evaluate checks.
	Spec *spec.Relation
}

// checkCtx is what a relation reads: the run, the era it is checked on, the run's params and timing.
type checkCtx struct {
	run *report.RunResult
	era *eraRun
	p   Params
	t   Timing
}

func (r Relation) appliesTo(era string) bool {
	return len(r.Eras) == 0 || slices.Contains(r.Eras, spec.Era(era))
}

// Catalog returns every scenario, in `scenario list` order: the built-in ones, then those added with
// Register (the Streams scenario).
func Catalog() []*Scenario {
	// The scenarios that are files (catalog/*.yaml, scriptfile.go), two built in Go.
	f := catalogFromFiles()
	out := []*Scenario{f["herd-effect"], f["herd-join"], f["consumer-crash"], f["split-brain-zombie"], splitBrainDivergentViews(),
		f["rolling-restart"], f["zk-quorum-loss"], f["storm"],
		// Kafka's own consumer system tests (catalog/consumer-*.yaml, static-*.yaml).
		f["consumer-bounce-clean-all"], f["consumer-bounce-clean-rolling"], f["consumer-bounce-hard-all"],
		f["consumer-bounce-hard-rolling"], f["static-member-bounce"], f["static-fencing"], f["consumer-failure"],
		f["consumer-failure-manual-commit"],
		// A three-broker cluster (catalog/broker-*.yaml, coordinator-failover.yaml, durability.yaml).
		f["broker-failure"], f["coordinator-failover"], f["broker-rolling-bounce"], f["durability"],
		// Over test hosts (catalog/host-*.yaml).
		f["host-link-down"], f["host-slow-link"]}
	for _, mk := range registered.scenarios {
		out = append(out, mk())
	}
	return out
}

// Lookup returns the scenario called name, or an error listing the known names.
func Lookup(name string) (*Scenario, error) {
	var names []string
	for _, s := range Catalog() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
}

// ScriptFor returns the scripted events of s for p (defaults filled in) and t: the same bytes for the
// same inputs (FormatScript).
func (s *Scenario) ScriptFor(p Params, t Timing) ([]Step, error) {
	p, err := s.ParamsFor(p)
	if err != nil {
		return nil, err
	}
	return s.Script(p, t, spec.NewRand(p.Seed, s.Name)), nil
}

// ParamsFor is p with s's defaults filled in (a zero Consumers, Partitions or Hosts takes
// s.Defaults'), checked against s's bounds and the runner's. Errors name the flag: "--consumers 1:
// herd-effect needs at least 2", "--partitions 0: want 1..10000", "--hosts 1: ... needs at least 2
// test hosts", "--down-ms -1: want 0 (half the session timeout) to 3600000".
func (s *Scenario) ParamsFor(p Params) (Params, error) {
	if p.Consumers == 0 {
		p.Consumers = s.Defaults.Consumers
	}
	if p.Partitions == 0 {
		p.Partitions = s.Defaults.Partitions
	}
	if p.Hosts == 0 {
		p.Hosts = s.Defaults.Hosts
	}
	maxN := s.MaxConsumers
	if maxN == 0 {
		maxN = MaxMembers
	}
	switch {
	case p.Consumers < s.MinConsumers:
		return p, fmt.Errorf("--consumers %d: %s needs at least %d", p.Consumers, s.Name, s.MinConsumers)
	case p.Consumers > maxN:
		return p, fmt.Errorf("--consumers %d: %s runs at most %d members", p.Consumers, s.Name, maxN)
	case p.Partitions < 1 || p.Partitions > MaxPartitions:
		return p, fmt.Errorf("--partitions %d: want 1..%d", p.Partitions, MaxPartitions)
	case p.Hosts < 0 || p.Hosts > lab.MaxHosts:
		return p, fmt.Errorf("--hosts %d: want 0 (none) to %d", p.Hosts, lab.MaxHosts)
	case p.Hosts < s.MinHosts:
		return p, fmt.Errorf("--hosts %d: %s needs at least %d test hosts", p.Hosts, s.Name, s.MinHosts)
	case p.DownMs < 0 || p.DownMs > 3_600_000:
		return p, fmt.Errorf("--down-ms %d: want 0 (half the session timeout) to 3600000", p.DownMs)
	}
	return p, nil
}

// MaxPartitions bounds a run's topic (bench storm's P=10,000).
const MaxPartitions = 10000

// MaxMembers bounds a run's members (bench storm's N=10,000), in member pools above
// MaxInProcessMembers (PoolMembers).
const MaxMembers = 10000

// allEras maps every era to figs (Scenario.ByDesign).
func allEras(figs ...string) map[spec.Era][]string {
	m := map[spec.Era][]string{}
	for _, era := range spec.Eras() {
		m[era] = append([]string(nil), figs...)
	}
	return m
}

// coordinator eras: the members talk to a group coordinator.
var coordinatorEras = []spec.Era{spec.Classic, spec.Cooperative, spec.Static}

// ---- relation helpers ----

// fig returns the figure named name; a name that is no figure is an error, never a 0 that would let a
// relation on a misspelt figure hold.
func fig(name string, f figures.Figures) (int64, error) {
	v, ok := f.Get(name)
	if !ok {
		return 0, fmt.Errorf("unknown figure %q", name)
	}
	return v, nil
}

// eventNamed returns the first event whose trigger is name (report.EraRun.EventNamed).
func (e *eraRun) eventNamed(name string) (figures.Event, bool) {
	return (*report.EraRun)(e).EventNamed(name)
}

// eventsPrefixed returns the events whose trigger starts with prefix.
func (e *eraRun) eventsPrefixed(prefix string) []figures.Event {
	var out []figures.Event
	for _, ev := range e.Result.Events {
		if strings.HasPrefix(ev.Trigger, prefix) {
			out = append(out, ev)
		}
	}
	return out
}

// cmp is a relation's comparison (spec.Cmp).
type cmp = spec.Cmp

const (
	eq = spec.Eq
	ge = spec.Ge
	lt = spec.Lt
	le = spec.Le
)

// eventFig: figure name of the event triggered by trigger, compared with value (spec.Expr of the
// run's N, P, H), as data (spec.Relation).
func eventFig(eras []spec.Era, trigger, name string, c cmp, value spec.Expr) Relation {
	return dataRelation(spec.Relation{Eras: eras, Event: trigger, Figure: name, Cmp: c, Value: value})
}

// totalFig: a whole-run figure compared with a constant, as data.
func totalFig(eras []spec.Era, name string, c cmp, want int64) Relation {
	return dataRelation(spec.Relation{Eras: eras, Figure: name, Cmp: c, Value: spec.ExprOf(want)})
}

// ownedOnce: every partition ends owned by exactly one live member (the registered relation
// relOwnedOnce).
func ownedOnce(eras []spec.Era) Relation {
	return dataRelation(spec.Relation{Eras: eras, Named: relOwnedOnce, Text: "end: every partition owned by exactly one live member"})
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// extraFig: the scenario's extra counter key compared with a constant, as data, reported as text.
func extraFig(eras []spec.Era, key string, c cmp, want int64, text string) Relation {
	return dataRelation(spec.Relation{Eras: eras, Extra: key, Cmp: c, Value: spec.ExprOf(want), Text: text})
}

// ---- the scenarios ----

func splitBrainDivergentViews() *Scenario {
	return &Scenario{
		Name: "split-brain-divergent-views",
		Description: "joins and leaves in quick succession while some members' coordination links are delayed: " +
			"members decide from different views",
		Defaults:     Params{Consumers: 4, Partitions: 8},
		Small:        Params{Consumers: 3, Partitions: 6},
		MinConsumers: 2,
		ZKNodes:      1,
		Script: func(p Params, t Timing, r *scriptRand) []Step {
			s := NewBuilder(t)
			s.StartAll(p.Consumers)
			// Delay half of the members (at least one), each by its own 150..450 ms.
			members := make([]string, p.Consumers)
			for i := range members {
				members[i] = memberName(i + 1)
			}
			r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			delayed := members[:max(1, len(members)/2)]
			for _, m := range delayed {
				s.Add(Step{Action: spec.ActLatency, Member: m, Link: CoordinationLink, LatencyMs: 150 + int64(r.IntN(301))})
			}
			// Churn: joins and leaves 100..300 ms apart, one measured window from the first to stable.
			s.Trigger("churn")
			live := append([]string(nil), members...)
			next := p.Consumers + 1
			for i := 0; i < 4; i++ {
				d := 100 + int64(r.IntN(201))
				if i == 0 {
					d = 0
				}
				if i%2 == 0 || len(live) < 2 {
					m := memberName(next)
					next++
					s.Member(d, spec.ActStart, m)
					live = append(live, m)
				} else {
					k := r.IntN(len(live))
					m := live[k]
					live = append(live[:k], live[k+1:]...)
					s.Member(d, spec.ActStop, m)
				}
			}
			s.Settle()
			for _, m := range delayed {
				for _, l := range live {
					if l == m { // a delayed member that left needs no healing
						s.Link(0, spec.ActHeal, m, CoordinationLink)
					}
				}
			}
			s.Settle()
			return s.steps
		},
		Extra: func(e *report.EraRun) map[string]int64 {
			return map[string]int64{"ownership_conflicts_since_churn": (*eraRun)(e).countBetween("churn", "", isOwnerConflict)}
		},
		Relations: []Relation{
			// Counted from the churn trigger to the end of the script: the churn window may close at a
			// moment of stability between two steps.
			extraFig([]spec.Era{spec.ZK}, "ownership_conflicts_since_churn", ge, 1, "churn: ownership_conflicts >= 1"),
			totalFig(coordinatorEras, figures.FigMaxConcurrentOwners, eq, 1),
			totalFig(coordinatorEras, figures.FigLost, eq, 0),
		},
	}
}

// staticRestartUnownedBounds bounds, for one restart in the static era, the partition-ms the restarted
// member's own partitions wait unowned: from its stop (the restart- window) until it owns them again
// (the rejoin- window). Range gives each member k = P/N of them, and they wait from the stop through the
// down time and the rejoin's own time: the group does not rebalance (KIP-345), so nobody else takes them.
// Lower: 0.8·down·k (a record produced just before the stop may be delivered, and the windows' edges
// are stamped by different goroutines). Upper: (1.5·down + 2·heartbeat.interval.ms)·k. The rejoin of a
// static member that the coordinator still knows is a handful of loopback round trips (FindCoordinator,
// JoinGroup answered with its old assignment, SyncGroup, OffsetFetch, the first Fetch): tens of ms; two
// heartbeat intervals (1 s in the lab) are what a rejoin would take if it did start a rebalance (the
// others learn of it from their next heartbeat, up to one interval, and rejoin), with room for the race
// detector on a shared machine; 1.5·down absorbs a late stop or start step. Above that, the rejoin cost
// more than a static rejoin should (a member dropped from the group shows in the other members'
// revocations as well: the relation above).
func staticRestartUnownedBounds(p Params, t Timing) (lo, hi int64) {
	k := int64(p.Partitions / p.Consumers)
	down := p.DownMsOr(t)
	return down * k * 8 / 10, (down*3/2 + 2*t.HeartbeatIntervalMs) * k
}

// BrokerCount is the lab's number of brokers for s (Scenario.Brokers, at least 1).
func (s *Scenario) BrokerCount() int { return max(1, s.Brokers) }

// KillsBroker reports whether script kills a broker (spec.ActBrokerKill): the lab's brokers must then be
// processes.
func KillsBroker(script []Step) bool {
	for _, st := range script {
		if st.Action == spec.ActBrokerKill {
			return true
		}
	}
	return false
}
