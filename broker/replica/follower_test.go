package replica

import "testing"

// epochCache is a log's leader epoch cache (epoch -> start offset, ascending) and its log end offset;
// endOffsetFor is LeaderEpochFileCache.endOffsetFor as Kafka 3.9 answers it.
type epochCache struct {
	epochs [][2]int64 // {epoch, start offset}
	leo    int64
}

func (c epochCache) endOffsetFor(req int32) EpochEnd {
	if len(c.epochs) == 0 {
		return EpochEnd{UndefinedEpoch, UndefinedEpochOffset}
	}
	last := c.epochs[len(c.epochs)-1]
	if int64(req) == last[0] {
		return EpochEnd{req, c.leo}
	}
	floor := -1
	for i, e := range c.epochs {
		if e[0] <= int64(req) {
			floor = i
		}
	}
	if floor < 0 || floor == len(c.epochs)-1 { // below the first epoch, or above the latest
		return EpochEnd{UndefinedEpoch, UndefinedEpochOffset}
	}
	return EpochEnd{int32(c.epochs[floor][0]), c.epochs[floor+1][1]}
}

func (c epochCache) lastEpoch() int32 {
	if len(c.epochs) == 0 {
		return UndefinedEpoch
	}
	return int32(c.epochs[len(c.epochs)-1][0])
}

func (c *epochCache) truncate(off int64) {
	c.leo = min(c.leo, off)
	for len(c.epochs) > 0 && c.epochs[len(c.epochs)-1][1] >= c.leo {
		c.epochs = c.epochs[:len(c.epochs)-1]
	}
}

// getOffsetTruncationState's four branches.
func TestDivergingTruncation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		leader, local EpochEnd
		localLEO, hw  int64
		want          Truncation
	}{
		{"leader has no end offset: to the high watermark", EpochEnd{4, UndefinedEpochOffset}, EpochEnd{4, 7}, 9, 3, Truncation{3, true}},
		{"leader epoch undefined (old protocol): leader end", EpochEnd{UndefinedEpoch, 5}, EpochEnd{4, 7}, 9, 3, Truncation{5, true}},
		{"follower has no epoch at or below: leader end", EpochEnd{2, 5}, EpochEnd{UndefinedEpoch, UndefinedEpochOffset}, 9, 3, Truncation{5, true}},
		{"follower has no epoch, leader end above LEO", EpochEnd{2, 12}, EpochEnd{UndefinedEpoch, UndefinedEpochOffset}, 9, 3, Truncation{9, true}},
		{"other epoch: follower's end of its own, not completed", EpochEnd{3, 2}, EpochEnd{2, 2}, 3, 0, Truncation{2, false}},
		{"same epoch: smaller end", EpochEnd{4, 6}, EpochEnd{4, 8}, 9, 0, Truncation{6, true}},
		{"same epoch, follower shorter", EpochEnd{4, 8}, EpochEnd{4, 6}, 6, 0, Truncation{6, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DivergingTruncation(tc.leader, tc.local, tc.localLEO, tc.hw); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A follower that was leader in epochs the new leader never saw (successive unclean elections),
// driven through the leader's fetchRecords check and the follower's truncation until they agree;
// the logs are those of AbstractFetcherThreadTest's truncation-through-multiple-iterations scenarios.
func TestDivergingEpochIterations(t *testing.T) {
	for _, tc := range []struct {
		name           string
		follower, lead epochCache
		wantSteps      []Truncation
		wantLEO        int64
		wantOutOfRange bool
	}{
		{
			// follower epochs 0,2,4 at 0,1,2; leader 0,2,3,5 at 0,1,2,4 with LEO 6.
			name:      "one step back to the shared epoch",
			follower:  epochCache{[][2]int64{{0, 0}, {2, 1}, {4, 2}}, 5},
			lead:      epochCache{[][2]int64{{0, 0}, {2, 1}, {3, 2}, {5, 4}}, 6},
			wantSteps: []Truncation{{2, false}},
			wantLEO:   2,
		},
		{
			// follower 0,2,4 / leader 1,3,5, each one record: no epoch in common.
			name:           "no shared epoch: walked back to the leader's first epoch, then out of range",
			follower:       epochCache{[][2]int64{{0, 0}, {2, 1}, {4, 2}}, 3},
			lead:           epochCache{[][2]int64{{1, 0}, {3, 1}, {5, 2}}, 3},
			wantSteps:      []Truncation{{2, false}, {1, false}},
			wantLEO:        1,
			wantOutOfRange: true,
		},
		{
			name:      "same epoch, follower ahead within it",
			follower:  epochCache{[][2]int64{{0, 0}, {4, 3}}, 9},
			lead:      epochCache{[][2]int64{{0, 0}, {4, 3}, {6, 6}}, 8},
			wantSteps: []Truncation{{6, true}},
			wantLEO:   6,
		},
		{
			name:     "in sync: no divergence",
			follower: epochCache{[][2]int64{{0, 0}, {4, 3}}, 6},
			lead:     epochCache{[][2]int64{{0, 0}, {4, 3}, {6, 6}}, 8},
			wantLEO:  6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.follower
			var steps []Truncation
			outOfRange := false
			for i := 0; i < 10; i++ {
				last := f.lastEpoch()
				div, diverged, oor := DivergingEpoch(last, f.leo, 0, tc.lead.endOffsetFor(last))
				if oor {
					outOfRange = true
					break
				}
				if !diverged {
					break
				}
				tr := DivergingTruncation(div, f.endOffsetFor(div.Epoch), f.leo, 0)
				steps = append(steps, tr)
				f.truncate(tr.Offset)
				if tr.Completed {
					break
				}
			}
			if len(steps) != len(tc.wantSteps) || f.leo != tc.wantLEO || outOfRange != tc.wantOutOfRange {
				t.Fatalf("steps %+v LEO %d outOfRange %v; want %+v %d %v", steps, f.leo, outOfRange, tc.wantSteps, tc.wantLEO, tc.wantOutOfRange)
			}
			for i := range steps {
				if steps[i] != tc.wantSteps[i] {
					t.Fatalf("step %d %+v, want %+v", i, steps[i], tc.wantSteps[i])
				}
			}
		})
	}
}

// Partition.fetchRecords' lastFetchedEpoch check.
func TestDivergingEpoch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		lastEpoch       int32
		fetch, logStart int64
		leaderEnd       EpochEnd
		div             EpochEnd
		diverged, oor   bool
	}{
		{"no epoch sent", -1, 5, 0, EpochEnd{}, EpochEnd{}, false, false},
		{"epoch unknown to the leader", 2, 5, 0, EpochEnd{UndefinedEpoch, UndefinedEpochOffset}, EpochEnd{}, false, true},
		{"below log start, epochs agree", 4, 5, 6, EpochEnd{4, 9}, EpochEnd{}, false, true},
		{"same epoch ends at the fetch offset", 4, 5, 0, EpochEnd{4, 5}, EpochEnd{}, false, false},
		{"same epoch ends before the fetch offset", 4, 6, 0, EpochEnd{4, 5}, EpochEnd{4, 5}, true, false},
		{"leader knows an older epoch", 4, 5, 0, EpochEnd{3, 7}, EpochEnd{3, 7}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			div, d, o := DivergingEpoch(tc.lastEpoch, tc.fetch, tc.logStart, tc.leaderEnd)
			if div != tc.div || d != tc.diverged || o != tc.oor {
				t.Fatalf("got %+v %v %v", div, d, o)
			}
		})
	}
}

