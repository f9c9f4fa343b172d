package benchmark

import (
	"reflect"
	"testing"
)

func TestSummarizeThroughput(t *testing.T) {
	rs := []ThroughputResult{
		{Target: "rebalancelab", RecordBytes: 100, ProduceMBps: 3, FetchMBps: 10},
		{Target: "kfake", RecordBytes: 100, ProduceMBps: 5, FetchMBps: 20},
		{Target: "kfake", RecordBytes: 100, ProduceMBps: 1, FetchMBps: 40},
		{Target: "rebalancelab", RecordBytes: 100, ProduceMBps: 9, FetchMBps: 30},
		{Target: "rebalancelab", RecordBytes: 100, ProduceMBps: 6, FetchMBps: 20},
	}
	got := SummarizeThroughput(rs)
	if len(got) != 2 || got[0].Target != "rebalancelab" || got[1].Target != "kfake" {
		t.Fatalf("groups %+v, want rebalancelab then kfake (first-seen order)", got)
	}
	if want := (Spread{Median: 6, Min: 3, Max: 9}); got[0].ProduceMBps != want || got[0].Runs != 3 {
		t.Fatalf("rebalancelab produce %+v over %d runs, want %+v over 3", got[0].ProduceMBps, got[0].Runs, want)
	}
	if want := (Spread{Median: 30, Min: 20, Max: 40}); !reflect.DeepEqual(got[1].FetchMBps, want) {
		t.Fatalf("kfake fetch %+v, want %+v (even count: mean of the middle two)", got[1].FetchMBps, want)
	}
}
