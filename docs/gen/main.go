// Command gen produces every figure of the course in docs/ from real runs: a real ZooKeeper, the
// project's broker, its two consumers and its scenario runner. Nothing in docs/figures is drawn by
// hand, and the numbers the chapters quote sit in generated blocks that this program rewrites.
//
//	go run ./docs/gen -out DIR [-md DIR] [-small] [-only ch1,ch4] [-seed S] [-version V] [-bin B] [-check]
//
// -out DIR receives the figure files (docs/figures for the committed course). -md DIR names the
// chapters (*.md) whose generated blocks are refilled in place:
//
//	<!-- BEGIN GENERATED ch4-summary -->
//	...replaced on every run...
//	<!-- END GENERATED ch4-summary -->
//
// A block that names content this run did not produce is an error unless -only left its chapter
// out. -small runs the scenarios at their smallest sizes and the lab chapters beside the scenarios
// (two goroutines), for tests; without it everything runs one after the other at the sizes the
// committed figures use. -bin names the rebalancelab binary, whose processes chapter 8's brokers are
// (it kills them) and chapter 4's member pools (its sweep's N=256). -check validates the flags, prints the plan and exits (nothing runs).
// `make docs` is `go run ./docs/gen -out docs/figures -md docs`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rebalancelab/rebalancelab/scenarios"
)

// chapters in course order; -only takes these names.
var chapters = []string{"ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8"}

// config is the parsed command line.
type config struct {
	out     string
	md      string
	small   bool
	only    map[string]bool
	seed    int64
	version string
	check   bool
	// bin is the rebalancelab binary: chapter 8's scenarios kill brokers, which run as its processes;
	// chapter 4's sweep runs its members above scenarios.MaxInProcessMembers in pools of its processes.
	bin string
	// allowDirty lets a full-size run record figures from a working tree with uncommitted changes
	// (a version ending in "-dirty"), which the committed course must not carry.
	allowDirty bool
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
	if cfg.check {
		fmt.Println(cfg.plan())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logrus.SetLevel(logrus.WarnLevel) // the lab's, brokers' and members' logs: warnings only
	if err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line. Errors: a missing -out, an unknown chapter in -only.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var only string
	fs.StringVar(&cfg.out, "out", "", "directory for the figure files (required; docs/figures for the committed course)")
	fs.StringVar(&cfg.md, "md", "", "directory of the chapters whose generated blocks are refilled in place (empty: none)")
	fs.BoolVar(&cfg.small, "small", false, "smallest sizes, lab chapters beside the scenarios (for tests)")
	fs.StringVar(&only, "only", "", "comma-separated chapters to regenerate ("+strings.Join(chapters, ",")+"); empty: all")
	fs.Int64Var(&cfg.seed, "seed", 1, "seed of the scenario scripts")
	fs.StringVar(&cfg.version, "version", "dev", "rebalancelab version recorded in the result JSON")
	fs.BoolVar(&cfg.check, "check", false, "validate the flags, print the plan and exit")
	fs.StringVar(&cfg.bin, "bin", "", "the rebalancelab binary (chapter 8 runs its brokers as processes of it, chapter 4 its sweep's member pools; make docs passes bin/rebalancelab)")
	fs.BoolVar(&cfg.allowDirty, "allow-dirty", false, "full sizes: accept a -version ending in -dirty (uncommitted changes)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.out == "" {
		return cfg, errors.New("-out DIR is required (docs/figures for the committed course)")
	}
	sel, err := parseOnly(only)
	if err != nil {
		return cfg, err
	}
	cfg.only = sel
	if !cfg.small && !cfg.check && !cfg.allowDirty && strings.HasSuffix(cfg.version, "-dirty") { // -check writes nothing
		return cfg, fmt.Errorf("-version %s: the working tree has uncommitted changes; commit them first, so that every "+
			"figure's caption names the commit it comes from (or pass -allow-dirty)", cfg.version)
	}
	if sel["ch8"] && cfg.bin == "" && !cfg.check { // -check runs nothing
		return cfg, errors.New("-bin is required for ch8 (its scenarios kill brokers, which run as processes of the rebalancelab binary): " +
			"-bin bin/rebalancelab after make build, as make docs does")
	}
	if n := sizesFor(cfg.small).sweep.maxN(); sel["ch4"] && n > scenarios.MaxInProcessMembers && cfg.bin == "" && !cfg.check {
		return cfg, fmt.Errorf("-bin is required for ch4 (its sweep's N=%d runs its members in member pools, processes of the rebalancelab binary): "+
			"-bin bin/rebalancelab after make build, as make docs does", n)
	}
	return cfg, nil
}

// parseOnly turns "ch1, ch4" into a set; "" selects every chapter. Errors name the unknown chapter.
func parseOnly(s string) (map[string]bool, error) {
	sel := map[string]bool{}
	if strings.TrimSpace(s) == "" {
		for _, c := range chapters {
			sel[c] = true
		}
		return sel, nil
	}
	for _, part := range strings.Split(s, ",") {
		c := strings.TrimSpace(part)
		known := false
		for _, k := range chapters {
			known = known || k == c
		}
		if !known {
			return nil, fmt.Errorf("-only: unknown chapter %q (known: %s)", c, strings.Join(chapters, ", "))
		}
		sel[c] = true
	}
	return sel, nil
}

// plan describes what a run with cfg does.
func (cfg config) plan() string {
	var sel []string
	for _, c := range chapters {
		if cfg.only[c] {
			sel = append(sel, c)
		}
	}
	sz := sizesFor(cfg.small)
	var b strings.Builder
	fmt.Fprintf(&b, "chapters: %s\nfigures into: %s\n", strings.Join(sel, " "), cfg.out)
	if cfg.md != "" {
		fmt.Fprintf(&b, "blocks refilled in: %s/*.md\n", cfg.md)
	}
	var runs []string
	for _, s := range sz.scenarioRuns(cfg.only) {
		runs = append(runs, s.describe())
	}
	if len(runs) == 0 {
		runs = []string{"none"}
	}
	fmt.Fprintf(&b, "scenario runs (seed %d):\n  %s\n", cfg.seed, strings.Join(runs, "\n  "))
	return strings.TrimRight(b.String(), "\n ")
}

// run generates the selected chapters into cfg.out and refills the blocks of cfg.md.
func run(ctx context.Context, cfg config, progress io.Writer) error {
	start := time.Now()
	out, err := newOutput(cfg.out)
	if err != nil {
		return err
	}
	mode := "full"
	if cfg.small {
		mode = "small (-small)"
	}
	out.caption = fmt.Sprintf("<sub>Generated by `docs/gen` from rebalancelab %s (%s sizes, seed %d).</sub>", cfg.version, mode, cfg.seed)
	g := &generator{cfg: cfg, out: out, sz: sizesFor(cfg.small), progress: progress}
	if err := g.generate(ctx); err != nil {
		return err
	}
	// Each chapter keeps its own record: regenerating one chapter rewrites its line only.
	for _, c := range chapters {
		if cfg.only[c] {
			out.block(c+"-runinfo", fmt.Sprintf("- `%s`: rebalancelab %s, %s sizes, seed %d, on %s.", c, cfg.version, mode, cfg.seed,
				time.Now().UTC().Format("2006-01-02")))
		}
	}
	if cfg.md != "" {
		if err := fillDir(cfg.md, out.blocks, cfg.only); err != nil {
			return err
		}
	}
	files := out.files()
	sort.Strings(files)
	g.logf("wrote %d files into %s in %s", len(files), cfg.out, time.Since(start).Round(time.Second))
	return nil
}
