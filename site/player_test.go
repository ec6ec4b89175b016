package site

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The player's controls, as the keyboard must reach them.
var controlSelectors = []string{"button.play", "button.restart", "button.prev", "button.next", "select.speed", "select.chapters", "button.show-transcript", "button.keys", "input.scrubber", "a.cast"}

// axeSource is axe-core as npm installed it from site/package-lock.json.
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("node_modules", "axe-core", "axe.min.js"))
	return string(b), err
})

// axeCheck runs axe-core's WCAG 2.2 A and AA rules (and its best
// practices) on the tab's page as it is now, failing on any violation.
func axeCheck(t *testing.T, tab context.Context, where string) {
	t.Helper()
	for _, v := range axeViolations(t, tab, where) {
		t.Errorf("%s: %s", where, v)
	}
}

func axeViolations(t *testing.T, tab context.Context, where string) []string {
	t.Helper()
	src, err := axeSource()
	if err != nil {
		t.Fatalf("axe-core is not installed (make site-deps runs npm ci in site/): %v", err)
	}
	loaded, err := chromedp.Run(tab, chromedp.Evaluate[bool](`typeof axe !== "undefined"`))
	if err != nil {
		t.Fatal(err)
	}
	if !loaded {
		if _, err := chromedp.Run(tab, chromedp.Evaluate[chromedp.Void](src+"\n;undefined")); err != nil {
			t.Fatalf("load axe-core into %s: %v", where, err)
		}
	}
	vs, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]}})
		.then(r => r.violations.flatMap(v => v.nodes.map(n => v.id + " (" + v.help + ") at " + n.target.join(" ") + ": " + n.failureSummary)))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core on %s: %v", where, err)
	}
	return vs
}

