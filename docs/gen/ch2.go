package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
	"github.com/rebalancelab/rebalancelab/zkconsumer"
)

// ch2: three ZooKeeper-era consumers (Kafka 0.8.2's connector) in group "dashboard" on topic
// "clicks" (6 partitions): c1 and c2 start, then c3 joins. The figures are the znode tree as the
// server holds it with all three running, and c1's rebalance caused by c3's arrival, step by step.
func (g *generator) ch2(ctx context.Context) error {
	const group, topic, partitions, messages = "dashboard", "clicks", 6, 30
	l, err := startLabWithTopic(ctx, topic, partitions)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := produce(ctx, l.Bootstrap(), topic, partitions, messages); err != nil {
		return err
	}
	col := &timeline.Collector{}
	var members []*zkMember
	defer func() {
		for _, m := range members {
			m.shutdown()
		}
	}()
	start := func(name string) error {
		m, err := startZK(ctx, name, group, topic, l.ZKConnect(), &timeline.Recorder{Sink: col, Era: string(spec.ZK), Member: name})
		if err != nil {
			return err
		}
		members = append(members, m)
		return nil
	}
	stable := func() bool { return zkStable(members, topic, partitions) }
	for _, name := range []string{"c1", "c2"} {
		if err := start(name); err != nil {
			return err
		}
	}
	if err := poll.Until(ctx, 60*time.Second, "c1 and c2 to own every partition", stable); err != nil {
		return err
	}
	// The first round's last notifications land before the mark: each has its rebalance ended.
	if err := poll.Until(ctx, 30*time.Second, "c1's and c2's rebalances to end", func() bool {
		return rebalancesEnded(col.Records(), group, members)
	}); err != nil {
		return err
	}
	mark := time.Now().UnixMilli()
	if err := start("c3"); err != nil {
		return err
	}
	if err := poll.Until(ctx, 60*time.Second, "c1, c2 and c3 to own every partition", stable); err != nil {
		return err
	}

	// The tree, once every offset is committed (auto.commit.interval.ms) with all three running.
	z, _, err := zk.Connect(strings.Split(l.ZKConnect(), ","), 10*time.Second, zk.WithLogger(zklog.Discard))
	if err != nil {
		return err
	}
	defer z.Close()
	committed := func() bool {
		for p := 0; p < partitions; p++ {
			b, _, err := z.Get(fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, topic, p))
			if err != nil || string(b) != strconv.Itoa(messages/partitions) {
				return false
			}
		}
		return true
	}
	if err := poll.Until(ctx, 30*time.Second, "every offset committed in ZooKeeper", committed); err != nil {
		return err
	}
	if !stable() {
		return errors.New("the group rebalanced again before the tree was read")
	}
	sessions := map[int64]string{}
	for _, m := range members {
		sessions[m.c.SessionID()] = m.name + "'s session"
	}
	ids, _, err := z.Children("/brokers/ids")
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, st, err := z.Get("/brokers/ids/" + id); err == nil {
			sessions[st.EphemeralOwner] = "broker " + id + "'s session"
		}
	}
	tree, err := dumpTree(z, sessions)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# ZooKeeper tree of the lab, read with getChildren/getData while c1, c2, c3 of group %q\n"+
		"# consume topic %q (%d partitions, %d messages) — ZooKeeper %s, one broker.\n", group, topic, partitions, messages, zkVersion(ctx, l))
	if err := g.out.write("ch2-znodes.txt", []byte(header+tree)); err != nil {
		return err
	}
	g.out.block("ch2-tree", "```text\n"+header+tree+"```")

	// c1's rebalance caused by c3's registration.
	var c1 []timeline.Record
	perMember := map[string][3]int{} // reads, writes, watch events since the mark
	for _, r := range col.Records() {
		if r.TsMs < mark {
			continue
		}
		c := perMember[r.Member]
		switch {
		case r.Kind == timeline.ZKOp && r.Op == "read":
			c[0]++
		case r.Kind == timeline.ZKOp:
			c[1]++
		case r.Kind == timeline.ZKWatch:
			c[2]++
		}
		perMember[r.Member] = c
		if r.Member == "c1" && r.Kind != timeline.Deliver {
			c1 = append(c1, r)
		}
	}
	reb, ok := oneRebalance(c1)
	if !ok {
		return errors.New("c1 has no complete rebalance after c3 started")
	}
	if err := g.out.write("ch2-rebalance-c1.jsonl", jsonLines(reb)); err != nil {
		return err
	}
	steps := stepsMarkdown(rebalanceSteps(reb, group))
	if err := g.out.write("ch2-rebalance-steps.md", []byte(steps)); err != nil {
		return err
	}
	g.out.block("ch2-steps", steps)
	var sum strings.Builder
	fmt.Fprintf(&sum, "From c3's start until the tree above was read (the group's rebalance, then the offset commits every auto.commit.interval.ms), the members' own timelines record:\n\n")
	sum.WriteString("| member | watch notifications | ZooKeeper reads | ZooKeeper writes |\n|---|---|---|---|\n")
	for _, name := range []string{"c1", "c2", "c3"} {
		c := perMember[name]
		fmt.Fprintf(&sum, "| %s | %d | %d | %d |\n", name, c[2], c[0], c[1])
	}
	fmt.Fprintf(&sum, "\nc1's rebalance alone, from the notification to its fetchers restarting, took %d ms and %d ZooKeeper requests.",
		reb[len(reb)-1].TsMs-reb[0].TsMs, countKind(reb, timeline.ZKOp))
	g.out.block("ch2-summary", sum.String())
	return nil
}

