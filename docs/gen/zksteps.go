package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// stepRow is one step of a ZooKeeper-era rebalance as a member's timeline shows it: consecutive
// records of the same step collapsed into one row.
type stepRow struct {
	Step   string   // what ZookeeperConsumerConnector does (its method names in parentheses)
	Reads  int      // zk_op read records
	Writes int      // zk_op write records
	Paths  []string // distinct znode paths, in first-seen order
	Note   string   // partitions, outcome
}

// oneRebalance returns a member's records of its first complete rebalance in recs: from the first
// zk_watch (the notification that starts it) — or the first rebalance_begin when no watch came
// first — through the first rebalance_end with ok=true. ok=false when there is none.
func oneRebalance(recs []timeline.Record) (out []timeline.Record, ok bool) {
	start := -1
	for i, r := range recs {
		if start < 0 && (r.Kind == timeline.ZKWatch || r.Kind == timeline.RebalanceBegin) {
			start = i
		}
		if start >= 0 && r.Kind == timeline.RebalanceEnd && r.OK != nil && *r.OK {
			// Keep the assigned record written in the same millisecond after rebalance_end, if any.
			end := i + 1
			for end < len(recs) && recs[end].Kind == timeline.Assigned && recs[end].TsMs == r.TsMs {
				end++
			}
			return recs[start:end], true
		}
	}
	return nil, false
}

// rebalanceSteps names the steps of one zk-era rebalance (oneRebalance's records of one member of
// group): the watch that fires, re-reading the group, then syncedRebalance's attempt — broker list,
// stop the fetchers, commit and release (closeFetchersForQueues, commitOffsets,
// releasePartitionOwnership; the revocation the connector records after the commit is shown where the
// fetchers stopped, before it), reading
// partitions and every member's registration (getConsumersPerTopic, getPartitionsForTopics), the
// assignment, reading offsets and claiming owner znodes (reflectPartitionOwnershipDecision) — and
// collapses consecutive records of a step. Deliveries are left out.
func rebalanceSteps(recs []timeline.Record, group string) []stepRow {
	g := "/consumers/" + group
	own := ""
	for _, r := range recs {
		if r.ConsumerID != "" {
			own = g + "/ids/" + r.ConsumerID
			break
		}
	}
	const allRegs = "read every member's registration (getConsumersPerTopic)"
	var rows []stepRow
	begun, offsetsRead := false, false
	commitRow := -1 // the attempt's first commit row, while no revocation followed it
	add := func(step string, r timeline.Record, note string) {
		if n := len(rows); n > 0 && rows[n-1].Step == step && note == "" && rows[n-1].Note == "" {
			rows[n-1].count(r)
			return
		}
		row := stepRow{Step: step, Note: note}
		row.count(r)
		rows = append(rows, row)
	}
	commit := func(r timeline.Record) {
		const step = "commit offsets before releasing (commitOffsets, auto.commit.enable)"
		if begun && commitRow < 0 && (len(rows) == 0 || rows[len(rows)-1].Step != step) {
			commitRow = len(rows)
		}
		add(step, r, "")
	}
	for _, r := range recs {
		switch r.Kind {
		case timeline.ZKWatch:
			add("a watch fires (ZkClient event thread)", r, r.Type+" on "+r.Path)
		case timeline.RebalanceBegin:
			begun, offsetsRead, commitRow = true, false, -1
			add("rebalance attempt begins (syncedRebalance → rebalance)", r, "")
		case timeline.RebalanceEnd:
			note := "ok"
			if r.OK == nil || !*r.OK {
				note = "failed: the attempt is retried after rebalance.backoff.ms"
			}
			add("rebalance attempt ends", r, fmt.Sprintf("attempt %d: %s", r.Attempt, note))
		case timeline.Revoked:
			// closeFetchersForQueues stops the fetchers and clears the queues, and only then commits;
			// the connector records the revocation once the commit returned. The step goes where it ran.
			row := stepRow{Step: "fetchers stopped, queues cleared (closeFetchersForQueues)",
				Note: "revoked " + formatPartitions(r.Partitions)}
			if commitRow >= 0 {
				row.Note += " (recorded after the commit)"
				rows = append(rows[:commitRow], append([]stepRow{row}, rows[commitRow:]...)...)
				commitRow = -1
			} else {
				rows = append(rows, row)
			}
		case timeline.Assigned:
			add("fetchers restarted on the new partitions (updateFetcher)", r, "assigned "+formatPartitions(r.Partitions))
		case timeline.Commit:
			commit(r)
		case timeline.ZKOp:
			p := r.Path
			switch {
			case !begun && strings.HasPrefix(p, g+"/ids"):
				add("re-read the group's members, re-arming the watch (ZkClient)", r, "")
			case strings.HasPrefix(p, "/brokers/ids"):
				add("read the live brokers (getAllBrokersInCluster)", r, "")
			case strings.HasPrefix(p, g+"/offsets") && r.Op == "write":
				commit(r)
			case strings.HasPrefix(p, g+"/owners") && r.Op == "write" && !offsetsRead:
				add("release ownership: delete own owner znodes (releasePartitionOwnership)", r, "")
			case p == own && (len(rows) == 0 || rows[len(rows)-1].Step != allRegs):
				add("read own subscription (TopicCount.constructTopicCount)", r, "")
			case strings.HasPrefix(p, "/brokers/topics"):
				add("read the topic's partitions (getPartitionsForTopics)", r, "")
			case strings.HasPrefix(p, g+"/ids"):
				add(allRegs, r, "")
			case strings.HasPrefix(p, g+"/offsets"):
				offsetsRead = true
				add("read the committed offsets of the partitions to own (fetchOffsetFromZooKeeper)", r, "")
			case strings.HasPrefix(p, g+"/owners") && r.Op == "write":
				note := ""
				if r.Result == timeline.ZKOwnerConflict {
					note = "conflict: the znode exists and names another consumer thread"
				}
				add("claim ownership: create ephemeral owner znodes (reflectPartitionOwnershipDecision)", r, note)
			default:
				add("other ZooKeeper request", r, "")
			}
		}
	}
	return rows
}

