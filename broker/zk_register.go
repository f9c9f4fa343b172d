package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Registration and controller election in ZooKeeper (KafkaHealthcheck, ZookeeperLeaderElector), run as
// the ZooKeeper loop's tasks (zk.go).

func (b *Broker) ensurePath(path string) error {
	parts := strings.Split(strings.Trim(b.zp(path), "/"), "/")
	cur := ""
	for _, p := range parts {
		cur += "/" + p
		if _, err := b.zk.Create(cur, nil, 0, b.acl()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// register creates /brokers/ids/<id> (ZkUtils.registerBrokerInZk). If the node exists from another
// session (this broker's previous incarnation, not yet expired), it waits for ZooKeeper to delete it, as
// ZkUtils.createEphemeralPathExpectConflictHandleZKBug does.
func (b *Broker) register(s *zkState) error {
	for _, p := range []string{brokerIDsPath, brokerTopicsPath, consumersPath} {
		if err := b.ensurePath(p); err != nil {
			return err
		}
	}
	if err := b.ensureClusterID(); err != nil {
		return err
	}
	if err := b.ensureFeatureZNode(); err != nil {
		return err
	}
	path := b.zp(brokerPath(b.id))
	data := encodeBroker(b.host, b.port, time.Now().UnixMilli())
	_, err := b.zk.Create(path, data, zk.FlagEphemeral, b.acl())
	if errors.Is(err, zk.ErrNodeExists) {
		exists, stat, _, werr := b.zk.ExistsW(path)
		if werr != nil {
			return werr
		}
		switch {
		case !exists:
			return fmt.Errorf("%s vanished; retrying", path)
		case stat.EphemeralOwner == b.zk.SessionID():
			err = nil
			s.brokerEpoch = stat.Czxid
		default:
			b.regConflict.Store(stat.EphemeralOwner)
			if !s.conflictSeen {
				s.conflictSeen = true
				b.log.WithField("owner", fmt.Sprintf("0x%x", stat.EphemeralOwner)).Warnf("%s is held by another session; waiting for ZooKeeper to expire it", path)
			}
			return errRegistrationConflict
		}
	}
	if err != nil {
		return fmt.Errorf("register %s: %w", path, err)
	}
	// The broker epoch is the registration's czxid (KafkaZkClient.registerBroker); control requests
	// from before it are stale.
	if _, stat, err := b.zk.Exists(path); err != nil {
		return fmt.Errorf("register %s: %w", path, err)
	} else if stat.EphemeralOwner == b.zk.SessionID() {
		s.brokerEpoch = stat.Czxid
	}
	b.regConflict.Store(0)
	b.log.WithField("advertised", b.AdvertisedAddr()).Info("registered in ZooKeeper")
	s.registered = true
	return nil
}

// elect reads /controller, and when it is absent creates it (KafkaController's ZookeeperLeaderElector):
// the first broker to create the ephemeral node is the controller and bumps /controller_epoch.
func (b *Broker) elect(s *zkState) error {
	path := b.zp(controllerPath)
	for attempt := 0; attempt < 3; attempt++ {
		data, stat, _, err := b.zk.GetW(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = b.zk.Create(path, encodeController(b.id, time.Now().UnixMilli()), zk.FlagEphemeral, b.acl())
			if errors.Is(err, zk.ErrNodeExists) {
				continue // someone else won; read it
			}
			if err != nil {
				return err
			}
			// Watch our own node, so that its deletion (session loss) triggers a new election.
			if _, _, _, err := b.zk.GetW(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			s.work.controller = b.id
			return b.becomeController(s)
		}
		if err != nil {
			return err
		}
		id, derr := decodeController(data)
		if derr != nil {
			b.log.WithError(derr).Warn("unreadable /controller")
			id = -1
		}
		s.work.controller = id
		if id == b.id && stat.EphemeralOwner == b.zk.SessionID() {
			if !s.ctrl.active {
				return b.becomeController(s)
			}
			return nil
		}
		if s.ctrl.active {
			b.log.WithField("controller", id).Info("resigning as controller")
			b.resign(s)
		}
		return nil
	}
	return fmt.Errorf("controller election did not settle")
}

// becomeController increments /controller_epoch (KafkaController.incrementControllerEpoch; the first
// epoch is 1) and schedules a fresh read of brokers and topics before the first reconcile.
func (b *Broker) becomeController(s *zkState) error {
	path := b.zp(controllerEpochPath)
	var won *ctrlElected
	for attempt := 0; attempt < 5 && won == nil; attempt++ {
		data, stat, err := b.zk.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = b.zk.Create(path, []byte("1"), 0, b.acl())
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			if err != nil {
				return err
			}
			won = &ctrlElected{Epoch: 1, EpochVersion: 0}
			continue
		}
		if err != nil {
			return err
		}
		cur, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
		if perr != nil {
			return fmt.Errorf("%s holds %q: %w", controllerEpochPath, data, perr)
		}
		st, err := b.zk.Set(path, []byte(strconv.FormatInt(cur+1, 10)), stat.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return err
		}
		won = &ctrlElected{Epoch: int32(cur + 1), EpochVersion: st.Version}
	}
	if won == nil {
		return fmt.Errorf("could not increment %s", controllerEpochPath)
	}
	// Watches of an earlier tenure may have fired while this broker was not the controller: read all.
	for path := range s.armed {
		if strings.HasPrefix(path, "/brokers/") {
			delete(s.armed, path)
		}
	}
	b.runCtrl(s, *won)
	return nil
}
