package zkconsumer

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// This file is the connector's pure core: thread ids and their order, the registration JSON, the
// range and round-robin assignors, and the claim decision. No ZooKeeper, no goroutines.

// ThreadID is Kafka's ConsumerThreadId (TopicCount.scala): consumer id plus thread index, written
// as "<consumerId>-<index>" into owner znodes and ordered by that string (Java String.compareTo).
type ThreadID struct {
	Consumer string
	Thread   int
}

func (t ThreadID) String() string { return t.Consumer + "-" + strconv.Itoa(t.Thread) }

// TopicPartition is Kafka's TopicAndPartition; String is its toString, "[topic,partition]".
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string {
	return "[" + tp.Topic + "," + strconv.Itoa(int(tp.Partition)) + "]"
}

// javaCompare is Java's String.compareTo: lexicographic over UTF-16 code units (which differs from
// Go's byte order only for characters above U+FFFF against U+E000..U+FFFF).
func javaCompare(a, b string) int {
	if isASCII(a) && isASCII(b) { // one byte = one code unit
		for i := 0; i < len(a) && i < len(b); i++ {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return len(a) - len(b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// javaHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units,
// in wrapping 32-bit arithmetic.
func javaHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// sortThreadIDs sorts as Kafka does (ConsumerThreadId.compare: by toString).
func sortThreadIDs(ids []ThreadID) {
	sort.Slice(ids, func(i, j int) bool { return javaCompare(ids[i].String(), ids[j].String()) < 0 })
}

// Subscription patterns of the registration znode (TopicCount.scala).
const (
	PatternStatic    = "static"
	PatternWhiteList = "white_list"
	PatternBlackList = "black_list"
)

// InternalTopic is the only internal topic 0.8.2 knows (kafka.common.Topic.InternalTopics).
const InternalTopic = "__consumer_offsets"

// Registration is the JSON of /consumers/<group>/ids/<consumerId> (ZookeeperConsumerConnector.
// registerConsumerInZK): {"version":1,"subscription":{"<topic or regex>":<threads>},
// "pattern":"static|white_list|black_list","timestamp":"<ms>"}.
type Registration struct {
	Version      int            `json:"version"`
	Subscription map[string]int `json:"subscription"`
	Pattern      string         `json:"pattern"`
	Timestamp    string         `json:"timestamp"`
}

// parseRegistration decodes a registration as TopicCount.constructTopicCount does: pattern and
// subscription are required; thread counts must be >= 1.
func parseRegistration(data []byte) (Registration, error) {
	var r Registration
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("consumer registration %q: %w", data, err)
	}
	if r.Pattern == "" || r.Subscription == nil {
		return r, fmt.Errorf("consumer registration %q: pattern and subscription are required", data)
	}
	for k, n := range r.Subscription {
		if n < 1 {
			return r, fmt.Errorf("consumer registration %q: %q has %d threads, want >= 1", data, k, n)
		}
	}
	return r, nil
}

// wildcard reports whether r subscribes by regex, and the regex, thread count and blacklist flag.
// As in TopicCount.constructTopicCount, a white/black list with an empty subscription is static.
func (r Registration) wildcard() (regex string, threads int, blacklist, ok bool) {
	if len(r.Subscription) == 0 || (r.Pattern != PatternWhiteList && r.Pattern != PatternBlackList) {
		return "", 0, false, false
	}
	for k, n := range r.Subscription { // Kafka takes topMap.head; a wildcard registration has one entry
		return k, n, r.Pattern == PatternBlackList, true
	}
	return "", 0, false, false
}

// threadsPerTopic is TopicCount.getConsumerThreadIdsPerTopic for consumer: per topic, thread ids
// 0..n-1. For a wildcard registration the topics are those of allTopics (the children of
// /brokers/topics) that the filter allows.
func (r Registration) threadsPerTopic(consumer string, allTopics []string, excludeInternal bool) (map[string][]ThreadID, error) {
	out := map[string][]ThreadID{}
	add := func(topic string, n int) {
		for i := 0; i < n; i++ {
			out[topic] = append(out[topic], ThreadID{consumer, i})
		}
	}
	regex, n, black, ok := r.wildcard()
	if !ok {
		for topic, n := range r.Subscription {
			add(topic, n)
		}
		return out, nil
	}
	f, err := compileFilter(regex, black)
	if err != nil {
		return nil, err
	}
	for _, t := range allTopics {
		if f.allowed(t, excludeInternal) {
			add(t, n)
		}
	}
	return out, nil
}

// TopicFilter selects topics by regex for CreateMessageStreamsByFilter: Whitelist or Blacklist.
type TopicFilter interface {
	filter() (regex string, blacklist bool)
}

// Whitelist consumes the topics whose whole name matches the regex (kafka.consumer.Whitelist).
// As in Kafka, ',' means '|', spaces and surrounding quotes are dropped.
type Whitelist string

// Blacklist consumes the topics whose name does not match the regex (kafka.consumer.Blacklist).
type Blacklist string

func (w Whitelist) filter() (string, bool) { return normalizeRegex(string(w)), false }
func (b Blacklist) filter() (string, bool) { return normalizeRegex(string(b)), true }

var leadingQuotes, trailingQuotes = regexp.MustCompile(`^["']+`), regexp.MustCompile(`["']+$`)

// normalizeRegex is TopicFilter's constructor: trim, ',' → '|', drop spaces and quotes.
func normalizeRegex(raw string) string {
	s := strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(raw), ",", "|"), " ", "")
	return trailingQuotes.ReplaceAllString(leadingQuotes.ReplaceAllString(s, ""), "")
}

type compiledFilter struct {
	re        *regexp.Regexp
	blacklist bool
}

// compileFilter compiles regex for a whole-name match (Java's String.matches). Go's RE2 syntax
// differs from java.util.regex in rare constructs (backreferences, lookaround): those are refused.
func compileFilter(regex string, blacklist bool) (compiledFilter, error) {
	re, err := regexp.Compile(`^(?:` + regex + `)$`)
	if err != nil {
		return compiledFilter{}, fmt.Errorf("%s is an invalid regex: %w", regex, err)
	}
	return compiledFilter{re, blacklist}, nil
}

// allowed is TopicFilter.isTopicAllowed.
func (f compiledFilter) allowed(topic string, excludeInternal bool) bool {
	if excludeInternal && topic == InternalTopic {
		return false
	}
	return f.re.MatchString(topic) != f.blacklist
}

// assignmentContext is Kafka's AssignmentContext (PartitionAssignor.scala) as plain data.
type assignmentContext struct {
	consumerID         string
	myTopicThreadIDs   map[string][]ThreadID // this consumer's threads per subscribed topic
	consumersForTopic  map[string][]ThreadID // every member's threads per topic, sorted (getConsumersPerTopic)
	partitionsForTopic map[string][]int32    // partitions of this consumer's topics, ascending
}

// assignment is the global decision: every assigned partition and its owner thread (0.9's
// PartitionAssignor returns it for all consumers; 0.8.2 kept only its own).
type assignment map[TopicPartition]ThreadID

// mine keeps the partitions whose owner thread belongs to consumerID: the ownership decision.
func (a assignment) mine(consumerID string) assignment {
	out := assignment{}
	for tp, t := range a {
		if t.Consumer == consumerID {
			out[tp] = t
		}
	}
	return out
}

// byTopic gives the shape of BeforeStartingFetchers: topic → partition → thread id string.
func (a assignment) byTopic() map[string]map[int32]string {
	out := map[string]map[int32]string{}
	for tp, t := range a {
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int32]string{}
		}
		out[tp.Topic][tp.Partition] = t.String()
	}
	return out
}