func (s *stepRow) count(r timeline.Record) {
	if r.Kind != timeline.ZKOp {
		return
	}
	if r.Op == "write" {
		s.Writes++
	} else {
		s.Reads++
	}
	for _, p := range s.Paths {
		if p == r.Path {
			return
		}
	}
	s.Paths = append(s.Paths, r.Path)
}

// stepsMarkdown renders rows as a numbered table.
func stepsMarkdown(rows []stepRow) string {
	var b strings.Builder
	b.WriteString("| # | step | ZooKeeper requests | znodes | the record says |\n|---|---|---|---|---|\n")
	for i, r := range rows {
		ops := ""
		switch {
		case r.Reads > 0 && r.Writes > 0:
			ops = fmt.Sprintf("%d reads, %d writes", r.Reads, r.Writes)
		case r.Reads > 0:
			ops = fmt.Sprintf("%d read(s)", r.Reads)
		case r.Writes > 0:
			ops = fmt.Sprintf("%d write(s)", r.Writes)
		}
		paths := make([]string, len(r.Paths))
		for j, p := range r.Paths {
			paths[j] = "`" + p + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, r.Step, ops, strings.Join(paths, "<br>"), r.Note)
	}
	return b.String()
}

// formatPartitions renders {"t": [0, 1]} as "t[0, 1]".
func formatPartitions(m map[string][]int32) string {
	if len(m) == 0 {
		return "nothing"
	}
	topics := make([]string, 0, len(m))
	for t := range m {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var parts []string
	for _, t := range topics {
		parts = append(parts, t+"["+partitionList(m[t])+"]")
	}
	return strings.Join(parts, " ")
}
