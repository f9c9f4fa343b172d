package assignor

import "sort"

// generalBuilder is AbstractStickyAssignor.GeneralAssignmentBuilder (rack-unaware), used when the
// members subscribe to different topics:
//  1. keep every valid owned partition whose topic the owner still subscribes to;
//  2. give each unassigned partition to the least loaded member subscribed to its topic;
//  3. move partitions from members with more to members with fewer, preferring to send a partition
//     back to its previous owner and undoing earlier moves of the same topic between the same pair
//     (PartitionMovements), until balanced; keep the result only if it is more balanced.
//
// Order-dependent steps follow Java's HashMap/HashSet order (javahash.go).
type generalBuilder struct {
	g              *group
	topicConsumers map[string][]string         // topic2AllPotentialConsumers (members in sorted order)
	maxSize        map[string]int              // partitions a member could get at most (getMaxAssignmentSize)
	current        map[string][]TopicPartition // currentAssignment
	partConsumer   map[TopicPartition]string   // currentPartitionConsumer
	sortedAll      []TopicPartition            // sortedAllPartitions
	sorted         *memberSet                  // sortedCurrentSubscriptions
	prev           map[TopicPartition]prevOwner
	moves          *partitionMovements
	revocation     bool // revocationRequired
}

type prevOwner struct {
	member     string
	generation int32
}

func newGeneralBuilder(g *group, o ownership, data map[string]memberData) *generalBuilder {
	b := &generalBuilder{
		g:              g,
		topicConsumers: map[string][]string{},
		maxSize:        map[string]int{},
		current:        map[string][]TopicPartition{},
		partConsumer:   map[TopicPartition]string{},
		prev:           map[TopicPartition]prevOwner{},
		moves:          newPartitionMovements(),
	}
	for t := range g.partitions {
		b.topicConsumers[t] = nil
	}
	for _, m := range g.members {
		for t := range g.topics[m.MemberID] {
			if n, ok := g.partitions[t]; ok {
				b.topicConsumers[t] = append(b.topicConsumers[t], m.MemberID)
				b.maxSize[m.MemberID] += int(n)
			}
		}
		b.current[m.MemberID] = append([]TopicPartition(nil), o.owned[m.MemberID]...)
		for _, tp := range b.current[m.MemberID] {
			b.partConsumer[tp] = m.MemberID
		}
	}
	for t := range b.topicConsumers {
		sort.Slice(b.topicConsumers[t], func(i, j int) bool {
			return CompareStrings(b.topicConsumers[t][i], b.topicConsumers[t][j]) < 0
		})
	}
	// sortedAllTopics: fewest potential consumers first, then by name (TopicComparator).
	topics := g.sortedTopics()
	sort.SliceStable(topics, func(i, j int) bool {
		return len(b.topicConsumers[topics[i]]) < len(b.topicConsumers[topics[j]])
	})
	for _, t := range topics {
		for p := int32(0); p < g.partitions[t]; p++ {
			b.sortedAll = append(b.sortedAll, TopicPartition{t, p})
		}
	}
	b.sorted = &memberSet{size: func(m string) int { return len(b.current[m]) }}

	// prepopulateCurrentAssignments: the latest claim below the highest generation of each partition,
	// the owner the balancing prefers to give it back to.
	for _, m := range g.members {
		md := data[m.MemberID]
		if md.generation >= o.maxGen {
			continue
		}
		for _, tp := range md.partitions {
			if p, ok := b.prev[tp]; !ok || md.generation > p.generation {
				b.prev[tp] = prevOwner{m.MemberID, md.generation}
			}
		}
	}
	return b
}

func (b *generalBuilder) subscribes(member, topic string) bool { return b.g.topics[member][topic] }

func (b *generalBuilder) build() map[string][]TopicPartition {
	// assignOwnedPartitions: drop partitions of topics the owner no longer subscribes to.
	assigned := map[TopicPartition]bool{}
	for _, m := range b.g.members {
		id := m.MemberID
		kept := b.current[id][:0]
		for _, tp := range b.current[id] {
			if !b.subscribes(id, tp.Topic) {
				b.revocation = true
				continue
			}
			kept = append(kept, tp)
			assigned[tp] = true
		}
		b.current[id] = kept
	}
	var unassigned []TopicPartition
	for _, tp := range b.sortedAll {
		if !assigned[tp] {
			unassigned = append(unassigned, tp)
		}
	}
	for _, m := range b.g.members {
		b.sorted.add(m.MemberID)
	}
	b.balance(unassigned)
	return b.current
}

