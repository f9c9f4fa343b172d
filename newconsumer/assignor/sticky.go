package assignor

import (
	"container/list"
	"sort"
)

// Sticky is Kafka's StickyAssignor (3.9, clients/.../consumer/StickyAssignor.java): a balanced
// assignment that keeps as many partitions as possible where they were. It is eager: members revoke
// everything before joining, so each one's previous assignment and its generation travel in the
// subscription's user data (StickyMemberMetadata, KIP-54, KIP-341).
type Sticky struct{}

func (Sticky) Name() string                            { return StickyName }
func (Sticky) SupportedProtocols() []RebalanceProtocol { return []RebalanceProtocol{Eager} }

// UserData is StickyAssignor.subscriptionUserData: nil before the first assignment, else the
// previous assignment and its generation.
func (Sticky) UserData(prev *Previous) []byte {
	if prev == nil {
		return nil
	}
	return EncodeStickyUserData(prev.Partitions, prev.Generation)
}

// Assign implements Assignor (AbstractStickyAssignor.assignPartitions).
func (Sticky) Assign(partitionsPerTopic map[string]int32, subscriptions []Subscription) map[string][]TopicPartition {
	a, _ := stickyAssign(partitionsPerTopic, subscriptions, stickyMemberData)
	return sortAll(a)
}

// stickyMemberData is StickyAssignor.memberData: always from the user data, since an eager member's
// owned partitions are empty when it joins. Unparseable user data counts as no previous assignment.
func stickyMemberData(s *Subscription) memberData {
	if len(s.UserData) == 0 {
		return memberData{generation: DefaultGeneration}
	}
	ps, gen, err := DecodeStickyUserData(s.UserData)
	if err != nil {
		return memberData{generation: DefaultGeneration}
	}
	return memberData{partitions: ps, generation: gen}
}

// CooperativeSticky is Kafka's CooperativeStickyAssignor (3.9, clients/.../consumer/CooperativeStickyAssignor.java,
// KIP-429): the sticky assignment computed from the owned partitions the members report, minus
// every partition that changes owner. Those are withheld this round, so that their previous owner
// revokes them first; the follow-up rebalance assigns them.
//
// Ownership claims are resolved before assigning (KAFKA-12984, case CO-COOP-STALE-OWNED): of the
// members claiming one partition, only the highest generation's claim counts; if two or more claim it
// in that generation, no one owns it and it goes to no one this round. Java applies that resolution
// when the members' subscriptions are equal, but in the general case derives the partitions to
// withhold from the raw claims, so a stale claimant could get back a partition its rightful owner
// still holds; here both cases withhold from the resolved ownership.
type CooperativeSticky struct{}

func (CooperativeSticky) Name() string { return CooperativeStickyName }
func (CooperativeSticky) SupportedProtocols() []RebalanceProtocol {
	return []RebalanceProtocol{Cooperative, Eager}
}

// UserData is CooperativeStickyAssignor.subscriptionUserData: the generation of the last assignment
// (DefaultGeneration before the first), for brokers older than subscription v2.
func (CooperativeSticky) UserData(prev *Previous) []byte {
	gen := DefaultGeneration
	if prev != nil {
		gen = prev.Generation
	}
	return EncodeCooperativeUserData(gen)
}

// Assign implements Assignor (CooperativeStickyAssignor.assignPartitions).
func (CooperativeSticky) Assign(partitionsPerTopic map[string]int32, subscriptions []Subscription) map[string][]TopicPartition {
	a, o := stickyAssign(partitionsPerTopic, subscriptions, cooperativeMemberData)
	for member, ps := range a {
		kept := ps[:0]
		for _, tp := range ps {
			if o.multi[tp] {
				continue // claimed twice in one generation: to no one this round
			}
			if owner, ok := o.owner[tp]; ok && owner != member {
				continue // transferring ownership: the owner revokes it first
			}
			kept = append(kept, tp)
		}
		a[member] = kept
	}
	return sortAll(a)
}

