// Package timeline is the record every member, fault injector and producer writes while a scenario
// runs: JSON lines, one file per process, merged by ts_ms (docs/design.md "Timeline"). Figures are computed
// from these records only, so a record must say exactly what happened, when, and to whom.
package timeline

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"
)

// Kind names what a record reports. The set is fixed by docs/design.md.
type Kind string

const (
	MemberStart    Kind = "member_start"
	MemberStop     Kind = "member_stop"     // How: graceful|crash
	RebalanceBegin Kind = "rebalance_begin" //
	RebalanceEnd   Kind = "rebalance_end"   // OK, Attempt
	Assigned       Kind = "assigned"        // Partitions, Generation
	Revoked        Kind = "revoked"         // Partitions
	Deliver        Kind = "deliver"         // Topic, Partition, Offset (handed to the application)
	Commit         Kind = "commit"          // Topic, Partition, Offset, Generation, Result, Error, SentMs, API
	ZKOp           Kind = "zk_op"           // Op: read|write, Path
	ZKWatch        Kind = "zk_watch"        // Path, Type
	GroupRequest   Kind = "group_request"   // API, Error
	Produce        Kind = "produce"         // Topic, Partition, Offset
	Fault          Kind = "fault"           // Action, Target, Phase
	Trigger        Kind = "trigger"         // Name
	Error          Kind = "error"           // Text
	// SessionExpired: the member's ZooKeeper session expired (zk era), so its ephemeral znodes (the ids
	// znode, its owner znodes) are gone: it is out of the group until it registers again and claims.
	SessionExpired Kind = "session_expired"
)

// Commit results.
const (
	CommitApplied  = "applied"
	CommitRejected = "rejected"
)

// Fault phases: a fault that lasts has a `fault{phase:"begin"}` record stamped when it really came into
// force and a `fault{phase:"end"}` record (same action and target) stamped when it really ended; the
// figures' fault windows are computed from these. Link faults (stall, cut, "latency <d>ms"; target
// "<member>/<link>") are stamped by the member's proxies; a stopped node (zk-stop "zookeeper/<i>",
// broker-stop "broker/<id>") begins when its stop completed and ends when its restart completed.
// A fault without a phase (crash) is an instant.
const (
	FaultBegin = "begin"
	FaultEnd   = "end"
)

// Link names one of a member's connections to the outside, each behind its own fault proxies (lab's
// per-member proxies, docs/design.md): a link fault's target is "<member>/<link>".
type Link string

// The links.
const (
	LinkZooKeeper   Link = "zookeeper"   // the member's ZooKeeper session (zkconsumer)
	LinkCoordinator Link = "coordinator" // the newconsumer's connection to its group coordinator
	LinkFetch       Link = "fetch"       // fetch/metadata/produce connections to brokers
)

// The link faults, as a fault record's Action names them (a latency fault's record says
// "latency <d>ms") and the lab's proxies report them (lab.FaultEvent).
const (
	FaultStall   = "stall"   // the link accepts bytes and delivers none, keeping its connections
	FaultCut     = "cut"     // the link's connections are closed and new ones refused
	FaultLatency = "latency" // every byte is delayed
	FaultLoss    = "loss"    // a share of the bytes is lost (a TCP proxy: retransmission delays)
)

// ZKOwnerConflict is the Result of a zk_op write record for a failed owner-znode claim (the node
// exists and names another consumer thread): the ownership_conflicts figure counts these.
const ZKOwnerConflict = "conflict"

