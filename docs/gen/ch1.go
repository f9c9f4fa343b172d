package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/internal/poll"
)

// ch1: one topic of 4 partitions read by three groups of coordinator-era consumers: billing (2
// members: the partitions are shared out, a queue), audit (1 member: a second group gets every
// message again, publish-subscribe) and reports (5 members for 4 partitions: one member gets
// nothing, since a partition has at most one consumer in a group).
func (g *generator) ch1(ctx context.Context) error {
	const topic, partitions = "orders", 4
	groups := []struct {
		name    string
		members int
	}{{"billing", 2}, {"audit", 1}, {"reports", 5}}

	l, err := startLabWithTopic(ctx, topic, partitions)
	if err != nil {
		return err
	}
	defer l.Close()
	byGroup := map[string][]*coordMember{}
	var all []*coordMember
	defer func() {
		for _, m := range all {
			_ = m.close()
		}
	}()
	for _, gr := range groups {
		for i := 1; i <= gr.members; i++ {
			name := fmt.Sprintf("%s-%d", gr.name, i)
			m, err := startCoord(ctx, name, topic, coordProps(gr.name, l.Bootstrap(), name, nil), nil)
			if err != nil {
				return err
			}
			byGroup[gr.name] = append(byGroup[gr.name], m)
			all = append(all, m)
		}
	}
	gens := map[string]int32{}
	for _, gr := range groups {
		ms := byGroup[gr.name]
		if err := poll.Until(ctx, 60*time.Second, "group "+gr.name+" to be stable", func() bool { return coordStable(ms, partitions) }); err != nil {
			return err
		}
		gens[gr.name] = ms[0].c.Generation()
	}
	n := g.sz.ch1Messages
	if err := produce(ctx, l.Bootstrap(), topic, partitions, n); err != nil {
		return err
	}
	distinct := func(ms []*coordMember) int {
		seen := map[string]bool{}
		for _, m := range ms {
			for _, r := range m.received() {
				seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
			}
		}
		return len(seen)
	}
	for _, gr := range groups {
		ms := byGroup[gr.name]
		if err := poll.Until(ctx, 60*time.Second, "group "+gr.name+" to receive every message", func() bool { return distinct(ms) == n }); err != nil {
			return err
		}
	}

	var b, sum strings.Builder
	fmt.Fprintf(&b, "Topic `%s`: %d partitions, %d messages produced after every group was stable (value i went to partition i mod %d).\n\n", topic, partitions, n, partitions)
	b.WriteString("| group | member | partitions owned | messages received | values received |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&sum, "In this run %d messages went to the %d partitions of `%s`.", n, partitions, topic)
	for _, gr := range groups {
		ms := byGroup[gr.name]
		var counts []string
		idle := 0
		for _, m := range ms {
			var ps []int32
			for _, tp := range m.c.Assignment() {
				ps = append(ps, tp.Partition)
			}
			got := m.received()
			var vals []int
			for _, r := range got {
				v, _ := strconv.Atoi(string(r.Value))
				vals = append(vals, v)
			}
			sort.Ints(vals)
			vs := make([]string, len(vals))
			for i, v := range vals {
				vs[i] = strconv.Itoa(v)
			}
			if len(ps) == 0 {
				idle++
			}
			counts = append(counts, strconv.Itoa(len(got)))
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s |\n", gr.name, m.name, partitionList(ps), len(got), strings.Join(vs, " "))
		}
		rebalanced := ""
		if now := ms[0].c.Generation(); now != gens[gr.name] {
			rebalanced = fmt.Sprintf(" (the group rebalanced while consuming: generation %d → %d)", gens[gr.name], now)
		}
		fmt.Fprintf(&b, "| **%s** | **%s** | | **%d distinct of %d** | |\n", gr.name, plural(len(ms), "member"), distinct(ms), n)
		split := "all to its one member"
		if len(ms) > 1 {
			split = "split " + strings.Join(counts, " / ") + " between its members"
		}
		fmt.Fprintf(&sum, " Group `%s` (%s) received %d distinct messages of %d, %s%s",
			gr.name, plural(len(ms), "member"), distinct(ms), n, split, rebalanced)
		if idle > 0 {
			fmt.Fprintf(&sum, "; %s owned no partition and received nothing", plural(idle, "member"))
		}
		sum.WriteString(".")
	}
	if err := g.out.write("ch1-groups.md", []byte(b.String())); err != nil {
		return err
	}
	g.out.block("ch1-table", b.String())
	g.out.block("ch1-summary", sum.String())
	return nil
}

// plural: "1 member", "2 members".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
