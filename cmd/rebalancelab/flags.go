package main

import (
	"fmt"
	"strings"
)

// parseConfigs turns repeated `--<flag> key=value` into properties. A value without '=' or with an
// empty key, and a key given twice, are errors naming the flag (a second value would silently win).
func parseConfigs(flag string, kvs []string) (map[string]string, error) {
	props := map[string]string{}
	first := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, kv)
		}
		if prev, dup := first[k]; dup {
			return nil, fmt.Errorf("--%s %s: %s is already given (--%s %s); give each key once", flag, kv, k, flag, prev)
		}
		first[k] = kv
		props[k] = v
	}
	return props, nil
}
