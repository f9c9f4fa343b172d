package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic administration writes ZooKeeper the way Kafka's AdminUtils / AdminZkClient do: any broker writes
// /brokers/topics/<t> with the replica assignment, and the controller (watching /brokers/topics) writes
// each partition's state. A request then waits, up to its timeout, until this broker's view shows the
// result (Kafka's DelayedCreatePartitions waits for the metadata cache the same way).

// createTopic validates the replication factor against the live brokers, computes the assignment
// (assignReplicas) unless one is given, and writes /brokers/topics/<name>. It returns a Kafka error code
// (0 on success) and a message.
//
// configs (validated already) are written first to /config/topics/<name>, as
// AdminZkClient.createTopicWithAssignment writes them (an empty config too), not atomically with the
// assignment.
func (b *Broker) createTopic(ctx context.Context, name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) (int16, string) {
	if b.zk == nil {
		return kerr.UnknownServerError.Code, "no ZooKeeper connection"
	}
	v := b.view.Load()
	if _, ok := v.topics[name]; ok {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name)
	}
	if other := collides(v, name); other != "" {
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", name, other)
	}
	if assignment == nil {
		if partitions < 1 {
			return kerr.InvalidPartitions.Code, "Number of partitions must be larger than 0."
		}
		// AdminZkClient reads the live brokers from ZooKeeper at creation time, not from a cache.
		live, err := b.liveBrokers()
		if err != nil {
			return kerr.UnknownServerError.Code, fmt.Sprintf("reading %s: %v", brokerIDsPath, err)
		}
		if code, msg := checkReplicationFactor(len(live), rf); code != 0 {
			return code, msg
		}
		start, rnd := replicaAssignmentStart(b.cfg, name, time.Now().UnixNano())
		assignment, err = assignReplicas(live, 0, partitions, rf, start, rnd)
		if err != nil {
			return kerr.InvalidReplicationFactor.Code, err.Error()
		}
	}
	if err := b.setOrCreateEntityConfig(topicConfigPath(name), configs); err != nil {
		return kerr.UnknownServerError.Code, fmt.Sprintf("writing %s: %v", topicConfigPath(name), err)
	}
	_, err := b.zk.Create(b.zp(topicPath(name)), encodeAssignment(assignment), 0, b.acl())
	if errors.Is(err, zk.ErrNoNode) {
		if err = b.ensurePath(brokerTopicsPath); err == nil {
			_, err = b.zk.Create(b.zp(topicPath(name)), encodeAssignment(assignment), 0, b.acl())
		}
	}
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name)
	case err != nil:
		return kerr.UnknownServerError.Code, fmt.Sprintf("writing %s: %v", topicPath(name), err)
	}
	b.log.WithFields(logrus.Fields{"topic": name, "partitions": len(assignment)}).Info("topic created")
	return 0, ""
}

// liveBrokers lists /brokers/ids.
func (b *Broker) liveBrokers() ([]int32, error) {
	children, _, err := b.zk.Children(b.zp(brokerIDsPath))
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(children))
	for _, c := range children {
		if id, err := strconv.ParseInt(c, 10, 32); err == nil {
			ids = append(ids, int32(id))
		}
	}
	return ids, nil
}

// checkReplicationFactor: Kafka's INVALID_REPLICATION_FACTOR for a factor below 1 or above the live
// broker count.
func checkReplicationFactor(live int, rf int16) (int16, string) {
	switch {
	case rf < 1:
		return kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0."
	case int(rf) > live:
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("Replication factor: %d larger than available brokers: %d.", rf, live)
	}
	return 0, ""
}

// waitTopic waits until this broker's view has topic with n partitions (n <= 0: any), each with a state.
func (b *Broker) waitTopic(ctx context.Context, topic string, n int32) error {
	return b.waitView(ctx, func(v *clusterView) bool { return v.complete(topic, n) })
}

func (b *Broker) waitView(ctx context.Context, cond func(*clusterView) bool) error {
	for {
		v := b.view.Load()
		if cond(v) {
			return nil
		}
		select {
		case <-v.next:
		case <-ctx.Done():
			return ctx.Err()
		case <-b.ctx.Done():
			return b.ctx.Err()
		}
	}
}

// requestTimeout derives the wait of an admin request from its TimeoutMillis (<= 0: do not wait).
func requestTimeout(ctx context.Context, ms int32) (context.Context, context.CancelFunc, bool) {
	if ms <= 0 {
		return ctx, func() {}, false
	}
	c, cancel := context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
	return c, cancel, true
}

