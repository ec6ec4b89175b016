package site

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"ptah.run/operator/recorder/terminal"
)

func TestStyledLineDrawsWhatTheBytesSay(t *testing.T) {
	cases := []struct {
		name string
		data string
		want []Segment
	}{
		{"plain text has no style", "plain", []Segment{{"", "plain"}}},
		{"bold green, then reset", "\x1b[1;32mok\x1b[0m done", []Segment{{"fg2 bold", "ok"}, {"", " done"}}},
		{"bright and background colours", "\x1b[91;44mx\x1b[39my\x1b[49mz", []Segment{{"fg9 bg4", "x"}, {"bg4", "y"}, {"", "z"}}},
		{"a 256-colour index under 16 is that colour", "\x1b[38;5;3ma\x1b[38;5;200mb", []Segment{{"fg3", "a"}, {"", "b"}}},
		{"RGB colour is read past, not misread as bold", "\x1b[38;2;1;2;3mrgb", []Segment{{"", "rgb"}}},
		{"22 ends bold and dim", "\x1b[1;2ma\x1b[22mb", []Segment{{"bold dim", "a"}, {"", "b"}}},
		{"an empty SGR resets", "\x1b[4mu\x1b[mv", []Segment{{"underline", "u"}, {"", "v"}}},
		{"a style carries over a carriage return", "\x1b[31m10%\r100%", []Segment{{"fg1", "100%"}}},
		{"cursor and title sequences draw nothing", "\x1b[2K\x1b]0;t\x07\x1b[3mi", []Segment{{"italic", "i"}}},
		{"a truncated sequence at the end is dropped", "a\x1b[38;5", []Segment{{"", "a"}}},
		{"unknown and empty parameters are ignored", "\x1b[;99;1mb", []Segment{{"bold", "b"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := styledLine(c.data)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("styledLine(%q) = %q, want %q", c.data, got, c.want)
			}
			var text strings.Builder
			for _, s := range got {
				text.WriteString(s.Text)
			}
			if text.String() != terminal.Line(c.data) {
				t.Errorf("the runs read %q, the plain screen %q", text.String(), terminal.Line(c.data))
			}
		})
	}
}

// markers are the cast's "m" events: when each step's note is shown.
func markers(t *testing.T, cast []byte) []float64 {
	t.Helper()
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(string(cast)), "\n")[1:] {
		var ev [3]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev[1] == "m" {
			out = append(out, ev[0].(float64))
		}
	}
	return out
}

func TestEveryPieceIsOnTheCastsClock(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, fixture())
	s, err := loadRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Pages {
		cast, err := os.ReadFile(filepath.Join(dir, p.ID+".cast"))
		if err != nil {
			t.Fatal(err)
		}
		_, events, err := readCast(cast)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.setTimes(lineTimes(events), events[len(events)-1].At); err != nil {
			t.Fatal(err)
		}
		marks := markers(t, cast)
		if len(marks) != len(p.Steps) {
			t.Fatalf("%s: %d markers for %d steps", p.ID, len(marks), len(p.Steps))
		}
		prev := -1.0
		for i, st := range p.Steps {
			// The cast marks each step where its note is written, and the
			// command's typing starts after it and ends before its output.
			if st.T != marks[i] {
				t.Errorf("%s step %d starts at %.3f, the cast marks it at %.3f", p.ID, st.Number, st.T, marks[i])
			}
			if !(prev < st.T && st.T < st.Typed && st.Typed < st.Ran && st.Ran <= st.End) {
				t.Errorf("%s step %d: times out of order: after %.3f, note %.3f, typed %.3f to %.3f, ends %.3f", p.ID, st.Number, prev, st.T, st.Typed, st.Ran, st.End)
			}
			// Typed at the cast's rate: one character per 40 ms.
			if got, want := st.Ran-st.Typed, 0.04*float64(len([]rune(st.Command))+1); got < want-0.001 || got > want+0.001 {
				t.Errorf("%s step %d: typed in %.3f s, the cast types it in %.3f s", p.ID, st.Number, got, want)
			}
			for _, l := range st.Lines {
				if l.T < st.Ran || l.T > st.End {
					t.Errorf("%s step %d: line %q at %.3f, outside its step's output (%.3f to %.3f)", p.ID, st.Number, l.Text, l.T, st.Ran, st.End)
				}
			}
			prev = st.End
		}
		if p.Duration != prev {
			t.Errorf("%s: lasts %.3f, its last step ends at %.3f", p.ID, p.Duration, prev)
		}
	}
}

