package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rebalancelab/rebalancelab/docs/refgen"
)

// docs/reference/cli/ is what `rebalancelab gen-docs docs` (make docs-ref) writes from the commands
// now: a command or flag added, renamed or re-described without regenerating fails here.
func TestCLIReferenceFresh(t *testing.T) {
	for _, err := range refgen.StaleCLI(filepath.Join("..", "..", "docs"), newRootCmd()) {
		t.Error(err)
	}
}

var (
	helpFlagRE = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)`)
	helpCmdRE  = regexp.MustCompile(`(?m)^  ([a-z0-9-]+)\s`)
)

// The CLI reference lists every command and flag that --help lists: for every command --help shows
// (testdata/help/*.txt, which TestHelpUnchanged keeps equal to the binary's --help), its page exists,
// links each subcommand of its "Available Commands" and names each flag of its "Flags" and "Global
// Flags". Hidden commands (clock, member, gen-docs) and cobra's help command have no page.
func TestCLIReferenceListsHelp(t *testing.T) {
	root := newRootCmd()
	pages, err := refgen.CLIPages(root)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := filepath.Glob("testdata/help/*.txt")
	if err != nil || len(golden) == 0 {
		t.Fatalf("no testdata/help: %v", err)
	}
	checked := 0
	for _, g := range golden {
		path := strings.Fields(strings.ReplaceAll(strings.TrimSuffix(filepath.Base(g), ".txt"), "_", " "))
		c, _, err := root.Find(path[1:])
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if !available(c) {
			if _, ok := pages[refgen.CLIFile(c)]; ok {
				t.Errorf("%s is hidden but has a page", c.CommandPath())
			}
			continue
		}
		page, ok := pages[refgen.CLIFile(c)]
		if !ok {
			t.Errorf("%s: --help lists it, the CLI reference has no page %s", c.CommandPath(), refgen.CLIFile(c))
			continue
		}
		help, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		text := string(help)
		if cmds, _, ok := strings.Cut(after(text, "Available Commands:\n"), "\n\n"); ok {
			for _, m := range helpCmdRE.FindAllStringSubmatch(cmds, -1) {
				if m[1] == "help" { // cobra's own help command: cobra/doc gives it no page
					continue
				}
				link := "(" + strings.ReplaceAll(c.CommandPath()+" "+m[1], " ", "_") + ".md)"
				if !strings.Contains(page, link) {
					t.Errorf("%s: --help lists the command %s, its page links no %s", c.CommandPath(), m[1], link)
				}
			}
		}
		flags := after(text, "\nFlags:\n")
		for _, m := range helpFlagRE.FindAllStringSubmatch(flags, -1) {
			if !strings.Contains(page, "--"+m[1]+" ") && !strings.Contains(page, "--"+m[1]+"\n") {
				t.Errorf("%s: --help lists --%s, its page does not", c.CommandPath(), m[1])
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d flags checked: the help texts were not parsed", checked)
	}
}

func after(s, sep string) string {
	_, rest, _ := strings.Cut(s, sep)
	return rest
}

// available: c is listed by its parent's --help (neither it nor an ancestor hidden).
func available(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if c.Hidden || c.Name() == "help" {
			return false
		}
	}
	return true
}
