package broker_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// TestClusterID: the first broker creates /cluster/id as Kafka's ClusterIdZNode
// ({"version":"1","id":<22-character URL-safe base64 UUID>}), a second broker reads the same id, and
// Metadata (v2+) answers it on both; /feature is created likewise and its version is ApiVersions'
// finalized features epoch.
func TestClusterID(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper)
	z := startZK(t)
	b1 := startBroker(t, z.Connect(), 1, nil)
	b2 := startBroker(t, z.Connect(), 2, nil)
	data, _ := getZ(t, zkClient(t, z.Connect()), "/cluster/id")
	var node struct{ Version, ID string }
	if err := json.Unmarshal(data, &node); err != nil || node.Version != "1" || !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(node.ID) {
		t.Fatalf("/cluster/id = %s (%v)", data, err)
	}
	for _, b := range []*testBroker{b1, b2} {
		m := request[*kmsg.MetadataResponse](t, dial(t, b.addr()), kmsg.NewPtrMetadataRequest(), 2)
		if m.ClusterID == nil || *m.ClusterID != node.ID {
			t.Fatalf("broker at %s: Metadata v2 ClusterID = %v, want %s", b.addr(), m.ClusterID, node.ID)
		}
	}
	// /feature as a 3.9 controller writes it for no finalized features; its version is the epoch
	// ApiVersions answers.
	data, st := getZ(t, zkClient(t, z.Connect()), "/feature")
	var feature struct {
		Features        map[string]any
		Version, Status int
	}
	if err := json.Unmarshal(data, &feature); err != nil || feature.Version != 2 || feature.Status != 1 || len(feature.Features) != 0 {
		t.Fatalf("/feature = %s (%v)", data, err)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	if r := request[*kmsg.ApiVersionsResponse](t, dial(t, b1.addr()), av, 3); r.FinalizedFeaturesEpoch != int64(st.Version) || len(r.FinalizedFeatures) != 0 {
		t.Fatalf("ApiVersions v3: finalized features %v epoch %d, want none at epoch %d", r.FinalizedFeatures, r.FinalizedFeaturesEpoch, st.Version)
	}
}