// TestAxeFindsViolations keeps the accessibility check honest: a page with
// an unlabelled button and text too faint to read fails it.
func TestAxeFindsViolations(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>bad</title></head><body><main><h1>Bad</h1>`+
			`<button type="button"></button><p style="color:#999;background:#fff">faint</p></main></body></html>`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tab := browser(t, ctx)
	open(t, tab, srv.URL)
	found := strings.Join(axeViolations(t, tab, "the bad page"), "\n")
	for _, rule := range []string{"button-name", "color-contrast"} {
		if !strings.Contains(found, rule+" (") {
			t.Errorf("axe-core did not report %s on a page that breaks it; it reported:\n%s", rule, found)
		}
	}
}

// open loads url afresh (a new document, even when only the fragment
// differs from the page shown).
func open(t *testing.T, tab context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank"), chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
}

func eval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func evalAsync[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// press focuses the element sel (when set) and types keys, as a keyboard does.
func press(t *testing.T, tab context.Context, sel, keys string) {
	t.Helper()
	var actions []chromedp.Action[chromedp.Void]
	if sel != "" {
		actions = append(actions, chromedp.Focus(chromedp.CSS(sel), chromedp.NodeVisible))
	}
	actions = append(actions, chromedp.KeyEvent(keys))
	if err := chromedp.Do(tab, actions...); err != nil {
		t.Fatalf("press %q on %q: %v", keys, sel, err)
	}
}

// player is what the page shows of the player.
type player struct {
	State    string `json:"state"`
	Time     string `json:"time"`
	Step     string `json:"step"`
	Phase    string `json:"phase"`
	Progress string `json:"progress"`
	Chapter  string `json:"chapter"`
	Terminal string `json:"terminal"`
	Focused  bool   `json:"focused"`
	Help     bool   `json:"help"`
	Expanded string `json:"expanded"`
	Play     string `json:"play"`
}

func read(t *testing.T, tab context.Context) player {
	t.Helper()
	return eval[player](t, tab, `(() => {
		const f = document.querySelector("figure.replay"), ph = f.querySelector(".phase"), term = f.querySelector(".terminal");
		return {state: f.dataset.state || "", time: f.dataset.time || "", step: f.dataset.step || "",
			phase: ph.hidden ? "" : ph.textContent, progress: f.querySelector(".progress").textContent,
			chapter: f.querySelector("select.chapters").value, terminal: term && !term.hidden ? term.textContent : "",
			focused: f.contains(document.activeElement), help: !f.querySelector(".keys-help").hidden,
			expanded: f.querySelector("button.keys").getAttribute("aria-expanded"), play: f.querySelector("button.play").textContent};
	})()`)
}

// shownUpTo is the transcript as the terminal shows it at the start of
// step i (its note shown, its command not yet typed).
func shownUpTo(p *Page, i int) []string {
	var lines []string
	for _, s := range p.Steps[:i] {
		lines = append(lines, (&Page{Steps: []Step{s}}).TranscriptLines()...)
	}
	return append(lines, "# "+p.Steps[i].Note)
}

// endsWith reports whether the terminal's text ends with the line.
func endsWith(terminal, line string) bool {
	return strings.HasSuffix(strings.TrimRight(terminal, "\n"), line)
}

// checkControls uses every control by keyboard alone on p: each is reached
// by Tab with its focus visible, and each does what it says.
func checkControls(t *testing.T, tab context.Context, base string, p *Page) {
	open(t, tab, base+p.Href())
	eval[chromedp.Void](t, tab, `localStorage.clear()`)
	open(t, tab, base+p.Href())
	reached := eval[[]string](t, tab, `[]`)
	for i := 0; i < 60 && len(reached) < len(controlSelectors); i++ {
		press(t, tab, "", kb.Tab)
		focus := eval[struct {
			Match   string `json:"match"`
			Outline string `json:"outline"`
		}](t, tab, fmt.Sprintf(`(() => { const e = document.activeElement; const m = %s.find(s => e.matches(s)) || "";
			const st = getComputedStyle(e); return {match: m, outline: st.outlineStyle + " " + st.outlineWidth}; })()`, jsList(controlSelectors)))
		if focus.Match == "" {
			continue
		}
		if strings.HasPrefix(focus.Outline, "none") || strings.HasSuffix(focus.Outline, " 0px") {
			t.Errorf("%s: %s has focus but no visible outline (%s)", p.ID, focus.Match, focus.Outline)
		}
		if !contains(reached, focus.Match) {
			reached = append(reached, focus.Match)
		}
	}
	for _, c := range controlSelectors {
		if !contains(reached, c) {
			t.Errorf("%s: Tab never reaches %s (reached %q)", p.ID, c, reached)
		}
	}
	if got := read(t, tab); got.State != "ready" || got.Terminal != "" {
		t.Fatalf("%s: tabbing through the controls changed the player: %+v", p.ID, got)
	}

	// Play and pause: Enter and Space on the button, then Space anywhere
	// in the player.
	press(t, tab, "button.play", kb.Enter)
	if got := read(t, tab); got.State != "playing" || got.Play != "Pause" {
		t.Errorf("%s: Enter on Play: state %q, button %q; want playing, Pause", p.ID, got.State, got.Play)
	}
	press(t, tab, "button.play", " ")
	paused := read(t, tab)
	if paused.State != "paused" || paused.Play != "Play" {
		t.Errorf("%s: Space on Pause: state %q, button %q; want paused, Play", p.ID, paused.State, paused.Play)
	}
	press(t, tab, ".terminal", " ")
	if got := read(t, tab); got.State != "playing" {
		t.Errorf("%s: Space in the terminal: state %q, want playing", p.ID, got.State)
	}
	press(t, tab, ".terminal", " ")
	if got := read(t, tab); got.State != "paused" {
		t.Errorf("%s: Space in the terminal again: state %q, want paused", p.ID, got.State)
	}

	// The scrubber: End and Home go to either end, arrows 5 s.
	press(t, tab, "input.scrubber", kb.End)
	end := read(t, tab)
	if end.State != "done" || end.Time != at(p.Duration) || end.Play != "Play again" {
		t.Errorf("%s: End on the scrubber: %+v, want done at %s", p.ID, end, at(p.Duration))
	}
	if missing := inOrder(end.Terminal, p.TranscriptLines()); missing != "" {
		t.Errorf("%s: at the end the terminal lacks %q", p.ID, missing)
	}
	press(t, tab, "input.scrubber", kb.Home)
	if got := read(t, tab); got.Time != "0.000" || got.State != "paused" {
		t.Errorf("%s: Home on the scrubber: %+v, want paused at 0.000", p.ID, got)
	}
	press(t, tab, "input.scrubber", kb.ArrowRight)
	if got, want := read(t, tab).Time, at(min(5, p.Duration)); got != want {
		t.Errorf("%s: → on the scrubber: time %s, want %s", p.ID, got, want)
	}
	press(t, tab, "input.scrubber", kb.ArrowLeft)
	if got := read(t, tab).Time; got != "0.000" {
		t.Errorf("%s: ← on the scrubber: time %s, want 0.000", p.ID, got)
	}

	// Home and End anywhere in the player.
	press(t, tab, ".terminal", kb.End)
	if got := read(t, tab); got.State != "done" || got.Time != at(p.Duration) {
		t.Errorf("%s: End in the terminal: %s at %s, want done at %s", p.ID, got.State, got.Time, at(p.Duration))
	}
	press(t, tab, ".terminal", kb.Home)
	if got := read(t, tab); got.State != "paused" || got.Time != "0.000" {
		t.Errorf("%s: Home in the terminal: %s at %s, want paused at 0.000", p.ID, got.State, got.Time)
	}

	// Back to the transcript, and on from there.
	press(t, tab, "input.scrubber", kb.ArrowLeft)
	was := read(t, tab).Time
	press(t, tab, "button.show-transcript", kb.Enter)
	if got := read(t, tab); got.State != "ready" || got.Terminal != "" || !eval[bool](t, tab, `!document.querySelector(".transcript").hidden`) {
		t.Errorf("%s: Enter on Transcript: %+v, want the transcript shown", p.ID, got)
	}
	press(t, tab, "button.play", kb.Enter)
	if got := read(t, tab); got.State != "playing" || seconds(t, got.Time) < seconds(t, was) {
		t.Errorf("%s: Play after the transcript: %s at %s, want playing on from %s", p.ID, got.State, got.Time, was)
	}
	press(t, tab, "button.play", kb.Enter)

	// Steps: "." and "," and the two buttons, from the start.
	press(t, tab, "input.scrubber", kb.Home)
	if len(p.Steps) > 1 {
		for _, c := range []struct{ sel, keys string }{{".terminal", "."}, {"button.next", kb.Enter}} {
			press(t, tab, c.sel, c.keys)
			if got := read(t, tab); got.Step != "2" || got.Time != at(p.Steps[1].T) {
				t.Errorf("%s: %q on %s: step %s at %s, want step 2 at %s", p.ID, c.keys, c.sel, got.Step, got.Time, at(p.Steps[1].T))
			}
			back := map[string]string{".terminal": ",", "button.next": ""}[c.sel]
			if back != "" {
				press(t, tab, ".terminal", back)
			} else {
				press(t, tab, "button.prev", kb.Enter)
			}
			if got := read(t, tab); got.Step != "1" || got.Time != at(p.Steps[0].T) {
				t.Errorf("%s: back a step from step 2: step %s at %s, want step 1 at %s", p.ID, got.Step, got.Time, at(p.Steps[0].T))
			}
		}
		// The step list, labelled with the notes.
		press(t, tab, "select.chapters", kb.ArrowDown)
		if got := read(t, tab); got.Step != "2" || got.Time != at(p.Steps[1].T) {
			t.Errorf("%s: ↓ in the step list: step %s at %s, want step 2 at %s", p.ID, got.Step, got.Time, at(p.Steps[1].T))
		}
		labels := eval[[]string](t, tab, `Array.from(document.querySelectorAll("select.chapters option"), o => o.textContent)`)
		for i, s := range p.Steps {
			if i >= len(labels) || labels[i] != fmt.Sprintf("%d. %s", s.Number, s.Note) {
				t.Errorf("%s: step list entry %d is %q, want the step's note", p.ID, i+1, labels)
				break
			}
		}
	}

	// The keys: "?" and the Keys button both show and hide them.
	press(t, tab, "button.keys", kb.Enter)
	if got := read(t, tab); !got.Help || got.Expanded != "true" {
		t.Errorf("%s: Enter on Keys: help shown %v, aria-expanded %s", p.ID, got.Help, got.Expanded)
	}
	axeCheck(t, tab, p.ID+" (terminal shown, keys open)")
	press(t, tab, ".terminal", "?")
	if got := read(t, tab); got.Help || got.Expanded != "false" {
		t.Errorf("%s: ? with the keys shown: help shown %v, aria-expanded %s", p.ID, got.Help, got.Expanded)
	}

	// Speed: chosen by keyboard, played at, and remembered after a reload.
	press(t, tab, "select.speed", kb.ArrowDown+kb.ArrowDown+kb.ArrowDown)
	if got := eval[string](t, tab, `document.querySelector("select.speed").value`); got != "4" {
		t.Fatalf("%s: ↓↓↓ from 1× in the speed list: %s×, want 4×", p.ID, got)
	}
	press(t, tab, "button.restart", kb.Enter)
	if got := read(t, tab); got.State != "playing" {
		t.Errorf("%s: Enter on Restart: state %q, want playing", p.ID, got.State)
	}
	// The clock's rate against the page's own clock, sampled as the
	// player writes it: it runs at the speed chosen.
	rate := evalAsync[float64](t, tab, `new Promise(resolve => {
		const f = document.querySelector("figure.replay"), seen = [];
		const o = new MutationObserver(() => { seen.push([performance.now(), parseFloat(f.dataset.time)]); });
		o.observe(f, {attributes: true, attributeFilter: ["data-time"]});
		setTimeout(() => { o.disconnect(); const a = seen[0], b = seen[seen.length - 1]; resolve((b[1] - a[1]) / ((b[0] - a[0]) / 1000)); }, 600);
	})`)
	if p.Duration > 4 && (rate < 3.6 || rate > 4.4) {
		t.Errorf("%s: at 4× the replay's clock ran at %.2f× the page's", p.ID, rate)
	}
	if got := read(t, tab); got.State == "playing" {
		press(t, tab, "button.play", kb.Enter)
	}
	open(t, tab, base+p.Href())
	if got := eval[string](t, tab, `document.querySelector("select.speed").value`); got != "4" {
		t.Errorf("%s: after a reload the speed is %s×, want the 4× chosen before", p.ID, got)
	}
	press(t, tab, "select.speed", kb.Home)
	press(t, tab, "select.speed", kb.ArrowDown)
	if got := eval[string](t, tab, `localStorage.getItem("ptah.replay.speed")`); got != "1" {
		t.Errorf("%s: speed back to 1× stored as %q", p.ID, got)
	}
}

// checkDeepLinks opens p at each step (#step-N) and at a time (#t=...),
// and refuses what is neither.
func checkDeepLinks(t *testing.T, tab context.Context, base string, p *Page) {
	for i, s := range p.Steps {
		open(t, tab, fmt.Sprintf("%s%s#step-%d", base, p.Href(), s.Number))
		got := read(t, tab)
		if got.State != "paused" || got.Step != fmt.Sprint(s.Number) || got.Time != at(s.T) || got.Chapter != fmt.Sprint(s.Number) {
			t.Errorf("%s#step-%d: %+v, want paused at step %d, %s", p.ID, s.Number, got, s.Number, at(s.T))
			continue
		}
		if missing := inOrder(got.Terminal, shownUpTo(p, i)); missing != "" || !endsWith(got.Terminal, "# "+s.Note) {
			t.Errorf("%s#step-%d: the terminal lacks %q or goes past the note; it shows:\n%s", p.ID, s.Number, missing, got.Terminal)
		}
		if !got.Focused {
			t.Errorf("%s#step-%d: focus is not in the player, so its keys do not work at once", p.ID, s.Number)
		}
		if s.Sync != "" && got.Phase != s.Sync {
			t.Errorf("%s#step-%d: phase %q, want %q", p.ID, s.Number, got.Phase, s.Sync)
		}
	}
	mid := float64(int(p.Duration*5)) / 10
	open(t, tab, fmt.Sprintf("%s%s#t=%.1f", base, p.Href(), mid))
	want := p.Steps[0]
	for _, s := range p.Steps {
		if s.T <= mid {
			want = s
		}
	}
	if got := read(t, tab); got.Time != at(mid) || got.Step != fmt.Sprint(want.Number) {
		t.Errorf("%s#t=%.1f: time %s step %s, want %s step %d", p.ID, mid, got.Time, got.Step, at(mid), want.Number)
	}
	// A link followed on the page moves the player too.
	eval[chromedp.Void](t, tab, `location.hash = "#step-1"`)
	if got := read(t, tab); got.Step != "1" || got.Time != at(p.Steps[0].T) {
		t.Errorf("%s: #step-1 set on the open page: step %s at %s", p.ID, got.Step, got.Time)
	}
	open(t, tab, base+p.Href()+"#t=100000")
	if got := read(t, tab); got.State != "done" || got.Time != at(p.Duration) {
		t.Errorf("%s#t=100000: %s at %s, want done at the end, %s", p.ID, got.State, got.Time, at(p.Duration))
	}
	for _, bad := range []string{"#step-0", fmt.Sprintf("#step-%d", len(p.Steps)+1), "#t=-3", "#t=abc", "#t=", "#step-1x"} {
		open(t, tab, base+p.Href()+bad)
		if got := read(t, tab); got.State != "ready" || got.Terminal != "" {
			t.Errorf("%s%s: %+v, want the page as it opens, the transcript shown", p.ID, bad, got)
		}
	}
}

// checkEvidence opens every row's evidence by keyboard and compares it with
// the recording, then follows every claim to the moment it was checked.
func checkEvidence(t *testing.T, tab context.Context, base string, p *Page) {
	open(t, tab, base+p.Href())
	for i, c := range p.Checks {
		row := fmt.Sprintf("table.checks tbody tr:nth-child(%d)", i+1)
		press(t, tab, row+" summary", kb.Enter)
		shown := eval[struct {
			Open  bool     `json:"open"`
			Text  string   `json:"text"`
			Facts []string `json:"facts"`
		}](t, tab, fmt.Sprintf(`(() => { const d = document.querySelector(%q);
			return {open: d.open, text: d.querySelector("p").textContent,
				facts: Array.from(d.querySelectorAll("dt"), dt => dt.textContent + "=" + dt.nextElementSibling.textContent)}; })()`, row+" details"))
		var want []string
		for _, f := range c.Evidence {
			want = append(want, f.Name+"="+f.Value)
		}
		if !shown.Open || strings.Join(shown.Facts, "|") != strings.Join(want, "|") {
			t.Errorf("%s check %d (%s): evidence open %v shows %q, want %q", p.ID, i+1, c.Claim, shown.Open, shown.Facts, want)
		}
		when := "after"
		if c.Before {
			when = "before"
		}
		if !strings.Contains(shown.Text, clock(c.T)) || !strings.Contains(shown.Text, when) {
			t.Errorf("%s check %d: the evidence says %q, want the moment %s, %s the command", p.ID, i+1, shown.Text, clock(c.T), when)
		}
	}
	axeCheck(t, tab, p.ID+" (every evidence panel open)")
	for i, c := range p.Checks {
		press(t, tab, fmt.Sprintf("table.checks tbody tr:nth-child(%d) a.moment", i+1), kb.Enter)
		got := read(t, tab)
		hash := eval[string](t, tab, `location.hash`)
		if got.Time != at(c.T) || got.Step != fmt.Sprint(c.Step) || hash != "#t="+at(c.T) || !got.Focused {
			t.Errorf("%s check %d (%s): followed to %+v at %s, want step %d at %s with focus in the player", p.ID, i+1, c.Claim, got, hash, c.Step, at(c.T))
			continue
		}
		if !strings.Contains(got.Progress, c.Claim) {
			t.Errorf("%s check %d: the player does not say which claim was checked here: %q", p.ID, i+1, got.Progress)
		}
		st := *p.step(c.Step)
		last := "# " + st.Note
		if !c.Before {
			last = (&Page{Steps: []Step{st}}).TranscriptLines()[len((&Page{Steps: []Step{st}}).TranscriptLines())-1]
		}
		if !endsWith(got.Terminal, last) {
			t.Errorf("%s check %d (%s): at its moment the terminal ends %q, want %q", p.ID, i+1, c.Claim, tail(got.Terminal), last)
		}
	}
}

// checkPlay plays p's last step at 4× to the end: the command is typed out,
// not pasted, and the terminal ends holding the whole session.
func checkPlay(t *testing.T, tab context.Context, base string, p *Page) {
	last := p.Steps[len(p.Steps)-1]
	open(t, tab, fmt.Sprintf("%s%s#t=%s", base, p.Href(), at(last.T)))
	eval[chromedp.Void](t, tab, `(() => {
		const s = document.querySelector("select.speed"); s.value = "4"; s.dispatchEvent(new Event("change"));
		const term = document.querySelector(".terminal");
		window.typed = new Set();
		new MutationObserver(() => { const c = term.querySelectorAll(".command"); if (c.length) typed.add(c[c.length - 1].textContent.length); })
			.observe(term, {subtree: true, childList: true, characterData: true});
	})()`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("button.play"), chromedp.NodeVisible)); err != nil {
		t.Fatalf("%s: press Play: %v", p.ID, err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector("figure.replay").dataset.state === "done"`,
		chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Fatalf("%s: the player did not finish: %v", p.ID, err)
	}
	got := read(t, tab)
	if missing := inOrder(got.Terminal, p.TranscriptLines()); missing != "" {
		t.Errorf("%s: after Play the terminal lacks %q; it shows:\n%s", p.ID, missing, got.Terminal)
	}
	styled := eval[[]string](t, tab, `Array.from(document.querySelectorAll(".terminal .line span[class]"), e => e.className + "=" + e.textContent + "=true")`)
	if want := styledRuns(p); strings.Join(styled, "|") != strings.Join(want, "|") {
		t.Errorf("%s: the terminal's styled runs are %q, want %q", p.ID, styled, want)
	}
	typed := eval[[]int](t, tab, `Array.from(typed)`)
	full := len([]rune("$ "+last.Command)) + 1
	partial := 0
	for _, n := range typed {
		if n > 0 && n < full {
			partial++
		}
	}
	if full > 12 && partial < 3 {
		t.Errorf("%s: the last command showed %d partial lengths %v of %d: it was not typed out", p.ID, partial, typed, full)
	}
}

