package zkconsumer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/internal/zkdata"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// rebalanceCore is ZKRebalancerListener.syncedRebalance (0.8.2.2) as a pure state machine, in the
// style of etcd's raft and of the broker's coordinator core: Step(event, now) returns the effects
// the driver (rebalance_driver.go) carries out in order — ZooKeeper requests, fetcher and commit
// actions, timeline records, a back-off timer. The last effect of a slice may ask for a result
// (a request: a read, a claim, a delete, a listener call, an observation of the session, the
// back-off timer); the driver steps its result back in as the next event. No goroutines, clocks,
// ZooKeeper or map-order output: the same events give the same effects.
//
// One syncedRebalance is evStart … effFinished: up to rebalance.max.retries attempts, each
//
//	observe the session (and whether shutdown began)
//	getCluster: list /brokers/ids, read each (unused, as 0.8.2)
//	read this consumer's registration (its threads; a wildcard lists /brokers/topics)
//	list and read /brokers/ids again: none → subscribe to /brokers/ids, done
//	stop the fetchers of its topics, clear their queues, commit (auto-commit), record revoked
//	listener.BeforeReleasingPartitions; delete every owner znode it holds
//	read its registration again, each topic's partitions, list /consumers/<g>/ids and read each
//	member's registration, list the ids again (getConsumersInGroup)
//	assign (range or roundrobin); read the committed offsets
//	observe: shutdown began → the attempt ends
//	claim an owner znode per partition (all tried); any conflict → delete this attempt's claims
//	observe: the session changed → delete the claims the new session owns (releaseStaleClaims)
//	install the registry (record assigned); listener.BeforeStartingFetchers; start the fetchers
//
// and after a failed attempt: record rebalance_end{ok:false}, stop every fetcher, clear every
// queue, commit (auto-commit), record revoked, and back off rebalance.backoff.ms (also after the
// last attempt, as 0.8.2). Events that arrive while a rebalance runs are collapsed by the driver
// into one more syncedRebalance (the watcher executor's flags).
//
// The steps above are written in order, continuation-passing: each request effect is emitted with
// the function that handles its result (await), and Step runs that function, which emits effects
// up to the next request. Only one request is outstanding at a time, as on 0.8.2's one thread.
type rebalanceCore struct {
	cfg coreConfig

	out  []coreEffect
	next func(coreEvent) // the continuation waiting for the answer to the last request effect
	now  time.Time

	// one syncedRebalance
	attempt int
	lastErr error
	owned   []TopicPartition // owner znodes held (the driver's topicRegistry), ascending

	// one attempt
	session int64
}

// coreConfig is what the core needs of Config and of the subscription.
type coreConfig struct {
	consumerID      string
	groupID         string
	maxRetries      int            // rebalance.max.retries
	backoff         time.Duration  // rebalance.backoff.ms
	roundRobin      bool           // partition.assignment.strategy=roundrobin
	excludeInternal bool           // exclude.internal.topics
	autoCommit      bool           // auto.commit.enable: commit when the fetchers stop
	kafkaOffsets    bool           // offsets.storage=kafka: offsets come from the offset manager
	listener        bool           // a RebalanceListener is set
	streams         map[string]int // CreateMessageStreams' topic → threads (nil for a wildcard)
	wildcardStreams int            // CreateMessageStreamsByFilter's threads
}

func newRebalanceCore(cfg coreConfig) *rebalanceCore { return &rebalanceCore{cfg: cfg} }

// coreEvent is an input of rebalanceCore.Step: evStart, or the result of the last request effect.
type coreEvent interface{ isCoreEvent() }

// evStart begins one syncedRebalance. owned: the partitions whose owner znodes the consumer holds.
type evStart struct{ Owned []TopicPartition }

// evChildren answers effReadChildren: the children, or the server's error (zk.ErrNoNode,
// ErrShutdown wrapped, ...).
type evChildren struct {
	Children []string
	Err      error
}

// evData answers effReadData: the data, or the error (zk.ErrNoNode when the node is absent).
type evData struct {
	Data []byte
	Err  error
}

// evStat answers effReadStat: the node's ephemeralOwner and the session connected right after.
type evStat struct {
	Owner   int64
	Session int64
	Err     error
}

