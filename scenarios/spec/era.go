package spec

import (
	"fmt"
	"strings"

	"github.com/rebalancelab/rebalancelab/timeline"
)

// Era is a consumer-group era (docs/design.md "Eras"): which consumer runs and how its group
// rebalances. Its value is its name as the CLI, the timeline records ("era") and the result JSON
// spell it.
type Era string

// The eras. ZK, Classic, Cooperative and Static are implemented by the consumers (Eras); KIP848 is
// known to the figures (its not-applicable figures, its colour) but not implemented.
const (
	// ZK is Kafka 0.8.2's ZookeeperConsumerConnector (zkconsumer): the group is ZooKeeper's
	// /consumers/<group>, each member computes the range assignment and claims its partitions.
	ZK Era = "zk"
	// Classic is the coordinator era's eager rebalance (newconsumer, JoinGroup/SyncGroup, KIP-62's
	// heartbeat thread) with the range assignor: every member revokes everything at each rebalance.
	Classic Era = "classic"
	// Cooperative is Classic with the cooperative-sticky assignor (KIP-429): only what moves is revoked.
	Cooperative Era = "cooperative"
	// Static is Classic with group.instance.id = the member's name (KIP-345): a restart within
	// session.timeout.ms keeps the member's partitions without a rebalance.
	Static Era = "static"
	// KIP848 is the consumer group protocol of KIP-848 (the coordinator assigns); not implemented by
	// the consumers.
	KIP848 Era = "kip848"
)

// All is the name that stands for every implemented era (ParseEras).
const All = "all"

// Eras are the implemented eras, in table order.
func Eras() []Era { return []Era{ZK, Classic, Cooperative, Static} }

// Known reports whether the figures know e (an implemented era or KIP848).
func (e Era) Known() bool { return e.Implemented() || e == KIP848 }

// Implemented reports whether the consumers implement e (Eras).
func (e Era) Implemented() bool {
	switch e {
	case ZK, Classic, Cooperative, Static:
		return true
	}
	return false
}

// UsesZooKeeper reports whether e's members keep their group in ZooKeeper (the zk era) rather than
// at a group coordinator.
func (e Era) UsesZooKeeper() bool { return e == ZK }

// Coordinated reports whether e's members talk to a group coordinator (every known era but zk).
func (e Era) Coordinated() bool { return e.Known() && e != ZK }

// Static reports whether e's members are static (group.instance.id set, KIP-345).
func (e Era) Static() bool { return e == Static }

// Assignor is e's partition.assignment.strategy as its members configure it: "range" for zk (0.8.2's
// partition.assignment.strategy default, RangeAssignor's rule), classic and static,
// "cooperative-sticky" for cooperative; "" for kip848 (the coordinator assigns) or an unknown era.
func (e Era) Assignor() string {
	switch e {
	case ZK, Classic, Static:
		return "range"
	case Cooperative:
		return "cooperative-sticky"
	}
	return ""
}

// Protocol is e's rebalance protocol: "cooperative" when a rebalance revokes only what moves
// (cooperative, KIP-429; kip848), "eager" when every member gives up everything (zk, classic,
// static); "" for an unknown era.
func (e Era) Protocol() string {
	switch e {
	case Cooperative, KIP848:
		return ProtocolCooperative
	case ZK, Classic, Static:
		return ProtocolEager
	}
	return ""
}

// CoordinationLink is the member's link that carries its group coordination in e: ZooKeeper in the zk
// era, the group coordinator's connection in the others (a script's "coordination" link).
func (e Era) CoordinationLink() timeline.Link {
	if e.UsesZooKeeper() {
		return timeline.LinkZooKeeper
	}
	return timeline.LinkCoordinator
}

// The rebalance protocols (Protocol).
const (
	ProtocolEager       = "eager"
	ProtocolCooperative = "cooperative"
)

// The group protocols (GroupProtocol), as Kafka's consumer config group.protocol names them (KIP-848).
const (
	GroupProtocolClassic  = "classic"
	GroupProtocolConsumer = "consumer"
)

// GroupProtocol is e's group.protocol: GroupProtocolClassic (JoinGroup/SyncGroup/Heartbeat) for
// classic, cooperative and static, GroupProtocolConsumer (ConsumerGroupHeartbeat, KIP-848) for kip848;
// "" for zk (no group coordinator) or an unknown era.
func (e Era) GroupProtocol() string {
	switch e {
	case Classic, Cooperative, Static:
		return GroupProtocolClassic
	case KIP848:
		return GroupProtocolConsumer
	}
	return ""
}

// ParseEra returns the implemented era named name. Errors: kip848 (not implemented yet), or an
// unknown name; each lists the implemented eras.
func ParseEra(name string) (Era, error) { return parseEra(name, "") }

// parseEra is ParseEra; orAll ends the list of implemented eras in its errors (ParseEras: ", or all").
func parseEra(name, orAll string) (Era, error) {
	e := Era(strings.TrimSpace(name))
	switch {
	case e.Implemented():
		return e, nil
	case e == KIP848:
		return "", fmt.Errorf("era kip848 is not implemented yet (implemented: %s%s)", eraList(), orAll)
	}
	return "", fmt.Errorf("unknown era %q (implemented: %s%s)", string(e), eraList(), orAll)
}

// ParseEras expands names, each a name or a comma-separated list of them, All ("all") standing for
// every implemented era, into eras in the order given, each once; no names: every implemented era.
// Errors: ParseEra's.
func ParseEras(names []string) ([]Era, error) {
	if len(names) == 0 {
		return Eras(), nil
	}
	var out []Era
	seen := map[Era]bool{}
	add := func(e Era) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, n := range names {
		for _, s := range strings.Split(n, ",") {
			if strings.TrimSpace(s) == "" {
				if strings.TrimSpace(n) == "" {
					return nil, fmt.Errorf("an empty era name (implemented: %s, or all)", eraList())
				}
				return nil, fmt.Errorf("an empty era name in %q (implemented: %s, or all)", n, eraList())
			}
			if strings.TrimSpace(s) == All {
				for _, e := range Eras() {
					add(e)
				}
				continue
			}
			e, err := parseEra(s, ", or all")
			if err != nil {
				return nil, err
			}
			add(e)
		}
	}
	return out, nil
}

// Names returns eras' names.
func Names(eras []Era) []string {
	out := make([]string, len(eras))
	for i, e := range eras {
		out[i] = string(e)
	}
	return out
}

func eraList() string { return strings.Join(Names(Eras()), ", ") }