// handleCreateTopics is KafkaApis.handleCreateTopicsRequest (ZkAdminManager.createTopics). Topic configs
// are validated as LogConfig.validate does (INVALID_CONFIG with Kafka's message) and written to
// /config/topics/<t>; v5+ answers every config of a new topic (KIP-525), none on failure. A manual
// replica assignment must give every partition 0..n-1 exactly one replica.
func (b *Broker) handleCreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	var created []int // indexes into resp.Topics to wait for
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{} // v5+: never null in Kafka; emptied on failure
		code, msg, partitions, rf, assignment, configs := b.validateCreate(t, count[t.Topic] > 1)
		if code == 0 && !req.ValidateOnly {
			code, msg = b.createTopic(ctx, t.Topic, partitions, rf, assignment, configs)
			if code == 0 {
				created = append(created, len(resp.Topics))
			}
		}
		rt.ErrorCode = code
		if code != 0 {
			rt.ErrorMessage = kmsg.StringPtr(msg)
		} else {
			rt.NumPartitions, rt.ReplicationFactor = partitions, rf
			rt.Configs = b.topicConfigsForCreate(t.Topic, configs)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	wctx, cancel, wait := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	if wait {
		for _, i := range created {
			rt := &resp.Topics[i]
			if err := b.waitTopic(wctx, rt.Topic, rt.NumPartitions); err != nil {
				rt.ErrorCode = kerr.RequestTimedOut.Code
				rt.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("topic %s written to ZooKeeper, partition states not yet seen: %v", rt.Topic, err))
				rt.Configs, rt.NumPartitions, rt.ReplicationFactor = []kmsg.CreateTopicsResponseTopicConfig{}, -1, -1
			}
		}
	}
	return resp
}

// validateCreate checks one CreateTopics entry (AdminZkClient.validateTopicCreate and
// ZkAdminManager.createTopics) and resolves -1 to num.partitions / default.replication.factor. The
// topic configs are checked last, as LogConfig.validate is: unknown names, then values, each refusal
// INVALID_CONFIG with Kafka's message.
func (b *Broker) validateCreate(t kmsg.CreateTopicsRequestTopic, duplicate bool) (code int16, msg string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) {
	code, msg, partitions, rf, assignment = b.validateCreateLayout(t, duplicate)
	if code != 0 {
		return code, msg, 0, 0, nil, nil
	}
	configs = map[string]string{}
	for _, c := range t.Configs {
		if c.Value != nil {
			configs[c.Name] = *c.Value
		}
	}
	if err := validateTopicConfigs(configs); err != nil {
		return kerr.InvalidConfig.Code, err.Error(), 0, 0, nil, nil
	}
	return 0, "", partitions, rf, assignment, configs
}

// nullConfigs lists the configs of a CreateTopics entry with a null value.
func nullConfigs(t kmsg.CreateTopicsRequestTopic) []string {
	var out []string
	for _, c := range t.Configs {
		if c.Value == nil {
			out = append(out, c.Name)
		}
	}
	return out
}

func (b *Broker) validateCreateLayout(t kmsg.CreateTopicsRequestTopic, duplicate bool) (code int16, msg string, partitions int32, rf int16, assignment map[int32][]int32) {
	if duplicate {
		return kerr.InvalidRequest.Code, "Found multiple entries for this topic.", 0, 0, nil // KafkaApis.handleCreateTopicsRequest
	}
	if err := validateTopicName(t.Topic); err != nil {
		return kerr.InvalidTopicException.Code, err.Error(), 0, 0, nil
	}
	v := b.view.Load()
	if _, ok := v.topics[t.Topic]; ok {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", t.Topic), 0, 0, nil
	}
	if nulls := nullConfigs(t); len(nulls) > 0 {
		return kerr.InvalidConfig.Code, "Null value not supported for topic configs: " + strings.Join(nulls, ","), 0, 0, nil
	}
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.", 0, 0, nil
		}
		assignment = map[int32][]int32{}
		for _, a := range t.ReplicaAssignment {
			if _, dup := assignment[a.Partition]; dup {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Duplicate partition %d in the replica assignment.", a.Partition), 0, 0, nil
			}
			// AdminZkClient.validateTopicCreate: no broker twice in a partition, one factor for all.
			if slices.Contains(distinctDup(a.Replicas), true) {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Duplicate replica assignment found: %v", a.Replicas), 0, 0, nil
			}
			if len(a.Replicas) == 0 || len(a.Replicas) != len(t.ReplicaAssignment[0].Replicas) {
				return kerr.InvalidReplicaAssignment.Code, "All partitions should have the same number of replicas", 0, 0, nil
			}
			assignment[a.Partition] = append([]int32{}, a.Replicas...)
		}
		for p := int32(0); p < int32(len(assignment)); p++ {
			if _, ok := assignment[p]; !ok {
				return kerr.InvalidReplicaAssignment.Code, "Partitions should be a consecutive 0-based integer sequence.", 0, 0, nil
			}
		}
		return 0, "", int32(len(assignment)), int16(len(t.ReplicaAssignment[0].Replicas)), assignment
	}
	partitions, rf = t.NumPartitions, t.ReplicationFactor
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if partitions < 1 {
		return kerr.InvalidPartitions.Code, "Number of partitions must be larger than 0.", 0, 0, nil
	}
	if code, msg := checkReplicationFactor(len(v.brokers), rf); code != 0 {
		return code, msg, 0, 0, nil
	}
	return 0, "", partitions, rf, nil
}