// evCreated answers effCreateOwner: nil (created), zk.ErrNodeExists, or another error.
type evCreated struct{ Err error }

// evDone answers effDelete, effReleaseOwner, effSubscribeChildren and the listener calls.
type evDone struct{ Err error }

// evOffsets answers effFetchKafkaOffsets.
type evOffsets struct {
	Offsets map[TopicPartition]int64
	Err     error
}

// evObserved answers effObserve: the current session id and whether shutdown began.
type evObserved struct {
	Session int64
	Closing bool
}

// evTimerFired answers effBackoff: the back-off ended (or shutdown interrupted it).
type evTimerFired struct{}

func (evStart) isCoreEvent()      {}
func (evChildren) isCoreEvent()   {}
func (evData) isCoreEvent()       {}
func (evStat) isCoreEvent()       {}
func (evCreated) isCoreEvent()    {}
func (evDone) isCoreEvent()       {}
func (evOffsets) isCoreEvent()    {}
func (evObserved) isCoreEvent()   {}
func (evTimerFired) isCoreEvent() {}

// coreEffect is an output of Step, carried out by the driver in order.
type coreEffect interface{ isCoreEffect() }

// Effects that ask for a result: the driver steps it in as the next event. Each ZooKeeper request
// is one zkConn call, which records it (timeline zk_op) and retries it until connected.
type (
	// effReadChildren is one getChildren request → evChildren.
	effReadChildren struct{ Path string }
	// effReadData is one getData request → evData.
	effReadData struct{ Path string }
	// effReadStat is one getData request for the node's Stat → evStat.
	effReadStat struct{ Path string }
	// effCreateOwner is the create of ZkUtils.createEphemeralPathExpectConflict: the owner znode,
	// ephemeral, naming Thread (missing parents created) → evCreated. A NodeExists answer is read
	// back (effReadData) and its write recorded with the outcome (effRecordOwnerWrite).
	effCreateOwner struct{ Path, Thread string }
	// effDelete is ZkUtils.deletePath (a node already gone is fine) → evDone.
	effDelete struct{ Path string }
	// effReleaseOwner deletes the owner znode of Partition and, once deleted, the driver forgets
	// the partition (topicRegistry) → evDone.
	effReleaseOwner struct {
		Partition TopicPartition
		Path      string
	}
	// effSubscribeChildren is ZkClient.subscribeChildChanges → evDone.
	effSubscribeChildren struct{ Path string }
	// effFetchKafkaOffsets is fetchOffsets' Kafka branch (OffsetFetch v1 to the offset manager) →
	// evOffsets.
	effFetchKafkaOffsets struct{ Partitions []TopicPartition }
	// effBeforeReleasing calls RebalanceListener.BeforeReleasingPartitions → evDone (a panic: Err).
	effBeforeReleasing struct{ Owned map[string][]int32 }
	// effBeforeStarting calls RebalanceListener.BeforeStartingFetchers → evDone (a panic: Err).
	effBeforeStarting struct{ Assignment map[string]map[int32]string }
	// effObserve asks for the current session id and whether shutdown began → evObserved.
	effObserve struct{}
	// effBackoff arms the rebalance.backoff.ms timer (At on the step's clock; After from now);
	// shutdown ends it early → evTimerFired.
	effBackoff struct {
		At    time.Time
		After time.Duration
	}
)

// Effects that ask for nothing.
type (
	// effRecord is a timeline record (the driver sets the consumer id).
	effRecord struct{ Record timeline.Record }
	// effStopFetchers stops the fetchers and clears the queues of Topics' streams, or of all.
	effStopFetchers struct {
		Topics []string
		All    bool
	}
	// effCommitOffsets is CommitOffsets (sent with auto-commit only, KAFKA-919); a failure is logged.
	effCommitOffsets struct{}
	// effRecordRevoked records the partitions handed to the fetchers as revoked.
	effRecordRevoked struct{}
	// effInstall makes Partitions the consumer's (topicRegistry, checkpoints) and records assigned.
	effInstall struct{ Partitions []installedPartition }
	// effRecordOwnerWrite records the create of an owner znode that met NodeExists, once read back:
	// Result is timeline.ZKOwnerConflict when another thread owns it (the ownership_conflicts
	// figure), else "".
	effRecordOwnerWrite struct{ Path, Result string }
	// effStartFetchers is updateFetcher: the fetchers start on the installed partitions.
	effStartFetchers struct{}
	// effLog is a log line.
	effLog struct {
		Level  logrus.Level
		Msg    string
		Fields logrus.Fields
	}
	// effFinished ends the syncedRebalance: nil, ErrShutdown, or ErrRebalanceFailed wrapping the
	// last attempt's error.
	effFinished struct{ Err error }
)

