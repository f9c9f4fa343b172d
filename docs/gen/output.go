package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/rebalancelab/rebalancelab/docs/blocks"
)

// output collects what a run produces: figure files under dir, and markdown blocks by name.
type output struct {
	dir string

	// caption ends every block of a chapter that shows a figure (all but its -summary and -runinfo
	// blocks): the commit and settings the figure comes from. "" adds none.
	caption string

	mu      sync.Mutex
	written map[string]bool   // relative paths
	blocks  map[string]string // block name → markdown
}

func newOutput(dir string) (*output, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("-out %s: %w", dir, err)
	}
	return &output{dir: dir, written: map[string]bool{}, blocks: map[string]string{}}, nil
}

// path returns the absolute location of a figure file (relative name, slash-separated).
func (o *output) path(name string) string { return filepath.Join(o.dir, filepath.FromSlash(name)) }

// write stores a figure file, creating its directory.
func (o *output) write(name string, data []byte) error {
	p := o.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	o.noteWritten(name)
	return nil
}

// noteWritten records a file written by someone else (the scenario runner's report).
func (o *output) noteWritten(name string) {
	o.mu.Lock()
	o.written[name] = true
	o.mu.Unlock()
}

func (o *output) files() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.written))
	for f := range o.written {
		out = append(out, f)
	}
	return out
}

// block sets the markdown of a generated block; a figure's block gets the caption.
func (o *output) block(name, md string) {
	md = strings.TrimRight(md, "\n")
	if o.caption != "" && blockChapter(name) != "" && !strings.HasSuffix(name, "-summary") && !strings.HasSuffix(name, "-runinfo") {
		md += "\n\n" + o.caption
	}
	o.mu.Lock()
	o.blocks[name] = md
	o.mu.Unlock()
}

// ---- generated blocks in the chapters ----

// blockChapter is the chapter a block belongs to: its name's prefix ("ch4-summary" → "ch4");
// other blocks ("readme-...") belong to every run. The reference blocks ("ref-...", docs/refgen, `make
// docs-ref`) are generated from the code, not by this program: "ref", which no run selects.
func blockChapter(name string) string {
	if strings.HasPrefix(name, "ref-") {
		return "ref"
	}
	if c, _, ok := strings.Cut(name, "-"); ok && strings.HasPrefix(c, "ch") {
		return c
	}
	return ""
}

// fillBlocks replaces the content of every generated block in md with blocks[name] (blocks.Fill). A
// block of a selected chapter (or of no chapter) that blocks lacks is an error, as is a BEGIN whose END
// names another block; blocks of unselected chapters are left as they are.
func fillBlocks(md string, content map[string]string, selected map[string]bool) (string, error) {
	return blocks.Fill(md, content, func(name string) bool {
		c := blockChapter(name)
		return c != "" && !selected[c]
	})
}

// fillDir refills the blocks of every *.md file in dir. Every produced block must appear in some
// chapter (a block nobody shows is a generator bug).
func fillDir(dir string, content map[string]string, selected map[string]bool) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("-md %s: no *.md files", dir)
	}
	used := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, m := range blocks.RE.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		filled, err := fillBlocks(string(b), content, selected)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if filled != string(b) {
			if err := os.WriteFile(f, []byte(filled), 0o644); err != nil {
				return err
			}
		}
	}
	var unused []string
	for name := range content {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		return fmt.Errorf("-md %s: no chapter shows the generated blocks %s", dir, strings.Join(unused, ", "))
	}
	return nil
}
