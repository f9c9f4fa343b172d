package conformance

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/internal/wire"
	"github.com/rebalancelab/rebalancelab/lab"
)

// The names of the two brokers in differences and answers.
const (
	nameOurs  = "rebalancelab"
	nameKafka = "kafka"
)

// ---- scripts ----

// kcase is one scripted request sequence, run on each broker with a fresh state and connections.
type kcase struct {
	name  string
	steps []step
	// addr, when set, is the broker every connection of the case dials (default: the lab's bootstrap).
	addr func(l *lab.Lab) string
}

// step is one request. Its request is built per broker from that broker's earlier answers (st). An
// async step is written without waiting; its answer is recorded at the step whose await names it.
type step struct {
	name  string
	conn  string // connection name; "" = "main"
	async bool
	await string // this step only records the answer of the async step so named (req nil)
	req   func(st *state) kmsg.Request
	after func(st *state, resp kmsg.Response) // remembers ids for later steps
	// view, when set, is what is compared of the response (normalised as the response would be).
	view func(resp kmsg.Response) any
	// until, when set, makes the step a barrier: the request is sent again (every 20 ms, within the
	// case's deadline) until until holds of its answer; the last answer is recorded.
	until func(resp kmsg.Response) bool
}

// state is one broker's run of a case: what later steps need from earlier answers.
type state struct {
	member map[string]string // member name -> the member id the broker gave
	gen    map[string]int32  // member name -> generation
	pid    map[string]int64  // producer name -> the producer id InitProducerId gave
	stamp  map[string]int64  // step name -> the log append time its Produce answered (ms)
}

func (st *state) m(name string) string { return st.member[name] }

// answer is one step's normalised response (or the error that stood in for it).
type answer struct {
	step string
	body any
}

// runCase runs c on one broker and returns its normalised answers in script order.
func runCase(t *testing.T, l *lab.Lab, c kcase) []answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := &state{member: map[string]string{}, gen: map[string]int32{}, pid: map[string]int64{}, stamp: map[string]int64{}}
	addr := l.Bootstrap()
	if c.addr != nil {
		addr = c.addr(l)
	}
	conns := map[string]*wire.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	conn := func(name string) *wire.Conn {
		if name == "" {
			name = "main"
		}
		if c, ok := conns[name]; ok {
			return c
		}
		c, err := wire.Dial(ctx, nil, addr, "difftest-"+name)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", l.BrokerImpl(), name, err)
		}
		conns[name] = c
		return c
	}
	type pending struct {
		resp kmsg.Response
		err  error
		sent time.Time
		done chan struct{}
	}
	async := map[string]*pending{}
	var wg sync.WaitGroup
	defer wg.Wait()
	norm := newNormaliser()
	var out []answer
	// record normalises a step's answer; sent and received bound the broker's clock readings it may
	// carry (a LogAppendTime stamp).
	record := func(s step, resp kmsg.Response, err error, sent, received time.Time) {
		if err != nil {
			out = append(out, answer{s.name, "error: " + err.Error()})
			return
		}
		if s.after != nil {
			s.after(st, resp)
		}
		norm.window = [2]int64{sent.UnixMilli(), received.UnixMilli()}
		if s.view != nil {
			out = append(out, answer{s.name, norm.normalise(s.view(resp))})
			return
		}
		out = append(out, answer{s.name, norm.normalise(resp)})
	}
	for _, s := range c.steps {
		if s.await != "" {
			p := async[s.await]
			if p == nil {
				t.Fatalf("%s: step %s awaits unknown step %s", c.name, s.name, s.await)
			}
			select {
			case <-p.done:
			case <-ctx.Done():
				t.Fatalf("%s on %s: step %s: no answer: %v", c.name, l.BrokerImpl(), s.await, ctx.Err())
			}
			record(s, p.resp, p.err, p.sent, time.Now())
			continue
		}
		req := s.req(st)
		cn := conn(s.conn)
		if s.async {
			p := &pending{done: make(chan struct{}), sent: time.Now()}
			async[s.name] = p
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(p.done)
				p.resp, p.err = cn.Request(ctx, req)
			}()
			continue
		}
		sent := time.Now()
		resp, err := cn.Request(ctx, req)
		for s.until != nil && err == nil && !s.until(resp) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s on %s: step %s: condition never held: %v", c.name, l.BrokerImpl(), s.name, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
			sent = time.Now()
			resp, err = cn.Request(ctx, s.req(st))
		}
		record(s, resp, err, sent, time.Now())
	}
	return out
}