// fetchOffsetAndTruncate (AbstractFetcherThreadTest testFollowerFetchOutOfRangeHigh: follower LEO 3,
// leader LEO 2 -> truncate to 2; testFollowerFetchOutOfRangeLow: follower LEO 0, leader log start 3
// -> truncate fully and start at 3).
func TestOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		localLEO, start, end int64
		want                 int64
		fully                bool
	}{
		{"testFollowerFetchOutOfRangeHigh: ahead after unclean election", 3, 0, 2, 2, false},
		{"testFollowerFetchOutOfRangeLow: behind log start", 0, 3, 3, 3, true},
		{"behind log start, leader has more", 2, 5, 9, 5, true},
		{"in range again: fetch on", 4, 2, 9, 4, false},
		{"equal to leader end", 9, 2, 9, 9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, fully := OutOfRange(tc.localLEO, tc.start, tc.end)
			if off != tc.want || fully != tc.fully {
				t.Fatalf("got %d %v, want %d %v", off, fully, tc.want, tc.fully)
			}
		})
	}
	if FollowerHighWatermark(10, 7) != 7 || FollowerHighWatermark(5, 7) != 5 {
		t.Fatal("FollowerHighWatermark")
	}
	// UnifiedLog.updateHighWatermark: the follower behind the leader's log start (it restarted at 3
	// with an empty log) gets the leader's HW 2 raised to its log start 3.
	for _, c := range [][4]int64{{2, 3, 3, 3}, {10, 0, 7, 7}, {7, 0, 7, 7}, {5, 0, 7, 5}} {
		if got := ClampHighWatermark(c[0], c[1], c[2]); got != c[3] {
			t.Fatalf("ClampHighWatermark(%d, %d, %d) = %d, want %d", c[0], c[1], c[2], got, c[3])
		}
	}
}
