package scenarios

// An existing cluster (Options.Bootstrap): no lab; the run's topics and groups carry a run id prefix
// and are removed after each era unless Options.Keep.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// BrokerExternal is RunResult.Broker on an existing cluster (Options.Bootstrap).
const BrokerExternal = spec.BrokerExternal

// ExternalPrefix begins every topic and group name a run makes on an existing cluster:
// rebalancelab.<run id>.<scenario>.<era>.
const ExternalPrefix = "rebalancelab."

var errNeedsLab = errors.New("needs the lab's own processes, not an existing cluster (--bootstrap)")

// ErrExternalNeedsZK: the zk era was asked for on an existing cluster without its ZooKeeper.
var ErrExternalNeedsZK = errors.New("the zk era on an existing cluster needs its ZooKeeper: --zk HOST:PORT (a cluster in ZooKeeper mode, Kafka 3.9 or older); or leave the zk era out (--era classic,cooperative,static)")

// newRunID is a run's id: the start time in base 36 and 16 random bits ("m3x9k2ab-1f3c").
func newRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(b[:])
}

// checkExternal refuses, before anything starts, what an existing cluster cannot do: a script that
// stops ZooKeeper nodes or brokers (the lab's processes), and the zk era without the cluster's
// ZooKeeper.
func checkExternal(sc *Scenario, script []Step, eras []string, zkConnect string) error {
	if sc.StopsZKNode {
		return fmt.Errorf("stops ZooKeeper nodes: %w", errNeedsLab)
	}
	for _, st := range script {
		switch st.Action {
		case ActZKStop, ActZKStart, ActBrokerStop, ActBrokerStart, ActBrokerKill:
			return fmt.Errorf("stops ZooKeeper nodes or brokers (step %q): %w", st, errNeedsLab)
		}
	}
	if zkConnect != "" {
		return nil
	}
	for _, e := range eras {
		if era := spec.Era(e); era.UsesZooKeeper() && sc.NotApplicable[era] == "" {
			return ErrExternalNeedsZK
		}
	}
	return nil
}

// checkZKMode checks that brokers are registered under /brokers/ids of the ZooKeeper at connect: a
// cluster in ZooKeeper mode, as the zk era's members need (KRaft clusters register nowhere there).
func checkZKMode(ctx context.Context, connect string) error {
	c, err := dialZK(ctx, connect)
	if err != nil {
		return fmt.Errorf("ZooKeeper %s: %w", connect, err)
	}
	defer c.Close()
	ids, _, err := c.Children("/brokers/ids")
	switch {
	case errors.Is(err, zk.ErrNoNode) || (err == nil && len(ids) == 0):
		return fmt.Errorf("ZooKeeper %s: no broker under /brokers/ids: --zk must be the ZooKeeper of the --bootstrap cluster, in ZooKeeper mode (Kafka 3.9 or older; a KRaft cluster has none)", connect)
	case err != nil:
		return fmt.Errorf("ZooKeeper %s: /brokers/ids: %w", connect, err)
	}
	return nil
}

// dialZK connects to ZooKeeper and waits for a session (at most 15 s, or ctx).
func dialZK(ctx context.Context, connect string) (*zk.Conn, error) {
	c, events, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zklog.Discard))
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, nil
			}
		case <-t.C:
			c.Close()
			return nil, errors.New("no session within 15 s")
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

// cleanup removes what the era made on an existing cluster: its group (DeleteGroups, retried while
// members' sessions are still open: a static member's graceful stop leaves it in the group until its
// session expires), its topic and, in ZooKeeper, /consumers/<group>. Failures are the era's errors.
func (r *eraRunner) cleanup() {
	e := r.e
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.t.MaxSessionMs())*time.Millisecond+60*time.Second)
	defer cancel()
	fail := func(format string, a ...any) {
		msg := "cleanup: " + fmt.Sprintf(format, a...)
		e.Errors = append(e.Errors, msg)
		r.log.Warn(msg)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...))
	if err != nil {
		fail("%v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var removed []string
	// The groups first: deleting the topic first makes Kafka drop the group's offsets of it and with
	// them an empty group, which DeleteGroups then cannot tell from a group that never existed. The
	// era's group and those named after it (bench storm's kgo peer, <group>.kgo).
	groups := []string{e.Group}
	if ls, err := adm.ListGroups(ctx); err == nil {
		for _, g := range ls.Groups() {
			if strings.HasPrefix(g, e.Group+".") {
				groups = append(groups, g)
			}
		}
	}
	for _, g := range groups {
		for {
			resp, err := adm.DeleteGroups(ctx, g)
			if err == nil {
				err = resp[g].Err
			}
			if err == nil {
				removed = append(removed, "group "+g)
				break
			}
			if errors.Is(err, kerr.GroupIDNotFound) {
				break // the group never had offsets in Kafka (the zk era with offsets in ZooKeeper)
			}
			retry := errors.Is(err, kerr.NonEmptyGroup) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
				errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator)
			if !retry || !sleepCtx(ctx, 200*time.Millisecond) {
				fail("delete group %s: %v", g, err)
				break
			}
		}
	}
	for _, topic := range r.topics() {
		if resp, err := adm.DeleteTopics(ctx, topic); err != nil {
			fail("delete topic %s: %v", topic, err)
		} else if tr := resp[topic]; tr.Err != nil && !errors.Is(tr.Err, kerr.UnknownTopicOrPartition) {
			fail("delete topic %s: %v", topic, tr.Err)
		} else {
			removed = append(removed, "topic "+topic)
		}
	}
	if r.zkConnect != "" {
		root := "/consumers/" + e.Group
		if n, err := deleteZNodes(ctx, r.zkConnect, root); err != nil {
			fail("delete %s: %v", root, err)
		} else if n > 0 {
			removed = append(removed, fmt.Sprintf("%s (%d znodes)", root, n))
		}
	}
	r.progress("[%s %s] removed: %s", r.sc.Name, e.Era, strings.Join(removed, ", "))
}

// deleteZNodes deletes root and everything below it, children first; ephemeral nodes of sessions
// still closing may appear meanwhile, so it retries until ctx ends. It returns how many it deleted.
func deleteZNodes(ctx context.Context, connect, root string) (int, error) {
	c, err := dialZK(ctx, connect)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n := 0
	var del func(p string) error
	del = func(p string) error {
		kids, _, err := c.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := del(path.Join(p, k)); err != nil {
				return err
			}
		}
		err = c.Delete(p, -1)
		if err == nil {
			n++
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
	for {
		err := del(root)
		if err == nil || !errors.Is(err, zk.ErrNotEmpty) || !sleepCtx(ctx, 200*time.Millisecond) {
			return n, err
		}
	}
}
