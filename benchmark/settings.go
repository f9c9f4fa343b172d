package benchmark

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
)

// Settings of the targets a benchmark compares, printed beside every ratio (a peer run with a reduced
// heap, fewer threads or no disk is not the peer as shipped) and kept in the history line
// (HistoryEntry.Settings). Kafka's is lab.KafkaSettingsSummary of its server.properties.

// KfakeSettings describes a franz-go kfake cluster as the benchmarks start it: brokers in this
// process, in memory or with kfake.DataDir (segments written to files), and kfake's own defaults for
// everything else; it keeps one copy of each partition whatever the replication factor.
func KfakeSettings(brokers int, dataDir bool) string {
	store := "in memory"
	if dataDir {
		store = "kfake.DataDir (segments on disk, no fsync)"
	}
	return fmt.Sprintf("%d broker(s) in the bench's process, %s, kfake's defaults otherwise, one copy per partition; GOMAXPROCS=%d", brokers, store, runtime.GOMAXPROCS(0))
}

// RebalancelabSettings describes this project's broker as a lab starts it: in the bench's process
// (inProcess) or its own, with the non-wiring keys of its server.properties props.
func RebalancelabSettings(props map[string]string, inProcess bool) string {
	where := "in the bench's process"
	if !inProcess {
		where = "own process"
	}
	parts := []string{fmt.Sprintf("%s, GOMAXPROCS=%d", where, runtime.GOMAXPROCS(0))}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		switch k {
		case "broker.id", "listeners", "zookeeper.connect", "log.dirs":
			continue
		}
		parts = append(parts, k+"="+props[k])
	}
	return strings.Join(parts, ", ")
}

// LoadAverage is /proc/loadavg's 1-, 5- and 15-minute load averages ("0.52 0.61 0.70"), "" where
// unreadable: what else ran on the machine, recorded with a run's figures.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
