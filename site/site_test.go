package site

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestScreenLines(t *testing.T) {
	cases := []struct {
		name   string
		chunks []Chunk
		want   []Line
	}{
		{"crlf and a last line without newline",
			[]Chunk{{At: 1, Stream: "o", Data: "one\r\ntwo\r\nthree"}},
			[]Line{{1, "o", "one"}, {1, "o", "two"}, {1, "o", "three"}}},
		{"colour and cursor sequences dropped, even split across chunks",
			[]Chunk{{At: 1, Stream: "o", Data: "\x1b[1;3"}, {At: 2, Stream: "o", Data: "2mgreen\x1b[0m \x1b]0;title\x07ok\r\n"}},
			[]Line{{2, "o", "green ok"}}},
		{"carriage return starts the line over",
			[]Chunk{{At: 1, Stream: "o", Data: "10%\r50%\r100% done\r\n"}},
			[]Line{{1, "o", "100% done"}}},
		{"backspace removes a character",
			[]Chunk{{At: 1, Stream: "o", Data: "nop\bt\n"}},
			[]Line{{1, "o", "not"}}},
		{"a rune split across chunks stays whole",
			[]Chunk{{At: 1, Stream: "o", Data: "Deployment\xe2\x80"}, {At: 2, Stream: "o", Data: "\x99s name\n"}},
			[]Line{{2, "o", "Deployment’s name"}}},
		{"streams keep their own line and merge by time",
			[]Chunk{{At: 1, Stream: "stdout", Data: "out-"}, {At: 2, Stream: "stderr", Data: "err\n"}, {At: 3, Stream: "stdout", Data: "line\n"}},
			[]Line{{2, "stderr", "err"}, {3, "stdout", "out-line"}}},
		{"empty lines are kept",
			[]Chunk{{At: 1, Stream: "o", Data: "a\r\n\r\nb\r\n"}},
			[]Line{{1, "o", "a"}, {1, "o", ""}, {1, "o", "b"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ScreenLines(c.chunks); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ScreenLines = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestGroupByFirstTag(t *testing.T) {
	pages := []*Page{
		{ID: "a", Tags: []string{"Getting started"}},
		{ID: "b", Tags: []string{"Operations", "Getting started"}},
		{ID: "c", Tags: []string{"Getting started", "Operations"}},
		{ID: "d", Tags: []string{"Approvals"}},
		{ID: "e", Tags: []string{"Operations"}},
	}
	groups, err := groupByFirstTag(pages)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	var order []string
	for _, g := range groups {
		order = append(order, g.Tag)
		for _, p := range g.Pages {
			got[g.Tag] = append(got[g.Tag], p.ID)
		}
	}
	if want := []string{"Getting started", "Operations", "Approvals"}; !reflect.DeepEqual(order, want) {
		t.Errorf("group order = %q, want %q", order, want)
	}
	want := map[string][]string{"Getting started": {"a", "c"}, "Operations": {"b", "e"}, "Approvals": {"d"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups = %v, want %v", got, want)
	}
	if _, err := groupByFirstTag([]*Page{{ID: "untagged"}}); err == nil || !strings.Contains(err.Error(), "untagged") {
		t.Errorf("a page without tags: err = %v, want one naming it", err)
	}
}

// build writes r as a recording and builds the site from it.
func build(t *testing.T, r runs, creds ...string) (string, *Site, error) {
	t.Helper()
	dir := t.TempDir()
	writeRecording(t, filepath.Join(dir, "recording"), r)
	out := filepath.Join(dir, "public")
	s, err := Build(Options{Recording: filepath.Join(dir, "recording"), Out: out, Credentials: creds})
	return out, s, err
}

func parse(t *testing.T, path string) *html.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func hasClass(n *html.Node, class string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && strings.Contains(" "+a.Val+" ", " "+class+" ") {
			return true
		}
	}
	return false
}

func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			found = append(found, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func TestScenarioPageFollowsTheSeedsOrder(t *testing.T) {
	out, _, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	page := text(parse(t, filepath.Join(out, "failure-recovery.html")))
	order := []string{
		"Fail, then recover",
		"Point it at a database that is not there.",
		"What it shows. What a failure looks like in the status",
		"A replay of a verified run, not a live cluster. 9 checks held while it was recorded. Play types it out in the frame below; the transcript is the same session, already there.",
		"# The same resource, pointed at a database that does not answer.",
		"ptahschema.operator.ptah.run/storefront created",
		"# It retries on its own interval and converges.",
		"(1 row)",
		"What was checked",
		"StepClaimHeld",
		"What it ran against",
		"Kubernetes1.37.0", "Operator8c7fe187707f", "Ptahv0.6.0", "Executorsha256:91ec0a6fa27f", "Recorded2026-09-17", "Scenarios at8c7fe187707f",
		"What the commands read",
		"KUBECONFIGthe cluster the commands run against",
		"PTAH_OCI_PASSWORDits password, which no command prints",
		"demo/bin/lab in two places", "lab credentials", "lab manifest", "acceptance/reproduce.sh",
		"The scenario is scenarios/failure-recovery.yaml, and make demo replays the whole set against a lab of your own.",
		"All recorded runs.",
	}
	rest := page
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("%q is not on the page after what precedes it in the seed; page text:\n%s", want, page)
		}
		rest = rest[i+len(want):]
	}
}

func TestChecksTableHasOneRowPerCheck(t *testing.T) {
	out, _, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	doc := parse(t, filepath.Join(out, "failure-recovery.html"))
	rows := find(doc, func(n *html.Node) bool { return n.Data == "tr" && n.Parent.Data == "tbody" })
	want := fixture().Scenarios[1].Checks
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, row := range rows {
		cells := find(row, func(n *html.Node) bool { return n.Data == "td" })
		got := []string{text(cells[0]), text(cells[1]), text(cells[2])}
		if w := []string{strconv.Itoa(want[i].Step), want[i].Claim, "yes"}; !reflect.DeepEqual(got, w) {
			t.Errorf("row %d = %q, want %q", i+1, got, w)
		}
	}
}

func TestCatalogGroupsAndLinks(t *testing.T) {
	out, _, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	doc := parse(t, filepath.Join(out, "index.html"))
	var got []string
	for _, g := range find(doc, func(n *html.Node) bool { return hasClass(n, "group") }) {
		entry := text(find(g, func(n *html.Node) bool { return n.Data == "h2" })[0]) + ":"
		for _, a := range find(g, func(n *html.Node) bool { return n.Data == "a" }) {
			entry += " " + attr(a, "href")
		}
		got = append(got, entry)
	}
	want := []string{"Getting started: lab-setup.html", "Operations: failure-recovery.html markup-in-commands.html"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalog = %q, want %q", got, want)
	}
	all := text(doc)
	for _, w := range []string{"$ APPLY=Always demo/bin/lab manifest storefront \"$(cat demo/.lab/digest)\"", "6 steps · 9 checks · 9 held", "1 step · 1 check · 1 held"} {
		if !strings.Contains(all, w) {
			t.Errorf("catalog lacks %q", w)
		}
	}
}

func TestCommandTextIsEscapedNotInterpreted(t *testing.T) {
	out, _, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "markup-in-commands.html")
	doc := parse(t, path)
	sc := fixture().Scenarios[2]
	if n := find(doc, func(n *html.Node) bool { return n.Data == "script" && attr(n, "src") == "" }); len(n) != 0 {
		t.Errorf("the command's <script> became an element: %d inline scripts", len(n))
	}
	if n := find(doc, func(n *html.Node) bool { return n.Data == "b" }); len(n) != 0 {
		t.Errorf("the note's <b> became an element")
	}
	cmd := find(doc, func(n *html.Node) bool { return hasClass(n, "command") })
	if len(cmd) != 1 || text(cmd[0]) != "$ "+sc.Events[0].Command {
		t.Errorf("command reads %q, want %q", text(cmd[0]), "$ "+sc.Events[0].Command)
	}
	note := find(doc, func(n *html.Node) bool { return hasClass(n, "note") })
	if text(note[0]) != "# "+sc.Events[0].Note {
		t.Errorf("note reads %q", text(note[0]))
	}
	lines := find(doc, func(n *html.Node) bool { return hasClass(n, "line") })
	if len(lines) != 2 || text(lines[0]) != "1" || text(lines[1]) != "warning: <stderr> & more" || !hasClass(lines[1], "stream-stderr") {
		t.Errorf("output lines wrong: %d lines", len(lines))
	}
	if title := text(find(doc, func(n *html.Node) bool { return n.Data == "h1" })[0]); title != sc.Title {
		t.Errorf("title reads %q, want %q", title, sc.Title)
	}
}

func TestCastMustShowTheRecordedSession(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "recording")
	writeRecording(t, rec, fixture())
	cast := filepath.Join(rec, "failure-recovery.cast")
	data, _ := os.ReadFile(cast)
	// One output line differs between the cast and runs.json.
	altered := strings.Replace(string(data), "storefront patched", "storefront unchanged", 1)
	if altered == string(data) {
		t.Fatal("fixture cast lacks the line the test alters")
	}
	if err := os.WriteFile(cast, []byte(altered), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "public")
	_, err := Build(Options{Recording: rec, Out: out})
	if err == nil || !strings.Contains(err.Error(), "failure-recovery.cast") || !strings.Contains(err.Error(), "storefront unchanged") {
		t.Fatalf("err = %v, want a refusal naming the cast and the line", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused build left %s behind", out)
	}
}

func TestCastAgreesWithEvents(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, fixture())
	s, err := loadRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Pages {
		data, err := os.ReadFile(filepath.Join(dir, p.ID+".cast"))
		if err != nil {
			t.Fatal(err)
		}
		cast, err := castOutput(data)
		if err != nil {
			t.Fatal(err)
		}
		if d := agree(cast, p); d != "" {
			t.Errorf("%s: %s", p.ID, d)
		}
	}
}

func TestPlantedCredentialRefusesTheBuild(t *testing.T) {
	r := fixture()
	r.Scenarios[1].Events[3].Output[0].Data += `,"password":"` + plantedSecret + `"`
	creds := filepath.Join("testdata", "lab")
	out, _, err := build(t, r, creds)
	if err == nil {
		t.Fatal("the build published a planted credential")
	}
	if strings.Contains(err.Error(), plantedSecret) {
		t.Errorf("the refusal prints the credential: %v", err)
	}
	if !strings.Contains(err.Error(), "runs.json") {
		t.Errorf("the refusal does not name the file: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused build left %s behind", out)
	}
	// Without the planted value the same lab's credentials let it build.
	if _, _, err := build(t, fixture(), creds); err != nil {
		t.Errorf("clean recording refused: %v", err)
	}
}

func TestFailedCheckIsNotPublished(t *testing.T) {
	r := fixture()
	r.Scenarios[1].Checks[6].Held = false
	_, _, err := build(t, r)
	if err == nil || !strings.Contains(err.Error(), "InSync=True (ScopedConverged)") || !strings.Contains(err.Error(), "step 6") {
		t.Fatalf("err = %v, want a refusal naming step 6's claim", err)
	}
}
