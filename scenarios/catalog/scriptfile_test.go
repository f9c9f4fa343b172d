package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// scriptBase is a valid scenario file; the malformed variants below change one line of it.
const scriptBase = `name: base
description: "two members, one crashes"
defaults: {consumers: 2, partitions: 4}
steps:
  - for: i
    in: 1..N
    every_ms: 50
    do:
      - start: m{i}
  - settle
  - trigger: crash
  - crash: m{N}
  - settle
relations:
  - {event: crash, figure: rebalance_participants, cmp: "==", value: "N-1"}
  - named: owned-once
    text: "end: every partition owned by exactly one live member"
`

// TestScenarioFileBase: the base file decodes, builds the script its steps say for N=3 and carries its
// relations' texts.
func TestScenarioFileBase(t *testing.T) {
	f, err := spec.DecodeFile("base.yaml", []byte(scriptBase), FileVocabulary())
	if err != nil {
		t.Fatal(err)
	}
	steps, err := f.Build(Params{Consumers: 3, Partitions: 4, Seed: 1}, spec.LabTiming(), newRandSource(1, "base"))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"delay_ms":0,"action":"start","member":"m1"}
{"delay_ms":50,"action":"start","member":"m2"}
{"delay_ms":50,"action":"start","member":"m3"}
{"delay_ms":0,"action":"settle","quiet_ms":1200,"timeout_ms":31000}
{"delay_ms":0,"action":"trigger","name":"crash"}
{"delay_ms":0,"action":"crash","member":"m3"}
{"delay_ms":0,"action":"settle","quiet_ms":1200,"timeout_ms":31000}
`
	if got := string(spec.FormatScript(steps)); got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
	var texts []string
	for _, r := range scenarioOfFile(f).Relations {
		texts = append(texts, r.Text)
	}
	if want := []string{"crash: rebalance_participants == N-1", "end: every partition owned by exactly one live member"}; !slices.Equal(texts, want) {
		t.Errorf("relations %q, want %q", texts, want)
	}
}

// TestScenarioFileMalformed: each malformed variant of the base file is refused with its file, line
// and field, and what is wrong.
func TestScenarioFileMalformed(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"wrong type", "defaults: {consumers: 2, partitions: 4}", "defaults: {consumers: many, partitions: 4}",
			`bad.yaml:3: field defaults.consumers: want an integer, got "many"`},
		{"unknown action", "  - crash: m{N}", "  - explode: m{N}",
			`bad.yaml:12: field steps[3].explode: unknown action "explode" (actions: broker-kill, broker-start, broker-stop, crash, cut, heal, host-delay, host-down, host-loss, host-up, latency, partition, partition-heal, settle, stall, start, stop, trigger, zk-start, zk-stop, let, for)`},
		{"bad expression", "      - start: m{i}", "      - start: m{i+}",
			`bad.yaml:9: field steps[0].do[0].start: expression "i+": ends where a value is due`},
		{"unknown name in an expression", "    every_ms: 50", "    every_ms: 50 + backof_ms",
			`bad.yaml:7: field steps[0].every_ms: expression "50 + backof_ms": unknown name "backof_ms" (known: N, P, H, auto_commit_ms, backoff_ms, broker_zk_session_ms, down_ms, heartbeat_ms, max_session_ms, quiet_ms, session_ms, settle_timeout_ms, zk_session_ms; max( ), min( ))`},
		{"unknown figure", `figure: rebalance_participants,`, `figure: rebalance_participant,`,
			`bad.yaml:15: field relations[0].figure: unknown figure "rebalance_participant" (docs/design.md's figure table)`},
		{"unknown field", `description: "two members, one crashes"`, "description: \"two members, one crashes\"\ntimeout_ms: 5",
			`bad.yaml:3: field timeout_ms: unknown field (known: name, description, defaults, small, min_consumers, max_consumers, zk_nodes, brokers, min_hosts, eras, not_applicable, member_props, by_design, gives_up, extras, durability, steps, relations)`},
		{"a field the action does not take", "  - crash: m{N}", "  - crash: m{N}\n    link: fetch",
			`bad.yaml:13: field steps[3].link: not a field of a crash step (its fields: delay_ms, crash)`},
		{"unknown named relation", "  - named: owned-once", "  - named: owned-twice",
			`bad.yaml:16: field relations[1].named: no relation registered as "owned-twice" (registered: ` + strings.Join(NamedRelations(), ", ") + `)`},
		{"unknown era", "  - {event: crash,", "  - {eras: [zk, kraft], event: crash,",
			`bad.yaml:15: field relations[0].eras[1]: unknown era "kraft" (implemented: zk, classic, cooperative, static)`},
		{"all in a list of eras", "  - {event: crash,", "  - {eras: [all], event: crash,",
			`bad.yaml:15: field relations[0].eras[0]: "all" names no era here: list the eras (zk, classic, cooperative, static), or leave the list out for every era`},
		{"bad comparison", `cmp: "=="`, `cmp: "=<"`,
			`bad.yaml:15: field relations[0].cmp: unknown comparison "=<" (want ==, !=, <, <=, >, >=)`},
		{"out of range", "defaults: {consumers: 2, partitions: 4}", "defaults: {consumers: 2, partitions: 4}\nzk_nodes: 5",
			`bad.yaml:4: field zk_nodes: 5: want 1 or 3 (a standalone server, or an ensemble of 3 that keeps its quorum after one loss)`},
		{"no member 0", "  - crash: m{N}", "  - crash: m{N-N}",
			`bad.yaml:12: field steps[3].crash: "m0": want a member m1, m2, ... (m{EXPR} with EXPR >= 1) or a lower-case name`},
		{"negative delay", "  - settle\n  - trigger", "  - settle\n  - trigger: crash\n    delay_ms: 100 - heartbeat_ms\n  - trigger",
			`bad.yaml:12: field steps[2].delay_ms: -400: want 0 or more`},
		{"bad template in a consumer property", "defaults: {consumers: 2, partitions: 4}", "defaults: {consumers: 2, partitions: 4}\nmember_props:\n  classic: {session.timeout.ms: \"{max(session_ms, 3*beat_ms)}\"}",
			`bad.yaml:5: field member_props.classic.session.timeout.ms: expression "3*beat_ms": unknown name "beat_ms" (known: N, P, H, auto_commit_ms, backoff_ms, broker_zk_session_ms, down_ms, heartbeat_ms, max_session_ms, quiet_ms, session_ms, settle_timeout_ms, zk_session_ms; max( ), min( ))`},
		{"durability acks", "defaults: {consumers: 2, partitions: 4}", "defaults: {consumers: 2, partitions: 4}\ndurability:\n  producers: [{name: p, acks: \"2\"}]\n  records_per_sec: 10",
			`bad.yaml:5: field durability.producers[0].acks: "2": want all or 1`},
		{"not yaml", "    in: 1..N", "    in: 1..N: 2",
			"bad.yaml:6: YAML syntax: mapping values are not allowed in this context"},
		{"an unclosed flow mapping", "  - {event: crash,", "  - {event: crash,\n  - named: x\n",
			"bad.yaml:15: YAML syntax: did not find expected node content"},
		{"a member crashed twice", "  - crash: m{N}", "  - crash: m{N}\n  - crash: m{N}",
			"bad.yaml:13: field steps[4].crash: m2 is not running here (crashed at line 12)"},
		{"a member started twice", "  - crash: m{N}", "  - start: m1",
			"bad.yaml:12: field steps[3].start: m1 is already running (started at line 9)"},
		{"a list where an expression goes", "    every_ms: 50", "    every_ms: [50]",
			`bad.yaml:7: field steps[0].every_ms: want an integer or an expression (of N, P, H, the variables, the timing), got a list`},
		{"an empty description", `description: "two members, one crashes"`, `description: ""`,
			`bad.yaml:2: field description: empty: say in one line what the scenario shows`},
		{"a member 0 that gives up", `defaults: {consumers: 2, partitions: 4}`, "defaults: {consumers: 2, partitions: 4}\ngives_up: [m1, m0]",
			`bad.yaml:4: field gives_up[1]: "m0": want a member m1, m2, ... or a lower-case name`},
		{"a loop inside a loop on the same variable", "      - start: m{i}", "      - for: i\n        in: 1..2\n        do:\n          - start: m{i}",
			`bad.yaml:9: field steps[0].do[0].for: "i" is already a variable here (an enclosing for or an earlier let): give the loop its own name`},
		{"a second document", "    text: \"end: every partition owned by exactly one live member\"", "    text: \"end: every partition owned by exactly one live member\"\n---\nname: other",
			"bad.yaml:18: a second YAML document: a file holds one scenario"},
		{"a comparison without a value", `cmp: "==", value: "N-1"}`, `cmp: "=="}`,
			`bad.yaml:15: field relations[0]: relation "crash: rebalance_participants == ": no value to compare with (an integer or an expression of N, P, H)`},
		{"an event no trigger opens", `{event: crash, figure`, `{event: crash2, figure`,
			`bad.yaml:15: field relations[0].event: no trigger "crash2" in the steps: the relation would have no event to read (triggers: crash)`},
		{"an extra the file does not compute", `figure: rebalance_participants,`, `extra: restarts,`,
			`bad.yaml:15: field relations[0].extra: unknown extra counter "restarts" (the file computes none: name them under extras, or a durability's producers)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(scriptBase, c.old) {
				t.Fatalf("the base has no %q", c.old)
			}
			bad := strings.Replace(scriptBase, c.old, c.new, 1)
			_, err := spec.DecodeFile("bad.yaml", []byte(bad), FileVocabulary())
			if err == nil {
				t.Fatalf("accepted:\n%s", bad)
			}
			if err.Error() != c.want {
				t.Errorf("error:\n %s\nwant:\n %s", err, c.want)
			}
		})
	}
}

// TestScenarioFileJSON: the same format in JSON decodes, and its errors name the line too.
func TestScenarioFileJSON(t *testing.T) {
	good := `{
  "name": "json-crash",
  "description": "one member crashes",
  "defaults": {"consumers": 2, "partitions": 2},
  "steps": [
    {"for": "i", "in": "1..N", "every_ms": 50, "do": [{"start": "m{i}"}]},
    "settle",
    {"trigger": "crash"},
    {"crash": "m1"},
    "settle"
  ],
  "relations": [{"figure": "lost", "cmp": "==", "value": "0"}]
}`
	f, err := spec.DecodeFile("s.json", []byte(good), FileVocabulary())
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "json-crash" || len(f.Relations) != 1 || f.Relations[0].Describe() != "lost == 0" {
		t.Errorf("decoded %q with relations %+v", f.Name, f.Relations)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"a trailing comma", "\"settle\"\n  ],", "\"settle\",\n  ],",
			"s.json:11:3: JSON syntax: invalid character ']' looking for beginning of value"},
		{"two objects", "\"0\"}]\n}", "\"0\"}]\n} {\"name\": \"x\"}",
			"s.json:13:3: JSON syntax: invalid character '{' after top-level value"},
		{"a comment", "  \"name\": \"json-crash\",", "  \"name\": \"json-crash\", # a comment",
			"s.json:2:25: JSON syntax: invalid character '#' looking for beginning of object key string"},
	} {
		if !strings.Contains(good, c.old) {
			t.Fatalf("%s: the file has no %q", c.name, c.old)
		}
		_, err := spec.DecodeFile("s.json", []byte(strings.Replace(good, c.old, c.new, 1)), FileVocabulary())
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %s", c.name, err, c.want)
		}
	}
	// The same text named .yaml is YAML: two flow mappings on one line are refused with that line.
	_, err = spec.DecodeFile("s.yaml", []byte(`{"name": "a"} {"name": "b"}`), FileVocabulary())
	if want := "s.yaml:1: YAML syntax: did not find expected <document start>"; err == nil || err.Error() != want {
		t.Errorf("two mappings in a .yaml: error %v, want %s", err, want)
	}
	bad := strings.Replace(good, `{"crash": "m1"}`, `{"crash": "m1", "latency_ms": 5}`, 1)
	_, err = spec.DecodeFile("s.json", []byte(bad), FileVocabulary())
	if want := `s.json:9: field steps[3].latency_ms: not a field of a crash step (its fields: delay_ms, crash)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestScenarioFileExample: scenarios/examples/two-crashes.yaml, a scenario only a file defines, loads
// through LoadScenarioFile; for seed 3 at N=3 its first crash is m2 and its second m3; static is not
// applicable with the file's reason; it is not in the catalogue.
func TestScenarioFileExample(t *testing.T) {
	sf, err := LoadScenarioFile(filepath.Join("..", "examples", "two-crashes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.Check(Params{Consumers: 3, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	steps, err := sf.Scenario.ScriptFor(Params{Consumers: 3, Seed: 3}, spec.LabTiming())
	if err != nil {
		t.Fatal(err)
	}
	var crashes []string
	for _, s := range steps {
		if s.Action == spec.ActCrash {
			crashes = append(crashes, s.Member)
		}
	}
	if !slices.Equal(crashes, []string{"m2", "m3"}) {
		t.Errorf("crashes %v, want [m2 m3]", crashes)
	}
	if got := sf.Scenario.NotApplicable[spec.Static]; !strings.HasPrefix(got, "the static era rebalances") {
		t.Errorf("static not applicable: %q", got)
	}
	if _, err := Lookup("two-crashes"); err == nil {
		t.Error("two-crashes is in the catalogue; it should exist only as a file")
	}
	if err := sf.Check(Params{Consumers: 2}); err == nil || err.Error() != "--consumers 2: two-crashes needs at least 3" {
		t.Errorf("N=2: %v", err)
	}
	if _, err := LoadScenarioFile(filepath.Join("examples", "missing.yaml")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestCatalogFilesDecode: every embedded catalogue file decodes, and they are the scenarios
// fileCatalogNames lists.
func TestCatalogFilesDecode(t *testing.T) {
	got := CatalogFileNames()
	want := slices.Clone(fileCatalogNames)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("catalogue files %v, want %v", got, want)
	}
}