// checkPhases walks p step by step with "." and back with ",": each step
// shows its phase, its place and its note in the step list.
func checkPhases(t *testing.T, tab context.Context, base string, p *Page) {
	open(t, tab, base+p.Href()+"#step-1")
	for i := range p.Steps {
		if i > 0 {
			press(t, tab, ".terminal", ".")
		}
		s := p.Steps[i]
		got := read(t, tab)
		want := fmt.Sprintf("step %d of %d", i+1, len(p.Steps))
		if got.Step != fmt.Sprint(s.Number) || got.Phase != s.Sync || got.Chapter != fmt.Sprint(s.Number) || !strings.HasPrefix(got.Progress, want) {
			t.Errorf("%s step %d: %+v, want phase %q and %q", p.ID, s.Number, got, s.Sync, want)
		}
	}
	press(t, tab, ".terminal", ".")
	if got := read(t, tab); got.State != "done" {
		t.Errorf("%s: \".\" on the last step: state %q, want done", p.ID, got.State)
	}
	for i := len(p.Steps) - 1; i >= 0; i-- {
		press(t, tab, ".terminal", ",")
		if got := read(t, tab); got.Step != fmt.Sprint(p.Steps[i].Number) || got.Time != at(p.Steps[i].T) {
			t.Errorf("%s: \",\" back to step %d: step %s at %s", p.ID, p.Steps[i].Number, got.Step, got.Time)
		}
	}
}

func seconds(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("the player's time %q is not a number", s)
	}
	return v
}

func jsList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(quoted, ",") + "]"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func tail(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
