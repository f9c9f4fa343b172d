package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// routineAPIs are the requests of a stable member: drawn as a count, not one arrow each, while they
// succeed.
var routineAPIs = map[string]bool{"Heartbeat": true, "OffsetCommit": true, "OffsetFetch": true}

// sequenceDiagram draws a coordinator-era timeline as a Mermaid sequence diagram between the members
// (in the given order) and the coordinator: one request/answer pair per group_request record —
// placed where the answer arrived, since a member records a request when its answer comes — with a
// failed request's error as the answer; assigned and revoked records as notes on the member's lane
// (with the generation); trigger records as notes across the diagram. Successful Heartbeat,
// OffsetCommit and OffsetFetch requests are counted per member and drawn as one note before the next
// other record. recs must be sorted by ts_ms; other kinds are left out.
func sequenceDiagram(recs []timeline.Record, members []string, coordinator string) string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	for _, m := range members {
		fmt.Fprintf(&b, "    participant %s\n", m)
	}
	fmt.Fprintf(&b, "    participant C as %s\n", mermaidText(coordinator))
	known := map[string]bool{}
	for _, m := range members {
		known[m] = true
	}
	first, last := "C", "C"
	if len(members) > 0 {
		first = members[0]
	}
	pending := map[string]map[string]int{}
	flush := func() {
		for _, m := range members {
			counts := pending[m]
			if len(counts) == 0 {
				continue
			}
			apis := make([]string, 0, len(counts))
			for api := range counts {
				apis = append(apis, api)
			}
			sort.Strings(apis)
			parts := make([]string, len(apis))
			for i, api := range apis {
				parts[i] = fmt.Sprintf("%d %s", counts[api], api)
			}
			fmt.Fprintf(&b, "    Note over %s,C: %s, all answered without error\n", m, strings.Join(parts, ", "))
			delete(pending, m)
		}
	}
	for _, r := range recs {
		if r.Kind == timeline.Trigger {
			flush()
			fmt.Fprintf(&b, "    Note over %s,%s: %s\n", first, last, mermaidText(r.Name))
			continue
		}
		if !known[r.Member] {
			continue
		}
		switch r.Kind {
		case timeline.GroupRequest:
			if routineAPIs[r.API] && r.Err == "" {
				if pending[r.Member] == nil {
					pending[r.Member] = map[string]int{}
				}
				pending[r.Member][r.API]++
				continue
			}
			flush()
			answer := "ok"
			if r.Err != "" {
				answer = r.Err
			}
			fmt.Fprintf(&b, "    %s->>C: %s\n    C-->>%s: %s\n", r.Member, r.API, r.Member, mermaidText(answer))
		case timeline.Assigned:
			flush()
			gen := ""
			if r.Generation != nil {
				gen = fmt.Sprintf("generation %d: ", *r.Generation)
			}
			fmt.Fprintf(&b, "    Note over %s: %sowns %s\n", r.Member, gen, mermaidText(shortPartitions(r.Partitions)))
		case timeline.Revoked:
			flush()
			fmt.Fprintf(&b, "    Note over %s: revokes %s\n", r.Member, mermaidText(shortPartitions(r.Partitions)))
		}
	}
	flush()
	return b.String()
}

// mermaidText keeps a label inside Mermaid's syntax: no line breaks, semicolons or hashes.
func mermaidText(s string) string {
	return strings.NewReplacer("\n", " ", ";", ",", "#", "no. ").Replace(s)
}

// shortPartitions renders {"t": [0, 1]} as "p0, p1" (one topic per figure; "nothing" when empty).
func shortPartitions(m map[string][]int32) string {
	var ps []int32
	for _, list := range m {
		ps = append(ps, list...)
	}
	if len(ps) == 0 {
		return "nothing"
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("p%d", p)
	}
	return strings.Join(s, ", ")
}
