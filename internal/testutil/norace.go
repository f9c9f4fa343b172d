//go:build !race

package testutil

// RaceFactor is how many times longer WaitFor waits in a binary built with -race: 1 in this one,
// built without the race detector.
const RaceFactor = 1