// sortedPartitions lists a's partitions by topic, then partition.
func (a assignment) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(a))
	for tp := range a {
		out = append(out, tp)
	}
	sortTopicPartitions(out)
	return out
}

func sortTopicPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// partitionsByTopic groups partitions as the timeline's records carry them: topic → ascending list.
func partitionsByTopic(tps []TopicPartition) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range tps {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

// assignRange is RangeAssignor.assign (0.8.2.2; global result as in 0.9): per topic this consumer
// subscribes to, the partitions in numeric order are split over the topic's threads in string
// order; the first (partitions mod threads) threads get one extra. E.g. threads C1-0, C1-1, C2-0,
// C2-1 and partitions 0..4: 0,1 → C1-0; 2 → C1-1; 3 → C2-0; 4 → C2-1.
func assignRange(ctx assignmentContext) (assignment, error) {
	out := assignment{}
	for topic, mine := range ctx.myTopicThreadIDs {
		consumers := ctx.consumersForTopic[topic]
		for _, t := range mine {
			if indexOfThread(consumers, t) < 0 { // Kafka: assert(myConsumerPosition >= 0)
				return nil, fmt.Errorf("range assignment for topic %s: own thread %s is not among the group's threads %v", topic, t, consumers)
			}
		}
		partitions := ctx.partitionsForTopic[topic]
		per, extra := len(partitions)/len(consumers), len(partitions)%len(consumers)
		for pos, t := range consumers {
			start := per*pos + min(pos, extra)
			n := per
			if pos < extra {
				n++
			}
			for _, p := range partitions[start : start+n] {
				out[TopicPartition{topic, p}] = t
			}
		}
	}
	return out, nil
}

func indexOfThread(ids []ThreadID, t ThreadID) int {
	for i, x := range ids {
		if x == t {
			return i
		}
	}
	return -1
}

// ErrRoundRobinSubscriptions is returned by the round-robin assignor when members' subscriptions
// differ (0.8.2.2's require: same topics AND same stream count per topic for every member).
var ErrRoundRobinSubscriptions = errors.New("round-robin assignment is allowed only if all consumers in the group subscribe to the same topics, AND if the stream counts across topics are identical for a given consumer instance")

// assignRoundRobin is RoundRobinAssignor.assign of 0.8.2.2 plus KAFKA-1648's guard (no topics →
// empty assignment instead of a failure): every topic must have the same thread set; the
// topic-partitions of this consumer's topics are sorted by the Java String.hashCode of their
// toString "[topic,partition]" (signed int order) and dealt in turn over the sorted thread ids.
// Kafka's sort is stable over a hash-map order; equal hash codes are ordered here by topic, then
// partition, so that every member computes the same order.
func assignRoundRobin(ctx assignmentContext) (assignment, error) {
	out := assignment{}
	if len(ctx.consumersForTopic) == 0 {
		return out, nil
	}
	topics := make([]string, 0, len(ctx.consumersForTopic))
	for t := range ctx.consumersForTopic {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	head := ctx.consumersForTopic[topics[0]]
	for _, t := range topics[1:] {
		if !sameThreadSet(head, ctx.consumersForTopic[t]) {
			return nil, fmt.Errorf("%w: topic %s has streams %v, topic %s has %v", ErrRoundRobinSubscriptions, t, ctx.consumersForTopic[t], topics[0], head)
		}
	}
	threads := append([]ThreadID(nil), head...)
	sortThreadIDs(threads)

	var tps []TopicPartition
	for topic, ps := range ctx.partitionsForTopic {
		for _, p := range ps {
			tps = append(tps, TopicPartition{topic, p})
		}
	}
	sortTopicPartitions(tps) // tie order for equal hashes
	sort.SliceStable(tps, func(i, j int) bool {
		return javaHashCode(tps[i].String()) < javaHashCode(tps[j].String())
	})
	for i, tp := range tps {
		out[tp] = threads[i%len(threads)]
	}
	return out, nil
}

func sameThreadSet(a, b []ThreadID) bool {
	set := map[ThreadID]bool{}
	for _, t := range a {
		set[t] = true
	}
	other := map[ThreadID]bool{}
	for _, t := range b {
		if !set[t] {
			return false
		}
		other[t] = true
	}
	return len(other) == len(set)
}

// claimOutcome is createEphemeralPathExpectConflict's decision for one owner znode
// (ZkUtils.scala): a created node is ours; on NodeExists the node is ours only if it names our
// thread (a create that succeeded before a connection loss); a node that vanished before we could
// read it counts as a conflict, as in Kafka.
type claimOutcome int

const (
	claimed  claimOutcome = iota // the owner znode names our thread
	conflict                     // another thread owns it (or did a moment ago)
)

// decideClaim maps the create result (nodeExists) and, when it existed, the stored data (nil when
// the node vanished before the read) to the outcome.
func decideClaim(ownThread string, created bool, stored []byte) claimOutcome {
	if created || (stored != nil && string(stored) == ownThread) {
		return claimed
	}
	return conflict
}

// decideAttempt is reflectPartitionOwnershipDecision's verdict once every claim was tried: the
// attempt succeeds only if every partition was claimed; otherwise everything this attempt claimed
// must be deleted (ZK-FAILED-ATTEMPT-RELEASES) before the backoff.
func decideAttempt(outcomes map[TopicPartition]claimOutcome) (ok bool, release []TopicPartition) {
	ok = true
	for tp, o := range outcomes {
		if o == claimed {
			release = append(release, tp)
		} else {
			ok = false
		}
	}
	if ok {
		return true, nil
	}
	sortTopicPartitions(release)
	return false, release
}