// handleCreatePartitions is KafkaApis.handleCreatePartitionsRequest (AdminZkClient.addPartitions): the
// added partitions continue the topic's round-robin, unless an assignment is given (one replica each).
func (b *Broker) handleCreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	type pending struct {
		i     int
		count int32
	}
	var added []pending
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var code int16
		var msg string
		if count[t.Topic] > 1 {
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("Duplicate topic in request: %s", t.Topic)
		} else {
			code, msg = b.addPartitions(t, req.ValidateOnly)
		}
		rt.ErrorCode = code
		if code != 0 {
			rt.ErrorMessage = kmsg.StringPtr(msg)
		} else if !req.ValidateOnly {
			added = append(added, pending{len(resp.Topics), t.Count})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	wctx, cancel, wait := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	if wait {
		for _, a := range added {
			rt := &resp.Topics[a.i]
			if err := b.waitTopic(wctx, rt.Topic, a.count); err != nil {
				rt.ErrorCode = kerr.RequestTimedOut.Code
				rt.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("partitions of %s written to ZooKeeper, states not yet seen: %v", rt.Topic, err))
			}
		}
	}
	return resp
}

func (b *Broker) addPartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	if b.zk == nil {
		return kerr.UnknownServerError.Code, "no ZooKeeper connection"
	}
	path := b.zp(topicPath(t.Topic))
	for attempt := 0; attempt < 5; attempt++ {
		data, stat, err := b.zk.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", t.Topic)
		}
		if err != nil {
			return kerr.UnknownServerError.Code, fmt.Sprintf("reading %s: %v", topicPath(t.Topic), err)
		}
		cur, err := decodeAssignment(data)
		if err != nil {
			return kerr.UnknownServerError.Code, err.Error()
		}
		n := int32(len(cur))
		switch {
		case t.Count < n:
			return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", n, t.Count)
		case t.Count == n:
			return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", n)
		}
		next := make(map[int32][]int32, t.Count)
		for p, r := range cur {
			next[p] = r
		}
		if t.Assignment != nil {
			if int32(len(t.Assignment)) != t.Count-n {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", t.Count-n, len(t.Assignment))
			}
			for i, a := range t.Assignment {
				if len(a.Replicas) != len(cur[0]) {
					return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Inconsistent replication factor between partitions, partition 0 has %d while partition %d has replication factor %d.", len(cur[0]), n+int32(i), len(a.Replicas))
				}
				if slices.Contains(distinctDup(a.Replicas), true) {
					return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Duplicate brokers not allowed in replica assignment: %v for partition id %d.", a.Replicas, n+int32(i))
				}
				next[n+int32(i)] = append([]int32{}, a.Replicas...)
			}
		} else {
			live, err := b.liveBrokers()
			if err != nil {
				return kerr.UnknownServerError.Code, fmt.Sprintf("reading %s: %v", brokerIDsPath, err)
			}
			rf := int16(len(cur[0]))
			if code, msg := checkReplicationFactor(len(live), rf); code != 0 {
				return code, msg
			}
			r0 := int32(0)
			if len(cur[0]) > 0 {
				r0 = cur[0][0]
			}
			more, err := assignReplicas(live, n, t.Count-n, rf, startIndexFor(live, r0), nil)
			if err != nil {
				return kerr.InvalidReplicationFactor.Code, err.Error()
			}
			for p, r := range more {
				next[p] = r
			}
		}
		if validateOnly {
			return 0, ""
		}
		_, err = b.zk.Set(path, encodeAssignment(next), stat.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return kerr.UnknownServerError.Code, fmt.Sprintf("writing %s: %v", topicPath(t.Topic), err)
		}
		b.log.WithFields(logrus.Fields{"topic": t.Topic, "partitions": t.Count}).Info("partitions added")
		return 0, ""
	}
	return kerr.UnknownServerError.Code, fmt.Sprintf("%s kept changing", topicPath(t.Topic))
}

