package broker

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// The controller's reads of ZooKeeper (ZkUtils.getAllBrokersInCluster, the topic and partition-state
// listeners), run as the ZooKeeper loop's tasks (zk.go): each read sets its watch and hands what it
// found to the controller core (controller_core.go).

// loadBrokers reads /brokers/ids and every registration (ZkUtils.getAllBrokersInCluster); a node that
// vanishes between the listing and the read is a broker that is gone.
func (b *Broker) loadBrokers(s *zkState) error {
	ids, _, _, err := b.zk.ChildrenW(b.zp(brokerIDsPath))
	if errors.Is(err, zk.ErrNoNode) {
		ids, err = nil, b.ensurePath(brokerIDsPath)
		if err == nil {
			_, _, _, err = b.zk.ChildrenW(b.zp(brokerIDsPath))
		}
	}
	if err != nil {
		return err
	}
	live := make(map[int32]Node, len(ids))
	epochs := make(map[int32]int64, len(ids))
	for _, c := range ids {
		id, err := strconv.ParseInt(c, 10, 32)
		if err != nil {
			continue
		}
		data, stat, err := b.zk.Get(b.zp(brokerPath(int32(id))))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		n, err := decodeBroker(data)
		if err != nil {
			b.log.WithError(err).Warnf("ignoring broker %d", id)
			continue
		}
		live[int32(id)] = Node{ID: int32(id), Host: n.Host, Port: int32(n.Port)}
		epochs[int32(id)] = stat.Czxid
	}
	b.runCtrl(s, ctrlBrokersRead{Live: live, Epochs: epochs})
	return nil
}

func sameBrokers(a, c map[int32]Node) bool {
	if len(a) != len(c) {
		return false
	}
	for id, n := range a {
		if c[id] != n {
			return false
		}
	}
	return true
}

func sortedIDs(m map[int32]Node) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// loadTopics reads /brokers/topics (children watch) and queues the topics it did not know.
func (b *Broker) loadTopics(s *zkState) error {
	names, _, _, err := b.zk.ChildrenW(b.zp(brokerTopicsPath))
	if errors.Is(err, zk.ErrNoNode) {
		if err = b.ensurePath(brokerTopicsPath); err == nil {
			names, _, _, err = b.zk.ChildrenW(b.zp(brokerTopicsPath))
		}
	}
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
		if _, ok := s.ctrl.view.topics[n]; !ok || !s.armed[topicPath(n)] {
			s.pending[zkTask{kind: taskTopic, topic: n}] = struct{}{}
		}
	}
	for _, t := range s.ctrl.view.sortedTopics() {
		if !present[t] {
			b.runCtrl(s, ctrlTopicGone{Topic: t})
		}
	}
	return nil
}

// forgetTopic drops everything the loop keeps about topic and the znodes below /brokers/topics/<topic>
// (the core has dropped it from its context: ctrlForgetTopic): the watches counted as armed on those paths, the partition-state reads queued for it, and
// the partition logs it failed to open.
// It runs when the topic znode is gone, or was created again (another incarnation, see topicView.czxid):
// none of that state describes what is there now. (An exists watch left counted as armed on a deleted
// state path kept the re-created partition from ever being read: no state written, no leader, until
// the session changed.) The watches themselves may still fire later; their events just cause a re-read.
func (b *Broker) forgetTopic(s *zkState, topic string) {
	prefix := topicPath(topic)
	for path := range s.armed {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			delete(s.armed, path)
		}
	}
	for t := range s.pending {
		if (t.kind == taskState || t.kind == taskTopicConfig) && t.topic == topic {
			delete(s.pending, t)
		}
	}
	for tp := range s.failedOpen {
		if tp.Topic == topic {
			delete(s.failedOpen, tp)
		}
	}
}

// loadTopic reads /brokers/topics/<t> (data watch: partitions added) and queues its partition states.
func (b *Broker) loadTopic(s *zkState, topic string) error {
	path := topicPath(topic)
	data, stat, _, err := b.zk.GetW(b.zp(path))
	if errors.Is(err, zk.ErrNoNode) {
		b.runCtrl(s, ctrlTopicGone{Topic: topic})
		return nil
	}
	if err != nil {
		return err
	}
	assignment, derr := decodeAssignment(data)
	if derr != nil {
		assignment = nil
	}
	// The core forgets an older incarnation first, then asks for the partition states not watched.
	b.runCtrl(s, ctrlTopicRead{Topic: topic, Czxid: stat.Czxid, Assignment: assignment, Unreadable: derr})
	s.armed[path] = true
	if derr == nil {
		s.pending[zkTask{kind: taskTopicConfig, topic: topic}] = struct{}{}
	}
	return nil
}

// loadState reads a partition's state znode (data watch), or sets an exists watch while the controller
// has not written it yet.
func (b *Broker) loadState(s *zkState, topic string, p int32) error {
	if !s.ctrl.knowsPartition(topic, p) {
		return nil
	}
	path := statePath(topic, p)
	for attempt := 0; attempt < 3; attempt++ {
		data, stat, _, err := b.zk.GetW(b.zp(path))
		if errors.Is(err, zk.ErrNoNode) {
			exists, _, _, err := b.zk.ExistsW(b.zp(path))
			if err != nil {
				return err
			}
			if exists {
				continue
			}
			s.armed[path] = true
			b.runCtrl(s, ctrlStateRead{Topic: topic, Partition: p})
			return nil
		}
		if err != nil {
			return err
		}
		s.armed[path] = true
		st, err := decodeState(data)
		if err != nil {
			b.log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": p}).Warn("ignoring unreadable state znode")
			return nil
		}
		b.runCtrl(s, ctrlStateRead{Topic: topic, Partition: p, Exists: true, State: st, Version: stat.Version})
		return nil
	}
	return fmt.Errorf("%s: state keeps changing", path)
}