func TestChecksAreMomentsOfTheirStep(t *testing.T) {
	out, s, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	var p *Page
	for _, x := range s.Pages {
		if x.ID == "markup-in-commands" {
			p = x
		}
	}
	st := p.Steps[0]
	type moment struct {
		T      float64
		Before bool
	}
	var got []moment
	for _, c := range p.Checks {
		got = append(got, moment{c.T, c.Before})
	}
	// The await's check held before the command, the command's and the
	// object's after its output.
	if want := []moment{{st.T, true}, {st.End, false}, {st.End, false}}; !reflect.DeepEqual(got, want) {
		t.Errorf("moments %v, want %v", got, want)
	}
	wantFacts := [][]Fact{
		{{"status", "True"}, {"reason", "Done"}, {"observedGeneration", "3 (the object's generation: 3)"}, {"lastTransitionTime", "2026-09-17T10:03:59Z"}, {"waited", "2.5 s"}},
		{{"exit status", "0"}},
		{{"field", "data.html"}, {"value", `"<img src=x onerror=alert(1)> & \"q\""`}},
	}
	for i, c := range p.Checks {
		if !reflect.DeepEqual(c.Evidence, wantFacts[i]) {
			t.Errorf("check %d evidence %q, want %q", i+1, c.Evidence, wantFacts[i])
		}
	}
	// The value read is shown as text, never as markup.
	doc := parse(t, filepath.Join(out, p.Href()))
	if n := find(doc, func(n *html.Node) bool { return n.Data == "img" }); len(n) != 0 {
		t.Errorf("the evidence's <img> became an element")
	}
	dds := find(doc, func(n *html.Node) bool { return n.Data == "dd" })
	var values []string
	for _, dd := range dds {
		values = append(values, text(dd))
	}
	if !strings.Contains(strings.Join(values, "|"), `"<img src=x onerror=alert(1)> & \"q\""`) {
		t.Errorf("the field's value is not shown as read: %q", values)
	}
	links := find(doc, func(n *html.Node) bool { return hasClass(n, "moment") })
	if len(links) != 3 || attr(links[0], "href") != "#step-1" || attr(links[0], "data-t") != at(st.T) || attr(links[2], "data-t") != at(st.End) {
		t.Errorf("claim links do not lead to their moments")
	}
}

func TestPosterIsTheFinalScreen(t *testing.T) {
	out, s, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Pages {
		svg, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p.PosterHref())))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := posterLines(svg)
		if err != nil {
			t.Fatalf("%s: the poster is not well-formed SVG: %v", p.ID, err)
		}
		// The final screen: the session's last rows, wrapped at the
		// terminal's 100 columns, at most its 30 rows.
		var want []string
		for _, l := range p.session("> ") {
			l = strings.ReplaceAll(l, "\t", "        ")
			r := []rune(l)
			for len(r) > 100 {
				want = append(want, string(r[:100]))
				r = r[100:]
			}
			want = append(want, string(r))
		}
		if len(want) > 30 {
			want = want[len(want)-30:]
		}
		var nonEmpty []string
		for _, w := range want {
			if w != "" {
				nonEmpty = append(nonEmpty, w)
			}
		}
		if !reflect.DeepEqual(rows, nonEmpty) {
			t.Errorf("%s: the poster shows\n%q\nwant the final screen\n%q", p.ID, rows, nonEmpty)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(out, "posters", "markup-in-commands.svg"))
	if !strings.Contains(string(svg), `fill="`+palette[2]+`">1</tspan>`) {
		t.Errorf("the green 1 is not drawn green in the poster:\n%s", svg)
	}
	if strings.Contains(string(svg), "<script") {
		t.Errorf("the command's <script> is markup in the poster")
	}
}

func TestPagesCarryOpenGraphTags(t *testing.T) {
	out, s, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Pages {
		doc := parse(t, filepath.Join(out, p.Href()))
		meta := map[string]string{}
		for _, m := range find(doc, func(n *html.Node) bool { return n.Data == "meta" }) {
			meta[attr(m, "property")+attr(m, "name")] = attr(m, "content")
		}
		want := map[string]string{"og:title": p.Title, "og:description": p.Tagline, "og:image": p.PosterHref(), "og:image:type": "image/svg+xml"}
		for k, v := range want {
			if meta[k] != v {
				t.Errorf("%s: %s is %q, want %q", p.ID, k, meta[k], v)
			}
		}
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(meta["og:image"]))); err != nil {
			t.Errorf("%s: og:image does not exist: %v", p.ID, err)
		}
	}
}

func TestPlantedCredentialInEvidenceRefusesTheBuild(t *testing.T) {
	r := fixture()
	sc := &r.Scenarios[2]
	sc.Checks[2].Evidence.Field.Value = "password=" + plantedPassword
	out, _, err := build(t, r, fixtureLab(t)...)
	if err == nil || strings.Contains(err.Error(), plantedPassword) || !strings.Contains(err.Error(), "runs.json") {
		t.Fatalf("err = %v, want a refusal naming runs.json without the value", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused build left %s behind", out)
	}
}

// posterLines is the poster's text, row by row, each word put back at the
// column its x places it.
func posterLines(svg []byte) ([]string, error) {
	var doc struct {
		G struct {
			Text []struct {
				Spans []struct {
					X    float64 `xml:"x,attr"`
					Text string  `xml:",chardata"`
				} `xml:"tspan"`
			} `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range doc.G.Text {
		var row []rune
		for _, s := range t.Spans {
			col := int((s.X-padding)/cellWidth + 0.5)
			for len(row) < col {
				row = append(row, ' ')
			}
			row = append(row[:col], []rune(s.Text)...)
		}
		out = append(out, string(row))
	}
	return out, nil
}
