package scenarios

// The zk era's figures come from the members' own records. The ZooKeeper server counts too, with its
// four-letter words: mntr (packets received, watches fired) and wchp (who watches which path). The
// runner compares the two and reports the difference; the server's side also sees what the timeline
// does not record (pings, connects, closeSession, the broker's own ZooKeeper traffic).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// SnapshotZK asks every node of addrs ("host:port") for mntr (3 s each). Two snapshots around a span
// give the server's side of a cross-check (DiffCounters).
func SnapshotZK(ctx context.Context, addrs []string) report.ZKCounters {
	out := make(report.ZKCounters, len(addrs))
	for i, a := range addrs {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lab.FourLetter(c, a, "mntr")
		cancel()
		if err == nil {
			if m := lab.ParseMntr(s); len(m) > 0 {
				out[i] = m
			}
		}
	}
	return out
}

// watchersOf returns the sessions watching path, over every node that answers wchp.
func watchersOf(ctx context.Context, addrs []string, path string) (map[int64]bool, error) {
	out := map[int64]bool{}
	var errs []string
	for _, a := range addrs {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lab.FourLetter(c, a, "wchp")
		cancel()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, id := range lab.ParseWatchesByPath(s)[path] {
			out[id] = true
		}
	}
	if len(errs) == len(addrs) {
		return nil, fmt.Errorf("wchp: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
