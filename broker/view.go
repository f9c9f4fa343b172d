package broker

import (
	"maps"
	"sort"
)

// clusterView is a picture of the cluster: live brokers, the controller, topics with their replica
// assignment and partition states. As the broker's metadata cache (Kafka's ZkMetadataCache) it is fed
// by the controller's UpdateMetadata (controlrequests.go); the ZooKeeper loop owns the working copy and
// publishes immutable snapshots, which request handlers read without locks. The controller's context
// (controllerCore.view) is another, read from ZooKeeper.
type clusterView struct {
	brokers    map[int32]Node
	controller int32
	topics     map[string]*topicView
	// next is closed when a newer snapshot replaces this one (waiters select on it).
	next chan struct{}
}

type topicView struct {
	replicas map[int32][]int32 // /brokers/topics/<t>: partition -> replicas
	states   map[int32]partitionView
	// czxid is the topic znode's creation zxid: the topic's incarnation. A topic deleted and created
	// again under the same name has another (the ZooKeeper-era stand-in for Kafka's topic id).
	czxid int64
	// configs is /config/topics/<t> as last read (nil until read; never mutated, replaced).
	configs map[string]string
}

type partitionView struct {
	leaderAndISR
	exists  bool  // the state znode exists (else it is not written yet)
	version int32 // the state znode's version, for conditional writes
}

func emptyView() *clusterView {
	return &clusterView{brokers: map[int32]Node{}, controller: -1, topics: map[string]*topicView{}, next: make(chan struct{})}
}

// clone deep-copies the view (slices inside states are never mutated in place, so they are shared).
func (v *clusterView) clone() *clusterView {
	c := &clusterView{brokers: maps.Clone(v.brokers), controller: v.controller, topics: make(map[string]*topicView, len(v.topics)), next: make(chan struct{})}
	for name, t := range v.topics {
		c.topics[name] = &topicView{replicas: maps.Clone(t.replicas), states: maps.Clone(t.states), czxid: t.czxid, configs: t.configs}
	}
	return c
}

func (v *clusterView) sortedBrokers() []Node {
	out := make([]Node, 0, len(v.brokers))
	for _, n := range v.brokers {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (v *clusterView) liveIDs() []int32 {
	ids := make([]int32, 0, len(v.brokers))
	for id := range v.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (v *clusterView) liveSet() map[int32]bool {
	m := make(map[int32]bool, len(v.brokers))
	for id := range v.brokers {
		m[id] = true
	}
	return m
}

func (v *clusterView) sortedTopics() []string {
	ts := make([]string, 0, len(v.topics))
	for t := range v.topics {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// complete reports whether the topic exists with n partitions (n <= 0: any count), every one with a state.
func (v *clusterView) complete(topic string, n int32) bool {
	t, ok := v.topics[topic]
	if !ok || (n > 0 && int32(len(t.replicas)) != n) {
		return false
	}
	for p := range t.replicas {
		if !t.states[p].exists {
			return false
		}
	}
	return true
}

// replicasOf is the partition's assigned replicas (nil when unknown).
func (v *clusterView) replicasOf(topic string, p int32) []int32 {
	if t, ok := v.topics[topic]; ok {
		return t.replicas[p]
	}
	return nil
}
