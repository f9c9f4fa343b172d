package scenarios

// Durability (issue #15): what a producer's acks setting keeps when a partition's leader dies. A
// scenario with a DurabilitySpec has the runner write, beside the group's own producer, a side topic
// (<era topic>.durability, replication factor min(3, brokers), the spec's topic configs) with one
// producer per ProducerSpec, each record keyed by its producer and valued by its sequence number.
// When the script has ended the producers flush, and the runner reads the side topic back from its
// start to its high watermark: an acknowledged record that is not there is lost. Records are matched
// by value, not offset, since a new leader reuses the offsets of the records its predecessor
// acknowledged and it never had (acks=1), and the old leader truncates them when it returns.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
)

// sideBufferSeconds is how many seconds of records a side producer buffers.
const sideBufferSeconds = 30

// durabilityTopic is the side topic's name for an era's topic.
func durabilityTopic(topic string) string { return topic + ".durability" }

// sideTopic is the side topic of one era: its producers while they run, then what they acknowledged.
type sideTopic struct {
	r     *eraRunner
	topic string
	spec  *catalog.DurabilitySpec
	wg    sync.WaitGroup

	mu     sync.Mutex
	acked  map[string]map[int64]ack // producer → seq → ack
	failed map[string]int64
	errs   map[string]string // producer → its first record's error
	downAt int64             // Unix ms of the first broker taken down; 0 until then
	downLd map[int32]bool    // side-topic partitions the brokers taken down led then
}

type ack struct {
	partition int32
	atMs      int64
}

// startDurability creates the era's side topic and starts its producers. They send until stop ends,
// then flush their records in flight for up to 30 s, or until ctx (the era's) ends; check waits for them.
func (r *eraRunner) startDurability(ctx, stop context.Context) (*sideTopic, error) {
	s := &sideTopic{r: r, topic: durabilityTopic(r.e.Topic), spec: r.sc.Durability,
		acked: map[string]map[int64]ack{}, failed: map[string]int64{}, errs: map[string]string{}, downLd: map[int32]bool{}}
	if err := r.createNamedTopic(ctx, s.topic, s.spec.TopicConfigs); err != nil {
		return nil, err
	}
	clients := make([]*kgo.Client, 0, len(s.spec.Producers))
	closeAll := func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
	for _, p := range s.spec.Producers {
		opts, err := producerClientOpts(p)
		if err != nil {
			closeAll()
			return nil, err
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...),
			kgo.MaxBufferedRecords(max(10000, s.spec.RecordsPerSec*sideBufferSeconds)),
			kgo.DefaultProduceTopic(s.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression()))...)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("durability producer %s: %w", p.Name, err)
		}
		clients = append(clients, cl)
		s.acked[p.Name] = map[int64]ack{}
	}
	for i, p := range s.spec.Producers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer clients[i].Close()
			s.produce(ctx, stop, clients[i], p.Name)
		}()
	}
	return s, nil
}

