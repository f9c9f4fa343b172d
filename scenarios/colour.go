package scenarios

import "github.com/rebalancelab/rebalancelab/sweep"

// eraColours are the eras' colours in every plot (sweep's palette order: zk first).
var eraColours = map[string]string{"zk": sweep.Colour(0), "classic": sweep.Colour(1), "cooperative": sweep.Colour(2),
	"static": sweep.Colour(3), "kip848": sweep.Colour(4)}

// EraColour is era's colour in plots; an unknown era gets the palette's colour after the eras', by i.
func EraColour(era string, i int) string {
	if c, ok := eraColours[era]; ok {
		return c
	}
	return sweep.Colour(5 + i)
}
