package site

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/terminal"
)

// TestCastsShowInXterm plays every published cast, and the fixture site's,
// in @xterm/headless (xterm.js's emulator, which no one here wrote; pinned
// in package-lock.json, installed by `make site-deps`) and in
// recorder/terminal, and requires the two to hold the same text (scrollback
// and screen) at the end of every step: what the recorder scanned and the
// site shows is what a reader's player shows.
func TestCastsShowInXterm(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node on PATH: install Debian's npm (make host-deps)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@xterm", "headless", "package.json")); err != nil {
		t.Fatal("no @xterm/headless in site/node_modules: run make site-deps")
	}
	// Each cast, and the steps its scenario has. Besides the published
	// ones and the fixture's, testdata/casts/terminal.cast writes what the
	// recordings seldom do (scroll regions, save and restore, insertion and
	// deletion, wide characters, the alternate screen), one kind a step.
	type cast struct {
		name, file string
		steps      int
	}
	casts := []cast{{"testdata/terminal.cast", filepath.Join("testdata", "casts", "terminal.cast"), 8}}
	committed := filepath.Join("..", "demo", "recordings")
	if raw, err := os.ReadFile(filepath.Join(committed, "runs.json")); err == nil {
		var rec runs.Recording
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		for _, s := range rec.Scenarios {
			casts = append(casts, cast{"committed/" + s.ID, filepath.Join(committed, s.ID+".cast"), len(s.Events)})
		}
		if files, _ := filepath.Glob(filepath.Join(committed, "*.cast")); len(files) != len(rec.Scenarios) {
			t.Errorf("%d casts in %s, %d scenarios in its runs.json", len(files), committed, len(rec.Scenarios))
		}
	}
	out, s, _ := builtSite(t)
	for _, p := range s.Pages {
		casts = append(casts, cast{"fixture/" + p.ID, filepath.Join(out, filepath.FromSlash(p.CastHref())), len(p.Steps)})
	}
	start, played := time.Now(), 0
	for _, c := range casts {
		t.Run(c.name, func(t *testing.T) {
			played++
			raw, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			want := xtermSteps(t, node, c.file)
			got := terminalSteps(t, raw)
			if len(want) != c.steps || len(got) != c.steps {
				t.Fatalf("the scenario has %d steps; xterm found %d step ends, recorder/terminal %d", c.steps, len(want), len(got))
			}
			for i := range want {
				if d := lineDiff(want[i].Screen, got[i].Screen); d != "" {
					t.Errorf("step %d: recorder/terminal's screen differs from xterm.js's (-xterm +terminal):\n%s", i+1, d)
				}
				// The one difference allowed: the emulator also keeps
				// above the screen the lines a scroll region not starting
				// at the top row scrolls out (and those CSI M or S delete
				// at a region's top), which xterm drops. It offers no hook
				// into its line feed to drop them, and they only add to
				// what the credential scan reads. Every line xterm keeps
				// must be there, in order.
				if l, ok := subsequence(want[i].Scrollback, got[i].Scrollback); !ok {
					t.Errorf("step %d: xterm.js keeps line %d above the screen, %q, which recorder/terminal does not have there in order; xterm's scrollback:\n%s\nrecorder/terminal's:\n%s",
						i+1, l+1, want[i].Scrollback[l], strings.Join(want[i].Scrollback, "\n"), strings.Join(got[i].Scrollback, "\n"))
				}
			}
		})
	}
	t.Logf("%d casts played in both emulators in %s", played, time.Since(start).Round(time.Millisecond))
}

// shown is a terminal's text: the lines above the screen and the screen's.
type shown struct{ Scrollback, Screen []string }

// xtermSteps runs xterm-render.mjs on the cast: what xterm holds at the end
// of each step.
func xtermSteps(t *testing.T, node, cast string) []shown {
	t.Helper()
	cmd := exec.Command(node, "xterm-render.mjs", cast)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node xterm-render.mjs %s: %v\n%s", cast, err, stderr.String())
	}
	var doc struct{ Steps []shown }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("xterm-render.mjs printed no JSON: %v", err)
	}
	return doc.Steps
}

// terminalSteps plays the cast in recorder/terminal as xterm-render.mjs does
// in xterm: one screen of the cast's size, fed every "o" event in order, read
// before every "m" marker but the first and at the end.
func terminalSteps(t *testing.T, raw []byte) []shown {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	if !sc.Scan() {
		t.Fatal("empty cast")
	}
	var h castHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	s := terminal.NewScreen(h.Width, h.Height)
	defer s.Close()
	var scrolled []string
	var out []shown
	snapshot := func() {
		scrolled = append(scrolled, s.Scrolled()...)
		var screen []string
		if text := s.Shown(); text != "" {
			screen = strings.Split(text, "\n")
		}
		out = append(out, shown{append([]string(nil), scrolled...), screen})
	}
	markers := 0
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev [3]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev[1] {
		case "m":
			if markers > 0 {
				snapshot()
			}
			markers++
		case "o":
			data, _ := ev[2].(string)
			s.Write(data)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	snapshot()
	return out
}

// lineDiff lists the lines where a and b differ, numbered from 1, or "".
func lineDiff(a, b []string) string {
	var d strings.Builder
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y || (i < len(a)) != (i < len(b)) {
			fmt.Fprintf(&d, "line %d:\n- %q\n+ %q\n", i+1, x, y)
		}
	}
	return d.String()
}

// subsequence reports whether every line of a is in b, in order; when not,
// l is the first line of a that is not.
func subsequence(a, b []string) (l int, ok bool) {
	j := 0
	for i, x := range a {
		for j < len(b) && b[j] != x {
			j++
		}
		if j == len(b) {
			return i, false
		}
		j++
	}
	return 0, true
}