// producerClientOpts are franz-go's options for producer p's acks.
func producerClientOpts(p catalog.ProducerSpec) ([]kgo.Opt, error) {
	switch p.Acks {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, fmt.Errorf("durability producer %s: acks %q (want all or 1)", p.Name, p.Acks)
}

// produce sends the producer's records at the spec's rate, in ticks of 10 ms, until stop ends; then it
// waits up to 30 s for the records in flight (a record still unanswered then counts as failed). The
// records belong to ctx, the era's: stopping the producer does not fail them, cancelling the run does.
// The producer buffers up to sideBufferSeconds of records, so that a stall on a broker's death (until
// the controller elects a leader, and for acks=all until the ISR shrinks) holds records rather than
// failing them; a record that finds the buffer full fails at once rather than stalling the ticks.
func (s *sideTopic) produce(ctx, stop context.Context, cl *kgo.Client, name string) {
	const tick = 10 * time.Millisecond
	perTick := max(1, s.spec.RecordsPerSec/int(time.Second/tick))
	parts := int64(s.r.p.Partitions)
	t := time.NewTicker(tick)
	defer t.Stop()
	var seq int64
	for stop.Err() == nil {
		select {
		case <-stop.Done():
		case <-t.C:
			for range perTick {
				n := seq
				seq++
				rec := &kgo.Record{Partition: int32(n % parts), Key: []byte(name), Value: []byte(strconv.FormatInt(n, 10))}
				cl.TryProduce(ctx, rec, func(rec *kgo.Record, err error) { s.answered(name, n, rec.Partition, err) })
			}
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.Flush(fctx); err != nil && ctx.Err() == nil {
		s.r.log.Warnf("durability producer %s: records still in flight after 30 s count as failed: %v", name, err)
	}
}

func (s *sideTopic) answered(name string, seq int64, partition int32, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.failed[name] == 0 {
			s.errs[name] = err.Error()
		}
		s.failed[name]++
		return
	}
	s.acked[name][seq] = ack{partition: partition, atMs: time.Now().UnixMilli()}
}

// noteDown records, before broker id is stopped or killed, the side-topic partitions it leads.
func (s *sideTopic) noteDown(ctx context.Context, id int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(s.r.bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	leaders, err := partitionLeaders(cctx, kadm.NewClient(cl), s.topic)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.downAt == 0 {
		s.downAt = time.Now().UnixMilli()
	}
	for p, l := range leaders {
		if l == id {
			s.downLd[p] = true
		}
	}
	return nil
}

// check reads the side topic back (the producers have stopped) and judges each producer's records.
func (s *sideTopic) check(ctx context.Context) ([]report.ProducerCheck, error) {
	s.wg.Wait()
	inLog, err := s.readBack(ctx)
	if err != nil {
		return nil, err
	}
	return s.judge(inLog), nil
}

// judge compares what each producer was told was written with inLog (producer → sequence number →
// copies in the side topic).
func (s *sideTopic) judge(inLog map[string]map[int64]int) []report.ProducerCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []report.ProducerCheck
	for _, p := range s.spec.Producers {
		c := report.ProducerCheck{Producer: p.Name, Acks: p.Acks, Failed: s.failed[p.Name], FirstError: s.errs[p.Name]}
		lostParts := map[int32]bool{}
		var times []int64
		byPart := map[int32][]int64{}
		for seq, a := range s.acked[p.Name] {
			c.Acked++
			times = append(times, a.atMs)
			byPart[a.partition] = append(byPart[a.partition], a.atMs)
			if s.downAt > 0 && a.atMs >= s.downAt {
				c.AckedAfterDown++
			}
			switch n := inLog[p.Name][seq]; {
			case n == 0:
				c.Lost++
				lostParts[a.partition] = true
				if !s.downLd[a.partition] {
					c.LostElsewhere++
				}
			case n > 1:
				c.Duplicates++
			}
		}
		c.MaxAckGapMs = maxGap(times)
		for _, ts := range byPart {
			c.MaxPartitionAckGapMs = max(c.MaxPartitionAckGapMs, maxGap(ts))
		}
		for pt := range lostParts {
			c.LostPartitions = append(c.LostPartitions, pt)
		}
		slices.Sort(c.LostPartitions)
		for pt := range s.downLd {
			c.DownLedPartitions = append(c.DownLedPartitions, pt)
		}
		slices.Sort(c.DownLedPartitions)
		out = append(out, c)
	}
	return out
}

// maxGap sorts ts and returns the longest interval between consecutive times, 0 for fewer than two.
func maxGap(ts []int64) int64 {
	slices.Sort(ts)
	var g int64
	for i := 1; i < len(ts); i++ {
		g = max(g, ts[i]-ts[i-1])
	}
	return g
}

// readBack counts, per producer and sequence number, the records in the side topic from each
// partition's log start to its high watermark.
func (s *sideTopic) readBack(ctx context.Context) (map[string]map[int64]int, error) {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(s.r.bootstrap, ",")...))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(cctx, s.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("durability: end offsets of %s: %w", s.topic, err)
	}
	want := map[int32]int64{} // partition → high watermark still to reach
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			start[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	out := map[string]map[int64]int{}
	if len(want) == 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(s.r.bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: start}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	hws := maps.Clone(want)
	read := map[int32]int64{}
	for len(want) > 0 {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			return nil, fmt.Errorf("durability: reading %s back: %d partitions short of their high watermark after 60 s", s.topic, len(want))
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("durability: reading %s-%d back: %w", s.topic, p, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if hw, ok := want[rec.Partition]; ok {
				read[rec.Partition]++
				if seq, err := strconv.ParseInt(string(rec.Value), 10, 64); err == nil {
					m := out[string(rec.Key)]
					if m == nil {
						m = map[int64]int{}
						out[string(rec.Key)] = m
					}
					m[seq]++
				}
				if rec.Offset+1 >= hw {
					delete(want, rec.Partition)
				}
			}
		})
	}
	// Cross-check with the broker's own count: the log starts at 0 (nothing deleted or compacted),
	// so a partition holds exactly its high watermark of records.
	for p, hw := range hws {
		if read[p] != hw {
			return nil, fmt.Errorf("durability: read %d records of %s-%d, whose high watermark is %d", read[p], s.topic, p, hw)
		}
	}
	return out, nil
}
