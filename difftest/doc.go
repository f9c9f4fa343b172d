// Package difftest is the differential test of the broker: scripted request sequences sent, in the
// same run, to this project's broker and to a real Kafka 3.9 broker (ZooKeeper mode, from the interop
// build), the answers compared field by field after normalising only what differs by construction
// (member, cluster and topic ids, ports, throttle times; a LogAppendTime stamp, the broker's clock, is
// named when it lies within its request's window, so that reading it back compares, and a clock
// reading in an error message is "<clock>"). Record timestamps, leader epochs and error messages are
// compared as answered. Every remaining difference
// must be listed, with its reason, in the fidelity table of docs/reference/fidelity.md
// ("Differences from Kafka 3.9"); the test fails on any difference not listed there, and on a listed
// one that no longer occurs. The package has only tests; `go test ./difftest/` runs them.
package difftest
