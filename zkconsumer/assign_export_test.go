package zkconsumer

import (
	"reflect"
	"testing"
)

// Assign is the same decision the connector makes: range over string-sorted thread ids (c10 sorts
// before c2), from any input order; an unknown strategy is an error.
func TestAssignExported(t *testing.T) {
	threads := map[string][]ThreadID{"t": {{"c2", 0}, {"c10", 0}, {"c1", 0}}}
	got, err := Assign(StrategyRange, "c1", threads, map[string][]int32{"t": {5, 4, 3, 2, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[TopicPartition]ThreadID{
		{"t", 0}: {"c1", 0}, {"t", 1}: {"c1", 0},
		{"t", 2}: {"c10", 0}, {"t", 3}: {"c10", 0},
		{"t", 4}: {"c2", 0}, {"t", 5}: {"c2", 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("range = %v, want %v", got, want)
	}
	if _, err := Assign("sticky", "c1", threads, map[string][]int32{"t": {0}}); err == nil {
		t.Fatal("unknown strategy accepted")
	}
}
