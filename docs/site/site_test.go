package site

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rebalancelab/rebalancelab/internal/testutil"
)

// pageView is what one page shows, as the script in check reads it from the loaded DOM.
type pageView struct {
	// Refs: every href and src of the page (a, link, script, img, iframe, source), resolved to absolute URLs.
	Refs []string `json:"refs"`
	// BrokenImages: the src of every img not loaded (naturalWidth 0).
	BrokenImages []string `json:"brokenImages"`
	// Mermaid: the rendered mermaid diagrams (Material's div.mermaid) and their heights in CSS px.
	Mermaid []float64 `json:"mermaid"`
	// Eras and Lanes: a report's div.era-lanes and, per era, its ownership lanes (div.lane) with a
	// non-empty box; Segs: its ownership segments (div.seg) with a non-empty box.
	Eras  int   `json:"eras"`
	Lanes []int `json:"lanes"`
	Segs  int   `json:"segs"`
}

const viewJS = `(() => {
	const refs = [];
	for (const e of document.querySelectorAll('a[href], link[href], script[src], img[src], iframe[src], source[src]')) {
		refs.push(e.hasAttribute('href') ? e.href : e.src);
	}
	const box = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
	const eras = Array.from(document.querySelectorAll('div.era-lanes'));
	return {
		refs: refs,
		brokenImages: Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),
		mermaid: Array.from(document.querySelectorAll('div.mermaid')).map(e => e.getBoundingClientRect().height),
		eras: eras.length,
		lanes: eras.map(era => Array.from(era.querySelectorAll('div.lane[data-partition]')).filter(box).length),
		segs: Array.from(document.querySelectorAll('div.lane div.seg[data-owner]')).filter(box).length,
	};
})()`

// reportPage: an HTML report of docs/figures/ as the site publishes it.
var reportPage = regexp.MustCompile(`^docs/figures/[^/]+/index\.html$`)

