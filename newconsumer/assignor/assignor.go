// Package assignor holds the consumer group's partition assignors, pure functions from the members'
// subscriptions to an assignment, as Kafka 3.9's Java consumer computes them on the group leader
// (org.apache.kafka.clients.consumer.ConsumerPartitionAssignor and its implementations RangeAssignor,
// RoundRobinAssignor, StickyAssignor and CooperativeStickyAssignor, the last two on top of
// internals.AbstractStickyAssignor). No I/O, no clock, no logging: the client (package newconsumer)
// feeds them the JoinGroup response and sends what they return in SyncGroup.
//
// Where Java's result depends on the iteration order of a HashMap or HashSet, these assignors
// reproduce that order (javahash.go), so the assignment is the one a Java 3.9 leader computes for
// the same JoinGroup response; strings compare as Java's String.compareTo does (UTF-16 code units).
// oracle_test.go checks this against 3.9's own classes on 1,000 random inputs
// (testdata/README.md). Deliberate differences from 3.9 are documented where they occur:
// ownership claims are resolved without depending on order when three or more members claim one
// partition (resolveOwnership); the cooperative assignor withholds partitions by resolved ownership
// also when subscriptions differ (CooperativeSticky); the general sticky algorithm never hands a
// partition back to a previous owner that no longer subscribes to its topic or takes part
// (generalBuilder.performReassignments). The last two fix faults the differential test exposes in
// 3.9: partitions assigned to members not subscribed to them, partitions handed to one member
// while another still owns them, and a NullPointerException.
package assignor

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Names of the assignors, as partition.assignment.strategy and the JoinGroup protocol name spell them.
const (
	RangeName             = "range"              // RangeAssignor.RANGE_ASSIGNOR_NAME
	RoundRobinName        = "roundrobin"         // RoundRobinAssignor.ROUNDROBIN_ASSIGNOR_NAME
	StickyName            = "sticky"             // StickyAssignor.STICKY_ASSIGNOR_NAME
	CooperativeStickyName = "cooperative-sticky" // CooperativeStickyAssignor.COOPERATIVE_STICKY_ASSIGNOR_NAME
)

// DefaultGeneration is the generation of a member that has none (AbstractStickyAssignor.DEFAULT_GENERATION,
// JoinGroupRequest.UNKNOWN_GENERATION_ID).
const DefaultGeneration int32 = -1

// RebalanceProtocol is ConsumerPartitionAssignor.RebalanceProtocol: EAGER revokes every partition
// before rejoining; COOPERATIVE (KIP-429) revokes only those that move and rebalances again.
type RebalanceProtocol int8

const (
	Eager       RebalanceProtocol = 0
	Cooperative RebalanceProtocol = 1
)

func (p RebalanceProtocol) String() string {
	switch p {
	case Eager:
		return "EAGER"
	case Cooperative:
		return "COOPERATIVE"
	}
	return fmt.Sprintf("RebalanceProtocol(%d)", int8(p))
}

// TopicPartition names one partition (org.apache.kafka.common.TopicPartition).
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Subscription is one member's entry of a JoinGroup response, decoded (ConsumerPartitionAssignor.Subscription
// plus the member id the coordinator keys it by).
type Subscription struct {
	MemberID        string           // the coordinator's member id
	InstanceID      string           // group.instance.id (KIP-345); "" for a dynamic member
	Topics          []string         // subscribed topics
	UserData        []byte           // assignor-specific (sticky: StickyMemberMetadata; cooperative-sticky: generation)
	OwnedPartitions []TopicPartition // partitions the member owns while joining (v1+, KIP-429)
	Generation      int32            // generation those partitions were owned in (v2+); DefaultGeneration when none
	Rack            string           // client.rack (v3+); "" when unset
}

// Previous is what the member got from its last completed rebalance: the arguments Java's
// ConsumerPartitionAssignor.onAssignment receives, handed back to UserData when joining again.
type Previous struct {
	Partitions []TopicPartition
	Generation int32
}

// Assignor is ConsumerPartitionAssignor without its hidden state: what Java keeps from onAssignment
// the caller passes back to UserData.
type Assignor interface {
	// Name is the protocol name sent in JoinGroup (ConsumerPartitionAssignor.name()).
	Name() string
	// SupportedProtocols lists the rebalance protocols the assignor supports (supportedProtocols()).
	SupportedProtocols() []RebalanceProtocol
	// UserData is the subscription's user data (subscriptionUserData()); prev is nil before the
	// member's first assignment. nil means none.
	UserData(prev *Previous) []byte
	// Assign computes the assignment (assign(Cluster, GroupSubscription)). partitionsPerTopic maps
	// a topic to its partition count (topics missing or with no partitions are not assigned);
	// subscriptions are the members, in JoinGroup response order (a repeated member id: the last
	// entry counts). The result has
	// one entry per member, each sorted by topic then partition. It never fails.
	Assign(partitionsPerTopic map[string]int32, subscriptions []Subscription) map[string][]TopicPartition
}

