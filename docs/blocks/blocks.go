// Package blocks fills the generated blocks of the documentation's markdown pages: a block is the text
// between "<!-- BEGIN GENERATED name -->" and "<!-- END GENERATED name -->" lines, and its content is
// whatever a generator renders for name. docs/gen fills the course's blocks from real runs (`make
// docs`); docs/refgen fills the reference blocks (names "ref-...") from the code (`make docs-ref`).
package blocks

import (
	"fmt"
	"regexp"
	"strings"
)

// RE matches one block: its name (1), its content (2, lines ending with "\n") and the name its END
// marker gives (3).
var RE = regexp.MustCompile(`(?s)<!-- BEGIN GENERATED ([a-z0-9-]+) -->\n(.*?)<!-- END GENERATED ([a-z0-9-]+) -->`)

// Fill replaces the content of every block of md with content[name] (given without its final newline).
// A block content lacks is left as it is when leave(name) says so (nil: never), and is an error
// otherwise, as is a BEGIN whose END names another block or a BEGIN without its END. On an error md
// is returned unchanged.
func Fill(md string, content map[string]string, leave func(name string) bool) (string, error) {
	var errs []string
	out := RE.ReplaceAllStringFunc(md, func(m string) string {
		sub := RE.FindStringSubmatch(m)
		name := sub[1]
		if sub[3] != name {
			errs = append(errs, fmt.Sprintf("block %s ends with END GENERATED %s", name, sub[3]))
			return m
		}
		c, ok := content[name]
		if !ok {
			if leave != nil && leave(name) {
				return m
			}
			errs = append(errs, fmt.Sprintf("block %s: this run produced no such block", name))
			return m
		}
		return "<!-- BEGIN GENERATED " + name + " -->\n" + c + "\n<!-- END GENERATED " + name + " -->"
	})
	if n, m := strings.Count(md, "<!-- BEGIN GENERATED "), len(RE.FindAllString(md, -1)); n != m {
		errs = append(errs, fmt.Sprintf("%d BEGIN GENERATED markers but %d complete blocks", n, m))
	}
	if len(errs) > 0 {
		return md, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Names returns the names of md's blocks, in page order.
func Names(md string) []string {
	var out []string
	for _, m := range RE.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}
