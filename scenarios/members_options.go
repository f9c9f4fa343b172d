package scenarios

// The run's choices of members (Options.Members, MembersAs, MembersPerProcess, MemberHosts): their
// names, how a run chooses pools, and what each refuses before anything starts. The runtimes
// themselves are package members'.

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
)

// How members run (Options.MembersAs).
const (
	MembersAsGoroutines = spec.MembersAsGoroutines // in the runner's process (default)
	MembersAsProcesses  = spec.MembersAsProcesses  // one `rebalancelab member` process per member incarnation (members.NewProcess)
)

// Members: whose consumers the coordinator eras run (Options.Members).
const (
	MembersRebalancelab = spec.MembersRebalancelab // newconsumer (the default)
	MembersKafka        = spec.MembersKafka        // Kafka 3.9's VerifiableConsumer JVMs (members.Kafka)
	// MembersMixed: one group of both, odd members (m1, m3, ...) ours, even members Kafka's.
	MembersMixed = spec.MembersMixed
)

// MemberImplementations are the values of Options.Members.
var MemberImplementations = []string{MembersRebalancelab, MembersKafka, MembersMixed}

// MaxInProcessMembers is the most members a run starts in the runner's process (goroutine members):
// above it, unless told otherwise, they run in member pools (PoolMembers), as bench storm's do.
const MaxInProcessMembers = 200

// AutoMembersPerProcess is K of the pools PoolMembers chooses: N=256 runs in 4 pool processes, and
// each pool's descriptors (two connections a member) stay far below RLIMIT_NOFILE.
const AutoMembersPerProcess = 64

// PoolMembers returns how a run of p.Consumers members runs them, o.MembersPerProcess and o.MembersAs
// as Run uses them: as given, except that with o.MembersAs "" (the caller chose nothing) and more than
// MaxInProcessMembers of this repository's members (o.Members) it chooses member pools of
// AutoMembersPerProcess. Errors: more than
// MaxInProcessMembers members asked to run as goroutines of this process. Run applies it to the
// catalogue's scenarios (Scenario.MaxConsumers 0); a Definition with its own bound (bench storm's)
// runs its members as its caller says.
func PoolMembers(p spec.Params, o Options) (perProcess int, membersAs string, err error) {
	perProcess, membersAs = o.MembersPerProcess, o.MembersAs
	ours := o.Members == "" || o.Members == MembersRebalancelab // Kafka's members are JVMs, never pooled
	if p.Consumers <= MaxInProcessMembers || perProcess > 1 || len(o.MemberHosts) > 0 || p.Hosts > 0 || !ours {
		return perProcess, membersAs, nil
	}
	switch membersAs {
	case MembersAsGoroutines:
		return 0, "", fmt.Errorf("--consumers %d: at most %d members run as goroutines of one process; "+
			"more run in member pools (--members-per-process K, chosen as %d when --members-as is not given)",
			p.Consumers, MaxInProcessMembers, AutoMembersPerProcess)
	case "":
		return AutoMembersPerProcess, MembersAsProcesses, nil
	}
	return perProcess, membersAs, nil // one process per member, as asked
}

// notMeasuredKafka are the figures no run with Kafka members measures (see scenarios/members/kafka.go).
var notMeasuredKafka = []string{figures.FigGroupRequests, figures.FigRebalanceAttempts, figures.FigRebalanceFailures}

// notMeasuredAutoCommit are the figures that need every commit: n/a when Kafka members auto-commit.
var notMeasuredAutoCommit = []string{figures.FigStaleCommitsApplied, figures.FigStaleCommitsRejected,
	figures.FigInvCommitAheadOfPosition, figures.FigInvConsumedBehindCommitted}

// isKafkaMember says whether member name of era runs Kafka's consumer under members.
// (the zk era's Kafka member is the 0.8.2.2 connector).
func isKafkaMember(members, era, name string) bool {
	switch members {
	case MembersKafka:
		return true
	case MembersMixed:
		var n int
		if _, err := fmt.Sscanf(name, "m%d", &n); err == nil {
			return n%2 == 0
		}
	}
	return false
}

