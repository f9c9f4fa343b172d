// Package refgen renders the reference pages that are derived from the code, each from the one place
// it is defined: the CLI reference (docs/reference/cli/, one page per command, from the cobra commands
// with cobra/doc), the scenario catalogue (block ref-catalogue, from catalog.Catalog with the Streams
// scenario registered) and the figure definitions (block ref-figures, from figures.FigureTable).
//
// `make docs-ref` (the hidden `rebalancelab gen-docs DOCS_DIR`) writes them; the tests of this package
// and of cmd/rebalancelab fail when a committed page differs from what is rendered now (stale).
package refgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rebalancelab/rebalancelab/docs/blocks"
	"github.com/rebalancelab/rebalancelab/scenarios/catalog"
	"github.com/rebalancelab/rebalancelab/scenarios/figures"
	"github.com/rebalancelab/rebalancelab/scenarios/spec"
	_ "github.com/rebalancelab/rebalancelab/scenarios/streams" // registers streams-threads in the catalogue
)

// BlockPages are the pages (relative to the docs directory) that hold reference blocks.
var BlockPages = []string{"design.md", filepath.Join("reference", "scenarios.md")}

// CLIDir is where the CLI reference goes, relative to the docs directory.
var CLIDir = filepath.Join("reference", "cli")

// Blocks renders every reference block: name → markdown (no final newline).
func Blocks() map[string]string {
	return map[string]string{
		"ref-figures":   strings.TrimRight(figures.FigureTableMarkdown(), "\n"),
		"ref-catalogue": Catalogue(),
	}
}