// TestSiteInChromium builds the documentation site as `make site` does (scripts/site.sh into site/)
// and loads every HTML page of it in headless Chromium (Debian's chromium, which make test installs)
// through file:// URLs, as a reader opens the folder: every local href and src resolves to a file of
// the site (no directory URL, nothing outside the folder), every image loads (naturalWidth > 0), no
// console error, exception or failed load is logged, every mermaid block renders as a diagram, and every
// report (docs/figures/*/index.html) is linked from a page and renders its ownership lanes (div.lane
// per partition per era, scenarios/report/html.go) with their segments. Search works offline: a query
// typed on the home page lists results that are pages of the site. It writes screenshots of the
// home page, of the first report and of the first mermaid diagram into site/screenshots/.
func TestSiteInChromium(t *testing.T) {
	testutil.Needs(t, testutil.Chromium, testutil.Site)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (scripts/deps.sh installs Debian's chromium): %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "site")
	build := exec.Command(filepath.Join(root, "scripts", "site.sh"))
	build.Env = append(os.Environ(), "SITE_DIR="+out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/site.sh: %v\n%s", err, b)
	} else {
		t.Logf("%s", strings.TrimSpace(string(b)))
	}

	var pages []string
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
			rel, _ := filepath.Rel(out, p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pages)
	for _, want := range []string{"index.html", "docs/index.html", "docs/03-group-protocol.html", "docs/design.html"} {
		if !slices.Contains(pages, want) {
			t.Fatalf("the site has no %s (pages: %v)", want, pages)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// What the page logs: console errors, uncaught exceptions, log entries of level error (a resource
	// that failed to load). The listener runs on chromedp's goroutine; reads and resets take mu.
	var (
		mu     sync.Mutex
		logged []string
	)
	if err := chromedp.Listen(bctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
				return
			}
			var args []string
			for _, a := range e.Args {
				args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			msg = "console." + string(e.Type) + ": " + strings.Join(args, " ")
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level != cdplog.EntryLevelError {
				return
			}
			msg = "log: " + e.Entry.Text + " " + e.Entry.URL
		default:
			return
		}
		mu.Lock()
		logged = append(logged, msg)
		mu.Unlock()
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if _, err := chromedp.Call(bctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium: Log.enable: %v", err)
	}
	shots := filepath.Join(out, "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	linked := map[string]bool{} // every site file some page links to, relative to out
	var reports, mermaidPages int
	for _, page := range pages {
		file := filepath.Join(out, filepath.FromSlash(page))
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		wantMermaid := strings.Count(string(src), `<pre class="mermaid">`)
		mu.Lock()
		logged = nil
		mu.Unlock()
		if err := chromedp.Do(bctx, chromedp.Navigate((&url.URL{Scheme: "file", Path: file}).String())); err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if wantMermaid > 0 {
			// Material replaces each pre.mermaid by a div.mermaid once mermaid has drawn it.
			if _, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf(
				`document.querySelectorAll('div.mermaid').length === %d && Array.from(document.querySelectorAll('div.mermaid')).every(e => e.getBoundingClientRect().height > 0)`,
				wantMermaid), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
				t.Errorf("%s: %d mermaid blocks not drawn: %v", page, wantMermaid, err)
			}
		}
		v, err := chromedp.Run(bctx, chromedp.Evaluate[pageView](viewJS))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		mu.Lock()
		errs := slices.Clone(logged)
		mu.Unlock()
		for _, e := range errs {
			t.Errorf("%s: %s", page, e)
		}
		for _, ref := range v.Refs {
			target, ok, err := localFile(ref, out)
			switch {
			case err != nil:
				t.Errorf("%s: link %s: %v", page, ref, err)
			case ok:
				linked[target] = true
			}
		}
		for _, img := range v.BrokenImages {
			t.Errorf("%s: image %s did not load (naturalWidth 0)", page, img)
		}
		if wantMermaid > 0 {
			mermaidPages++
			for i, h := range v.Mermaid {
				if h < 100 {
					t.Errorf("%s: mermaid diagram %d is %.0f px high: not drawn", page, i, h)
				}
			}
			if mermaidPages == 1 {
				shot(t, bctx, filepath.Join(shots, "mermaid.png"), chromedp.Screenshot(chromedp.CSS("div.mermaid")))
			}
		}
		if reportPage.MatchString(page) {
			reports++
			if v.Eras == 0 || v.Segs == 0 || slices.Contains(v.Lanes, 0) {
				t.Errorf("%s: the report renders %d eras, ownership lanes per era %v, %d segments: want every era with lanes and segments", page, v.Eras, v.Lanes, v.Segs)
			}
			if reports == 1 {
				shot(t, bctx, filepath.Join(shots, "report-"+filepath.Base(filepath.Dir(file))+".png"), chromedp.FullScreenshot(100))
			}
			t.Logf("%s: %d eras, lanes %v, %d segments", page, v.Eras, v.Lanes, v.Segs)
		}
		if page == "index.html" {
			shot(t, bctx, filepath.Join(shots, "home.png"), chromedp.CaptureScreenshot())
		}
	}
	// Search runs offline: Material's worker through the iframe-worker shim, the index inlined by the
	// offline plugin. A query typed on the home page lists results whose links are pages of the site.
	mu.Lock()
	logged = nil
	mu.Unlock()
	const query = "coordinator"
	if err := chromedp.Do(bctx,
		chromedp.Navigate((&url.URL{Scheme: "file", Path: filepath.Join(out, "index.html")}).String()),
		chromedp.SendKeys(chromedp.CSS("input.md-search__input"), query),
	); err != nil {
		t.Errorf("search: %v", err)
	} else if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll('.md-search-result__item').length > 0`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Errorf("search for %q: no result listed: %v", query, err)
	} else if hits, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.md-search-result__item > a')).map(a => a.href)`)); err != nil {
		t.Errorf("search: %v", err)
	} else {
		for _, h := range hits {
			if _, ok, err := localFile(h, out); err != nil || !ok {
				t.Errorf("search for %q: result %s is not a page of the site: %v", query, h, err)
			}
		}
		t.Logf("search for %q: %d results", query, len(hits))
	}
	mu.Lock()
	for _, e := range logged {
		t.Errorf("search: %s", e)
	}
	mu.Unlock()

	if reports == 0 {
		t.Errorf("the site has no report (docs/figures/*/index.html)")
	}
	if mermaidPages == 0 {
		t.Errorf("no page of the site has a mermaid diagram (docs/03-group-protocol.md has one)")
	}
	for _, page := range pages {
		if reportPage.MatchString(page) && !linked[page] {
			t.Errorf("no page links the report %s", page)
		}
	}
	t.Logf("%d pages loaded, %d reports, %d pages with mermaid, %d site files linked", len(pages), reports, mermaidPages, len(linked))
}

// localFile checks a resolved href or src: a file: URL must name a regular file inside out (its path
// relative to out returned, ok true); other schemes (http, mailto, data, …) are not the site's (ok false).
func localFile(ref, out string) (string, bool, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", false, err
	}
	if u.Scheme != "file" {
		return "", false, nil
	}
	if strings.HasSuffix(u.Path, "/") {
		return "", false, fmt.Errorf("a directory URL (the file system shows a listing, not a page)")
	}
	rel, err := filepath.Rel(out, filepath.FromSlash(u.Path))
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", false, fmt.Errorf("outside the site folder %s", out)
	}
	st, err := os.Stat(filepath.FromSlash(u.Path))
	if err != nil {
		return "", false, fmt.Errorf("no such file in the site")
	}
	if !st.Mode().IsRegular() {
		return "", false, fmt.Errorf("not a file")
	}
	return filepath.ToSlash(rel), true, nil
}

// shot runs a screenshot action and writes its PNG to path.
func shot(t *testing.T, ctx context.Context, path string, capture chromedp.Action[[]byte]) {
	t.Helper()
	buf, err := chromedp.Run(ctx, capture)
	if err != nil {
		t.Errorf("screenshot %s: %v", path, err)
		return
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Error(err)
	}
}
