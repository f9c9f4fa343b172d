package scenarios

// Sweeps: one scenario run at several sizes N (and, for medians, several times per size), its measured
// event's figures drawn against N for every era on the same axes (package sweep), the zk era's
// ZooKeeper reads fitted to a·N² + b·N + c (or their log–log slopes), beside the model's count (sweep_model.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/env"
	"github.com/rebalancelab/rebalancelab/scenarios/report"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// SweepOptions configures RunSweep.
type SweepOptions struct {
	Options       // the run of each size (Params.Consumers is set per size)
	Sizes   []int // N of each size, ascending
	Repeat  int   // runs per size (medians are plotted); 0 or 1: one
	// Deadline bounds each run; a size whose run does not finish by then stops the sweep with
	// SweepSize.Stopped saying why (larger sizes would not finish either). 0: no bound.
	Deadline time.Duration
	// UntilCrossover stops the sweep after the first size at which the crossover is reached.
	UntilCrossover bool
	// Budget bounds the whole sweep: no size, and no run of a size after its first, starts after it
	// is spent (SweepResult.BudgetSpent; a size cut so keeps fewer runs). 0: no bound.
	Budget time.Duration
	// PartitionsPerMember, above 0, gives each size N a topic of PartitionsPerMember·N partitions
	// (at least Params.Partitions), so that a join moves partitions at every N (P ≥ 2·N with 2).
	PartitionsPerMember int
	// EraMaxN: era → the largest N it runs at (a size above it runs without that era, its cells
	// "cut"); an era not listed runs at every size. The demo's budget cuts the slower eras this way.
	EraMaxN map[string]int
}

// SweepPlan returns the eras a sweep's run i at size n runs, in run order: eras (ResolveEras of
// o.Eras) without those cut at n (EraMaxN), rotated by i so that each era runs first, second, ... in
// turn over the repeats (what runs first meets a colder machine: the JIT of ZooKeeper, the caches).
func SweepPlan(eras []string, eraMaxN map[string]int, n, i int) []string {
	var in []string
	for _, e := range eras {
		if m, ok := eraMaxN[e]; ok && n > m {
			continue
		}
		in = append(in, e)
	}
	if len(in) == 0 {
		return nil
	}
	k := i % len(in)
	return append(append([]string(nil), in[k:]...), in[:k]...)
}

// SweepPartitions is the topic's partitions at size n: max(p, k·n) with k > 0, else p.
func SweepPartitions(p, k, n int) int {
	if k > 0 {
		return max(p, k*n)
	}
	return p
}

// RunSweep runs o's scenario at each of o.Sizes, o.Repeat times, and stops at the first size that
// fails or misses the deadline (recorded in its Stopped). Errors: a bad size list or scenario, or ctx's.
func RunSweep(ctx context.Context, o SweepOptions) (*report.SweepResult, error) {
	if len(o.Sizes) == 0 {
		return nil, errors.New("sweep: no sizes")
	}
	sizes := append([]int(nil), o.Sizes...)
	sort.Ints(sizes)
	for i := 1; i < len(sizes); i++ {
		if sizes[i] == sizes[i-1] {
			return nil, fmt.Errorf("sweep: size %d given twice", sizes[i])
		}
	}
	sc := o.Definition
	if sc == nil {
		var err error
		if sc, err = catalog.Lookup(o.Scenario); err != nil {
			return nil, err
		}
	}
	if o.PartitionsPerMember < 0 {
		return nil, fmt.Errorf("sweep: partitions per member %d: want 0 (the topic's --partitions at every N) or more", o.PartitionsPerMember)
	}
	eras, err := ResolveEras(o.Eras)
	if err != nil {
		return nil, err
	}
	for era, m := range o.EraMaxN {
		if !slices.Contains(spec.Names(spec.Eras()), era) || m < 1 {
			return nil, fmt.Errorf("sweep: era max N %s=%d: want an era of %s and N ≥ 1", era, m, strings.Join(spec.Names(spec.Eras()), ", "))
		}
	}
	if _, _, err := PoolMembers(spec.Params{Consumers: sizes[len(sizes)-1]}, o.Options); err != nil && sc.MaxConsumers == 0 {
		return nil, err // before the smaller sizes run
	}
	largest := sizes[len(sizes)-1] // its params checked before the smaller sizes run
	if _, err := sc.ScriptFor(spec.Params{Consumers: largest, Partitions: SweepPartitions(o.Params.Partitions, o.PartitionsPerMember, largest), Seed: o.Params.Seed}, spec.LabTiming()); err != nil {
		return nil, err
	}
	steps, err := sc.ScriptFor(spec.Params{Consumers: sizes[0], Partitions: SweepPartitions(o.Params.Partitions, o.PartitionsPerMember, sizes[0]), Seed: o.Params.Seed}, spec.LabTiming())
	if err != nil {
		return nil, err
	}
	t := env.Timing(o.KafkaDefaults) // as Run's (Options.withDefaults)
	res := &report.SweepResult{Scenario: sc.Name, EraMaxN: o.EraMaxN, Timings: report.TimingName(o.KafkaDefaults, t)}
	for _, st := range steps {
		if st.Action == spec.ActTrigger {
			res.Trigger = st.Name
			break
		}
	}
	repeat := max(o.Repeat, 1)
	start := time.Now()
	for _, n := range sizes {
		if _, ok := res.Crossover(); ok && o.UntilCrossover {
			break
		}
		if o.Budget > 0 && time.Since(start) >= o.Budget {
			res.BudgetSpent = true
			break
		}
		if len(SweepPlan(eras, o.EraMaxN, n, 0)) == 0 {
			break // every era cut
		}
		size := &report.SweepSize{N: n}
		res.Sizes = append(res.Sizes, size)
		for i := 0; i < repeat; i++ {
			if i > 0 && o.Budget > 0 && time.Since(start) >= o.Budget {
				res.BudgetSpent = true // the size keeps the runs that finished: its cells say how many
				return res, nil
			}
			ro := o.Options
			ro.Progress = nil // the sweep's own line per run below is the progress
			ro.Eras = SweepPlan(eras, o.EraMaxN, n, i)
			ro.Params.Consumers = n
			ro.Params.Partitions = SweepPartitions(o.Params.Partitions, o.PartitionsPerMember, n)
			ro.Params.Seed = o.Params.Seed + int64(i)
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if o.Deadline > 0 {
				rctx, cancel = context.WithTimeout(ctx, o.Deadline)
			}
			if o.Progress != nil {
				pools := ""
				if k, _, _ := PoolMembers(ro.Params, ro); k > 1 && sc.MaxConsumers == 0 {
					pools = fmt.Sprintf(", members in pools of %d", k)
				}
				fmt.Fprintf(o.Progress, "sweep %s: N=%d, P=%d, run %d of %d, eras in order %s%s\n", sc.Name, n, ro.Params.Partitions, i+1, repeat, strings.Join(ro.Eras, ","), pools)
			}
			r, err := Run(rctx, ro)
			deadline := rctx.Err() != nil && ctx.Err() == nil
			cancel()
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if r != nil && !deadline && err == nil {
				size.Runs = append(size.Runs, r)
				continue
			}
			switch {
			case deadline:
				size.Stopped = fmt.Sprintf("N=%d did not finish within the %s deadline on this machine", n, o.Deadline)
			case err != nil:
				size.Stopped = fmt.Sprintf("N=%d: %v", n, err)
			}
			return res, nil
		}
	}
	return res, nil
}