// ---- normalisation ----

// normaliser rewrites a response as JSON-like values with what differs by construction between two
// brokers replaced: ids by their order of first appearance in the case (so "the same member" stays
// visible), ports and throttle times by fixed values, the broker's clock readings (a LogAppendTime
// stamp, a time in an error message) by names, and Fetch's record bytes by their decoded fields. Leader
// epochs and record timestamps are compared as they are: both clusters are fresh (every partition at
// leader epoch 0) and the scripts' timestamps are fixed.
type normaliser struct {
	ids map[string]map[string]string // kind -> original -> "<kind>-N"
	// stamps names the log append times Produce answered in this case, in order of first appearance
	// ("append-time-N"), so that the same stamp read back (ListOffsets, a fetched batch's max
	// timestamp) compares as the same; window is the answer being normalised's request window (Unix
	// ms, sent and received): a stamp outside it is shown as such.
	stamps map[int64]string
	window [2]int64
	start  int64 // when the case began (Unix ms): a stamp read back is no older
}

func newNormaliser() *normaliser {
	return &normaliser{ids: map[string]map[string]string{}, stamps: map[int64]string{}, start: time.Now().UnixMilli()}
}

// appendTime names a LogAppendTime answer: -1 (CreateTime) as it is, a stamp within the request's
// window by its order of appearance, any other value as out of the window.
func (n *normaliser) appendTime(ms int64) any {
	if ms == -1 {
		return float64(-1)
	}
	return n.stamp(ms, n.window[0])
}

// stamp names a reading of the broker's clock no earlier than from (Unix ms) and no later than the
// answer carrying it: the name it already has, a new one, or, outside that window, the value and
// the window.
func (n *normaliser) stamp(ms, from int64) any {
	if name, ok := n.stamps[ms]; ok {
		return name
	}
	if ms < from || ms > n.window[1] {
		return fmt.Sprintf("%d, outside the window [%d, %d]", ms, from, n.window[1])
	}
	name := fmt.Sprintf("append-time-%d", len(n.stamps)+1)
	n.stamps[ms] = name
	return name
}

// clockInMessage is a Unix ms time of 13 digits in an error message.
var clockInMessage = regexp.MustCompile(`\b[0-9]{13}\b`)

// message is an error message with the broker's clock readings in it (INVALID_TIMESTAMP's "should
// be within [now - before, now + after]", its records' timestamps taken from the clock) replaced by
// "<clock>": a Unix ms time within a day of the case's window. Anything else in a message is
// compared.
func (n *normaliser) message(s string) string {
	const day = 24 * 60 * 60 * 1000
	return clockInMessage.ReplaceAllStringFunc(s, func(d string) string {
		if ms, err := strconv.ParseInt(d, 10, 64); err == nil && ms >= n.start-day && ms <= n.window[1]+day {
			return "<clock>"
		}
		return d
	})
}

// ts is a timestamp read back: the name of a stamp this case's Produce answered, or the value.
func (n *normaliser) ts(ms int64) any {
	if name, ok := n.stamps[ms]; ok {
		return name
	}
	return ms
}

func (n *normaliser) id(kind, v string) string {
	if v == "" {
		return ""
	}
	m := n.ids[kind]
	if m == nil {
		m = map[string]string{}
		n.ids[kind] = m
	}
	if r, ok := m[v]; ok {
		return r
	}
	r := fmt.Sprintf("%s-%d", kind, len(m)+1)
	m[v] = r
	return r
}

// Keys whose values are normalised, by the JSON field names of kmsg's response structs.
var (
	memberIDKeys = map[string]bool{"MemberID": true, "LeaderID": true}
	zeroKeys     = map[string]bool{"ThrottleMillis": true, "Port": true}
	dropKeys     = map[string]bool{"UnknownTags": true, "Version": true}
)

func (n *normaliser) normalise(resp any) any {
	b, err := json.Marshal(resp)
	if err != nil {
		return "unmarshalable: " + err.Error()
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "undecodable: " + err.Error()
	}
	return n.walk("", v)
}

