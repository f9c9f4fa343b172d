package difftest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rebalancelab/rebalancelab/lab"
	"github.com/rebalancelab/rebalancelab/wire"
)

// The two brokers under test, started once for the package by TestMain: one ZooKeeper, each broker
// under its own chroot, both with the lab's settings (lab.ShortTimings, lab.LabBrokerSettings).
var (
	ours, kafka *lab.Lab
)

const (
	nameOurs  = "rebalancelab"
	nameKafka = "kafka"
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	entry := logrus.NewEntry(log)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	z, err := lab.StartZooKeeper(ctx, lab.ZKOptions{Log: entry})
	if err != nil {
		fmt.Fprintln(os.Stderr, "difftest: ZooKeeper:", err)
		return 1
	}
	defer z.Close()
	if ours, err = lab.Start(ctx, lab.Options{ExternalZK: z.Connect() + "/rebalancelab", Log: entry}); err != nil {
		fmt.Fprintln(os.Stderr, "difftest: our broker:", err)
		return 1
	}
	defer ours.Close()
	// A missing Kafka classpath fails here with the error naming `make deps`: never a skip.
	if kafka, err = lab.Start(ctx, lab.Options{ExternalZK: z.Connect() + "/kafka", Broker: lab.BrokerKafka, Log: entry}); err != nil {
		fmt.Fprintln(os.Stderr, "difftest: Kafka broker:", err)
		return 1
	}
	defer kafka.Close()
	return m.Run()
}

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
	st := &state{member: map[string]string{}, gen: map[string]int32{}, pid: map[string]int64{}}
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
		done chan struct{}
	}
	async := map[string]*pending{}
	var wg sync.WaitGroup
	defer wg.Wait()
	norm := newNormaliser()
	var out []answer
	record := func(s step, resp kmsg.Response, err error) {
		if err != nil {
			out = append(out, answer{s.name, "error: " + err.Error()})
			return
		}
		if s.after != nil {
			s.after(st, resp)
		}
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
			record(s, p.resp, p.err)
			continue
		}
		req := s.req(st)
		cn := conn(s.conn)
		if s.async {
			p := &pending{done: make(chan struct{})}
			async[s.name] = p
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(p.done)
				p.resp, p.err = cn.Request(ctx, req)
			}()
			continue
		}
		resp, err := cn.Request(ctx, req)
		for s.until != nil && err == nil && !s.until(resp) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s on %s: step %s: condition never held: %v", c.name, l.BrokerImpl(), s.name, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
			resp, err = cn.Request(ctx, s.req(st))
		}
		record(s, resp, err)
	}
	return out
}

// ---- normalisation ----

// normaliser rewrites a response as JSON-like values with what differs by construction between two
// brokers replaced: ids by their order of first appearance in the case (so "the same member" stays
// visible), ports, throttle times, error message strings, timestamps and leader epochs by fixed
// values, Fetch's record bytes by their decoded fields.
type normaliser struct {
	ids map[string]map[string]string // kind -> original -> "<kind>-N"
}

func newNormaliser() *normaliser { return &normaliser{ids: map[string]map[string]string{}} }

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
	zeroKeys     = map[string]bool{"ThrottleMillis": true, "Port": true, "LeaderEpoch": true,
		"CurrentLeaderEpoch": true, "Timestamp": true, "LogAppendTime": true, "FirstTimestamp": true,
		"MaxTimestamp": true, "PartitionLeaderEpoch": true, "CRC": true}
	dropKeys = map[string]bool{"UnknownTags": true, "Version": true}
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
			return "<message>"
		case key == "RecordBatches" || key == "Records":
			return decodeRecords(x)
		}
		return x
	case float64:
		if zeroKeys[key] {
			return float64(0)
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
// magic 2 record batches (KIP-98) with their records, magic 0/1 messages (message formats 0 and 1)
// — the fields a client sees, without the CRC, the partition leader epoch and the timestamps.
func decodeRecords(b64 string) any {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "not base64"
	}
	var out []any
	for len(raw) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size < 0 || 12+size > len(raw) {
			out = append(out, map[string]any{"partial_bytes": len(raw)})
			break
		}
		one := raw[:12+size]
		raw = raw[12+size:]
		switch magic := one[16]; magic {
		case 2:
			var bt kmsg.RecordBatch
			if err := bt.ReadFrom(one); err != nil {
				out = append(out, "bad batch: "+err.Error())
				continue
			}
			recs := readRecords(bt)
			out = append(out, map[string]any{"magic": 2, "base_offset": bt.FirstOffset, "attributes": bt.Attributes,
				"last_offset_delta": bt.LastOffsetDelta, "producer_id": bt.ProducerID, "producer_epoch": bt.ProducerEpoch,
				"base_sequence": bt.FirstSequence, "num_records": bt.NumRecords, "records": recs})
		case 0:
			var m kmsg.MessageV0
			if err := m.ReadFrom(one); err != nil {
				out = append(out, "bad message: "+err.Error())
				continue
			}
			out = append(out, map[string]any{"magic": 0, "offset": m.Offset, "attributes": m.Attributes,
				"key": string(m.Key), "value": string(m.Value)})
		case 1:
			var m kmsg.MessageV1
			if err := m.ReadFrom(one); err != nil {
				out = append(out, "bad message: "+err.Error())
				continue
			}
			out = append(out, map[string]any{"magic": 1, "offset": m.Offset, "attributes": m.Attributes,
				"timestamp_ms": m.Timestamp, "key": string(m.Key), "value": string(m.Value)})
		default:
			out = append(out, fmt.Sprintf("magic %d", magic))
		}
	}
	return out
}

func readRecords(bt kmsg.RecordBatch) []any {
	if bt.Attributes&0x07 != 0 { // compressed: the test produces uncompressed batches only
		return []any{fmt.Sprintf("compressed (codec %d)", bt.Attributes&0x07)}
	}
	var out []any
	raw := bt.Records
	for i := int32(0); i < bt.NumRecords; i++ {
		var r kmsg.Record
		n, ok := readVarint(raw)
		total := varintLen(n) + int(n)
		if !ok || n < 0 || total > len(raw) {
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
		out = append(out, map[string]any{"offset_delta": r.OffsetDelta, "key": string(r.Key), "value": string(r.Value), "headers": hs})
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

// difference is one field that differs: key "case/step path" (the README's table matches it).
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
		for _, k := range sortedKeys(keys) {
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

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- the README's fidelity table ----

// accepted is one pattern of a row of the README's "Differences from Kafka 3.9" table: a pattern
// over difference keys (`*` matches any run of characters) and the row's reason.
type accepted struct {
	pattern string
	re      *regexp.Regexp
	reason  string
}

const tableHeading = "### Differences from Kafka 3.9"

var backticked = regexp.MustCompile("`([^`]+)`")

// readAccepted parses the table under tableHeading in ../README.md: rows "| `pattern` `pattern` ... |
// reason |"; each backticked pattern of the first cell is accepted with the row's reason.
func readAccepted(t *testing.T) []*accepted {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, tableHeading)
	if i < 0 {
		t.Fatalf("README.md has no %q section", tableHeading)
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
			t.Errorf("README fidelity row %q has no reason", first)
		}
		for _, p := range backticked.FindAllStringSubmatch(first, -1) {
			re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(p[1]), `\*`, ".*") + "$")
			out = append(out, &accepted{pattern: p[1], re: re, reason: reason})
		}
	}
	if len(out) == 0 {
		t.Fatalf("README.md's %q table has no rows", tableHeading)
	}
	return out
}