// Record is one timeline line. Fields that do not belong to a record's Kind stay zero and are not
// written; those whose zero value is meaningful (partition 0, offset 0, generation 0, ok=false) are
// pointers, set with the helpers below.
type Record struct {
	TsMs   int64  `json:"ts_ms"`  // wall clock, Unix ms, of the host that stamped it (Host)
	Era    string `json:"era"`    // zk, classic, cooperative, static, kip848
	Member string `json:"member"` // the scenario's stable member name (m1, m2, ...), not a Kafka id
	Kind   Kind   `json:"kind"`

	How        string             `json:"how,omitempty"`
	OK         *bool              `json:"ok,omitempty"`
	Attempt    int                `json:"attempt,omitempty"` // 1-based
	Partitions map[string][]int32 `json:"partitions,omitempty"`
	Generation *int32             `json:"generation,omitempty"`
	Topic      string             `json:"topic,omitempty"`
	Partition  *int32             `json:"partition,omitempty"`
	Offset     *int64             `json:"offset,omitempty"`
	Result     string             `json:"result,omitempty"`
	Err        string             `json:"error,omitempty"`
	Op         string             `json:"op,omitempty"`
	Path       string             `json:"path,omitempty"`
	Type       string             `json:"type,omitempty"`
	API        string             `json:"api,omitempty"`
	Action     string             `json:"action,omitempty"`
	Target     string             `json:"target,omitempty"`
	Phase      string             `json:"phase,omitempty"`
	Name       string             `json:"name,omitempty"`
	Text       string             `json:"text,omitempty"`
	// SentMs (commit): when the member sent the commit's request (Unix ms; TsMs is when its answer
	// came). The figures judge a commit at the moment it was applied, which the answer can postdate by
	// a whole stall (scenarios: commitAppliedMs). 0: unknown, judged at TsMs. A commit's API is the request that
	// carried it: "OffsetCommit", or "" for a ZooKeeper write of /consumers/<g>/offsets.
	SentMs int64 `json:"sent_ms,omitempty"`

	// Kafka-side identities, for readers; figures never key on them.
	MemberID   string `json:"member_id,omitempty"`   // coordinator member id
	ConsumerID string `json:"consumer_id,omitempty"` // zk consumer id

	// Host is the test host whose clock stamped TsMs ("h2": scenario run --hosts); "" for the runner's
	// host. The run's JSON gives each host's measured clock offset (its "hosts"); ts_ms is not corrected.
	Host string `json:"host,omitempty"`
}

// Bool, I32 and I64 make the pointer fields easy to fill.
func Bool(v bool) *bool  { return &v }
func I32(v int32) *int32 { return &v }
func I64(v int64) *int64 { return &v }

// Sink receives records. Implementations must be safe for concurrent use.
type Sink interface {
	Emit(Record)
}

// Discard drops every record.
var Discard Sink = discard{}

type discard struct{}

func (discard) Emit(Record) {}

// Writer writes records as JSON lines. Safe for concurrent use; Flush before reading the file.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	bw := bufio.NewWriter(w)
	return &Writer{w: bw, enc: json.NewEncoder(bw)}
}

// Emit writes one record; encoding errors are impossible for Record, write errors surface on Flush.
func (w *Writer) Emit(r Record) {
	w.mu.Lock()
	_ = w.enc.Encode(r)
	w.mu.Unlock()
}

// Flush writes buffered records to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Flush()
}

// Recorder stamps records with the time, era and member before passing them to a Sink. A nil
// *Recorder discards, so components can take one unconditionally.
type Recorder struct {
	Sink   Sink
	Era    string
	Member string
	Now    func() time.Time // nil: time.Now
}

// Emit stamps r (TsMs when unset, Era, Member) and hands it to the sink.
func (rc *Recorder) Emit(r Record) {
	if rc == nil || rc.Sink == nil {
		return
	}
	if r.TsMs == 0 {
		r.TsMs = rc.NowMs()
	}
	r.Era, r.Member = rc.Era, rc.Member
	rc.Sink.Emit(r)
}