// installedPartition is one partition of a successful attempt: its owner thread and the offset the
// fetcher starts from (-1: none committed).
type installedPartition struct {
	Partition TopicPartition
	Thread    ThreadID
	Offset    int64
}

func (effReadChildren) isCoreEffect()      {}
func (effReadData) isCoreEffect()          {}
func (effReadStat) isCoreEffect()          {}
func (effCreateOwner) isCoreEffect()       {}
func (effRecordOwnerWrite) isCoreEffect()  {}
func (effDelete) isCoreEffect()            {}
func (effReleaseOwner) isCoreEffect()      {}
func (effSubscribeChildren) isCoreEffect() {}
func (effFetchKafkaOffsets) isCoreEffect() {}
func (effBeforeReleasing) isCoreEffect()   {}
func (effBeforeStarting) isCoreEffect()    {}
func (effObserve) isCoreEffect()           {}
func (effBackoff) isCoreEffect()           {}
func (effRecord) isCoreEffect()            {}
func (effStopFetchers) isCoreEffect()      {}
func (effCommitOffsets) isCoreEffect()     {}
func (effRecordRevoked) isCoreEffect()     {}
func (effInstall) isCoreEffect()           {}
func (effStartFetchers) isCoreEffect()     {}
func (effLog) isCoreEffect()               {}
func (effFinished) isCoreEffect()          {}

// Step feeds one event and returns the effects to carry out, in order. evStart while a rebalance
// runs, or a result no request waits for, or of another kind than the one awaited, is ignored (nil).
func (k *rebalanceCore) Step(ev coreEvent, now time.Time) []coreEffect {
	k.now, k.out = now, nil
	if s, ok := ev.(evStart); ok {
		if k.next != nil {
			return nil
		}
		k.begin(s.Owned)
	} else if cont := k.next; cont != nil {
		k.next = nil
		cont(ev)
	}
	out := k.out
	k.out = nil
	return out
}

// Running reports whether a syncedRebalance is under way.
func (k *rebalanceCore) Running() bool { return k.next != nil }

func (k *rebalanceCore) emit(e coreEffect) { k.out = append(k.out, e) }

func (k *rebalanceCore) record(r timeline.Record) { k.emit(effRecord{r}) }

func (k *rebalanceCore) log(level logrus.Level, msg string, fields logrus.Fields) {
	k.emit(effLog{level, msg, fields})
}

// await emits a request and sets the continuation for its result, an event of type E; an event of
// another type leaves the request waiting.
func await[E coreEvent](k *rebalanceCore, req coreEffect, cont func(E)) {
	k.emit(req)
	var wait func(coreEvent)
	wait = func(ev coreEvent) {
		e, ok := ev.(E)
		if !ok {
			k.next = wait
			return
		}
		cont(e)
	}
	k.next = wait
}

// begin is syncedRebalance's start: nothing (ErrShutdown) once shutdown began, else
// rebalance_begin and the first attempt.
func (k *rebalanceCore) begin(owned []TopicPartition) {
	k.attempt, k.lastErr, k.session = 0, nil, 0
	k.owned = append([]TopicPartition(nil), owned...)
	sortTopicPartitions(k.owned)
	await(k, effObserve{}, func(o evObserved) {
		if o.Closing {
			k.emit(effFinished{ErrShutdown})
			return
		}
		k.record(timeline.Record{Kind: timeline.RebalanceBegin})
		k.nextAttempt()
	})
}