// New returns the assignor called name: range, roundrobin, sticky or cooperative-sticky. An unknown
// name is an error that lists the known ones (Java: ClassNotFoundException for the class name).
func New(name string) (Assignor, error) {
	switch strings.TrimSpace(name) {
	case RangeName, "org.apache.kafka.clients.consumer.RangeAssignor":
		return Range{}, nil
	case RoundRobinName, "org.apache.kafka.clients.consumer.RoundRobinAssignor":
		return RoundRobin{}, nil
	case StickyName, "org.apache.kafka.clients.consumer.StickyAssignor":
		return Sticky{}, nil
	case CooperativeStickyName, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor":
		return CooperativeSticky{}, nil
	}
	return nil, fmt.Errorf("assignor: unknown partition.assignment.strategy %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the known assignor names.
func Names() []string {
	return []string{RangeName, RoundRobinName, StickyName, CooperativeStickyName}
}

// ProtocolFor picks the rebalance protocol of a consumer configured with assignors, as
// ConsumerCoordinator's constructor does: the highest protocol every assignor supports. No common
// protocol, or no assignor, is an error.
func ProtocolFor(assignors []Assignor) (RebalanceProtocol, error) {
	if len(assignors) == 0 {
		return Eager, fmt.Errorf("assignor: partition.assignment.strategy is empty")
	}
	common := map[RebalanceProtocol]bool{}
	for _, p := range assignors[0].SupportedProtocols() {
		common[p] = true
	}
	for _, a := range assignors[1:] {
		has := map[RebalanceProtocol]bool{}
		for _, p := range a.SupportedProtocols() {
			has[p] = true
		}
		for p := range common {
			if !has[p] {
				delete(common, p)
			}
		}
	}
	best, found := Eager, false
	for p := range common {
		if !found || p > best {
			best, found = p, true
		}
	}
	if !found {
		names := make([]string, len(assignors))
		for i, a := range assignors {
			names[i] = a.Name()
		}
		return Eager, fmt.Errorf("assignor: specified assignors %v do not have commonly supported rebalance protocol", names)
	}
	return best, nil
}

// CompareStrings orders strings as Java's String.compareTo does: by UTF-16 code unit. This differs
// from Go's byte order only between a supplementary character and one in U+E000..U+FFFF.
func CompareStrings(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b) // one is a prefix of the other: Java compares lengths, same sign
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if ra == utf8.RuneError || rb == utf8.RuneError {
		return strings.Compare(a[i:], b[i:])
	}
	ka, kb := utf16Lead(ra), utf16Lead(rb)
	if ka != kb {
		return int(ka) - int(kb)
	}
	return int(ra) - int(rb) // same high surrogate: the low surrogates order like the code points
}

// utf16Lead is the first UTF-16 code unit of r.
func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// ComparePartitions orders by topic, then partition (Utils.TopicPartitionComparator).
func ComparePartitions(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		return CompareStrings(a.Topic, b.Topic)
	}
	return int(a.Partition) - int(b.Partition)
}

// SortPartitions sorts ps by topic, then partition.
func SortPartitions(ps []TopicPartition) {
	sort.Slice(ps, func(i, j int) bool { return ComparePartitions(ps[i], ps[j]) < 0 })
}

// compareMembers orders members as AbstractPartitionAssignor.MemberInfo.compareTo: static members
// (with a group.instance.id) first, by instance id; then dynamic ones by member id.
func compareMembers(a, b *Subscription) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if c := CompareStrings(a.InstanceID, b.InstanceID); c != 0 {
			return c
		}
		// Equal instance ids cannot both be in a group; fall back to the member id to stay a total order.
		return CompareStrings(a.MemberID, b.MemberID)
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return CompareStrings(a.MemberID, b.MemberID)
}

// group is the input every assignor starts from: the members (unique ids), each one's distinct
// topics, and the partition count of every subscribed topic that has partitions
// (AbstractPartitionAssignor.assign). members are in the order Java's subscriptions HashMap
// iterates them when filled in the order given (ConsumerCoordinator.onLeaderElected fills it in
// JoinGroup response order): see javahash.go.
type group struct {
	members    []*Subscription
	topics     map[string]map[string]bool // member id -> subscribed topics
	partitions map[string]int32           // subscribed topic -> partition count (> 0)
}

func newGroup(partitionsPerTopic map[string]int32, subscriptions []Subscription) *group {
	byID := make(map[string]*Subscription, len(subscriptions))
	var order []string
	for i := range subscriptions {
		id := subscriptions[i].MemberID
		if _, ok := byID[id]; !ok {
			order = append(order, id) // a repeated id keeps its first position, as in HashMap.put
		}
		byID[id] = &subscriptions[i]
	}
	g := &group{
		members:    make([]*Subscription, 0, len(byID)),
		topics:     make(map[string]map[string]bool, len(byID)),
		partitions: map[string]int32{},
	}
	// Members with the same subscription (the common case: every member of a group subscribes alike)
	// share one topic set; the sets are read-only from here on.
	sets := map[string]map[string]bool{}
	for _, id := range javaHashOrder(order) {
		s := byID[id]
		g.members = append(g.members, s)
		key := strings.Join(s.Topics, "\x00")
		set, ok := sets[key]
		if !ok {
			set = make(map[string]bool, len(s.Topics))
			for _, t := range s.Topics {
				set[t] = true
				if n := partitionsPerTopic[t]; n > 0 {
					g.partitions[t] = n
				}
			}
			sets[key] = set
		}
		g.topics[id] = set
	}
	return g
}

// emptyAssignment has an empty list for every member.
func (g *group) emptyAssignment() map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(g.members))
	for _, m := range g.members {
		out[m.MemberID] = []TopicPartition{}
	}
	return out
}

// sortedTopics returns the assignable topics in Java string order.
func (g *group) sortedTopics() []string {
	ts := make([]string, 0, len(g.partitions))
	for t := range g.partitions {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return CompareStrings(ts[i], ts[j]) < 0 })
	return ts
}

// totalPartitions is the number of assignable partitions.
func (g *group) totalPartitions() int {
	n := 0
	for _, c := range g.partitions {
		n += int(c)
	}
	return n
}

// sortAll sorts every member's list; a member with nothing gets an empty, non-nil list.
func sortAll(a map[string][]TopicPartition) map[string][]TopicPartition {
	for m, ps := range a {
		if ps == nil {
			a[m] = []TopicPartition{}
		}
		SortPartitions(ps)
	}
	return a
}