func countKind(recs []timeline.Record, k timeline.Kind) int {
	n := 0
	for _, r := range recs {
		if r.Kind == k {
			n++
		}
	}
	return n
}

// zkVersion asks the lab's ZooKeeper (mntr zk_version), "unknown" when it does not answer.
func zkVersion(ctx context.Context, l *lab.Lab) string {
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := lab.FourLetter(c, strings.Split(l.ZKConnect(), ",")[0], "mntr")
	if err != nil {
		return "unknown"
	}
	v := lab.ParseMntrStrings(s)["zk_version"]
	if i := strings.IndexAny(v, "-, "); i > 0 {
		v = v[:i]
	}
	return v
}

// dumpTree prints the znode tree below / (without /zookeeper, the server's own), one node a line:
// name, [ephemeral: whose session] and the data as stored. sessions names session ids.
func dumpTree(z *zk.Conn, sessions map[int64]string) (string, error) {
	var b strings.Builder
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		data, st, err := z.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		name := path.Base(p)
		if p == "/" {
			name = "/"
		}
		line := strings.Repeat("  ", depth) + name
		if st.EphemeralOwner != 0 {
			who := sessions[st.EphemeralOwner]
			if who == "" {
				who = fmt.Sprintf("session 0x%x", st.EphemeralOwner)
			}
			line += "   [ephemeral: " + who + "]"
		}
		if len(data) > 0 {
			s := string(data)
			if len(s) > 160 {
				s = s[:160] + "…"
			}
			line += "   " + s
		}
		b.WriteString(line + "\n")
		kids, _, err := z.Children(p)
		if err != nil {
			return fmt.Errorf("children %s: %w", p, err)
		}
		sort.Slice(kids, func(i, j int) bool { return naturalLess(kids[i], kids[j]) })
		for _, k := range kids {
			child := path.Join(p, k)
			if child == "/zookeeper" {
				continue
			}
			if err := walk(child, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk("/", 0)
	return b.String(), err
}

// naturalLess orders "2" before "10" and strings as strings.
func naturalLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// zkMember is one zkconsumer with an application that drains its stream.
type zkMember struct {
	name string
	c    *zkconsumer.Connector
	done chan struct{}
	once sync.Once
}

// startZK creates a connector with the lab's short settings (zkconsumer.LabProperties), offsets
// from the smallest, commits every 500 ms, and runs its initial rebalance in the background.
func startZK(ctx context.Context, name, group, topic, zkConnect string, rec *timeline.Recorder) (*zkMember, error) {
	props := zkconsumer.LabProperties()
	props["group.id"], props["zookeeper.connect"], props["consumer.id"] = group, zkConnect, name
	props["auto.offset.reset"], props["auto.commit.interval.ms"] = zkconsumer.OffsetResetSmallest, "500"
	cfg, err := zkconsumer.FromProperties(props)
	if err != nil {
		return nil, err
	}
	cfg.Recorder, cfg.Log = rec, quietLog().WithField("member", name)
	c, err := zkconsumer.New(cfg)
	if err != nil {
		return nil, err
	}
	m := &zkMember{name: name, c: c, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		go func() {
			for range c.Errors() { // recorded by the connector
			}
		}()
		streams, err := c.CreateMessageStreams(ctx, map[string]int{topic: 1})
		if err != nil {
			return // shut down meanwhile, or the initial rebalance failed: zkStable never holds then
		}
		for range streams[topic][0] {
		}
	}()
	return m, nil
}

func (m *zkMember) shutdown() {
	m.once.Do(func() {
		m.c.Shutdown()
		<-m.done
	})
}

// zkStable: every partition of topic is owned by exactly one member, each member owning
// partitions/len(ms) of them or one more (the range assignor's split).
// rebalancesEnded: in recs, each member's last notification of a change of the group's members
// (/consumers/<group>/ids) and its last rebalance begun are followed by a successful rebalance end.
func rebalancesEnded(recs []timeline.Record, group string, ms []*zkMember) bool {
	ids := "/consumers/" + group + "/ids"
	for _, m := range ms {
		ended := false
		for _, r := range recs {
			switch {
			case r.Member != m.name:
			case r.Kind == timeline.ZKWatch && r.Path == ids, r.Kind == timeline.RebalanceBegin:
				ended = false
			case r.Kind == timeline.RebalanceEnd:
				ended = r.OK != nil && *r.OK
			}
		}
		if !ended {
			return false
		}
	}
	return true
}

func zkStable(ms []*zkMember, topic string, partitions int) bool {
	seen := map[int32]bool{}
	for _, m := range ms {
		owned := m.c.Owned()[topic]
		if len(owned) < partitions/len(ms) || len(owned) > (partitions+len(ms)-1)/len(ms) {
			return false
		}
		for _, p := range owned {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == partitions
}
