package broker

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// The controller's driver: the ZooKeeper loop hands the core (controller_core.go) what it read and
// the requests addressed to the controller, and carries out the effects — znode writes (each one's
// outcome fed back at once), re-reads queued as tasks, sends queued on the brokers' request queues,
// resignation, log lines. The answers (ctrlReconciled, ctrlAlterAnswer, ctrlShutdownAnswer) are
// returned to the caller.

// runCtrl steps the core with ev and carries out the effects in order, until none is left.
func (b *Broker) runCtrl(s *zkState, ev ctrlEvent) []ctrlEffect {
	return b.doCtrl(s, s.ctrl.step(ev))
}

// doCtrl carries out effs (and the effects of the events they lead to) and returns the answers.
func (b *Broker) doCtrl(s *zkState, effs []ctrlEffect) []ctrlEffect {
	var answers []ctrlEffect
	for len(effs) > 0 {
		e := effs[0]
		effs = effs[1:]
		switch e := e.(type) {
		case ctrlWriteState:
			effs = append(effs, s.ctrl.step(b.writeStateZK(s, e))...)
		case ctrlRead:
			t := zkTask{kind: e.Kind, topic: e.Topic, partition: e.Partition}
			var path string
			switch e.Kind {
			case taskState:
				path = statePath(e.Topic, e.Partition)
			case taskTopic:
				path = topicPath(e.Topic)
			}
			if e.IfUnwatched && s.armed[path] {
				continue
			}
			if e.Stale {
				s.armed[path] = false
			}
			s.pending[t] = struct{}{}
		case ctrlForgetTopic:
			b.forgetTopic(s, e.Topic)
		case ctrlResign:
			b.resign(s)
			s.pending[zkTask{kind: taskElect}] = struct{}{}
		case ctrlSend:
			s.chans.send(e.To, e.Req)
		case ctrlLog:
			l := b.log.WithFields(e.Fields)
			if e.Err != nil {
				l = l.WithError(e.Err)
			}
			l.Log(e.Level, e.Msg)
		default:
			answers = append(answers, e)
		}
	}
	return answers
}

// reconcile is the controller's work after every change, on a complete context only: the core decides
// every partition's state and the driver writes it. It reports false when a write failed or the
// controller resigned (left for the retry).
func (b *Broker) reconcile(s *zkState) bool {
	if len(s.pending) > 0 {
		return false // decide only on a complete picture
	}
	for _, a := range b.runCtrl(s, ctrlReconcile{}) {
		if r, ok := a.(ctrlReconciled); ok {
			return r.OK
		}
	}
	return true
}

// propagate starts and stops the senders for the live brokers, then queues what the core decides to
// send each of them.
func (b *Broker) propagate(s *zkState) {
	fresh := s.chans.sync(s.ctrl.view.brokers, s.ctrl.brokerEpochs)
	b.runCtrl(s, ctrlPropagate{Fresh: fresh})
}

var errFenced = errors.New("controller epoch changed: another controller took over")

// writeStateZK performs w and classifies its outcome for the core.
func (b *Broker) writeStateZK(s *zkState, w ctrlWriteState) ctrlStateWritten {
	var (
		ver int32
		err error
	)
	if w.Create {
		ver, err = b.createState(w)
	} else {
		ver, err = b.writeState(w)
	}
	switch {
	case err == nil:
		return ctrlStateWritten{Outcome: writeOK, Version: ver}
	case errors.Is(err, errFenced):
		return ctrlStateWritten{Outcome: writeFenced, Err: err}
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return ctrlStateWritten{Outcome: writeConflict, Err: err}
	case errors.Is(err, zk.ErrNoNode):
		return ctrlStateWritten{Outcome: writeNoNode, Err: err}
	}
	return ctrlStateWritten{Outcome: writeFailed, Err: err}
}

func (b *Broker) epochCheck(epochVersion int32) *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: b.zp(controllerEpochPath), Version: epochVersion}
}

// multiErr maps a failed multi to the error of its failing op; op 0 is always the epoch check.
func multiErr(res []zk.MultiResponse, err error) error {
	if err == nil {
		return nil
	}
	for i, r := range res {
		if r.Error == nil || errors.Is(r.Error, zk.ErrAPIError) || errors.Is(r.Error, zk.ErrUnknown) {
			continue
		}
		if i == 0 && (errors.Is(r.Error, zk.ErrBadVersion) || errors.Is(r.Error, zk.ErrNoNode)) {
			return errFenced
		}
		return r.Error
	}
	return err
}

// createState creates a partition's state znode (version 0) and its parents.
func (b *Broker) createState(w ctrlWriteState) (int32, error) {
	for _, parent := range []string{topicPartitionsPath(w.Topic), partitionPath(w.Topic, w.Partition)} {
		// Create (not ensurePath): if the topic was deleted, NoNode must stop us, not resurrect it.
		if _, err := b.zk.Create(b.zp(parent), nil, 0, b.acl()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, err
		}
	}
	res, err := b.zk.Multi(b.epochCheck(w.EpochVersion), &zk.CreateRequest{Path: b.zp(statePath(w.Topic, w.Partition)), Data: encodeState(w.State), Acl: b.acl()})
	return 0, multiErr(res, err)
}

// writeState sets a partition's state znode at w.Version; it returns the new version.
func (b *Broker) writeState(w ctrlWriteState) (int32, error) {
	res, err := b.zk.Multi(b.epochCheck(w.EpochVersion), &zk.SetDataRequest{Path: b.zp(statePath(w.Topic, w.Partition)), Data: encodeState(w.State), Version: w.Version})
	if err := multiErr(res, err); err != nil {
		return 0, err
	}
	if len(res) == 2 && res[1].Stat != nil {
		return res[1].Stat.Version, nil
	}
	return w.Version + 1, nil
}

// uncleanFor is unclean.leader.election.enable for topic with its overrides (the core's lookup).
func (b *Broker) uncleanFor(topic string, overrides map[string]string) bool {
	return b.logConfigFor(topic, overrides).uncleanLeaderElection
}