func (n *normaliser) walk(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if dropKeys[k] {
				continue
			}
			out[k] = n.walk(k, e)
		}
		return out
	case []any:
		if key == "TopicID" { // a [16]byte: the topic's UUID, all zeros when none
			id := show(x)
			if strings.Trim(id, "[0,]") == "" {
				return "zero"
			}
			return n.id("topic-id", id)
		}
		for i, e := range x {
			x[i] = n.walk(key, e)
		}
		switch key {
		case "Groups": // ListGroups lists in the broker's map order
			sort.SliceStable(x, func(i, j int) bool { return show(field(x[i], "Group")) < show(field(x[j], "Group")) })
		case "Topics": // Metadata lists every topic in the broker's map order
			sort.SliceStable(x, func(i, j int) bool { return show(field(x[i], "Topic")) < show(field(x[j], "Topic")) })
		case "Partitions":
			sort.SliceStable(x, func(i, j int) bool { return show(field(x[i], "Partition")) < show(field(x[j], "Partition")) })
		case "Configs": // CreateTopics v5+ lists a new topic's configs in a Scala HashMap's order
			sort.SliceStable(x, func(i, j int) bool { return show(field(x[i], "Name")) < show(field(x[j], "Name")) })
		case "Members": // a group's members in the order of its map of (random) member ids
			sort.SliceStable(x, func(i, j int) bool { return show(field(x[i], "MemberID")) < show(field(x[j], "MemberID")) })
		}
		return x
	case string:
		switch {
		case memberIDKeys[key]:
			return n.id("member", x)
		case key == "ClusterID":
			return n.id("cluster", x)
		case key == "ErrorMessage" || key == "Message":
			return n.message(x)
		case key == "RecordBatches" || key == "Records":
			return n.decodeRecords(x)
		}
		return x
	case float64:
		switch {
		case zeroKeys[key]:
			return float64(0)
		case key == "LogAppendTime":
			return n.appendTime(int64(x))
		case key == "Timestamp":
			return n.ts(int64(x))
		}
		return x
	}
	return v
}

func field(v any, name string) any {
	if m, ok := v.(map[string]any); ok {
		return m[name]
	}
	return v
}

// decodeRecords decodes a partition's record bytes (base64 in JSON) into its batches or messages:
// magic 2 record batches (KIP-98) with their records, decompressed, magic 0/1 messages (message
// formats 0 and 1), a compressed wrapper message with its inner messages — the fields a client sees,
// timestamps included (named when they are this case's stamps), without the CRC.
func (n *normaliser) decodeRecords(b64 string) any {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "not base64"
	}
	return n.decodeSet(raw, 0)
}

// decompressor is franz-go's, a client's: gzip, snappy (raw or xerial), lz4 (frame), zstd.
var decompressor = kgo.DefaultDecompressor()

