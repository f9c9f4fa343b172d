package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// fileCatalogNames are the catalogue scenarios expressed as embedded files (catalog/*.yaml).
var fileCatalogNames = []string{"herd-effect", "herd-join", "consumer-crash", "split-brain-zombie", "rolling-restart", "storm", "zk-quorum-loss",
	"consumer-bounce-clean-all", "consumer-bounce-clean-rolling", "consumer-bounce-hard-all", "consumer-bounce-hard-rolling",
	"static-member-bounce", "static-fencing", "consumer-failure", "consumer-failure-manual-commit",
	"host-link-down", "host-slow-link", "broker-failure", "coordinator-failover", "broker-rolling-bounce", "durability"}

// catalogScriptDump renders sc's scripts for several params, seeds and both timings, then its
// relations' eras and Describe texts, its not-applicable eras, by-design invariants and member
// properties: what the Go-built scenario gave before it became a file (testdata/catalog-scripts).
func catalogScriptDump(t *testing.T, sc *Scenario) string {
	t.Helper()
	var b strings.Builder
	sizes := []Params{{}, sc.Small, {Consumers: max(sc.MinConsumers, 5), Partitions: 10}, {Consumers: max(sc.MinConsumers, 3), Partitions: 7, DownMs: 1500}}
	for _, p := range sizes {
		for _, seed := range []int64{1, 2, 7, 12345} {
			for _, tm := range []struct {
				name string
				t    Timing
			}{{"lab", spec.LabTiming()}, {"kafka", spec.KafkaTiming()}} {
				p.Seed = seed
				steps, err := sc.ScriptFor(p, tm.t)
				if err != nil {
					t.Fatalf("%s %+v: %v", sc.Name, p, err)
				}
				fmt.Fprintf(&b, "# consumers=%d partitions=%d down_ms=%d seed=%d timing=%s\n", p.Consumers, p.Partitions, p.DownMs, seed, tm.name)
				b.Write(spec.FormatScript(steps))
			}
		}
	}
	b.WriteString("# relations\n")
	for _, r := range sc.Relations {
		data, err := json.Marshal(r.Spec)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%v cross=%v fig=%q: %s\n  %s\n", spec.Names(r.Eras), r.CrossEra, r.Fig, r.Text, data)
	}
	b.WriteString("# not applicable, by design, member props, gives up\n")
	for _, era := range spec.Eras() {
		var props, kafkaProps map[string]string // no MemberProps and one that gives none alike
		if sc.MemberProps != nil {
			props, kafkaProps = sc.MemberProps(string(era), spec.LabTiming()), sc.MemberProps(string(era), spec.KafkaTiming())
		}
		fmt.Fprintf(&b, "%s: na=%q bydesign=%v props=%v kafka-defaults props=%v\n", era, sc.NotApplicable[era], sc.ByDesign[era], props, kafkaProps)
	}
	if sc.Durability != nil {
		fmt.Fprintf(&b, "durability=%+v\n", *sc.Durability)
	}
	fmt.Fprintf(&b, "defaults=%+v small=%+v min=%d max=%d zk=%d brokers=%d hosts=%d stopszk=%v givesup=%v extra=%v\n",
		sc.Defaults, sc.Small, sc.MinConsumers, sc.MaxConsumers, sc.ZKNodes, sc.Brokers, sc.MinHosts, sc.StopsZKNode, sc.GivesUp, sc.Extra != nil)
	return b.String()
}

// TestCatalogFileScriptsMatchGolden: the catalogue's scenarios that are files build, for every size,
// seed and timing above, the byte-identical script (FormatScript) the Go Script funcs built, and the
// same relations (Describe texts, eras, their data as JSON), not-applicable eras, by-design invariants and properties
// (testdata/catalog-scripts, captured from the Go scenarios before they became files, with a test
// flag since removed: the Go scripts are gone, the golden files are their record).
func TestCatalogFileScriptsMatchGolden(t *testing.T) {
	for _, name := range fileCatalogNames {
		sc, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		got := catalogScriptDump(t, sc)
		want, err := os.ReadFile(filepath.Join("testdata", "catalog-scripts", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Fatalf("%s: line %d differs:\n got  %s\n want %s", name, i+1, gl[i], wl[i])
				}
			}
			t.Fatalf("%s: %d lines, want %d", name, len(gl), len(wl))
		}
	}
}
