package broker

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// clusterIDPath is Kafka's ClusterIdZNode: {"version":"1","id":"<22-character base64 UUID>"}.
const clusterIDPath = "/cluster/id"

// ensureClusterID is KafkaServer.getOrGenerateClusterId: the id in /cluster/id, created with a new
// random UUID (CoreUtils.generateUuidAsBase64: URL-safe base64 without padding) by the first broker
// of the cluster. The broker answers it in Metadata (v2+).
func (b *Broker) ensureClusterID() error {
	if b.clusterID.Load() != nil {
		return nil
	}
	path := b.zp(clusterIDPath)
	data, _, err := b.zk.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return err
		}
		u[6] = u[6]&0x0f | 0x40 // a version 4 UUID, as java.util.UUID.randomUUID
		u[8] = u[8]&0x3f | 0x80
		data, _ = json.Marshal(map[string]string{"version": "1", "id": base64.RawURLEncoding.EncodeToString(u[:])})
		if err := b.ensurePath("/cluster"); err != nil {
			return err
		}
		if _, err = b.zk.Create(path, data, 0, b.acl()); errors.Is(err, zk.ErrNodeExists) {
			data, _, err = b.zk.Get(path) // another broker created it first
		}
	}
	if err != nil {
		return fmt.Errorf("cluster id %s: %w", path, err)
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.ID == "" {
		return fmt.Errorf("cluster id %s = %q: want {\"version\":\"1\",\"id\":...}", path, data)
	}
	b.clusterID.Store(&c.ID)
	return nil
}

// featurePath is Kafka's FeatureZNode (KIP-584 feature versioning).
const featurePath = "/feature"

// ensureFeatureZNode is KafkaController.enableFeatureVersioning for a cluster with no finalized
// features: /feature created, when absent, as {"features":{},"version":2,"status":1} (FeatureZNode V2,
// status Enabled, as a 3.9 controller writes it). Its znode version is the finalized features' epoch
// that ApiVersions (v3+) answers; this broker finalizes no features, so it never changes.
func (b *Broker) ensureFeatureZNode() error {
	path := b.zp(featurePath)
	_, st, err := b.zk.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		data, _ := json.Marshal(map[string]any{"features": map[string]any{}, "version": 2, "status": 1})
		if _, err = b.zk.Create(path, data, 0, b.acl()); err == nil || errors.Is(err, zk.ErrNodeExists) {
			_, st, err = b.zk.Get(path)
		}
	}
	if err != nil {
		return fmt.Errorf("feature znode %s: %w", path, err)
	}
	b.featureEpoch.Store(int64(st.Version) + 1)
	return nil
}
