package main

import (
	"fmt"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// zombieRate is one row of chapter 5's per-second table: the zombie's deliveries in each second of
// its stall against the records produced to its partitions (those its last assigned record before
// the stall listed) in that second, and how many of the stall's produced records it delivered.
func zombieRate(era string, recs []timeline.Record, zombie string, stallAt, healAt int64) string {
	type key struct {
		topic string
		part  int32
		off   int64
	}
	own := map[string]map[int32]bool{}
	for _, r := range recs {
		if r.TsMs > stallAt {
			break
		}
		if r.Kind == timeline.Assigned && r.Member == zombie {
			own = map[string]map[int32]bool{}
			for t, ps := range r.Partitions {
				own[t] = map[int32]bool{}
				for _, p := range ps {
					own[t][p] = true
				}
			}
		}
	}
	// Whole seconds; a last part-second (a stall of 5002 ms) counts in the last one.
	secs := max(1, int((healAt-stallAt+500)/1000))
	delivered, produced := make([]int, secs), make([]int, secs)
	inStall := map[key]bool{}
	got := map[key]bool{}
	for _, r := range recs {
		if r.Partition == nil || r.Offset == nil || !own[r.Topic][*r.Partition] {
			continue
		}
		k := key{r.Topic, *r.Partition, *r.Offset}
		in := r.TsMs >= stallAt && r.TsMs < healAt
		sec := min(int((r.TsMs-stallAt)/1000), secs-1)
		switch {
		case r.Kind == timeline.Produce && in:
			produced[sec]++
			inStall[k] = true
		case r.Kind == timeline.Deliver && r.Member == zombie:
			got[k] = true
			if in {
				delivered[sec]++
			}
		}
	}
	n := 0
	for k := range inStall {
		if got[k] {
			n++
		}
	}
	join := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("| %s | %.1f s | %s | %s | %d of %d |", era, float64(healAt-stallAt)/1000, join(delivered), join(produced), n, len(inStall))
}