// nextAttempt starts attempt k.attempt+1, or ends the syncedRebalance after rebalance.max.retries.
func (k *rebalanceCore) nextAttempt() {
	if k.attempt >= k.cfg.maxRetries {
		k.finish()
		return
	}
	k.attempt++
	await(k, effObserve{}, func(o evObserved) {
		if o.Closing {
			k.lastErr = ErrShutdown
			k.finish()
			return
		}
		k.session = o.Session
		k.log(logrus.InfoLevel, "begin rebalancing", logrus.Fields{"attempt": k.attempt})
		k.attemptBody()
	})
}

func (k *rebalanceCore) finish() {
	if errors.Is(k.lastErr, ErrShutdown) {
		k.emit(effFinished{ErrShutdown})
		return
	}
	k.emit(effFinished{fmt.Errorf("%w: %s can't rebalance after %d retries: %w", ErrRebalanceFailed, k.cfg.consumerID, k.cfg.maxRetries, k.lastErr)})
}

// attemptFailed ends a failed attempt (err wraps ErrShutdown when shutdown cut it short: then no
// rebalance_end is recorded), stops every fetcher and backs off.
func (k *rebalanceCore) attemptFailed(err error) {
	k.lastErr = err
	if !errors.Is(err, ErrShutdown) {
		k.record(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(false), Attempt: k.attempt})
	}
	k.log(logrus.InfoLevel, "rebalance attempt failed", logrus.Fields{"attempt": k.attempt, logrus.ErrorKey: err})
	k.closeFetchersForQueues(nil, true)
	await(k, effBackoff{At: k.now.Add(k.cfg.backoff), After: k.cfg.backoff}, func(evTimerFired) { k.nextAttempt() })
}

func (k *rebalanceCore) attemptDone() {
	k.record(timeline.Record{Kind: timeline.RebalanceEnd, OK: timeline.Bool(true), Attempt: k.attempt})
	k.log(logrus.InfoLevel, "rebalance done", logrus.Fields{"attempt": k.attempt})
	k.emit(effFinished{nil})
}

// closeFetchersForQueues is 0.8.2's: stop the fetchers, clear the queues of topics (or all),
// commit with auto-commit only (KAFKA-919), then record the revocation — the commit is the owner's
// last act on the partitions.
func (k *rebalanceCore) closeFetchersForQueues(topics []string, all bool) {
	k.emit(effStopFetchers{Topics: topics, All: all})
	if k.cfg.autoCommit {
		k.emit(effCommitOffsets{})
	}
	k.emit(effRecordRevoked{})
}

// attemptBody is ZKRebalancerListener.rebalance from getCluster on.
func (k *rebalanceCore) attemptBody() {
	k.readBrokers(func(_ int, err error) { // getCluster: read, unused
		if err != nil {
			k.attemptFailed(err)
			return
		}
		k.readThreads(k.cfg.consumerID, func(my map[string][]ThreadID, err error) {
			if err != nil {
				k.attemptFailed(err)
				return
			}
			k.readBrokers(func(n int, err error) {
				switch {
				case err != nil:
					k.attemptFailed(err)
				case n == 0:
					// 0.8.2: nothing to do until a broker registers; /brokers/ids changes rebalance.
					k.log(logrus.WarnLevel, "no brokers found when trying to rebalance", nil)
					await(k, effSubscribeChildren{brokerIdsPath}, func(r evDone) {
						if r.Err != nil {
							k.attemptFailed(r.Err)
							return
						}
						k.attemptDone()
					})
				default:
					k.releasePartitionOwnership(my)
				}
			})
		})
	})
}