// handleDeleteTopics is KafkaApis.handleDeleteTopicsRequest. Kafka marks /admin/delete_topics/<t> and
// lets the controller delete; here the receiving broker deletes the topic's znodes in one ZooKeeper
// multi, and each leader, seeing the topic gone, deletes its log. The request waits (TimeoutMillis)
// until this broker's view no longer has the topic.
func (b *Broker) handleDeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type entry struct {
		name *string
		id   [16]byte
	}
	var entries []entry
	if req.Version >= 6 {
		for _, t := range req.Topics {
			entries = append(entries, entry{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			entries = append(entries, entry{kmsg.StringPtr(n), [16]byte{}})
		}
	}
	var deleted []int
	for _, e := range entries {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = e.name, e.id
		var code int16
		var msg string
		switch {
		case e.name == nil:
			code, msg = kerr.UnknownTopicID.Code, "topics have no ids on this broker (ZooKeeper 0.8.2 layout)"
		case !b.cfg.DeleteTopicEnable:
			code, msg = kerr.TopicDeletionDisabled.Code, "Topic deletion is disabled (delete.topic.enable=false)."
			if req.Version < 3 {
				code = kerr.InvalidRequest.Code
			}
		default:
			code, msg = b.deleteTopic(*e.name)
		}
		rt.ErrorCode = code
		switch {
		case code == kerr.UnknownTopicOrPartition.Code: // Kafka answers it without a message
		case code != 0:
			rt.ErrorMessage = kmsg.StringPtr(msg)
		default:
			deleted = append(deleted, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	wctx, cancel, wait := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	if wait {
		for _, i := range deleted {
			rt := &resp.Topics[i]
			name := *rt.Topic
			if err := b.waitView(wctx, func(v *clusterView) bool { _, ok := v.topics[name]; return !ok }); err != nil {
				rt.ErrorCode = kerr.RequestTimedOut.Code
				rt.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("topic %s deleted in ZooKeeper, not yet seen: %v", name, err))
			}
		}
	}
	return resp
}

// deleteTopic removes /brokers/topics/<t> and everything below it atomically; a concurrent creation of
// a partition node makes the multi fail with NotEmpty, and it is retried with the new tree.
func (b *Broker) deleteTopic(name string) (int16, string) {
	if b.zk == nil {
		return kerr.UnknownServerError.Code, "no ZooKeeper connection"
	}
	for attempt := 0; attempt < 5; attempt++ {
		paths, err := b.subtree(b.zp(topicPath(name)))
		if errors.Is(err, zk.ErrNoNode) {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Topic `%s` to delete does not exist", name)
		}
		if err != nil {
			return kerr.UnknownServerError.Code, err.Error()
		}
		// Deepest first.
		sort.Slice(paths, func(i, j int) bool { return strings.Count(paths[i], "/") > strings.Count(paths[j], "/") })
		ops := make([]any, 0, len(paths))
		for _, p := range paths {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
		_, err = b.zk.Multi(ops...)
		if errors.Is(err, zk.ErrNotEmpty) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return kerr.UnknownServerError.Code, fmt.Sprintf("deleting %s: %v", topicPath(name), err)
		}
		// The controller's TopicDeletionManager deletes the topic's config node with it.
		if err := b.zk.Delete(b.zp(topicConfigPath(name)), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			b.log.WithField("topic", name).WithError(err).Warn("deleting the topic's config node")
		}
		b.log.WithField("topic", name).Info("topic deleted from ZooKeeper")
		return 0, ""
	}
	return kerr.UnknownServerError.Code, fmt.Sprintf("%s kept changing", topicPath(name))
}

// subtree lists path and all its descendants.
func (b *Broker) subtree(path string) ([]string, error) {
	children, _, err := b.zk.Children(path)
	if err != nil {
		return nil, err
	}
	out := []string{path}
	for _, c := range children {
		sub, err := b.subtree(path + "/" + c)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// distinctDup marks each replica that repeats an earlier one.
func distinctDup(replicas []int32) []bool {
	out := make([]bool, len(replicas))
	for i, r := range replicas {
		out[i] = slices.Contains(replicas[:i], r)
	}
	return out
}
