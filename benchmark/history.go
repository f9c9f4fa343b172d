package benchmark

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// Machine describes the host a benchmark ran on, for its history line.
type Machine struct {
	CPUs     int    `json:"cpus"`      // runtime.NumCPU
	CPUModel string `json:"cpu_model"` // /proc/cpuinfo "model name"; "" where unreadable
	Kernel   string `json:"kernel"`    // uname release
	GOOS     string `json:"goos"`
	GOARCH   string `json:"goarch"`
	Go       string `json:"go"`
}

// ThisMachine returns the Machine this process runs on.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		var b strings.Builder
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b.WriteByte(byte(c))
		}
		m.Kernel = b.String()
	}
	return m
}

// ModuleVersion is the version of Go module path this binary was built with ("" if not a dependency),
// e.g. franz-go's kfake, the throughput peer.
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// HistoryEntry is one line of benchmark/history.jsonl: which benchmark ran, when, on which commit and
// machine, against which peer versions, and its medians (figure name → value), so that a regression
// larger than the spread shows from one line to the next.
type HistoryEntry struct {
	Bench   string             `json:"bench"` // "throughput", "storm", ...
	Time    time.Time          `json:"time"`
	Commit  string             `json:"commit"` // git describe of the binary (dirty marked)
	Machine Machine            `json:"machine"`
	Peers   map[string]string  `json:"peers"` // peer → version
	Params  map[string]any     `json:"params"`
	Medians map[string]float64 `json:"medians"`
	// Spreads are the medians' min-max over the runs (and for `go test` output benchstat's 95%
	// interval), under the same keys; absent in lines written before they were recorded.
	Spreads map[string]Spread `json:"spreads,omitempty"`
	// Settings are each target's settings (target → one line: Kafka's lab.KafkaSettingsSummary,
	// KfakeSettings, RebalancelabSettings); absent in lines written before they were recorded.
	Settings map[string]string `json:"settings,omitempty"`
	// Conditions are what else the machine ran: "loadavg_before", "loadavg_after" (LoadAverage),
	// or go test's "loadavg" printed by the benchmark; absent in older lines.
	Conditions map[string]string `json:"conditions,omitempty"`
	// Result is a storm run's whole result (StormResult's JSON), which its tables are made from.
	Result json.RawMessage `json:"result,omitempty"`
}

// ReadHistory reads every line of a history file (benchmark/history.jsonl). Errors: the file's, or
// a line that is not a HistoryEntry (with its line number).
func ReadHistory(path string) ([]HistoryEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchmark history: %w", err)
	}
	var out []HistoryEntry
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e HistoryEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("benchmark history %s:%d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// AppendHistory appends e as one JSON line to path (created if missing).
func AppendHistory(path string, e HistoryEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("benchmark history: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("benchmark history %s: %w", path, err)
	}
	return f.Close()
}