// A down-converted answer (Fetch v0–v3) ends with Kafka's overflow bytes (LazyDownConversionRecordsSend)
// when the converted messages are shorter than the stored batches they stand for. After a compressed
// wrapper that length is a difference of compressed sizes, which differ by codec implementation (the
// bytes of Java's and Go's gzip, snappy and lz4), so it is left out there: the wrapper's messages are
// compared in full. Elsewhere the partial bytes are kept and compared.
func (n *normaliser) decodeSet(raw []byte, depth int) []any {
	var out []any
	compressed := false
	for len(raw) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size < 0 || 12+size > len(raw) {
			if !compressed {
				out = append(out, map[string]any{"partial_bytes": len(raw)})
			}
			break
		}
		compressed = compressed || raw[16] < 2 && len(raw) > 17 && raw[17]&0x07 != 0
		one := raw[:12+size]
		raw = raw[12+size:]
		switch magic := one[16]; magic {
		case 2:
			var bt kmsg.RecordBatch
			if err := bt.ReadFrom(one); err != nil {
				out = append(out, "bad batch: "+err.Error())
				continue
			}
			recs := n.readRecords(bt)
			out = append(out, map[string]any{"magic": 2, "base_offset": bt.FirstOffset, "attributes": bt.Attributes,
				"partition_leader_epoch": bt.PartitionLeaderEpoch, "last_offset_delta": bt.LastOffsetDelta,
				"base_timestamp": n.ts(bt.FirstTimestamp), "max_timestamp": n.batchMaxTimestamp(bt),
				"producer_id": bt.ProducerID, "producer_epoch": bt.ProducerEpoch,
				"base_sequence": bt.FirstSequence, "num_records": bt.NumRecords, "records": recs})
		case 0, 1:
			m := map[string]any{"magic": int(magic)}
			var attrs int8
			var key, value []byte
			if magic == 0 {
				var v0 kmsg.MessageV0
				if err := v0.ReadFrom(one); err != nil {
					out = append(out, "bad message: "+err.Error())
					continue
				}
				m["offset"], attrs, key, value = v0.Offset, v0.Attributes, v0.Key, v0.Value
			} else {
				var v1 kmsg.MessageV1
				if err := v1.ReadFrom(one); err != nil {
					out = append(out, "bad message: "+err.Error())
					continue
				}
				m["offset"], attrs, key, value = v1.Offset, v1.Attributes, v1.Key, v1.Value
				m["timestamp_ms"] = n.ts(v1.Timestamp)
				if v1.Attributes&0x08 != 0 { // LogAppendTime: the broker's stamp
					m["timestamp_ms"] = n.stamp(v1.Timestamp, n.start)
				}
			}
			m["attributes"], m["key"] = attrs, string(key)
			if codec := attrs & 0x07; codec != 0 && depth == 0 {
				if codec == 3 && magic == 0 {
					value = fixLegacyLZ4Checksum(value)
				}
				inner, err := decompressor.Decompress(value, kgo.CompressionCodecType(codec))
				if err != nil {
					m["value"] = "undecompressable: " + err.Error()
				} else {
					m["value"] = nil
					m["messages"] = n.decodeSet(inner, depth+1)
				}
			} else {
				m["value"] = string(value)
			}
			out = append(out, m)
		default:
			out = append(out, fmt.Sprintf("magic %d", magic))
		}
	}
	return out
}

// batchMaxTimestamp is a fetched batch's max timestamp: in a LogAppendTime batch the broker's stamp,
// named (a Produce before v2 has no log_append_time_ms to name it first), within the case's window.
func (n *normaliser) batchMaxTimestamp(bt kmsg.RecordBatch) any {
	if bt.Attributes&0x08 != 0 {
		return n.stamp(bt.MaxTimestamp, n.start)
	}
	return n.ts(bt.MaxTimestamp)
}

// fixLegacyLZ4Checksum returns a copy of an lz4 frame of a message format 0 wrapper with its header
// checksum recomputed: Kafka writes format 0's with the checksum over the magic number as well
// (KafkaLZ4BlockOutputStream's useBrokenFlagDescriptorChecksum, KAFKA-3160), which a standard reader
// refuses. The checksum is the second byte of the xxHash32 of the frame descriptor (FLG, BD and the
// optional content size).
func fixLegacyLZ4Checksum(frame []byte) []byte {
	if len(frame) < 7 {
		return frame
	}
	desc := 2
	if frame[4]&0x08 != 0 { // content size present
		desc += 8
	}
	if len(frame) < 4+desc+1 {
		return frame
	}
	out := append([]byte(nil), frame...)
	out[4+desc] = byte(xxh32(out[4:4+desc]) >> 8)
	return out
}