// cooperativeMemberData is CooperativeStickyAssignor.memberData: the owned partitions and, from
// subscription v2 on, the generation field; else the generation in the user data.
func cooperativeMemberData(s *Subscription) memberData {
	if s.Generation >= 0 {
		return memberData{partitions: s.OwnedPartitions, generation: s.Generation}
	}
	gen := DefaultGeneration
	if len(s.UserData) > 0 {
		if g, err := DecodeCooperativeUserData(s.UserData); err == nil {
			gen = g
		}
	}
	return memberData{partitions: s.OwnedPartitions, generation: gen}
}

// memberData is AbstractStickyAssignor.MemberData: a member's previous partitions and their
// generation (DefaultGeneration when absent; Java's Optional.empty behaves the same everywhere it is read).
type memberData struct {
	partitions []TopicPartition
	generation int32
}

// ownership is the outcome of resolving the members' claims (AbstractStickyAssignor.allSubscriptionsEqual).
type ownership struct {
	owned  map[string][]TopicPartition // member -> partitions it validly owns, in claim order
	owner  map[TopicPartition]string   // partition -> its valid owner
	multi  map[TopicPartition]bool     // claimed by 2+ members in the highest generation claiming it
	maxGen int32                       // highest generation reported (maxGeneration)
	equal  bool                        // every member subscribes to the same topics
}

// resolveOwnership keeps, for each existing partition, the claim of the highest generation; a tie
// in that generation leaves it unowned and marks it multi. Java resolves pairwise in HashMap order,
// which can leave a partition to a higher generation or to no one depending on the order when three
// members claim it; this is the order-free form of the same rule. A member listing a partition
// twice claims it once; a claim on a partition that does not exist is ignored.
func resolveOwnership(g *group, data map[string]memberData) ownership {
	o := ownership{
		owned:  make(map[string][]TopicPartition, len(g.members)),
		owner:  map[TopicPartition]string{},
		multi:  map[TopicPartition]bool{},
		maxGen: DefaultGeneration,
		equal:  true,
	}
	type claim struct {
		gen   int32
		count int
		by    string
	}
	claims := map[TopicPartition]*claim{}
	first := g.topics[g.members[0].MemberID]
	for _, m := range g.members {
		ts := g.topics[m.MemberID]
		if o.equal && len(ts) != len(first) {
			o.equal = false
		} else if o.equal {
			for t := range ts {
				if !first[t] {
					o.equal = false
					break
				}
			}
		}
		md := data[m.MemberID]
		if md.generation > o.maxGen {
			o.maxGen = md.generation
		}
		seen := map[TopicPartition]bool{}
		for _, tp := range md.partitions {
			if seen[tp] || tp.Partition < 0 || tp.Partition >= g.partitions[tp.Topic] {
				continue
			}
			seen[tp] = true
			c := claims[tp]
			switch {
			case c == nil:
				claims[tp] = &claim{gen: md.generation, count: 1, by: m.MemberID}
			case md.generation > c.gen:
				*c = claim{gen: md.generation, count: 1, by: m.MemberID}
			case md.generation == c.gen:
				c.count++
			}
		}
	}
	for _, m := range g.members {
		owned := []TopicPartition{}
		seen := map[TopicPartition]bool{}
		for _, tp := range data[m.MemberID].partitions {
			c := claims[tp]
			if c == nil || seen[tp] {
				continue
			}
			seen[tp] = true
			if c.count > 1 {
				o.multi[tp] = true
			} else if c.by == m.MemberID {
				owned = append(owned, tp)
				o.owner[tp] = m.MemberID
			}
		}
		o.owned[m.MemberID] = owned
	}
	return o
}

// stickyAssign is AbstractStickyAssignor.assignPartitions: the constrained algorithm when every
// member subscribes to the same topics, the general one otherwise.
func stickyAssign(partitionsPerTopic map[string]int32, subscriptions []Subscription, md func(*Subscription) memberData) (map[string][]TopicPartition, ownership) {
	g := newGroup(partitionsPerTopic, subscriptions)
	if len(g.members) == 0 {
		return g.emptyAssignment(), ownership{}
	}
	data := make(map[string]memberData, len(g.members))
	for _, m := range g.members {
		data[m.MemberID] = md(m)
	}
	o := resolveOwnership(g, data)
	if o.equal {
		return constrainedAssign(g, o), o
	}
	return newGeneralBuilder(g, o, data).build(), o
}

