package broker

import "testing"

// What a broker does with its local partitions when the controller's word changes, with no log or
// ZooKeeper: retireDecision (stopPartitions) and decideRole (makeLeaders / makeFollowers).

func TestRetireDecision(t *testing.T) {
	leading := localRole{czxid: 100, leading: true, leaderID: 1, epoch: 4}
	following := localRole{czxid: 100, leaderID: 2, epoch: 4}
	same := &hostedPartition{czxid: 100}
	for _, c := range []struct {
		name              string
		role              localRole
		h                 *hostedPartition
		hosted, deleted   bool
		wantDemote, wantD bool
	}{
		{"hosted, same incarnation", leading, same, true, false, false, false},
		{"hosted, request without topic id", leading, &hostedPartition{}, true, false, false, false},
		{"no longer hosted, led", leading, nil, false, false, true, false},
		{"no longer hosted, followed", following, nil, false, false, false, false},
		{"deleted by StopReplica, led", leading, nil, false, true, true, true},
		{"deleted by StopReplica, still listed", following, same, true, true, false, true},
		{"another incarnation of the topic", leading, &hostedPartition{czxid: 200}, true, false, true, true},
	} {
		demote, drop := retireDecision(c.role, c.h, c.hosted, c.deleted)
		if demote != c.wantDemote || drop != c.wantD {
			t.Errorf("%s: demote %v drop %v, want %v %v", c.name, demote, drop, c.wantDemote, c.wantD)
		}
	}
}

func TestDecideRole(t *testing.T) {
	hosted := func(leader, epoch int32, stopped bool) *hostedPartition {
		return &hostedPartition{st: leaderAndISR{Leader: leader, LeaderEpoch: epoch, ISR: []int32{1, 2}}, stopped: stopped}
	}
	for _, c := range []struct {
		name string
		role localRole
		h    *hostedPartition
		want roleDecision
	}{
		{"new leader", localRole{leaderID: 2, epoch: 3}, hosted(1, 4, false), roleDecision{lead: true}},
		{"leads at a new epoch", localRole{leading: true, leaderID: 1, epoch: 3}, hosted(1, 4, false), roleDecision{lead: true}},
		{"ISR change, same epoch", localRole{leading: true, leaderID: 1, epoch: 4}, hosted(1, 4, false), roleDecision{update: true}},
		{"led, now follows", localRole{leading: true, leaderID: 1, epoch: 4}, hosted(2, 5, false), roleDecision{demoted: true, follow: true, fetch: true}},
		{"follows a new leader", localRole{leaderID: 2, epoch: 4}, hosted(3, 5, false), roleDecision{follow: true, fetch: true}},
		{"follows as before", localRole{leaderID: 2, epoch: 4}, hosted(2, 4, false), roleDecision{fetch: true}},
		{"stopped by StopReplica", localRole{leaderID: 2, epoch: 4}, hosted(2, 4, true), roleDecision{}},
		{"no leader", localRole{leaderID: 2, epoch: 4}, hosted(-1, 5, false), roleDecision{follow: true}},
	} {
		if got := decideRole(1, c.role, c.h); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
