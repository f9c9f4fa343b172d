package catalog

// Scenarios as files (issue #31, part 2): a scenario file (spec.DecodeFile, docs/reference/
// scenarios.md "Scenario files") made into the runner's Scenario, and the catalogue's scenarios that
// are files (catalog/*.yaml, embedded).

import (
	"embed"
	"fmt"
	"os"
	"path"
	"sort"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

//go:embed *.yaml
var catalogFiles embed.FS

// extraCounters are the extra counter sets registered in Go that a scenario file's extras: may name:
// the counters each computes from an era's timeline (the result's "extra") and the function.
var extraCounters = map[string]struct {
	keys []string
	fn   func(e *eraRun) map[string]int64
}{
	// commits-for-others: commits made for a partition another live member owned then, applied and
	// rejected (the split-brain zombie's).
	"commits-for-others": {[]string{"commits_applied_for_others_partitions", "commits_rejected_for_others_partitions"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{"commits_applied_for_others_partitions": e.commitsForOthers(timeline.CommitApplied),
				"commits_rejected_for_others_partitions": e.commitsForOthers(timeline.CommitRejected)}
		}},
	// restart-revocations-of-others: partitions revoked from members not being restarted during the
	// restart-<m> and rejoin-<m> windows.
	"restart-revocations-of-others": {[]string{"restart_revocations_of_others"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{"restart_revocations_of_others": e.restartRevocationsOfOthers()}
		}},
	// zk-outage: records between the quorum-loss and recover triggers: deliveries during the outage,
	// and commits rejected from quorum-loss to the end (zk-quorum-loss's).
	"zk-outage": {[]string{"deliveries_during_outage", "commits_rejected_after_outage"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{
				"deliveries_during_outage":      e.countBetween("quorum-loss", "recover", isDeliver),
				"commits_rejected_after_outage": e.countBetween("quorum-loss", "", isRejectedCommit),
			}
		}},
	// partition-ends: the partitions' ends summed (partitionEnds, as VerifiableConsumer's handlers see
	// them): consumed position, records consumed, last acknowledged commit (the consumer-bounce tests').
	"partition-ends": {[]string{"consumed_position", "records_consumed", "committed_position"},
		func(e *eraRun) map[string]int64 {
			var pos, consumed, committed int64
			for _, p := range e.partitionEnds() {
				pos, consumed, committed = pos+p.position, consumed+p.consumed, committed+p.lastCommit
			}
			return map[string]int64{"consumed_position": pos, "records_consumed": consumed, "committed_position": committed}
		}},
	// revocations-of-m1: partitions m1 revoked from the bounce-1-m2 trigger on (static-member-bounce's
	// member that is never bounced).
	"revocations-of-m1": {[]string{"revocations_of_m1"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{"revocations_of_m1": e.revocationsSince("bounce-1-m2", "m1")}
		}},
	// fencing: from the fence trigger on, m1's requests answered FENCED_INSTANCE_ID, m1's stops, and
	// the rebalances of the members other than m1 and the newcomer "fencer" (static-fencing's).
	"fencing": {[]string{"fenced_requests_of_m1", "m1_stopped", "rebalances_of_the_others"},
		func(e *eraRun) map[string]int64 { return fencingCounters(e, "m1", "fencer") }},
	// broker-failure: the partitions with a delivery between the broker-failure and broker-return
	// triggers.
	"broker-failure": {[]string{"partitions_delivered_after_failure"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{
				"partitions_delivered_after_failure": e.partitionsDeliveredBetween("broker-failure", "broker-return"),
			}
		}},
	// coordinator-failover: when every member found the coordinator again after the
	// coordinator-failover trigger, and the records delivered past the commits acknowledged before it.
	"coordinator-failover": {[]string{"coordinator_found_ms", "uncommitted_at_kill"},
		func(e *eraRun) map[string]int64 {
			return map[string]int64{
				"coordinator_found_ms": e.coordinatorFoundMs("coordinator-failover"),
				"uncommitted_at_kill":  e.uncommittedAt("coordinator-failover", "coordinator-return"),
			}
		}},
}

// fencingCounters counts, from the fence trigger on, victim's requests answered FENCED_INSTANCE_ID,
// victim's stops, and the rebalances of the members other than victim and newcomer.
func fencingCounters(e *eraRun, victim, newcomer string) map[string]int64 {
	var fenced, stopped, othersRebalancing int64
	start, _ := e.triggerTs("fence")
	for _, r := range e.Records {
		if r.TsMs < start {
			continue
		}
		switch {
		case r.Member == victim && r.Kind == timeline.GroupRequest && r.Err == "FENCED_INSTANCE_ID":
			fenced++
		case r.Member == victim && r.Kind == timeline.MemberStop:
			stopped++
		case r.Member != victim && r.Member != newcomer && r.Kind == timeline.RebalanceBegin:
			othersRebalancing++
		}
	}
	return map[string]int64{"fenced_requests_of_" + victim: fenced, victim + "_stopped": stopped,
		"rebalances_of_the_others": othersRebalancing}
}

// FileVocabulary is what a scenario file may name: the figures (figures.FigureTable), the invariants, the
// relations registered in Go (NamedRelations), the extra counter sets, and the runner's bounds.
func FileVocabulary() spec.Vocabulary {
	v := spec.Vocabulary{Invariants: figures.InvariantNames, Named: NamedRelations(), Extras: map[string][]string{},
		MaxMembers: MaxMembers, MaxPartitions: MaxPartitions}
	for _, d := range figures.FigureTable {
		v.Figures = append(v.Figures, d.Name)
	}
	for name, x := range extraCounters {
		v.Extras[name] = x.keys
	}
	return v
}

// ScenarioFile is a scenario file loaded for a run: the decoded file and the Scenario made of it,
// which the runner takes as Options.Definition.
type ScenarioFile struct {
	File     *spec.File
	Scenario *Scenario
}

// LoadScenarioFile reads and decodes the scenario file at p (YAML or JSON). Errors: the file cannot
// be read (os.ReadFile's), or spec.DecodeFile's "FILE:LINE: field X: ..." refusals.
func LoadScenarioFile(p string) (*ScenarioFile, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	f, err := spec.DecodeFile(p, data, FileVocabulary())
	if err != nil {
		return nil, err
	}
	return &ScenarioFile{File: f, Scenario: scenarioOfFile(f)}, nil
}

// Check fills p's defaults, checks its bounds (as a run does) and builds the script for p with both
// timings: the errors the file gives at this size, before anything starts.
func (sf *ScenarioFile) Check(p Params) error {
	p, err := sf.Scenario.ParamsFor(p)
	if err != nil {
		return err
	}
	for _, t := range []Timing{spec.LabTiming(), spec.KafkaTiming()} {
		if _, err := sf.File.Build(p, t, newRandSource(p.Seed, sf.Scenario.Name)); err != nil {
			return err
		}
	}
	return nil
}

// scenarioOfFile is f as the runner's Scenario. Its Script builds f's steps; an error there (a size
// ScenarioFile.Check was not asked about) ends the script at the failing step.
func scenarioOfFile(f *spec.File) *Scenario {
	sc := &Scenario{Name: f.Name, Description: f.Description, Defaults: f.Defaults, Small: f.Small,
		MinConsumers: f.MinConsumers, MaxConsumers: f.MaxConsumers, ZKNodes: f.ZKNodes, StopsZKNode: f.StopsZKNode,
		MinHosts: f.MinHosts, NotApplicable: f.NotApplicable, GivesUp: f.GivesUp}
	if f.Brokers > 1 {
		sc.Brokers = f.Brokers
	}
	if len(f.ByDesign) > 0 {
		sc.ByDesign = f.ByDesign
	}
	if len(f.MemberProps) > 0 {
		sc.MemberProps = func(era string, t Timing) map[string]string {
			props, _ := f.MemberPropsFor(spec.Era(era), t) // checked by DecodeFile with both timings
			return props
		}
	}
	sc.Script = func(p Params, t Timing, r *scriptRand) []Step {
		steps, _ := f.Build(p, t, r)
		return steps
	}
	if f.Durability != nil {
		sc.Durability = &DurabilitySpec{TopicConfigs: f.Durability.TopicConfigs, RecordsPerSec: f.Durability.RecordsPerSec}
		for _, p := range f.Durability.Producers {
			sc.Durability.Producers = append(sc.Durability.Producers, ProducerSpec{Name: p.Name, Acks: p.Acks})
		}
	}
	if len(f.Extras) > 0 || f.Durability != nil {
		sc.Extra = func(re *report.EraRun) map[string]int64 {
			e, out := (*eraRun)(re), map[string]int64{}
			if f.Durability != nil {
				for k, v := range durabilityFigures(e) {
					out[k] = v
				}
			}
			for _, name := range f.Extras {
				for k, v := range extraCounters[name].fn(e) {
					out[k] = v
				}
			}
			return out
		}
	}
	for _, r := range f.Relations {
		sc.Relations = append(sc.Relations, dataRelation(r))
	}
	return sc
}

// catalogFromFiles returns the catalogue's scenarios that are embedded files, by name. A file that
// does not decode is a bug of this binary: it panics, and TestCatalogFilesDecode says which.
func catalogFromFiles() map[string]*Scenario {
	entries, err := catalogFiles.ReadDir(".")
	if err != nil {
		panic(err)
	}
	out := map[string]*Scenario{}
	v := FileVocabulary()
	for _, e := range entries {
		data, err := catalogFiles.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		f, err := spec.DecodeFile(path.Join("scenarios/catalog", e.Name()), data, v)
		if err != nil {
			panic(fmt.Sprintf("embedded scenario file: %v", err))
		}
		out[f.Name] = scenarioOfFile(f)
	}
	return out
}

// CatalogFileNames lists the catalogue's scenarios that are embedded files, sorted.
func CatalogFileNames() []string {
	var out []string
	for n := range catalogFromFiles() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// fileScenario returns the catalogue's file scenario called name (catalogFromFiles).
func fileScenario(name string) *Scenario {
	sc, ok := catalogFromFiles()[name]
	if !ok {
		panic("no embedded scenario file for " + name)
	}
	return sc
}