// notMeasuredOld are the figures the old connector's records cannot give: its commits (auto-commit
// to ZooKeeper, not reported by the harness).
var notMeasuredOld = []string{figures.FigStaleCommitsApplied, figures.FigStaleCommitsRejected,
	figures.FigInvCommitAheadOfPosition, figures.FigInvConsumedBehindCommitted}

// kafkaMembersApply says whether era runs with Kafka's members under members, and why not: a script
// that faults a member's links needs the member to dial through the runner's proxies, which neither
// VerifiableConsumer (dialling the brokers it is told of) nor the 0.8.2.2 connector does; in the zk
// era the connector's ZooKeeper proxy fronts one server (zkNodes 1), and the harness commits only by
// auto-commit (a scenario that turns it off commits itself, which the harness cannot).
func kafkaMembersApply(era, members string, script []spec.Step, zkNodes int, props map[string]string) (bool, string) {
	if spec.Era(era).UsesZooKeeper() {
		if zkNodes > 1 {
			return false, "members " + members + ": the 0.8.2.2 connector's counting ZooKeeper proxy fronts one server; the scenario needs an ensemble"
		}
		if props["auto.commit.enable"] == "false" {
			return false, "members " + members + ": the scenario commits itself, and the 0.8.2.2 connector's harness only auto-commits"
		}
	}
	for _, st := range script {
		switch st.Action {
		case spec.ActStall, spec.ActLatency, spec.ActCut, spec.ActHeal:
			if isKafkaMember(members, era, st.Member) {
				kind := "Kafka's VerifiableConsumer does"
				if spec.Era(era).UsesZooKeeper() {
					kind = "the 0.8.2.2 connector does"
				}
				return false, fmt.Sprintf("members %s: the script faults %s's links, and %s not dial through the runner's proxies", members, st.Member, kind)
			}
		}
	}
	return true, ""
}

// checkMemberBinary refuses a MemberBinary that cannot run member processes.
func checkMemberBinary(bin string) error {
	if bin == "" {
		return errors.New(`members as processes need Options.MemberBinary: the rebalancelab binary (make build; tests: $REBALANCELAB_BIN)`)
	}
	st, err := os.Stat(bin)
	if err != nil {
		return fmt.Errorf("member binary: %w", err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("member binary %s is not an executable file", bin)
	}
	return nil
}

// checkMemberHosts refuses what member hosts cannot run: test hosts, Kafka's members, and scripts
// whose faults need the runner's proxies (crashes, link faults, host faults).
func checkMemberHosts(o Options, p spec.Params, script []spec.Step) error {
	if len(o.MemberHosts) == 0 {
		return nil
	}
	switch {
	case p.Hosts > 0:
		return errors.New("member hosts: not with test hosts (--hosts)")
	case o.Members != "" && o.Members != MembersRebalancelab:
		return fmt.Errorf("member hosts: run this project's members, not %s", o.Members)
	}
	if o.Bootstrap == "" {
		for _, a := range o.MemberHosts {
			if host, _, err := net.SplitHostPort(a); err != nil || !isLoopback(host) {
				return fmt.Errorf("member host %s: the lab's ZooKeeper and brokers listen on this machine's loopback, which another machine cannot reach: give --bootstrap and --zk of a cluster that both reach", a)
			}
		}
	}
	for _, st := range script {
		switch st.Action {
		case spec.ActCrash, spec.ActStall, spec.ActLatency, spec.ActCut, spec.ActHeal:
			return fmt.Errorf("member hosts: the script's %s step needs the runner's fault proxies, which listen on this machine's loopback: run it without --member-hosts", st.Action)
		}
	}
	return nil
}

// isLoopback reports whether host (a name or an IP) is this machine's loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
