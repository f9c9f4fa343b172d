package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSizes reads a comma-separated list of member counts N (each at least 1, none repeated), for
// --consumers of `scenario run` and `bench storm`.
func parseSizes(flag, s string) ([]int, error) {
	var ns []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a member count >= 1", flag, f)
		}
		if seen[n] {
			return nil, fmt.Errorf("%s: %d is given twice", flag, n)
		}
		seen[n] = true
		ns = append(ns, n)
	}
	return ns, nil
}
