package report

import (
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	"github.com/rebalancelab/rebalancelab/sweep"
)

// eraColours are the eras' colours in every plot (sweep's palette order: zk first).
var eraColours = map[spec.Era]string{spec.ZK: sweep.Colour(0), spec.Classic: sweep.Colour(1), spec.Cooperative: sweep.Colour(2),
	spec.Static: sweep.Colour(3), spec.KIP848: sweep.Colour(4)}

// EraColour is era's colour in plots; an unknown era gets the palette's colour after the eras', by i.
func EraColour(era string, i int) string {
	if c, ok := eraColours[spec.Era(era)]; ok {
		return c
	}
	return sweep.Colour(5 + i)
}
