package docs_test

// The course's promises, checked (issue #7): `make docs` regenerates every figure the pages link, from
// real runs, and every command the pages show runs.
//
// TestMakeDocsRegeneratesEveryLinkedFigure runs `make docs` at the small sizes into a temporary folder
// (figures, and a copy of the chapters whose generated blocks it refills) and checks every link;
// TestCommittedLinksResolve checks the committed pages' links against the committed figures.
//
// TestDocsCommandsRun runs the commands of the pages' ```sh blocks, file by file, in page order. Every
// line of such a block must be a `rebalancelab ...` or `make docs ...` command (a comment may follow
// after " #"); anything else fails the test, so the pages cannot show a command nobody checks. How each
// command is run:
//   - `make docs [VAR=value ...]`: with DOCS_FLAGS extended by -check (the generator validates its
//     flags, prints the plan and exits), because TestMakeDocsRegeneratesEveryLinkedFigure already runs
//     the whole generation once; re-running it per chapter would double this test's minutes.
//   - `rebalancelab lab up`: started in the background until the page's other commands are done, its
//     first line giving $ZK and $BOOTSTRAP to them; then interrupted (SIGINT), and it must exit 0.
//   - `rebalancelab topic ...`, `rebalancelab produce ...`, `rebalancelab scenario list`: run to
//     completion, exit 0.
//   - `rebalancelab consumer ...`, `rebalancelab zkconsumer ...` run until interrupted: started in the
//     background; once the page's commands are done, every group they form must have printed (--print)
//     each record the page produced to its topic — one line "topic partition offset value" per record,
//     counted by (partition, offset) — then they are interrupted and must exit 0.
//   - `rebalancelab scenario run NAME ...`: as shown but on one era with the smallest group (--era
//     classic --consumers 2 --partitions 4), because the documented run is every era at full size,
//     which is what `make docs` measures; the rest of the flags (--json, --report, ...) stay. It must
//     exit 0, or exit 1 having written its result JSON and said that some expected relations do not
//     hold: that is the command working and reporting a finding, not the page being wrong.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"go.uber.org/goleak"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot is the module root (this test runs in docs/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	return root
}

func chapters(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no markdown in docs/: %v", err)
	}
	sort.Strings(files)
	return files
}

// ---- links ----

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links returns the relative link targets of a markdown text (no scheme, no pure anchors), without
// their #fragment.
func links(md string) []string {
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(md, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		out = append(out, target)
	}
	return out
}

// checkFigure: figures/... (relative to a chapter) must exist under figDir, as a non-empty file, or
// as a non-empty directory when the link ends with "/".
func checkFigure(figDir, link string) error {
	rel := strings.TrimPrefix(link, "figures/")
	p := filepath.Join(figDir, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		entries, err := os.ReadDir(p)
		if err != nil || len(entries) == 0 {
			return fmt.Errorf("%s: empty directory", p)
		}
		return nil
	}
	if st.Size() == 0 {
		return fmt.Errorf("%s: empty file", p)
	}
	return nil
}

var blockRE = regexp.MustCompile(`(?s)<!-- BEGIN GENERATED ([a-z0-9-]+) -->\n(.*?)<!-- END GENERATED ([a-z0-9-]+) -->`)

