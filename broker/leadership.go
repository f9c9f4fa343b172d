package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/broker/replica"
	"github.com/rebalancelab/rebalancelab/broker/storage"
)

// Applying what the controller told this broker to its logs (ReplicaManager.makeLeaders /
// makeFollowers / stopPartitions), after every round of the ZooKeeper loop (zk.go).

// applyLeadership makes the logs what the controller's LeaderAndIsr and StopReplica requests said
// (ReplicaManager.makeLeaders / makeFollowers / stopPartitions): it deletes the logs StopReplica
// deleted (and those of a topic incarnation replaced by another), opens the logs of partitions now
// hosted (<log.dirs>/<topic>-<partition>), makes each the leader or a follower as its state says,
// and hands the followed ones to the replica fetchers (not those StopReplica stopped). A partition no
// longer hosted but not deleted stops leading and is kept. It reports false if a log could not be
// opened (retried on the next round).
func (b *Broker) applyLeadership(s *zkState) bool {
	v := s.work
	type change struct {
		p       *partition
		leading bool
		epoch   int32
	}
	var changes []change
	var deleted []*partition
	var demoted []*partition

	b.partsMu.Lock()
	for tp, p := range b.parts {
		h, hosted := s.hosted[tp]
		demote, drop := retireDecision(p.role(), h, hosted, s.deleteLogs[tp])
		if demote {
			changes = append(changes, change{p, false, p.epoch.Load()})
			demoted = append(demoted, p)
		}
		if drop {
			delete(b.parts, tp)
			deleted = append(deleted, p)
		}
	}
	var toOpen []topicPartition
	for tp := range s.hosted {
		if _, ok := b.parts[tp]; !ok {
			toOpen = append(toOpen, tp)
		}
	}
	b.partsMu.Unlock()
	for _, p := range demoted {
		p.becomeFollower(-1, p.epoch.Load())
	}

	// Deleted logs go first: a topic created again under the same name opens a new, empty log in the
	// same directory. A StopReplica(delete) for a log not open removes its directory all the same
	// (a topic deleted while this broker was away).
	for _, p := range deleted {
		if err := p.close(); err != nil {
			b.log.WithError(err).Warn("closing deleted partition")
		}
	}
	for tp := range s.deleteLogs {
		if err := os.RemoveAll(b.cfg.partitionDir(tp.Topic, tp.Partition)); err != nil {
			b.log.WithFields(logFields(tp.Topic, tp.Partition)).WithError(err).Warn("removing deleted partition")
			continue
		}
		b.log.WithFields(logFields(tp.Topic, tp.Partition)).Info("deleted partition log")
	}
	for _, p := range deleted {
		if !s.deleteLogs[topicPartition{p.topic, p.id}] {
			if err := os.RemoveAll(b.cfg.partitionDir(p.topic, p.id)); err != nil {
				b.log.WithError(err).Warn("removing the partition log of a replaced topic incarnation")
			}
		}
	}
	clear(s.deleteLogs)
	ok := true
	for _, tp := range toOpen {
		h := s.hosted[tp]
		dir := b.cfg.partitionDir(tp.Topic, tp.Partition)
		fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}
		stale, err := claimLogDir(dir, h.czxid)
		if stale != 0 {
			b.log.WithFields(fields).WithField("old_czxid", stale).Warn("partition log belongs to a deleted incarnation of the topic; deleted")
		}
		if _, read := s.topicConfigs[tp.Topic]; !read && err == nil {
			err = b.loadTopicConfig(s, tp.Topic) // KafkaZkClient.getEntityConfigs when a log is created
		}
		var lg *storage.Log
		lc := b.logConfigFor(tp.Topic, s.topicConfigs[tp.Topic])
		if err == nil {
			lg, err = storage.Open(dir, lc.storageConfig(b.cfg.storageConfig(tp.Topic, h.st.LeaderEpoch)))
		}
		if err != nil {
			if !s.failedOpen[tp] {
				b.log.WithFields(fields).WithError(err).Error("cannot open partition log")
			}
			s.failedOpen[tp] = true
			ok = false
			continue
		}
		delete(s.failedOpen, tp)
		p := newPartition(tp.Topic, h.czxid, tp.Partition, lg)
		p.cfg.Store(lc)
		b.partsMu.Lock()
		b.parts[tp] = p
		b.partsMu.Unlock()
		logRecovery(b.log.WithFields(fields), lg.Recovery(), lg.HighWatermark())
	}

	follow := map[topicPartition]followTarget{}
	live := v.liveSet()
	b.partsMu.RLock()
	parts := make(map[topicPartition]*partition, len(s.hosted))
	for tp := range s.hosted {
		if p := b.parts[tp]; p != nil {
			parts[tp] = p
		}
	}
	b.partsMu.RUnlock()
	for tp, p := range parts {
		h := s.hosted[tp]
		st := h.st
		fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "leader_epoch": st.LeaderEpoch}
		d := decideRole(b.id, p.role(), h)
		rst := replica.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, PartitionEpoch: h.version}
		switch {
		case d.lead:
			p.becomeLeader(b.id, h.replicas, rst, b.cfg.ReplicaLagTimeMaxMs)
			b.log.WithFields(fields).WithFields(logrus.Fields{"isr": st.ISR, "high_watermark": p.log.HighWatermark(), "log_end_offset": p.log.LogEndOffset()}).Info("leading partition")
			changes = append(changes, change{p, true, st.LeaderEpoch})
		case d.update:
			p.updateLeader(rst)
		}
		if d.lead || d.update {
			p.brokersAlive(live)
			continue
		}
		if d.demoted {
			changes = append(changes, change{p, false, p.epoch.Load()})
		}
		if d.follow {
			p.becomeFollower(st.Leader, st.LeaderEpoch)
			b.log.WithFields(fields).WithFields(logrus.Fields{"leader": st.Leader, "log_end_offset": p.log.LogEndOffset()}).Info("following partition")
		}
		if d.fetch {
			follow[tp] = followTarget{part: p, leader: st.Leader, epoch: st.LeaderEpoch}
		}
	}
	b.fetchers.update(follow)
	if fn := b.onLeader.Load(); fn != nil {
		for _, c := range changes {
			b.callLeadership(*fn, c.p.topic, c.p.id, c.leading, c.epoch)
		}
	}
	return ok
}

