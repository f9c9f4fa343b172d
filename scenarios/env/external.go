package env

// An existing cluster (Options.Bootstrap): no lab; names carry the run id, and Cleanup removes an era's
// groups, topics and znodes.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/internal/poll"
	"github.com/rebalancelab/rebalancelab/internal/zklog"
	"github.com/rebalancelab/rebalancelab/lab"
)

type external struct{ o Options }

func (x *external) Bootstrap() string { return x.o.Bootstrap }
func (x *external) ZKConnect() string { return x.o.ExternalZK }
func (x *external) ZKAddrs() []string { return splitAddrs(x.o.ExternalZK) }
func (x *external) Lab() *lab.Lab     { return nil }
func (x *external) Close() error      { return nil }

// ReplicationFactor: the scenarios' replication factor 1 on a cluster of unknown size.
func (x *external) ReplicationFactor() int { return 1 }

func (x *external) BrokerAddrs(ctx context.Context) ([]string, error) {
	return brokerAddrs(ctx, x.o.Bootstrap)
}

// Name: a shared cluster, so every name of the run under one prefix.
func (x *external) Name(scenario, era string) string {
	return fmt.Sprintf("%s%s.%s.%s", ExternalPrefix, x.o.RunID, scenario, era)
}

func (x *external) CreateTopic(ctx context.Context, t Topic) error {
	return CreateTopic(ctx, x.o.Bootstrap, t)
}

func (x *external) Versions(ctx context.Context) map[string]string {
	if x.o.ExternalZK == "" {
		return map[string]string{}
	}
	return map[string]string{"zookeeper": zkVersion(ctx, x.ZKAddrs())}
}

// Cleanup removes the era's group (DeleteGroups, retried every 200 ms while members' sessions are
// still open: a static member's graceful stop leaves it in the group until its session expires), its
// topics and, in ZooKeeper, /consumers/<group>.
func (x *external) Cleanup(group string, topics []string, timeout time.Duration) (string, []string) {
	if x.o.Keep {
		return fmt.Sprintf("kept: topic and group %s (--keep)", group), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []string
	fail := func(format string, a ...any) {
		errs = append(errs, "cleanup: "+fmt.Sprintf(format, a...))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(x.o.Bootstrap, ",")...))
	if err != nil {
		fail("%v", err)
		return "", errs
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var removed []string
	// The groups first: deleting the topic first makes Kafka drop the group's offsets of it and with
	// them an empty group, which DeleteGroups then cannot tell from a group that never existed. The
	// era's group and those named after it (bench storm's kgo peer, <group>.kgo).
	groups := []string{group}
	if ls, err := adm.ListGroups(ctx); err == nil {
		for _, g := range ls.Groups() {
			if strings.HasPrefix(g, group+".") {
				groups = append(groups, g)
			}
		}
	}
	every200ms := poll.Backoff{First: 200 * time.Millisecond, Max: 200 * time.Millisecond}
	for _, g := range groups {
		var final error // an error not worth retrying
		err := every200ms.UntilErr(ctx, 0, "delete group "+g, func() error {
			resp, err := adm.DeleteGroups(ctx, g)
			if err == nil {
				err = resp[g].Err
			}
			switch {
			case err == nil:
				removed = append(removed, "group "+g)
				return nil
			case errors.Is(err, kerr.GroupIDNotFound):
				return nil // the group never had offsets in Kafka (the zk era with offsets in ZooKeeper)
			case errors.Is(err, kerr.NonEmptyGroup) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
				errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator):
				return err
			}
			final = err
			return nil
		})
		if final != nil {
			err = final
		}
		if err != nil {
			fail("delete group %s: %v", g, err)
		}
	}
	for _, topic := range topics {
		if resp, err := adm.DeleteTopics(ctx, topic); err != nil {
			fail("delete topic %s: %v", topic, err)
		} else if tr := resp[topic]; tr.Err != nil && !errors.Is(tr.Err, kerr.UnknownTopicOrPartition) {
			fail("delete topic %s: %v", topic, tr.Err)
		} else {
			removed = append(removed, "topic "+topic)
		}
	}
	if x.o.ExternalZK != "" {
		root := "/consumers/" + group
		if n, err := deleteZNodes(ctx, x.o.ExternalZK, root); err != nil {
			fail("delete %s: %v", root, err)
		} else if n > 0 {
			removed = append(removed, fmt.Sprintf("%s (%d znodes)", root, n))
		}
	}
	return "removed: " + strings.Join(removed, ", "), errs
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

// deleteZNodes deletes root and everything below it, children first; ephemeral nodes of sessions
// still closing may appear meanwhile, so it retries every 200 ms until ctx ends. It returns how many
// it deleted.
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
	var final error // an error other than a node that grew children meanwhile
	err = poll.Backoff{First: 200 * time.Millisecond, Max: 200 * time.Millisecond}.UntilErr(ctx, 0, "delete "+root, func() error {
		err := del(root)
		if err != nil && !errors.Is(err, zk.ErrNotEmpty) {
			final = err
			return nil
		}
		return err
	})
	if final != nil {
		err = final
	}
	return n, err
}