// xxh32 is xxHash32 with seed 0 of fewer than 16 bytes.
func xxh32(b []byte) uint32 {
	const p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	rotl := func(x uint32, r uint) uint32 { return x<<r | x>>(32-r) }
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h = rotl(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = rotl(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

func (n *normaliser) readRecords(bt kmsg.RecordBatch) []any {
	var out []any
	raw := bt.Records
	if codec := bt.Attributes & 0x07; codec != 0 {
		var err error
		if raw, err = decompressor.Decompress(raw, kgo.CompressionCodecType(codec)); err != nil {
			return []any{fmt.Sprintf("codec %d undecompressable: %v", codec, err)}
		}
	}
	logAppendTime := bt.Attributes&0x08 != 0
	for i := int32(0); i < bt.NumRecords; i++ {
		var r kmsg.Record
		v, ok := readVarint(raw)
		total := varintLen(v) + int(v)
		if !ok || v < 0 || total > len(raw) {
			return append(out, "truncated")
		}
		if err := r.ReadFrom(raw[:total]); err != nil {
			return append(out, "bad record: "+err.Error())
		}
		raw = raw[total:]
		hs := map[string]string{}
		for _, h := range r.Headers {
			hs[h.Key] = string(h.Value)
		}
		var ts any = n.ts(bt.FirstTimestamp + r.TimestampDelta64)
		if logAppendTime {
			ts = n.batchMaxTimestamp(bt) // DefaultRecordBatch: every record at the batch's stamp
		}
		out = append(out, map[string]any{"offset_delta": r.OffsetDelta, "timestamp": ts, "key": string(r.Key), "value": string(r.Value), "headers": hs})
	}
	return out
}

func readVarint(b []byte) (int64, bool) {
	v, n := binary.Varint(b)
	return v, n > 0
}

func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}

// ---- comparison ----

// difference is one field that differs: key "case/step path" (the fidelity table matches it).
type difference struct {
	key         string
	ours, kafka string
}

func compareCase(c kcase, a, b []answer) []difference {
	var out []difference
	for i := 0; i < max(len(a), len(b)); i++ {
		switch {
		case i >= len(a):
			out = append(out, difference{c.name + "/" + b[i].step, "(none)", show(b[i].body)})
		case i >= len(b):
			out = append(out, difference{c.name + "/" + a[i].step, show(a[i].body), "(none)"})
		default:
			diffValues(c.name+"/"+a[i].step+" ", "", a[i].body, b[i].body, &out)
		}
	}
	return out
}

func diffValues(prefix, path string, a, b any, out *[]difference) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			diffValues(prefix, path+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diffValues(prefix, fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if show(a) != show(b) {
		if path == "" {
			path = "."
		}
		*out = append(*out, difference{prefix + path, show(a), show(b)})
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ---- the fidelity table of docs/reference/fidelity.md ----

// accepted is one pattern of a row of the "Differences from Kafka 3.9" table of docs/reference/fidelity.md: a pattern
// over difference keys (`*` matches any run of characters) and the row's reason.
type accepted struct {
	pattern string
	re      *regexp.Regexp
	reason  string
}

const tableHeading = "### Differences from Kafka 3.9"

var backticked = regexp.MustCompile("`([^`]+)`")

// readAccepted parses the table under tableHeading in ../docs/reference/fidelity.md: rows "| `pattern` `pattern` ... |
// reason |"; each backticked pattern of the first cell is accepted with the row's reason.
func readAccepted(t *testing.T) []*accepted {
	t.Helper()
	b, err := os.ReadFile("../docs/reference/fidelity.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, tableHeading)
	if i < 0 {
		t.Fatalf("docs/reference/fidelity.md has no %q section", tableHeading)
	}
	var out []*accepted
	inTable := false
	for _, line := range strings.Split(s[i:], "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) < 2 {
			continue
		}
		first := strings.TrimSpace(cells[0])
		if !strings.HasPrefix(first, "`") {
			continue // the header and its separator
		}
		reason := strings.TrimSpace(strings.Join(cells[1:], "|"))
		if reason == "" {
			t.Errorf("fidelity.md row %q has no reason", first)
		}
		for _, p := range backticked.FindAllStringSubmatch(first, -1) {
			re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(p[1]), `\*`, ".*") + "$")
			out = append(out, &accepted{pattern: p[1], re: re, reason: reason})
		}
	}
	if len(out) == 0 {
		t.Fatalf("docs/reference/fidelity.md's %q table has no rows", tableHeading)
	}
	return out
}

// TestFidelityTableParses reads the fidelity table without starting anything (it runs under -short):
// every pattern appears once, has a reason, and its `*` matches any run of characters and nothing
// else (the pattern with each `*` replaced by "x-y" matches, the same text with a character appended
// does not).
func TestFidelityTableParses(t *testing.T) {
	rows := readAccepted(t)
	seen := map[string]bool{}
	for _, a := range rows {
		if seen[a.pattern] {
			t.Errorf("fidelity.md lists `%s` twice", a.pattern)
		}
		seen[a.pattern] = true
		if a.reason == "" {
			t.Errorf("`%s` has no reason", a.pattern)
		}
		key := strings.ReplaceAll(a.pattern, "*", "x-y")
		if !a.re.MatchString(key) {
			t.Errorf("`%s` does not match %q", a.pattern, key)
		}
		if a.re.MatchString(key+"\x00") && !strings.HasSuffix(a.pattern, "*") {
			t.Errorf("`%s` matches %q: the pattern is not anchored", a.pattern, key+"\x00")
		}
	}
}