// localRole is a local partition's topic incarnation and its role as this broker last set it.
type localRole struct {
	czxid    int64
	leading  bool
	leaderID int32 // the leader it follows (itself when leading; -1 none)
	epoch    int32 // the leader epoch of that role
}

func (p *partition) role() localRole {
	return localRole{czxid: p.czxid, leading: p.leading.Load(), leaderID: p.leaderID.Load(), epoch: p.epoch.Load()}
}

// retireDecision is what becomes of a local partition the controller no longer has this broker host
// as it is (ReplicaManager.stopPartitions): none while it is hosted in the same incarnation (h.czxid 0:
// a request without topic ids, taken as the same); otherwise it stops leading (demote, when it
// led), and its log is closed and dropped when StopReplica deleted it or another incarnation of the
// topic replaced it (drop); a partition only no longer hosted keeps its log.
func retireDecision(role localRole, h *hostedPartition, hosted, deleted bool) (demote, drop bool) {
	gone := deleted || (hosted && h.czxid != 0 && h.czxid != role.czxid)
	if hosted && !gone {
		return false, false
	}
	return role.leading, gone
}

// roleDecision is what a hosted partition with an open log does with the state the controller sent.
type roleDecision struct {
	lead    bool // becomeLeader: this broker leads, newly or at a new leader epoch (makeLeaders)
	update  bool // updateLeader: it leads at the same leader epoch (an ISR change)
	demoted bool // it led and now follows (the leadership listener hears of it)
	follow  bool // becomeFollower: it follows a new leader or leader epoch, or led (makeFollowers)
	fetch   bool // the replica fetchers fetch it from the leader (a leader, and no StopReplica since)
}