// Catalogue renders the scenario catalogue: a table (name, description, default and small sizes, what
// the lab needs, the eras it runs on) and each scenario's relations.
func Catalogue() string {
	var b strings.Builder
	b.WriteString("Generated from `catalog.Catalog()` (`make docs-ref`); `rebalancelab scenario list --json` gives the same data (and then connect-workers, `\"driver\": true`: below the table).\n\n")
	b.WriteString("| scenario | description | default size | small size | lab | eras |\n|---|---|---|---|---|---|\n")
	cat := catalog.Catalog()
	for _, s := range cat {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s |\n", s.Name, s.Name, cell(s.Description),
			size(s.Defaults), size(s.Small), lab(s), strings.Join(eras(s), ", "))
	}
	b.WriteString("\nEvery scenario also checks Kafka's consumer invariants (each `invariant_*` figure is 0) on every era,\nexcept where it lists them as broken by design.\n")
	for _, s := range cat {
		fmt.Fprintf(&b, "\n#### %s\n\n", s.Name)
		if len(s.NotApplicable) > 0 {
			for _, e := range sortedEras(s.NotApplicable) {
				fmt.Fprintf(&b, "- not on `%s`: %s\n", e, cell(s.NotApplicable[e]))
			}
		}
		for _, e := range sortedEras(s.ByDesign) {
			fmt.Fprintf(&b, "- broken by design on `%s`: %s\n", e, "`"+strings.Join(s.ByDesign[e], "`, `")+"`")
		}
		if len(s.Relations) == 0 {
			b.WriteString("- relations: the invariants only\n")
			continue
		}
		for _, r := range s.Relations {
			where := "every era"
			if len(r.Eras) > 0 {
				var names []string
				for _, e := range r.Eras {
					names = append(names, string(e))
				}
				where = strings.Join(names, ", ")
			}
			if r.CrossEra {
				where += ", across eras"
			}
			fmt.Fprintf(&b, "- %s (%s)\n", cell(r.Text), where)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func cell(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`) }

func size(p spec.Params) string {
	out := fmt.Sprintf("N=%d, P=%d", p.Consumers, p.Partitions)
	if p.Hosts > 0 {
		out += fmt.Sprintf(", %d hosts", p.Hosts)
	}
	return out
}

func lab(s *catalog.Scenario) string {
	out := fmt.Sprintf("%d ZooKeeper, %d broker", max(1, s.ZKNodes), s.BrokerCount())
	if s.BrokerCount() > 1 {
		out += "s"
	}
	if h := max(s.MinHosts, s.Defaults.Hosts); h > 0 {
		out += fmt.Sprintf(", %d test hosts", h)
	}
	return out
}

// eras: the implemented eras the scenario applies to ("streams" for a Streams scenario).
func eras(s *catalog.Scenario) []string {
	if s.Streams != nil {
		return []string{"`streams`"}
	}
	var out []string
	for _, e := range spec.Eras() {
		if _, no := s.NotApplicable[e]; !no {
			out = append(out, "`"+string(e)+"`")
		}
	}
	return out
}

func sortedEras[V any](m map[spec.Era]V) []spec.Era {
	var out []spec.Era
	for e := range m {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// CLIPages renders the CLI reference of root's tree: file name (rebalancelab_scenario_run.md) →
// page, one per command `--help` lists (hidden commands and help left out, as cobra/doc does). root is
// prepared as Execute prepares it (the help and completion commands, --help and --version flags).
func CLIPages(root *cobra.Command) (map[string]string, error) {
	root.DisableAutoGenTag = true // no date: a page depends on the commands only
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	pages := map[string]string{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() || s.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(s); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &buf, func(s string) string { return s }); err != nil {
			return fmt.Errorf("%s: %w", c.CommandPath(), err)
		}
		pages[CLIFile(c)] = buf.String()
		return nil
	}
	return pages, walk(root)
}

// CLIFile is the file name of c's page.
func CLIFile(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// Write writes every reference page under docsDir: the CLI pages (removing pages of commands that no
// longer exist) and the blocks of BlockPages.
func Write(docsDir string, root *cobra.Command) error {
	pages, err := CLIPages(root)
	if err != nil {
		return err
	}
	dir := filepath.Join(docsDir, CLIDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, page := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644); err != nil {
			return err
		}
	}
	content := Blocks()
	for _, p := range BlockPages {
		f := filepath.Join(docsDir, p)
		md, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		filled, err := fillRef(string(md), content)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if filled != string(md) {
			if err := os.WriteFile(f, []byte(filled), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillRef fills md's reference blocks, leaving the course's (docs/gen's) as they are.
func fillRef(md string, content map[string]string) (string, error) {
	return blocks.Fill(md, content, func(name string) bool { return !strings.HasPrefix(name, "ref-") })
}

// StaleBlocks compares the reference blocks of BlockPages under docsDir with what is rendered now: one
// error per page that is stale (with the first differing line) or lacks a block it should hold.
func StaleBlocks(docsDir string) []error {
	content := Blocks()
	var errs []error
	seen := map[string]bool{}
	for _, p := range BlockPages {
		f := filepath.Join(docsDir, p)
		md, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range blocks.Names(string(md)) {
			seen[n] = true
		}
		filled, err := fillRef(string(md), content)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		if filled != string(md) {
			errs = append(errs, fmt.Errorf("%s is stale: %s (run `make docs-ref`)", f, FirstDiff(string(md), filled)))
		}
	}
	for n := range content {
		if !seen[n] {
			errs = append(errs, fmt.Errorf("no page of %v holds the block %s", BlockPages, n))
		}
	}
	return errs
}

// StaleCLI compares the CLI pages under docsDir with what root renders now: a missing, extra or
// different page is an error.
func StaleCLI(docsDir string, root *cobra.Command) []error {
	pages, err := CLIPages(root)
	if err != nil {
		return []error{err}
	}
	dir := filepath.Join(docsDir, CLIDir)
	var errs []error
	old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			errs = append(errs, fmt.Errorf("%s: no such command any more (run `make docs-ref`)", f))
		}
	}
	var names []string
	for n := range pages {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := filepath.Join(dir, n)
		got, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: missing (run `make docs-ref`): %w", f, err))
			continue
		}
		if string(got) != pages[n] {
			errs = append(errs, fmt.Errorf("%s is stale: %s (run `make docs-ref`)", f, FirstDiff(string(got), pages[n])))
		}
	}
	return errs
}

// FirstDiff describes the first line where the committed text differs from the rendered one.
func FirstDiff(committed, rendered string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(rendered, "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y || i >= len(a) || i >= len(b) {
			return fmt.Sprintf("line %d is\n\t%q\nbut the generator renders\n\t%q", i+1, x, y)
		}
	}
	return "identical"
}