func (b *generalBuilder) balance(unassigned []TopicPartition) {
	initializing := len(b.current[b.sorted.last()]) == 0

	// maybeAssign: each unassigned partition to the least loaded member subscribed to its topic.
	for _, tp := range unassigned {
		for _, m := range b.sorted.members {
			if b.subscribes(m, tp.Topic) {
				b.sorted.remove(m)
				b.current[m] = append(b.current[m], tp)
				b.partConsumer[tp] = m
				b.sorted.add(m)
				break
			}
		}
	}

	// Only topics with two or more potential consumers, and members that can still change, take part.
	fixedTopic := func(t string) bool { return len(b.topicConsumers[t]) < 2 }
	reassignable := filterPartitions(b.sortedAll, fixedTopic)
	unassigned = filterPartitions(unassigned, fixedTopic)
	fixed := map[string][]TopicPartition{}
	for _, m := range b.g.members {
		id := m.MemberID
		if b.canParticipate(id) {
			continue
		}
		b.sorted.remove(id)
		fixed[id] = b.current[id]
		delete(b.current, id)
	}

	preBalance := copyAssignment(b.current)
	prePartConsumer := make(map[TopicPartition]string, len(b.partConsumer))
	for tp, m := range b.partConsumer {
		prePartConsumer[tp] = m
	}

	// First try to balance by moving only the newly assigned partitions; as in Java only the second
	// pass decides whether the result is compared with the pre-balance assignment.
	if !b.revocation {
		b.performReassignments(unassigned)
	}
	performed := b.performReassignments(reassignable)
	if !initializing && performed && balanceScore(b.current) >= balanceScore(preBalance) {
		b.current = preBalance
		b.partConsumer = prePartConsumer
	}
	for id, ps := range fixed { // b.sorted is not used after this point
		b.current[id] = ps
	}
}

func filterPartitions(ps []TopicPartition, drop func(topic string) bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(ps))
	for _, tp := range ps {
		if !drop(tp.Topic) {
			out = append(out, tp)
		}
	}
	return out
}

// canParticipate is canConsumerParticipateInReassignment.
func (b *generalBuilder) canParticipate(member string) bool {
	ps := b.current[member]
	if len(ps) < b.maxSize[member] {
		return true
	}
	for _, tp := range ps {
		if len(b.topicConsumers[tp.Topic]) >= 2 {
			return true
		}
	}
	return false
}

// isBalanced: sizes differ by at most one, or no member could take a partition from one holding
// two or more than it does.
func (b *generalBuilder) isBalanced() bool {
	if len(b.sorted.members) == 0 {
		return true
	}
	if min, max := len(b.current[b.sorted.first()]), len(b.current[b.sorted.last()]); min >= max-1 {
		return true
	}
	for _, m := range b.sorted.members {
		count := len(b.current[m])
		if count == b.maxSize[m] {
			continue
		}
		for t := range b.g.topics[m] {
			for p := int32(0); p < b.g.partitions[t]; p++ {
				other, ok := b.partConsumer[TopicPartition{t, p}]
				if !ok || other == m {
					continue
				}
				if os, ok := b.current[other]; ok && count+1 < len(os) {
					return false
				}
			}
		}
	}
	return true
}

// performReassignments moves partitions until balanced or nothing moves; reports whether any moved.
func (b *generalBuilder) performReassignments(partitions []TopicPartition) bool {
	performed := false
	for modified := true; modified; {
		modified = false
		for _, tp := range partitions {
			if b.isBalanced() {
				break
			}
			consumer, ok := b.partConsumer[tp]
			if !ok {
				continue // Java logs "Expected partition to be assigned"
			}
			// Back to the previous owner if it holds two or more fewer. Java does not check that the
			// previous owner still subscribes to the topic or still takes part; a partition must not
			// go to a member not subscribed to it, so both are required here.
			if p, ok := b.prev[tp]; ok && b.subscribes(p.member, tp.Topic) {
				if ps, ok := b.current[p.member]; ok && len(b.current[consumer]) > len(ps)+1 {
					b.reassign(tp, p.member)
					performed, modified = true, true
					continue
				}
			}
			for _, other := range b.topicConsumers[tp.Topic] {
				if os, ok := b.current[other]; ok && len(b.current[consumer]) > len(os)+1 {
					b.reassign(tp, b.leastLoadedFor(tp.Topic))
					performed, modified = true, true
					break
				}
			}
		}
	}
	return performed
}

// leastLoadedFor is the first member, in (size, id) order, subscribed to topic (reassignPartition).
func (b *generalBuilder) leastLoadedFor(topic string) string {
	for _, m := range b.sorted.members {
		if b.subscribes(m, topic) {
			return m
		}
	}
	return "" // unreachable: the current consumer itself subscribes
}

