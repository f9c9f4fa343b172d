package newconsumer

import (
	"fmt"
	"slices"
	"testing"
)

// brokerAddrs orders cluster-wide requests as NetworkClient.leastLoadedNode picks a node: the known
// brokers from the consumer's random offset, those it is connected to first, then the bootstrap
// servers from the same offset; never an address twice.
func TestBrokerAddrsFromTheConsumersOffset(t *testing.T) {
	meta := &metadata{brokers: map[int32]string{3: "b3:9092", 1: "b1:9092", 2: "b2:9092"}}
	boot := []string{"b1:9092", "seed:9092"}
	cases := []struct {
		offset    int
		connected []string
		want      []string
	}{
		{0, nil, []string{"b1:9092", "b2:9092", "b3:9092", "seed:9092"}},
		{1, nil, []string{"b2:9092", "b3:9092", "b1:9092", "seed:9092"}},
		{5, nil, []string{"b3:9092", "b1:9092", "b2:9092", "seed:9092"}},
		{1, []string{"b1:9092"}, []string{"b1:9092", "b2:9092", "b3:9092", "seed:9092"}},
		{0, []string{"b3:9092", "b2:9092"}, []string{"b2:9092", "b3:9092", "b1:9092", "seed:9092"}},
	}
	for _, tc := range cases {
		c := &Consumer{cfg: Config{BootstrapServers: boot}, meta: meta, nodeOffset: tc.offset, conns: map[string]*brokerConn{}}
		for _, a := range tc.connected {
			c.conns[a] = &brokerConn{}
		}
		if got := c.brokerAddrs(); !slices.Equal(got, tc.want) {
			t.Errorf("offset %d, connected %v: %v, want %v", tc.offset, tc.connected, got, tc.want)
		}
	}
	// Before any metadata: the bootstrap servers from the offset.
	c := &Consumer{cfg: Config{BootstrapServers: []string{"a:1", "b:1", "c:1"}}, nodeOffset: 2, conns: map[string]*brokerConn{}}
	if got, want := c.brokerAddrs(), []string{"c:1", "a:1", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("no metadata: %v, want %v", got, want)
	}
}

// 300 consumers of one group spread their first choice over 3 brokers: each broker is first for at
// least 50 of them (100 expected; fewer than 50 has a probability below 1e-8), so that the group's
// metadata connections do not all land on the lowest broker id.
func TestBrokerAddrsSpreadOverAGroup(t *testing.T) {
	meta := &metadata{brokers: map[int32]string{1: "b1:9092", 2: "b2:9092", 3: "b3:9092"}}
	first := map[string]int{}
	for i := 0; i < 300; i++ {
		cfg := DefaultConfig()
		cfg.GroupID, cfg.BootstrapServers = "g", []string{"b1:9092"}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.meta = meta
		c.mu.Unlock()
		first[c.brokerAddrs()[0]]++
		c.Kill()
	}
	for _, b := range []string{"b1:9092", "b2:9092", "b3:9092"} {
		if first[b] < 50 {
			t.Errorf("first choices %v: %s first for %d of 300, want at least 50", first, b, first[b])
		}
	}
	if len(first) != 3 {
		t.Errorf("first choices %v", fmt.Sprint(first))
	}
}