// NowMs is the Recorder's clock in Unix ms (Now, or time.Now; also for a nil Recorder), the time a
// record stamps: for fields such as SentMs that date something before the record.
func (rc *Recorder) NowMs() int64 {
	if rc != nil && rc.Now != nil {
		return rc.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// Collector keeps records in memory, for tests and for the runner's merge. It stores them in chunks
// of collectorChunk records, so that a timeline of millions of records grows without the copy (and the
// moment of twice its size) that one growing slice would need.
type Collector struct {
	mu     sync.Mutex
	chunks [][]Record
	n      int
	latest map[Kind]int64 // the highest TsMs of each kind so far
}

// collectorChunk is the records per chunk of a Collector (368 bytes each: about 3 MiB per chunk).
const collectorChunk = 8192

// Emit appends r.
func (c *Collector) Emit(r Record) {
	c.mu.Lock()
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == collectorChunk {
		c.chunks = append(c.chunks, make([]Record, 0, collectorChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, r)
	c.n++
	if c.latest == nil {
		c.latest = map[Kind]int64{}
	}
	if r.TsMs > c.latest[r.Kind] {
		c.latest[r.Kind] = r.TsMs
	}
	c.mu.Unlock()
}

// Latest is the highest TsMs of the records of the given kinds collected so far (0: none), without
// copying the records: a poller's cheap test of whether anything of those kinds happened lately.
func (c *Collector) Latest(kinds ...Kind) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts int64
	for _, k := range kinds {
		ts = max(ts, c.latest[k])
	}
	return ts
}

// Mark returns the number of records collected so far: a position in arrival order for Since. Tests
// take a Mark, not a wall-clock time, to name "what came after this point": timestamps have millisecond
// resolution, so a record emitted before the point can carry the same TsMs.
func (c *Collector) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Since returns a copy of the records collected after mark (a value of Mark), in arrival order.
func (c *Collector) Since(mark int) []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	mark = min(max(mark, 0), c.n)
	return c.appendFrom(make([]Record, 0, c.n-mark), mark)
}

// Records returns a copy of what was collected, in arrival order.
func (c *Collector) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appendFrom(make([]Record, 0, c.n), 0)
}

// Sorted returns a copy of what was collected, merged by TsMs (stable: records of the same millisecond
// keep their arrival order, so one goroutine's records keep theirs), with room for spare more records
// (a reader's probe). The records are read outside the lock: a chunk's records never change once
// appended.
func (c *Collector) Sorted(spare int) []Record {
	c.mu.Lock()
	chunks, n := slices.Clone(c.chunks), c.n
	c.mu.Unlock()
	return sortChunks(chunks, n, spare)
}

// TakeSorted is Sorted(0) as a last read: the Collector gives its records up and starts empty (Mark
// 0), so that they are not held twice (the runner's, at an era's end, once every member has stopped).
func (c *Collector) TakeSorted() []Record {
	c.mu.Lock()
	chunks, n := c.chunks, c.n
	c.chunks, c.n, c.latest = nil, 0, nil
	c.mu.Unlock()
	return sortChunks(chunks, n, 0)
}

// sortChunks is SortedCopy of the first n records of chunks.
func sortChunks(chunks [][]Record, n, spare int) []Record {
	at := func(i int) *Record { return &chunks[i/collectorChunk][i%collectorChunk] }
	return SortedCopy(n, at, func(i int) int64 { return at(i).TsMs }, spare)
}

// SortedCopy returns a copy of the n records at(0..n-1), each stamped TsMs = ts(i) and ordered by it
// (stable: by i within a millisecond), with room for spare more. It sorts 16-byte keys and then copies
// each record once, rather than moving 368-byte records about: millions sort in a fraction of a second.
func SortedCopy(n int, at func(i int) *Record, ts func(i int) int64, spare int) []Record {
	keys := sortedKeys(n, ts)
	out := make([]Record, n, n+spare)
	for k, key := range keys {
		out[k] = *at(key.i)
		out[k].TsMs = key.ts
	}
	return out
}

// SortInPlace is SortedCopy of recs without the copy: recs itself is stamped and reordered (the keys
// sorted, then the permutation applied along its cycles), for a caller whose records are its own.
func SortInPlace(recs []Record, ts func(i int) int64) {
	keys := sortedKeys(len(recs), ts)
	for _, key := range keys {
		recs[key.i].TsMs = key.ts
	}
	placed := make([]bool, len(recs))
	for k := range keys {
		if placed[k] {
			continue
		}
		// the cycle through k: position j takes the record at keys[j].i, until that is k's own
		held := recs[k]
		for j := k; ; {
			placed[j] = true
			src := keys[j].i
			if src == k {
				recs[j] = held
				break
			}
			recs[j] = recs[src]
			j = src
		}
	}
}

// timeKey is one record's place in a merge by time: its ts_ms, then its index.
type timeKey struct {
	ts int64
	i  int
}

// sortedKeys are the keys of n records by ts(i), stable by i.
func sortedKeys(n int, ts func(i int) int64) []timeKey {
	keys := make([]timeKey, n)
	for i := range keys {
		keys[i] = timeKey{ts(i), i}
	}
	byTime := func(a, b timeKey) int {
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		return cmp.Compare(a.i, b.i)
	}
	if !slices.IsSortedFunc(keys, byTime) {
		slices.SortFunc(keys, byTime)
	}
	return keys
}

// appendFrom appends the records from position mark on to dst; c.mu held.
func (c *Collector) appendFrom(dst []Record, mark int) []Record {
	for i, ch := range c.chunks {
		lo := i * collectorChunk
		if hi := lo + len(ch); hi <= mark {
			continue
		}
		dst = append(dst, ch[max(mark-lo, 0):]...)
	}
	return dst
}

// Read decodes JSON-lines records from r.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	dec := json.NewDecoder(r)
	for {
		var rec Record
		if err := dec.Decode(&rec); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