// constrainedAssign is AbstractStickyAssignor.ConstrainedAssignmentBuilder (rack-unaware): every
// member gets minQuota = ⌊P/N⌋ or maxQuota = ⌈P/N⌉ partitions, exactly P%N of them maxQuota.
//  1. Each member keeps its owned partitions (sorted by partition, then topic) up to its quota:
//     all if fewer than minQuota; maxQuota while fewer than P%N members hold maxQuota; else minQuota.
//  2. The unassigned partitions (topics sorted, partitions ascending) are dealt round-robin to the
//     members under minQuota (sorted), then one each to members at minQuota until P%N hold maxQuota.
func constrainedAssign(g *group, o ownership) map[string][]TopicPartition {
	total, n := g.totalPartitions(), len(g.members)
	minQuota, maxQuota := total/n, (total+n-1)/n
	expectedOverMin := total % n
	overMin := 0

	assignment := make(map[string][]TopicPartition, n)
	assigned := make(map[TopicPartition]bool, total)
	var under, atMin []string     // unfilledMembersWith{Under,Exactly}MinQuotaPartitions
	for _, m := range g.members { // HashMap order decides who keeps maxQuota
		id := m.MemberID
		owned := append([]TopicPartition(nil), o.owned[id]...)
		sort.Slice(owned, func(i, j int) bool {
			if owned[i].Partition != owned[j].Partition {
				return owned[i].Partition < owned[j].Partition
			}
			return CompareStrings(owned[i].Topic, owned[j].Topic) < 0
		})
		keep := len(owned)
		switch {
		case len(owned) < minQuota:
			under = append(under, id)
		case len(owned) >= maxQuota && overMin < expectedOverMin:
			keep = maxQuota
			overMin++
			if overMin == expectedOverMin {
				atMin = atMin[:0]
			}
		default:
			keep = minQuota
			if overMin < expectedOverMin {
				atMin = append(atMin, id)
			}
		}
		assignment[id] = append(make([]TopicPartition, 0, maxQuota), owned[:keep]...)
		for _, tp := range owned[:keep] {
			assigned[tp] = true
		}
	}
	byName := func(ids []string) *list.List {
		sort.Slice(ids, func(i, j int) bool { return CompareStrings(ids[i], ids[j]) < 0 })
		l := list.New()
		for _, id := range ids {
			l.PushBack(id)
		}
		return l
	}
	unfilledUnder, unfilledAtMin := byName(under), byName(atMin)

	var unassigned []TopicPartition
	for _, t := range g.sortedTopics() {
		for p := int32(0); p < g.partitions[t]; p++ {
			if tp := (TopicPartition{t, p}); !assigned[tp] {
				unassigned = append(unassigned, tp)
			}
		}
	}

	// assignRoundRobin.
	it := unfilledUnder.Front()
	for _, tp := range unassigned {
		var id string
		var from *list.Element // the under-list element id came from, if any
		switch {
		case it != nil:
			from = it
			id = it.Value.(string)
			it = it.Next()
		case unfilledUnder.Len() > 0:
			from = unfilledUnder.Front()
			id = from.Value.(string)
			it = from.Next()
		case unfilledAtMin.Len() > 0:
			id = unfilledAtMin.Remove(unfilledAtMin.Front()).(string)
		default:
			// Java throws IllegalStateException here ("No more unfilled consumers"); the quotas make
			// it unreachable, and an assignor must not fail: give it to the least loaded member.
			id = leastLoaded(g, assignment)
		}
		assignment[id] = append(assignment[id], tp)
		switch count := len(assignment[id]); {
		case count == minQuota && from != nil:
			unfilledUnder.Remove(from)
			unfilledAtMin.PushBack(id)
		case count == maxQuota:
			overMin++
		}
	}
	return assignment
}

func leastLoaded(g *group, a map[string][]TopicPartition) string {
	best := g.members[0].MemberID
	for _, m := range g.members[1:] {
		if len(a[m.MemberID]) < len(a[best]) {
			best = m.MemberID
		}
	}
	return best
}
