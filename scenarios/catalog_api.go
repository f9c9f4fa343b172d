package scenarios

// The catalogue (package catalog: the scenarios, and the checking of their relations on a run's
// result) as the runner reads it.

import (
	"math/rand/v2"

	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/timeline"
)

// The catalogue's types the runner takes.
type (
	Scenario       = catalog.Scenario
	Relation       = catalog.Relation
	DurabilitySpec = catalog.DurabilitySpec
	ProducerSpec   = catalog.ProducerSpec
)

// Eras the runner implements, in table order (spec.Eras' names). kip848 is not implemented by the
// consumers yet.
var Eras = spec.Names(spec.Eras())

// CoordinationLink is catalog.CoordinationLink: a script's "the member's group coordination link".
const CoordinationLink = catalog.CoordinationLink

// MaxMembers and MaxPartitions bound a run (catalog's).
const (
	MaxMembers    = catalog.MaxMembers
	MaxPartitions = catalog.MaxPartitions
)

// Link names as a script's steps spell them (timeline.Link's).
const (
	linkZooKeeper   = string(timeline.LinkZooKeeper)
	linkCoordinator = string(timeline.LinkCoordinator)
	linkFetch       = string(timeline.LinkFetch)
)

// newRandSource is the scenario's random source for seed (spec.NewRand).
func newRandSource(seed int64, scenario string) *rand.Rand { return spec.NewRand(seed, scenario) }

// memberName is the scenario's stable name of member i (spec.MemberName).
func memberName(i int) string { return spec.MemberName(i) }