// decideRole is makeLeaders / makeFollowers for one partition: self leads when the state names it.
func decideRole(self int32, role localRole, h *hostedPartition) roleDecision {
	st := h.st
	if st.Leader == self {
		if !role.leading || role.epoch != st.LeaderEpoch {
			return roleDecision{lead: true}
		}
		return roleDecision{update: true}
	}
	return roleDecision{
		demoted: role.leading,
		follow:  role.leading || role.leaderID != st.Leader || role.epoch != st.LeaderEpoch,
		fetch:   st.Leader >= 0 && !h.stopped,
	}
}

// topicCzxidFile, in a partition log directory, holds the creation zxid of the topic znode the log
// belongs to (topicView.czxid, decimal), as Kafka's partition.metadata holds the topic id (KIP-516): a
// directory left by a topic that was deleted and created again under the same name while this broker
// was away is not taken for the new topic's.
const topicCzxidFile = "topic-czxid"

// claimLogDir makes dir the log directory of the topic incarnation czxid: a directory recording another
// incarnation is removed (its czxid is returned), then the file records czxid. A directory without the
// file (written before the file existed) is kept as it is.
func claimLogDir(dir string, czxid int64) (stale int64, err error) {
	path := filepath.Join(dir, topicCzxidFile)
	want := strconv.FormatInt(czxid, 10) + "\n"
	data, err := os.ReadFile(path)
	switch {
	case err == nil && string(data) == want:
		return 0, nil
	case err == nil:
		stale, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if stale == 0 {
			stale = -1 // unreadable: not ours to trust
		}
		if err := os.RemoveAll(dir); err != nil {
			return stale, fmt.Errorf("removing %s: %w", dir, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return stale, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(want), 0o644); err != nil {
		return stale, err
	}
	return stale, os.Rename(tmp, path)
}

// logRecovery reports what storage.Open found and repaired in a partition log: WARN when it repaired
// anything (Kafka's LogSegment.recover / LogLoader: "Found invalid messages in log segment ...",
// truncation, deletion of later segments, rebuilt indexes), DEBUG when the log was intact.
func logRecovery(log *logrus.Entry, r storage.RecoveryStats, highWatermark int64) {
	f := logrus.Fields{
		"segments":         r.Segments,
		"truncated_bytes":  r.TruncatedBytes,
		"deleted_segments": r.DeletedSegments,
		"rebuilt_indexes":  r.RebuiltIndexes,
		"epoch_checkpoint": r.EpochCheckpoint,
		"high_watermark":   highWatermark,
	}
	if r.Problem == "" && r.TruncatedBytes == 0 && r.DeletedSegments == 0 && r.RebuiltIndexes == 0 && r.EpochCheckpoint != "rebuilt" {
		log.WithFields(f).Debug("log recovery: nothing to repair")
		return
	}
	f["problem"] = r.Problem
	problem := r.Problem
	if problem == "" {
		problem = "no invalid batch"
	}
	log.WithFields(f).Warnf("log recovery repaired the partition log (%s): truncated %d bytes, deleted %d later segments, rebuilt %d indexes, leader-epoch-checkpoint %s; high watermark %d",
		problem, r.TruncatedBytes, r.DeletedSegments, r.RebuiltIndexes, r.EpochCheckpoint, highWatermark)
}

// callLeadership runs the listener; a panic in it is logged, not allowed to stop the ZooKeeper loop.
func (b *Broker) callLeadership(fn LeadershipFunc, topic string, p int32, leading bool, epoch int32) {
	defer func() {
		if r := recover(); r != nil {
			b.log.WithFields(logFields(topic, p)).Errorf("leadership listener panic: %v", r)
		}
	}()
	fn(topic, p, leading, epoch)
}

// setLeaderEpoch tells the log the new leader epoch, stamped into appended batches (KIP-101). An
// older epoch is refused by the log and ignored here: the log keeps the newer one.
func setLeaderEpoch(lg *storage.Log, epoch int32) {
	_ = lg.SetLeaderEpoch(epoch)
}