func TestMakeDocsRegeneratesEveryLinkedFigure(t *testing.T) {
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.Connect, testutil.Streams)
	t.Parallel()
	root := repoRoot(t)
	tmp := t.TempDir()
	mdDir, figDir := filepath.Join(tmp, "md"), filepath.Join(tmp, "figures")
	if err := os.MkdirAll(mdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := chapters(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mdDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "docs", "DOCS_OUT="+figDir, "DOCS_MD="+mdDir, "DOCS_FLAGS=-small")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make docs (small) into %s: %v\n%s", tmp, err, tail(out, 60))
	}
	t.Logf("make docs -small took %s", time.Since(start).Round(time.Second))

	// Every file under figDir was written by this run: the folder was empty before it.
	seen := 0
	for _, f := range files {
		orig, _ := os.ReadFile(f)
		filled, err := os.ReadFile(filepath.Join(mdDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, md := range []struct {
			name, text string
		}{{"docs/" + f, string(orig)}, {"the refilled copy of " + f, string(filled)}} {
			for _, l := range links(md.text) {
				switch {
				case strings.HasPrefix(l, "figures/"):
					seen++
					if err := checkFigure(figDir, l); err != nil {
						t.Errorf("%s links %s, which this make docs did not produce: %v", md.name, l, err)
					}
				default: // another page of the course, or of the repository
					if _, err := os.Stat(filepath.FromSlash(l)); err != nil {
						t.Errorf("%s links %s: %v", md.name, l, err)
					}
				}
			}
		}
		// Every generated block was filled by this run, and the copy has exactly the original's blocks.
		origBlocks, filledBlocks := blockRE.FindAllStringSubmatch(string(orig), -1), blockRE.FindAllStringSubmatch(string(filled), -1)
		if len(origBlocks) != len(filledBlocks) {
			t.Errorf("%s: %d generated blocks, the refilled copy %d", f, len(origBlocks), len(filledBlocks))
		}
		for _, b := range filledBlocks {
			if b[1] != b[3] {
				t.Errorf("%s: block %s ends as %s", f, b[1], b[3])
			}
			if strings.TrimSpace(b[2]) == "" {
				t.Errorf("%s: make docs left block %s empty", f, b[1])
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d figure links found in docs/*.md; the pages should link their figures", seen)
	}
}

// TestCommittedLinksResolve: the committed course links only figures that are committed too, and
// pages that exist (the fast tier's share of TestMakeDocsRegeneratesEveryLinkedFigure: it reads
// files, runs nothing).
func TestCommittedLinksResolve(t *testing.T) {
	seen := 0
	for _, f := range chapters(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(b)) {
			switch {
			case strings.HasPrefix(l, "figures/"):
				seen++
				if err := checkFigure("figures", l); err != nil {
					t.Errorf("docs/%s links %s, missing from the committed docs/figures (run make docs): %v", f, l, err)
				}
			default: // another page of the course, or of the repository
				if _, err := os.Stat(filepath.FromSlash(l)); err != nil {
					t.Errorf("docs/%s links %s: %v", f, l, err)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d figure links found in docs/*.md; the pages should link their figures", seen)
	}
}

// repositoryPages are the pages around the course: README.md, CONTRIBUTING.md, docs/reference/*.md and
// the generated CLI reference docs/reference/cli/*.md.
func repositoryPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("reference", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/reference: %v", err)
	}
	cli, err := filepath.Glob(filepath.Join("reference", "cli", "*.md"))
	if err != nil || len(cli) == 0 {
		t.Fatalf("no CLI reference in docs/reference/cli (make docs-ref): %v", err)
	}
	pages = append(pages, cli...)
	return append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "CONTRIBUTING.md"))
}

// TestRepositoryPagesLinksResolve: the pages around the course (repositoryPages) link only files that
// exist, each link read from the page's own folder.
func TestRepositoryPagesLinksResolve(t *testing.T) {
	pages := repositoryPages(t)
	seen := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(b)) {
			seen++
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), filepath.FromSlash(l))); err != nil {
				t.Errorf("%s links %s: %v", page, l, err)
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d links found in %v; the pages should link the course and each other", seen, pages)
	}
}

// headingRE is an ATX heading line.
var headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)

// anchors returns the fragment ids of md's headings as GitHub makes them: lower case, every character
// but letters, digits, spaces, '-' and '_' dropped, spaces turned into '-', a repeated id suffixed -1,
// -2, ... (fenced code blocks hold no headings).
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	var text strings.Builder
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			text.WriteString(line + "\n")
		}
	}
	for _, m := range headingRE.FindAllStringSubmatch(text.String(), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		for i := 1; out[id]; i++ {
			id = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[id] = true
	}
	return out
}

// TestRepositoryPagesAnchorsResolve: every link of the pages around the course (repositoryPages) and of
// the course's pages (docs/*.md) that names a #fragment — of its own page or of another markdown page —
// names a heading that page has.
func TestRepositoryPagesAnchorsResolve(t *testing.T) {
	seen := 0
	for _, page := range append(repositoryPages(t), chapters(t)...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(b), -1) {
			target, frag, ok := strings.Cut(m[1], "#")
			if !ok || strings.Contains(target, "://") || (target != "" && !strings.HasSuffix(target, ".md")) {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			}
			md, err := os.ReadFile(file)
			if err != nil {
				continue // TestRepositoryPagesLinksResolve reports it
			}
			seen++
			if !anchors(string(md))[frag] {
				t.Errorf("%s links %s: %s has no heading #%s", page, m[1], file, frag)
			}
		}
	}
	if seen < 5 {
		t.Errorf("only %d links with a fragment found; the catalogue alone links each of its scenarios", seen)
	}
}

// TestScenarioFileExampleInReference: the example scenario file docs/reference/scenarios.md shows is
// scenarios/examples/two-crashes.yaml as committed (from its name line on: the file's header comment
// says how to run it, which the page says in its own words).
func TestScenarioFileExampleInReference(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("reference", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join("..", "scenarios", "examples", "two-crashes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := string(file)
	want = want[strings.Index(want, "name: two-crashes"):]
	start := strings.Index(string(page), "```yaml\nname: two-crashes")
	if start < 0 {
		t.Fatal("docs/reference/scenarios.md shows no ```yaml block of two-crashes")
	}
	block := string(page[start+len("```yaml\n"):])
	block = block[:strings.Index(block, "```")]
	if block != want {
		t.Errorf("docs/reference/scenarios.md's two-crashes block differs from scenarios/examples/two-crashes.yaml:\n%s\nwant:\n%s", block, want)
	}
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// ---- commands ----

type docCommand struct {
	file string
	line int
	text string // as shown, comment removed
	args []string
}

var commentRE = regexp.MustCompile(`\s+#.*$`)

// shCommands extracts the commands of the ```sh blocks of a page.
func shCommands(file, md string) ([]docCommand, error) {
	var out []docCommand
	in := false
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !in && strings.TrimPrefix(trimmed, "```") == "sh" {
				in = true
			} else {
				in = false
			}
			continue
		}
		if !in || trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		text := strings.TrimSpace(commentRE.ReplaceAllString(trimmed, ""))
		if strings.ContainsAny(text, `"'|&;<>`+"`") {
			return nil, fmt.Errorf("%s:%d: %q: quotes and shell operators are not checked by this test", file, i+1, text)
		}
		args := strings.Fields(text)
		if args[0] != "rebalancelab" && args[0] != "make" {
			return nil, fmt.Errorf("%s:%d: %q is neither a rebalancelab nor a make command", file, i+1, text)
		}
		out = append(out, docCommand{file: file, line: i + 1, text: text, args: args})
	}
	return out, nil
}

func TestDocsCommandsRun(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	// The pages' commands, parsed first: a line of an sh block that is no command this test runs fails
	// it under -short too.
	type page struct {
		file string
		cmds []docCommand
	}
	var pages []page
	total := 0
	for _, f := range chapters(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := shCommands(f, string(b))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(cmds) > 0 {
			pages = append(pages, page{f, cmds})
			total += len(cmds)
		}
	}
	if total < 10 {
		t.Errorf("only %d commands in the pages' sh blocks", total)
	}
	testutil.Needs(t, testutil.ZooKeeper, testutil.Kafka, testutil.Connect, testutil.Streams)

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "rebalancelab"), "./cmd/rebalancelab")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rebalancelab: %v\n%s", err, out)
	}
	// The commands' own PATH finds this build first; exec resolves the program with the test's PATH,
	// so session.command names it by its path.
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, p := range pages {
		t.Run(p.file, func(t *testing.T) {
			s := &session{t: t, root: root, dir: t.TempDir(), env: env, bin: filepath.Join(bin, "rebalancelab"),
				vars: map[string]string{}, produced: map[string]int{}}
			defer s.close()
			for _, c := range p.cmds {
				if !s.run(c) {
					return
				}
			}
			s.finish()
		})
	}
}

// session runs one page's commands.
type session struct {
	t        *testing.T
	root     string
	dir      string // working directory of the rebalancelab commands (their relative outputs)
	env      []string
	bin      string // the rebalancelab built for this test
	vars     map[string]string
	lab      *bgProc
	bg       []*bgProc
	produced map[string]int // topic → records produced by the page's produce commands
}

// bgProc is a long-running command.
type bgProc struct {
	c    docCommand
	cmd  *exec.Cmd
	out  *lockedBuffer
	err  *lockedBuffer
	done chan struct{}
	werr error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (s *session) where(c docCommand) string {
	return fmt.Sprintf("%s:%d `%s`", c.file, c.line, c.text)
}

// expand substitutes $ZK and $BOOTSTRAP; other variables are an error.
func (s *session) expand(c docCommand) ([]string, error) {
	out := make([]string, len(c.args))
	for i, a := range c.args {
		if strings.HasPrefix(a, "$") {
			v, ok := s.vars[a[1:]]
			if !ok {
				return nil, fmt.Errorf("%s uses %s, which no earlier `rebalancelab lab up` of the page provides", s.where(c), a)
			}
			a = v
		} else if strings.Contains(a, "$") {
			return nil, fmt.Errorf("%s: variable inside an argument (%s) is not handled", s.where(c), a)
		}
		out[i] = a
	}
	return out, nil
}

func (s *session) start(c docCommand, args []string) *bgProc {
	p := &bgProc{c: c, out: &lockedBuffer{}, err: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(s.program(args[0]), args[1:]...)
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = s.dir, s.env, p.out, p.err
	if err := p.cmd.Start(); err != nil {
		s.t.Fatalf("%s: %v", s.where(c), err)
	}
	go func() {
		p.werr = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// interrupt sends SIGINT and waits; the command must exit 0.
func (s *session) interrupt(p *bgProc) {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		s.t.Errorf("%s: still running 90 s after SIGINT\nstderr:\n%s", s.where(p.c), tail([]byte(p.err.String()), 30))
		return
	}
	if p.werr != nil {
		s.t.Errorf("%s: exit after SIGINT: %v\nstderr:\n%s", s.where(p.c), p.werr, tail([]byte(p.err.String()), 30))
	}
}

// close kills whatever is still running (after a failure).
func (s *session) close() {
	for _, p := range append(s.bg, s.lab) {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func (s *session) program(name string) string {
	if name == "rebalancelab" {
		return s.bin
	}
	return name
}

// foreground runs a command to completion within limit.
func (s *session) foreground(c docCommand, args []string, limit time.Duration) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.program(args[0]), args[1:]...)
	var o, e bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env, &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name {
			return true
		}
	}
	return false
}

// run runs one command; false stops the page.
func (s *session) run(c docCommand) bool {
	t := s.t
	if c.args[0] == "make" {
		return s.runMake(c)
	}
	args, err := s.expand(c)
	if err != nil {
		t.Error(err)
		return false
	}
	sub := strings.Join(args[1:min(3, len(args))], " ")
	switch {
	case sub == "lab up":
		if s.lab != nil {
			t.Errorf("%s: a second lab up on one page", s.where(c))
			return false
		}
		s.lab = s.start(c, args)
		line, err := firstLine(s.lab, 120*time.Second)
		if err != nil {
			t.Errorf("%s: %v\nstderr:\n%s", s.where(c), err, tail([]byte(s.lab.err.String()), 30))
			return false
		}
		var up struct {
			ZooKeeper string   `json:"zookeeper"`
			Brokers   []string `json:"brokers"`
		}
		if err := json.Unmarshal([]byte(line), &up); err != nil || up.ZooKeeper == "" || len(up.Brokers) == 0 {
			t.Errorf("%s: first line %q is not {\"zookeeper\":...,\"brokers\":[...]}: %v", s.where(c), line, err)
			return false
		}
		s.vars["ZK"], s.vars["BOOTSTRAP"] = up.ZooKeeper, strings.Join(up.Brokers, ",")
		return true
	case strings.HasPrefix(sub, "topic ") || sub == "scenario list" || args[1] == "produce":
		out, errOut, err := s.foreground(c, args, 2*time.Minute)
		if err != nil {
			t.Errorf("%s: %v\nstdout:\n%s\nstderr:\n%s", s.where(c), err, out, tail([]byte(errOut), 30))
			return false
		}
		if args[1] == "produce" {
			n, err := strconv.Atoi(flagValue(args, "--count"))
			if err != nil {
				t.Errorf("%s: --count: %v", s.where(c), err)
				return false
			}
			s.produced[flagValue(args, "--topic")] += n
			if !strings.Contains(out, fmt.Sprintf("produced %d of %d records", n, n)) {
				t.Errorf("%s: summary %q does not say every record was produced", s.where(c), out)
			}
		}
		if sub == "scenario list" && !strings.Contains(out, "herd-effect") {
			t.Errorf("%s: no herd-effect in %q", s.where(c), out)
		}
		return true
	case args[1] == "consumer" || args[1] == "zkconsumer":
		s.bg = append(s.bg, s.start(c, args))
		return true
	case sub == "scenario run":
		return s.runScenario(c, args)
	}
	t.Errorf("%s: this test does not know how to run `rebalancelab %s`; teach it (see the file comment) or drop the command from the page", s.where(c), sub)
	return false
}

// firstLine waits for p's first stdout line.
func firstLine(p *bgProc, limit time.Duration) (string, error) {
	var line string
	var exited bool
	err := testutil.Await(context.Background(), limit, "a first output line", func() bool {
		var ok bool
		if line, _, ok = strings.Cut(p.out.String(), "\n"); ok {
			return true
		}
		select {
		case <-p.done:
			exited = true
		default:
		}
		return exited
	})
	switch {
	case err != nil:
		return "", err
	case exited:
		return "", fmt.Errorf("exited (%v) before printing a line", p.werr)
	}
	return line, nil
}

func (s *session) runScenario(c docCommand, args []string) bool {
	t := s.t
	name := args[3]
	small := []string{args[0], args[1], args[2], name, "--era", "classic", "--consumers", "2", "--partitions", "4"}
	for i := 4; i < len(args); i++ {
		switch args[i] {
		case "--era", "--consumers", "--partitions":
			i++ // replaced above
		default:
			small = append(small, args[i])
		}
	}
	out, errOut, err := s.foreground(c, small, 5*time.Minute)
	jsonFile := flagValue(small, "--json")
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(errOut, "some expected relations do not hold"):
		t.Logf("%s (as %s): ran, and reported relations that did not hold:\n%s", s.where(c), strings.Join(small, " "), out)
	default:
		t.Errorf("%s (as %s): %v\nstdout:\n%s\nstderr:\n%s", s.where(c), strings.Join(small, " "), err, out, tail([]byte(errOut), 30))
		return false
	}
	if !strings.Contains(out, name+" (seed ") || !strings.Contains(out, "classic") {
		t.Errorf("%s: no figure table for %s in the output:\n%s", s.where(c), name, out)
	}
	if jsonFile != "" {
		b, err := os.ReadFile(filepath.Join(s.dir, jsonFile))
		var res struct {
			Scenario string `json:"scenario"`
			Eras     []struct {
				Era string `json:"era"`
			} `json:"eras"`
		}
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil || res.Scenario != name || len(res.Eras) != 1 || res.Eras[0].Era != "classic" {
			t.Errorf("%s: --json %s: %v, got scenario %q eras %v", s.where(c), jsonFile, err, res.Scenario, res.Eras)
		}
	}
	if dir := flagValue(small, "--report"); dir != "" {
		if st, err := os.Stat(filepath.Join(s.dir, dir, "index.html")); err != nil || st.Size() == 0 {
			t.Errorf("%s: --report %s: no index.html: %v", s.where(c), dir, err)
		}
	}
	return true
}

var makeVarRE = regexp.MustCompile(`^[A-Z_]+=.*$`)

func (s *session) runMake(c docCommand) bool {
	t := s.t
	if len(c.args) < 2 || c.args[1] != "docs" {
		t.Errorf("%s: only `make docs` is run by this test", s.where(c))
		return false
	}
	flags := "-check"
	vars := []string{"docs", "DOCS_OUT=" + filepath.Join(s.dir, "figures"), "DOCS_MD="}
	for _, a := range c.args[2:] {
		if !makeVarRE.MatchString(a) {
			t.Errorf("%s: %q is not VAR=value", s.where(c), a)
			return false
		}
		if v, ok := strings.CutPrefix(a, "DOCS_FLAGS="); ok {
			flags = v + " -check"
			continue
		}
		if strings.HasPrefix(a, "DOCS_OUT=") || strings.HasPrefix(a, "DOCS_MD=") {
			continue // the check writes nothing, but keep it out of the repository anyway
		}
		vars = append(vars, a)
	}
	vars = append(vars, "DOCS_FLAGS="+flags)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", vars...)
	cmd.Dir = s.root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "chapters: ") {
		t.Errorf("%s (as make %s): %v\n%s", s.where(c), strings.Join(vars, " "), err, tail(out, 30))
		return false
	}
	t.Logf("%s: make %s:\n%s", s.where(c), strings.Join(vars, " "), tail(out, 12))
	if only := flagValueMake(c.args, "DOCS_ONLY"); only != "" && !strings.Contains(string(out), "chapters: "+strings.ReplaceAll(only, ",", " ")) {
		t.Errorf("%s: the plan does not select %s:\n%s", s.where(c), only, out)
	}
	return true
}

func flagValueMake(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// finish waits for the background consumers to have printed what the page produced, then
// interrupts them and the lab.
func (s *session) finish() {
	t := s.t
	type key struct{ group, topic string }
	groups := map[key][]*bgProc{}
	for _, p := range s.bg {
		if !hasFlag(p.c.args, "--print") {
			continue
		}
		k := key{flagValue(p.c.args, "--group"), flagValue(p.c.args, "--topic")}
		groups[k] = append(groups[k], p)
	}
	distinct := func(ps []*bgProc, topic string) (int, error) {
		seen := map[string]bool{}
		for _, p := range ps {
			sc := bufio.NewScanner(strings.NewReader(p.out.String()))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 4 || f[0] != topic {
					return 0, fmt.Errorf("%s printed %q, not \"%s partition offset value\"", s.where(p.c), sc.Text(), topic)
				}
				seen[f[1]+"/"+f[2]] = true
			}
		}
		return len(seen), nil
	}
	for k, ps := range groups {
		want := s.produced[k.topic]
		if want == 0 {
			t.Errorf("group %s prints topic %s, to which the page produces nothing", k.group, k.topic)
			continue
		}
		var n int
		var badLine error
		err := testutil.Await(context.Background(), 90*time.Second, fmt.Sprintf("group %s to print the %d records produced to %s", k.group, want, k.topic), func() bool {
			n, badLine = distinct(ps, k.topic)
			return badLine != nil || n == want
		})
		switch {
		case badLine != nil:
			t.Error(badLine)
		case err != nil:
			var errs []string
			for _, p := range ps {
				errs = append(errs, s.where(p.c)+":\n"+tail([]byte(p.err.String()), 15))
			}
			t.Errorf("%v: %d distinct printed\n%s", err, n, strings.Join(errs, "\n"))
		default:
			t.Logf("group %s printed each of the %d records produced to %s (%d consumers)", k.group, want, k.topic, len(ps))
		}
	}
	var wg sync.WaitGroup
	for _, p := range s.bg {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.interrupt(p)
		}()
	}
	wg.Wait()
	if s.lab != nil {
		s.interrupt(s.lab)
	}
}
