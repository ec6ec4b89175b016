package site

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"ptah.run/operator/recorder/labenv"
)

// chromium finds Debian's chromium; the Makefile's host-deps installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("no chromium on PATH: install Debian's chromium (make host-deps), or set CHROMIUM")
	return ""
}

// browser starts headless Chromium with a fresh profile and the flags that
// keep it from reaching for a network this machine does not have.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// console collects what a tab writes to its console at level error, and
// the exceptions nothing caught.
type console struct {
	mu     sync.Mutex
	errors []string
}

func listen(t *testing.T, tab context.Context) *console {
	t.Helper()
	c := &console{}
	err := chromedp.Listen(tab, func(ev any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				msg := "console." + string(ev.Type)
				for _, a := range ev.Args {
					msg += " " + string(a.Value)
				}
				c.errors = append(c.errors, msg)
			}
		case *runtime.EventExceptionThrown:
			c.errors = append(c.errors, "uncaught: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				c.errors = append(c.errors, ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *console) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.errors
	c.errors = nil
	return e
}

// builtSite builds the fixture recording with the fixture lab's credentials
// and serves it on a loopback port.
func builtSite(t *testing.T) (string, *Site, string) {
	t.Helper()
	dir := t.TempDir()
	writeRecording(t, filepath.Join(dir, "recording"), fixture())
	out := filepath.Join(dir, "public")
	s, err := Build(Options{Recording: filepath.Join(dir, "recording"), Out: out, Secrets: fixtureLab(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(out))
	t.Cleanup(srv.Close)
	return out, s, srv.URL + "/"
}

// committedSite builds the recording committed in demo/recordings, with the
// lab's credentials when a lab is up, and serves it on a loopback port.
func committedSite(t *testing.T) (string, *Site, string) {
	t.Helper()
	rec := filepath.Join("..", "demo", "recordings")
	var secrets []labenv.Secret
	if lab, err := labenv.Load(filepath.Join("..", "demo", ".lab", "environment")); err == nil {
		secrets = lab.Secrets
	}
	out := filepath.Join(t.TempDir(), "public")
	s, err := Build(Options{Recording: rec, Out: out, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(out))
	t.Cleanup(srv.Close)
	return out, s, srv.URL + "/"
}

// TestSiteInChromium checks the site built from the fixture and, when one is
// committed, from the published recording itself.
func TestSiteInChromium(t *testing.T) {
	t.Run("fixture", func(t *testing.T) { checkInChromium(t, builtSite) })
	if _, err := os.Stat(filepath.Join("..", "demo", "recordings", "runs.json")); err == nil {
		t.Run("committed recording", func(t *testing.T) { checkInChromium(t, committedSite) })
	}
}

func checkInChromium(t *testing.T, built func(*testing.T) (string, *Site, string)) {
	out, s, base := built(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	bctx := browser(t, ctx)

	t.Run("every page loads without a console error, every link resolves, and axe-core finds nothing", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx)
		defer cancel()
		if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		con := listen(t, tab)
		pages := crawl(t, tab, con, base+"index.html")
		if want := len(s.Pages) + 1; len(pages) != want {
			t.Errorf("crawled %d pages %v, want the catalog and %d scenario pages", len(pages), pages, len(s.Pages))
		}
	})

	t.Run("the transcript is there with JavaScript off", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx)
		defer cancel()
		if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(tab, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Pages {
			if err := chromedp.Do(tab, chromedp.Navigate(base+p.Href())); err != nil {
				t.Fatal(err)
			}
			shown, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(".transcript")))
			if err != nil {
				t.Fatal(err)
			}
			// Exactly the session, line for line, nothing added.
			if got, want := nonEmpty(strings.Split(shown, "\n")), nonEmpty(p.TranscriptLines()); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s without JavaScript: the transcript reads\n%s\nwant\n%s", p.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// Colour and bold are drawn from the recorded bytes, each run
			// in a colour of its own.
			styled := eval[[]string](t, tab, `Array.from(document.querySelectorAll(".transcript .line span[class]"), e => e.className + "=" + e.textContent + "=" + (getComputedStyle(e).color !== getComputedStyle(e.parentNode).color || getComputedStyle(e).fontWeight !== getComputedStyle(e.parentNode).fontWeight || e.className === "italic" || e.className === "underline"))`)
			if want := styledRuns(p); strings.Join(styled, "|") != strings.Join(want, "|") {
				t.Errorf("%s without JavaScript: styled runs %q, want %q", p.ID, styled, want)
			}
			if shown := eval[bool](t, tab, `[".controls", ".seek", ".keys-help"].some(s => document.querySelector(s).offsetParent !== null)`); shown {
				t.Errorf("%s without JavaScript: the player's controls are shown, and cannot work", p.ID)
			}
			// The page says so itself: Play cannot work, so it is not offered.
			state, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("figure.replay").dataset.state || "static"`))
			if err == nil && state != "static" {
				t.Errorf("%s: the player ran with JavaScript off (state %q)", p.ID, state)
			}
		}
	})

	t.Run("every control works by keyboard alone", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx)
		defer cancel()
		con := listen(t, tab)
		checkControls(t, tab, base, s.Pages[0])
		if errs := con.take(); len(errs) > 0 {
			t.Errorf("console errors: %q", errs)
		}
	})

	perPage := map[string]func(*testing.T, context.Context, string, *Page){
		"Play types the last step out and ends holding the whole session": checkPlay,
		"each step shows its phase, reached with . and ,":                 checkPhases,
		"deep links open at a step or a time":                             checkDeepLinks,
		"each claim links to its moment and shows its evidence":           checkEvidence,
	}
	for name, check := range perPage {
		t.Run(name, func(t *testing.T) {
			tab, cancel := chromedp.NewContext(bctx)
			defer cancel()
			con := listen(t, tab)
			for _, p := range s.Pages {
				check(t, tab, base, p)
				if errs := con.take(); len(errs) > 0 {
					t.Errorf("%s: console errors: %q", p.ID, errs)
				}
			}
		})
	}

	t.Run("the checks table has one held row per recorded check", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(bctx)
		defer cancel()
		for _, p := range s.Pages {
			if err := chromedp.Do(tab, chromedp.Navigate(base+p.Href())); err != nil {
				t.Fatal(err)
			}
			rows, err := chromedp.Run(tab, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll("table.checks tbody tr"), tr => Array.from(tr.cells, td => td.textContent).slice(0, 3))`))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(p.Checks) {
				t.Fatalf("%s: %d rows, the recording has %d checks", p.ID, len(rows), len(p.Checks))
			}
			for i, row := range rows {
				held := "yes"
				if r := p.Checks[i].Runs; r != "" {
					held += ", " + r
				}
				want := []string{fmt.Sprint(p.Checks[i].Step), p.Checks[i].Claim, held}
				if strings.Join(row, "|") != strings.Join(want, "|") {
					t.Errorf("%s row %d = %q, want %q", p.ID, i+1, row, want)
				}
			}
		}
	})

	t.Run("no credential of the lab is anywhere in the site", func(t *testing.T) {
		err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, v := range []string{plantedPassword, plantedSecret} {
				for _, form := range []string{v, url.QueryEscape(v), strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "+", "&#43;").Replace(v)} {
					if strings.Contains(string(data), form) {
						t.Errorf("%s holds a credential of the fixture lab", path)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// crawl visits every page reachable from start, failing on a console error,
// a link that does not resolve, or a resource from another origin. It
// returns the pages it visited.
func crawl(t *testing.T, tab context.Context, con *console, start string) []string {
	t.Helper()
	origin, _ := url.Parse(start)
	seen := map[string]bool{start: true}
	queue := []string{start}
	var pages []string
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		if err := chromedp.Do(tab, chromedp.Navigate(page)); err != nil {
			t.Fatalf("load %s: %v", page, err)
		}
		links, err := chromedp.Run(tab, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("a[href], link[href], script[src], img[src], meta[property='og:image']"), e => e.href || e.src || new URL(e.content, location.href).href)`))
		if err != nil {
			t.Fatal(err)
		}
		if errs := con.take(); len(errs) > 0 {
			t.Errorf("%s: console errors: %q", page, errs)
		}
		axeCheck(t, tab, page)
		pages = append(pages, page)
		for _, link := range links {
			u, err := url.Parse(link)
			if err != nil {
				t.Errorf("%s links to %q: %v", page, link, err)
				continue
			}
			if u.Scheme == "data" {
				continue
			}
			if u.Host != origin.Host || u.Scheme != origin.Scheme {
				t.Errorf("%s loads or links %s: everything must be served by the site itself", page, link)
				continue
			}
			u.Fragment = ""
			target := u.String()
			if seen[target] {
				continue
			}
			seen[target] = true
			resp, err := http.Get(target)
			if err != nil {
				t.Errorf("%s links to %s: %v", page, target, err)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s links to %s: %s", page, target, resp.Status)
				continue
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				queue = append(queue, target)
			}
		}
	}
	return pages
}

// inOrder returns the first of lines that text does not hold after the
// lines before it, or "" when it holds them all in order.
func inOrder(text string, lines []string) string {
	rest := text
	for _, l := range lines {
		i := strings.Index(rest, l)
		if i < 0 {
			return l
		}
		rest = rest[i+len(l):]
	}
	return ""
}

// styledRuns lists the page's styled runs as the JavaScript-off test reads
// them: class, text, and that the run is drawn differently from its line.
func styledRuns(p *Page) []string {
	var out []string
	for _, s := range p.Steps {
		for _, l := range s.Lines {
			for _, seg := range l.Segments {
				if seg.Class != "" {
					out = append(out, seg.Class+"="+seg.Text+"=true")
				}
			}
		}
	}
	return out
}

func nonEmpty(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}