// releasePartitionOwnership stops fetching the consumer's topics first (the partitions released next may be claimed
// by others at once), calls the listener, and deletes every owner znode held.
func (k *rebalanceCore) releasePartitionOwnership(my map[string][]ThreadID) {
	topics := make([]string, 0, len(my))
	for t := range my {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	k.closeFetchersForQueues(topics, false)
	k.listen(effBeforeReleasing{partitionsByTopic(k.owned)}, func() {
		var deleteNext func()
		deleteNext = func() {
			if len(k.owned) == 0 {
				k.readAssignmentContext()
				return
			}
			tp := k.owned[0]
			path := ownerPath(k.cfg.groupID, tp)
			await(k, effReleaseOwner{tp, path}, func(r evDone) {
				if r.Err != nil {
					k.attemptFailed(fmt.Errorf("releasing %s: %w", path, r.Err))
					return
				}
				k.owned = k.owned[1:]
				deleteNext()
			})
		}
		deleteNext()
	})
}

// listen asks for a listener call (when there is a listener) and goes on when it returned.
func (k *rebalanceCore) listen(call coreEffect, cont func()) {
	if !k.cfg.listener {
		cont()
		return
	}
	await(k, call, func(r evDone) {
		if r.Err != nil {
			k.attemptFailed(r.Err)
			return
		}
		cont()
	})
}

// readAssignmentContext reads what the assignors need, in 0.8.2's order: own threads, the
// partitions of own topics (ZkUtils.getPartitionsForTopics), every member's threads
// (getConsumersPerTopic: list /consumers/<g>/ids, read each), the member list (getConsumersInGroup).
func (k *rebalanceCore) readAssignmentContext() {
	idsPath := idsPathOf(k.cfg.groupID)
	k.readThreads(k.cfg.consumerID, func(my map[string][]ThreadID, err error) {
		if err != nil {
			k.attemptFailed(err)
			return
		}
		actx := assignmentContext{consumerID: k.cfg.consumerID, myTopicThreadIDs: my,
			consumersForTopic: map[string][]ThreadID{}, partitionsForTopic: map[string][]int32{}}
		topics := make([]string, 0, len(my))
		for t := range my {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		var partitionsOf func(i int)
		partitionsOf = func(i int) {
			if i == len(topics) {
				k.readMembers(idsPath, actx)
				return
			}
			path := brokerTopicsPath + "/" + topics[i]
			await(k, effReadData{path}, func(r evData) {
				ps, err := topicPartitions(topics[i], r.Data, r.Err)
				if err != nil {
					k.attemptFailed(err)
					return
				}
				actx.partitionsForTopic[topics[i]] = ps
				partitionsOf(i + 1)
			})
		}
		partitionsOf(0)
	})
}

// readMembers lists /consumers/<g>/ids, reads each member's registration (a member that vanished
// since the list fails the attempt, as in 0.8.2), lists the ids again, and assigns.
func (k *rebalanceCore) readMembers(idsPath string, actx assignmentContext) {
	await(k, effReadChildren{idsPath}, func(r evChildren) {
		members, err := mayNotExist(r.Children, r.Err)
		if err != nil {
			k.attemptFailed(err)
			return
		}
		var member func(i int)
		member = func(i int) {
			if i == len(members) {
				for _, ids := range actx.consumersForTopic {
					sortThreadIDs(ids)
				}
				await(k, effReadChildren{idsPath}, func(r evChildren) { // getConsumersInGroup (0.8.2 logs it)
					if r.Err != nil {
						k.attemptFailed(r.Err)
						return
					}
					k.assign(actx)
				})
				return
			}
			k.readThreads(members[i], func(threads map[string][]ThreadID, err error) {
				if err != nil {
					k.attemptFailed(err)
					return
				}
				for t, ids := range threads {
					actx.consumersForTopic[t] = append(actx.consumersForTopic[t], ids...)
				}
				member(i + 1)
			})
		}
		member(0)
	})
}

// assign computes the decision, checks every owner thread has a stream, and reads the offsets.
func (k *rebalanceCore) assign(actx assignmentContext) {
	assignFn := assignRange
	if k.cfg.roundRobin {
		assignFn = assignRoundRobin
	}
	global, err := assignFn(actx)
	if err != nil {
		k.attemptFailed(err)
		return
	}
	mine := global.mine(k.cfg.consumerID)
	tps := mine.sortedPartitions()
	k.fetchOffsets(tps, func(offsets map[TopicPartition]int64, err error) {
		if err != nil {
			k.attemptFailed(err)
			return
		}
		parts := make([]installedPartition, 0, len(tps))
		for _, tp := range tps {
			if err := k.checkStream(tp.Topic, mine[tp]); err != nil {
				k.attemptFailed(err)
				return
			}
			parts = append(parts, installedPartition{tp, mine[tp], offsets[tp]})
		}
		await(k, effObserve{}, func(o evObserved) {
			if o.Closing {
				k.attemptFailed(ErrShutdown)
				return
			}
			k.reflectPartitionOwnershipDecision(parts, global)
		})
	})
}

// checkStream is queueFor's check: the owner thread has a stream.
func (k *rebalanceCore) checkStream(topic string, t ThreadID) error {
	n := k.cfg.wildcardStreams
	if k.cfg.streams != nil {
		n = k.cfg.streams[topic]
	}
	if t.Thread < 0 || t.Thread >= n {
		return fmt.Errorf("no stream for topic %s thread %s", topic, t)
	}
	return nil
}

// fetchOffsets is fetchOffsets: each partition's committed next offset, or -1 (none), from
// ZooKeeper (one read per partition) or from the offset manager.
func (k *rebalanceCore) fetchOffsets(tps []TopicPartition, cont func(map[TopicPartition]int64, error)) {
	out := map[TopicPartition]int64{}
	if len(tps) == 0 {
		cont(out, nil)
		return
	}
	if k.cfg.kafkaOffsets {
		await(k, effFetchKafkaOffsets{tps}, func(r evOffsets) { cont(r.Offsets, r.Err) })
		return
	}
	var read func(i int)
	read = func(i int) {
		if i == len(tps) {
			cont(out, nil)
			return
		}
		path := offsetPath(k.cfg.groupID, tps[i])
		await(k, effReadData{path}, func(r evData) {
			off, err := parseOffset(path, r.Data, r.Err)
			if err != nil {
				cont(nil, err)
				return
			}
			out[tps[i]] = off
			read(i + 1)
		})
	}
	read(0)
}

// reflectPartitionOwnershipDecision is 0.8.2's: an owner znode for every partition of the decision
// (all are tried, as in Kafka); if any is owned by another thread or fails, every znode this
// attempt claimed is deleted and the attempt fails (ZK-FAILED-ATTEMPT-RELEASES).
func (k *rebalanceCore) reflectPartitionOwnershipDecision(parts []installedPartition, global assignment) {
	outcomes := map[TopicPartition]claimOutcome{}
	var errs []error
	var claimNext func(i int)
	claimNext = func(i int) {
		if i < len(parts) {
			p := parts[i]
			k.claimOwner(ownerPath(k.cfg.groupID, p.Partition), p.Thread.String(), func(o claimOutcome, err error) {
				outcomes[p.Partition] = o
				if err != nil {
					if o == conflict {
						k.log(logrus.InfoLevel, "waiting for the partition ownership to be deleted",
							logrus.Fields{"topic": p.Partition.Topic, "partition": p.Partition.Partition, logrus.ErrorKey: err})
					}
					errs = append(errs, err)
				}
				claimNext(i + 1)
			})
			return
		}
		ok, release := decideAttempt(outcomes)
		if ok {
			k.releaseStaleClaims(parts, global)
			return
		}
		k.deleteAll(release, errs, func(errs []error) {
			k.attemptFailed(fmt.Errorf("partition ownership conflict: %w", errors.Join(errs...)))
		})
	}
	claimNext(0)
}

// claimOwner is ZkUtils.createEphemeralPathExpectConflict for thread's owner znode: create it; on
// NodeExists read it, and it is ours only if it names our thread (a create sent again after a
// connection loss met its own node; decideClaim). A node deleted between the create and the read
// is still a failed claim, as in Kafka.
func (k *rebalanceCore) claimOwner(path, thread string, cont func(claimOutcome, error)) {
	await(k, effCreateOwner{path, thread}, func(r evCreated) {
		switch {
		case r.Err == nil:
			cont(claimed, nil)
		case errors.Is(r.Err, zk.ErrNodeExists):
			await(k, effReadData{path}, func(d evData) {
				stored, err := d.Data, d.Err
				if errors.Is(err, zk.ErrNoNode) {
					stored, err = nil, nil
				}
				if err != nil {
					k.emit(effRecordOwnerWrite{path, ""})
					cont(conflict, err)
					return
				}
				o := decideClaim(thread, false, stored)
				if o == conflict {
					k.emit(effRecordOwnerWrite{path, timeline.ZKOwnerConflict})
					cont(conflict, fmt.Errorf("%s is owned by %q", path, stored))
					return
				}
				k.emit(effRecordOwnerWrite{path, ""})
				cont(claimed, nil)
			})
		default:
			cont(conflict, r.Err)
		}
	})
}

// deleteAll deletes the owner znodes of tps in order, adding each failure to errs.
func (k *rebalanceCore) deleteAll(tps []TopicPartition, errs []error, cont func([]error)) {
	if len(tps) == 0 {
		cont(errs)
		return
	}
	path := ownerPath(k.cfg.groupID, tps[0])
	await(k, effDelete{path}, func(r evDone) {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", path, r.Err))
		}
		k.deleteAll(tps[1:], errs, cont)
	})
}

// releaseStaleClaims ends an attempt during which the session changed (releaseStaleClaims): its requests
// wait for a session and are sent again in the new one (retryUntilConnected), so some claims may
// have been made there, from the old session's view, before the new session's event is handled —
// whose resetState would forget them for good. The owner znodes of the decision that the current
// session owns are deleted (one of the old session is gone with it; one of another session may be
// another member's claim since), and the attempt fails. (0.8.2, over ZkClient, kept such claims.)
func (k *rebalanceCore) releaseStaleClaims(parts []installedPartition, global assignment) {
	await(k, effObserve{}, func(o evObserved) {
		if o.Session == k.session {
			k.install(parts, global)
			return
		}
		from, to := k.session, o.Session
		errs := []error{fmt.Errorf("ZooKeeper session changed from %#x to %#x during the attempt: its claims are released", from, to)}
		var check func(i int)
		check = func(i int) {
			if i == len(parts) {
				k.attemptFailed(errors.Join(errs...))
				return
			}
			path := ownerPath(k.cfg.groupID, parts[i].Partition)
			await(k, effReadStat{path}, func(r evStat) {
				switch {
				case errors.Is(r.Err, zk.ErrNoNode):
					check(i + 1)
				case r.Err != nil:
					errs = append(errs, fmt.Errorf("reading %s: %w", path, r.Err))
					check(i + 1)
				case r.Owner != r.Session:
					check(i + 1)
				default:
					await(k, effDelete{path}, func(d evDone) {
						if d.Err != nil {
							errs = append(errs, fmt.Errorf("deleting %s: %w", path, d.Err))
						}
						check(i + 1)
					})
				}
			})
		}
		check(0)
	})
}

// install makes the partitions this consumer's (its owner znodes exist), calls the listener and
// starts the fetchers.
func (k *rebalanceCore) install(parts []installedPartition, global assignment) {
	k.emit(effInstall{parts})
	k.owned = k.owned[:0]
	for _, p := range parts {
		k.owned = append(k.owned, p.Partition)
	}
	k.listen(effBeforeStartingFor(global), func() {
		k.emit(effStartFetchers{})
		k.log(logrus.InfoLevel, "selected partitions", logrus.Fields{"partitions": partitionsByTopic(k.owned)})
		k.attemptDone()
	})
}

func effBeforeStartingFor(global assignment) effBeforeStarting {
	return effBeforeStarting{global.byTopic()}
}

// readBrokers is ZkUtils.getAllBrokersInCluster: list /brokers/ids, read each node (ascending
// ids); cont gets the number of brokers with a PLAINTEXT endpoint.
func (k *rebalanceCore) readBrokers(cont func(int, error)) {
	await(k, effReadChildren{brokerIdsPath}, func(r evChildren) {
		ids, err := mayNotExist(r.Children, r.Err)
		if err != nil {
			cont(0, err)
			return
		}
		ids = append([]string(nil), ids...)
		sort.Strings(ids)
		n := 0
		var read func(i int)
		read = func(i int) {
			if i == len(ids) {
				cont(n, nil)
				return
			}
			await(k, effReadData{brokerIdsPath + "/" + ids[i]}, func(r evData) {
				b, ok, err := decodeBrokerNode(ids[i], r.Data, r.Err)
				if err != nil {
					cont(0, err)
					return
				}
				if ok {
					n++
				} else if r.Err == nil {
					k.log(logrus.DebugLevel, "broker has no PLAINTEXT endpoint; left out", logrus.Fields{"broker": b.id})
				}
				read(i + 1)
			})
		}
		read(0)
	})
}

// readThreads reads one member's registration (TopicCount.constructTopicCount); a wildcard
// subscription lists /brokers/topics. A missing registration is an error.
func (k *rebalanceCore) readThreads(consumer string, cont func(map[string][]ThreadID, error)) {
	await(k, effReadData{idsPathOf(k.cfg.groupID) + "/" + consumer}, func(r evData) {
		if r.Err != nil {
			cont(nil, fmt.Errorf("reading registration of %s: %w", consumer, r.Err))
			return
		}
		reg, err := parseRegistration(r.Data)
		if err != nil {
			cont(nil, err)
			return
		}
		if _, _, _, wild := reg.wildcard(); !wild {
			cont(reg.threadsPerTopic(consumer, nil, k.cfg.excludeInternal))
			return
		}
		await(k, effReadChildren{brokerTopicsPath}, func(r evChildren) {
			topics, err := mayNotExist(r.Children, r.Err)
			if err != nil {
				cont(nil, err)
				return
			}
			cont(reg.threadsPerTopic(consumer, topics, k.cfg.excludeInternal))
		})
	})
}

// mayNotExist is ZkUtils.getChildrenParentMayNotExist's reading of a getChildren result.
func mayNotExist(children []string, err error) ([]string, error) {
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return children, err
}

// decodeBrokerNode reads one /brokers/ids/<id> getData result (a readDataMaybeNull): ok=false for a
// node that vanished between the list and the read (KAFKA-1010, ZK-BROKER-VANISHES) or a broker
// without a PLAINTEXT endpoint (this consumer speaks PLAINTEXT only); registrations of every
// version Kafka writes (1–5, zkdata.DecodeBroker) are read. Errors: the read's, a non-numeric id, a
// node that does not parse.
func decodeBrokerNode(id string, data []byte, readErr error) (b brokerInfo, ok bool, err error) {
	if errors.Is(readErr, zk.ErrNoNode) {
		return brokerInfo{}, false, nil
	}
	if readErr != nil {
		return brokerInfo{}, false, readErr
	}
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil {
		return brokerInfo{}, false, fmt.Errorf("broker id %q under %s is not a number", id, brokerIdsPath)
	}
	reg, err := zkdata.DecodeBroker(data)
	if err != nil {
		return brokerInfo{}, false, fmt.Errorf("%s/%s: %w", brokerIdsPath, id, err)
	}
	host, port, plaintext := reg.Plaintext()
	return brokerInfo{int32(n), host, port}, plaintext, nil
}

// topicPartitions reads a /brokers/topics/<t> getData result (versions 1–3,
// zkdata.DecodeTopicAssignment): its partition ids ascending; a missing topic has none (nil).
func topicPartitions(topic string, data []byte, readErr error) ([]int32, error) {
	if errors.Is(readErr, zk.ErrNoNode) {
		return nil, nil
	}
	if readErr != nil {
		return nil, readErr
	}
	assignment, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	out := make([]int32, 0, len(assignment))
	for p := range assignment {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// parseOffset reads an offset znode's getData result (fetchOffsetFromZooKeeper): the committed next
// offset, or -1 when the node is absent.
func parseOffset(path string, data []byte, readErr error) (int64, error) {
	if errors.Is(readErr, zk.ErrNoNode) {
		return -1, nil
	}
	if readErr != nil {
		return -1, readErr
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return -1, fmt.Errorf("offset znode %s = %q is not a number", path, data)
	}
	return n, nil
}

func idsPathOf(group string) string { return "/consumers/" + group + "/ids" }

func offsetPath(group string, tp TopicPartition) string {
	return fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, tp.Topic, tp.Partition)
}

func ownerPath(group string, tp TopicPartition) string {
	return fmt.Sprintf("/consumers/%s/owners/%s/%d", group, tp.Topic, tp.Partition)
}
