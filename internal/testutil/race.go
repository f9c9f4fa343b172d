//go:build race

package testutil

// RaceFactor is how many times longer WaitFor waits in a binary built with -race, whose detector
// slows the code under test (and the real ZooKeeper and brokers it shares the CPU with) down.
const RaceFactor = 3
