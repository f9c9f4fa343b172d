package assignor

import (
	"cmp"
	"slices"
	"unicode/utf16"
)

// Kafka's assignors iterate java.util.HashMap and HashSet in places where the order decides the
// result (which members keep maxQuota partitions in the constrained sticky assignment; which earlier
// owner a partition is handed back to; which moved partition a sticky move undoes). Such an
// iteration visits buckets in index order, and a bucket's entries in insertion order; the bucket is
// the key's hashCode, spread (h ^ h>>>16), masked by the table size, which starts at 16 and doubles
// whenever the size exceeds 3/4 of it. These helpers reproduce that order, so that the assignment
// is the one a Java 3.9 leader computes for the same JoinGroup response. (Bins of 8+ entries in
// tables of 64+ buckets turn into trees, which can reorder them; with Kafka's member ids that takes
// eight ids colliding in one bucket and is not reproduced.)

// javaStringHash is String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, in int arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// partitionHash is TopicPartition.hashCode.
func partitionHash(tp TopicPartition) int32 {
	return 31*(31+tp.Partition) + javaStringHash(tp.Topic)
}

// hashCapacity is the table size of a default-constructed HashMap after maxSize entries were in it.
func hashCapacity(maxSize int) int {
	c := 16
	for maxSize > c*3/4 {
		c *= 2
	}
	return c
}

// hashBucket is HashMap's bucket index of a key with hash h in a table of capacity c.
func hashBucket(h int32, c int) int {
	u := uint32(h)
	return int((u ^ u>>16) & uint32(c-1))
}

// javaHashOrder returns ids, given in insertion order, in the order a HashMap<String, ?> built by
// inserting them iterates its keys.
func javaHashOrder(ids []string) []string {
	c := hashCapacity(len(ids))
	type keyed struct {
		bucket int
		id     string
	}
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		ks[i] = keyed{hashBucket(javaStringHash(id), c), id} // each id hashed once
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.bucket, b.bucket) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out
}

// partitionHashSet is a HashSet<TopicPartition> that knows which element its iterator returns first.
type partitionHashSet struct {
	seq     map[TopicPartition]int // insertion sequence of the current elements
	next    int
	maxSize int // the table only grows
}

func newPartitionHashSet() *partitionHashSet {
	return &partitionHashSet{seq: map[TopicPartition]int{}}
}

func (s *partitionHashSet) add(tp TopicPartition) {
	if _, ok := s.seq[tp]; ok {
		return
	}
	s.seq[tp] = s.next
	s.next++
	if len(s.seq) > s.maxSize {
		s.maxSize = len(s.seq)
	}
}

func (s *partitionHashSet) remove(tp TopicPartition) { delete(s.seq, tp) }
func (s *partitionHashSet) len() int                 { return len(s.seq) }

// first is what iterator().next() returns: lowest bucket, earliest inserted within it.
func (s *partitionHashSet) first() TopicPartition {
	c := hashCapacity(s.maxSize)
	var best TopicPartition
	bestBucket, bestSeq := -1, 0
	for tp, seq := range s.seq {
		b := hashBucket(partitionHash(tp), c)
		if bestBucket < 0 || b < bestBucket || (b == bestBucket && seq < bestSeq) {
			best, bestBucket, bestSeq = tp, b, seq
		}
	}
	return best
}