// reassign moves tp, or the partition that undoes an earlier move of its topic between the same
// pair, to newConsumer (reassignPartition, processPartitionMovement).
func (b *generalBuilder) reassign(tp TopicPartition, newConsumer string) {
	if newConsumer == "" {
		return
	}
	tp = b.moves.actualPartitionToBeMoved(tp, b.partConsumer[tp], newConsumer)
	old := b.partConsumer[tp]
	b.sorted.remove(old)
	b.sorted.remove(newConsumer)
	b.moves.move(tp, old, newConsumer)
	b.current[old] = removePartition(b.current[old], tp)
	b.current[newConsumer] = append(b.current[newConsumer], tp)
	b.partConsumer[tp] = newConsumer
	b.sorted.add(newConsumer)
	b.sorted.add(old)
}

func removePartition(ps []TopicPartition, tp TopicPartition) []TopicPartition {
	for i := range ps {
		if ps[i] == tp {
			return append(ps[:i], ps[i+1:]...)
		}
	}
	return ps
}

func copyAssignment(a map[string][]TopicPartition) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(a))
	for m, ps := range a {
		out[m] = append([]TopicPartition(nil), ps...)
	}
	return out
}

// balanceScore is getBalanceScore: Σ over member pairs of |size difference|, computed over sorted sizes.
func balanceScore(a map[string][]TopicPartition) int {
	sizes := make([]int, 0, len(a))
	for _, ps := range a {
		sizes = append(sizes, len(ps))
	}
	sort.Ints(sizes)
	score := 0
	for i, s := range sizes {
		score += s * (2*i - len(sizes) + 1)
	}
	return score
}

// memberSet is the TreeSet ordered by (assignment size, member id); a member must be removed before
// its size changes and added back after.
type memberSet struct {
	members []string
	size    func(string) int
}

func (s *memberSet) less(a, b string) bool {
	if sa, sb := s.size(a), s.size(b); sa != sb {
		return sa < sb
	}
	return CompareStrings(a, b) < 0
}

func (s *memberSet) search(m string) int {
	return sort.Search(len(s.members), func(i int) bool { return !s.less(s.members[i], m) })
}

func (s *memberSet) add(m string) {
	i := s.search(m)
	if i < len(s.members) && s.members[i] == m {
		return
	}
	s.members = append(s.members, "")
	copy(s.members[i+1:], s.members[i:])
	s.members[i] = m
}

func (s *memberSet) remove(m string) {
	if i := s.search(m); i < len(s.members) && s.members[i] == m {
		s.members = append(s.members[:i], s.members[i+1:]...)
	}
}

func (s *memberSet) first() string { return s.members[0] }
func (s *memberSet) last() string  { return s.members[len(s.members)-1] }

// partitionMovements is AbstractStickyAssignor.PartitionMovements: where each moved partition
// came from, so that a later move between the same two members undoes an earlier one instead of
// adding a second (stickiness).
type partitionMovements struct {
	byTopic map[string]map[memberPair]*partitionHashSet
	moved   map[TopicPartition]memberPair
}

type memberPair struct{ src, dst string }

func newPartitionMovements() *partitionMovements {
	return &partitionMovements{byTopic: map[string]map[memberPair]*partitionHashSet{}, moved: map[TopicPartition]memberPair{}}
}

func (pm *partitionMovements) removeRecord(tp TopicPartition) memberPair {
	pair := pm.moved[tp]
	delete(pm.moved, tp)
	byPair := pm.byTopic[tp.Topic]
	byPair[pair].remove(tp)
	if byPair[pair].len() == 0 {
		delete(byPair, pair)
	}
	if len(byPair) == 0 {
		delete(pm.byTopic, tp.Topic)
	}
	return pair
}

func (pm *partitionMovements) addRecord(tp TopicPartition, pair memberPair) {
	pm.moved[tp] = pair
	byPair := pm.byTopic[tp.Topic]
	if byPair == nil {
		byPair = map[memberPair]*partitionHashSet{}
		pm.byTopic[tp.Topic] = byPair
	}
	if byPair[pair] == nil {
		byPair[pair] = newPartitionHashSet()
	}
	byPair[pair].add(tp)
}

func (pm *partitionMovements) move(tp TopicPartition, oldConsumer, newConsumer string) {
	if _, ok := pm.moved[tp]; ok {
		existing := pm.removeRecord(tp)
		if existing.src != newConsumer { // not moving back where it came from
			pm.addRecord(tp, memberPair{existing.src, newConsumer})
		}
		return
	}
	pm.addRecord(tp, memberPair{oldConsumer, newConsumer})
}

func (pm *partitionMovements) actualPartitionToBeMoved(tp TopicPartition, oldConsumer, newConsumer string) TopicPartition {
	byPair, ok := pm.byTopic[tp.Topic]
	if !ok {
		return tp
	}
	if pair, ok := pm.moved[tp]; ok {
		oldConsumer = pair.src
	}
	set, ok := byPair[memberPair{newConsumer, oldConsumer}]
	if !ok {
		return tp
	}
	return set.first() // Java: iterator().next()
}
