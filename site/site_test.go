package site

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/recording"
	"ptah.run/operator/recorder/runs"
)

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
func build(t *testing.T, r *recording.Recording, secrets ...labenv.Secret) (string, *Site, error) {
	t.Helper()
	dir := t.TempDir()
	writeRecording(t, filepath.Join(dir, "recording"), r)
	out := filepath.Join(dir, "public")
	s, err := Build(Options{Recording: filepath.Join(dir, "recording"), Out: out, Secrets: secrets})
	return out, s, err
}

// fixtureLab loads testdata/lab the way the recorder loads demo/.lab.
func fixtureLab(t *testing.T) []labenv.Secret {
	t.Helper()
	lab, err := labenv.Load(filepath.Join("testdata", "lab", "environment"))
	if err != nil {
		t.Fatal(err)
	}
	if len(lab.Secrets) != 2 {
		t.Fatalf("the fixture lab has %d secrets, want the password and one from its credential file", len(lab.Secrets))
	}
	return lab.Secrets
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
	want := fixture().Scenarios[0].Checks
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
	want := []string{"Operations: failure-recovery.html markup-in-commands.html", "Getting started: lab-setup.html"}
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
	if len(lines) != 2 || text(lines[0]) != "1" || text(lines[1]) != "100% <stderr> & more" || !hasClass(lines[1], "stream-stderr") {
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
	secrets := fixtureLab(t)
	plant := map[string]func(*recording.Recording){
		"the registry password in output": func(r *recording.Recording) {
			r.Scenarios[0].Events[3].Output[0].Text += `,"password":"` + plantedPassword + `"`
		},
		// The page and the poster draw each style in its own element, so
		// the value is in no one run of their text.
		"the registry password in output, split by colour changes": func(r *recording.Recording) {
			r.Scenarios[0].Events[3].Output[0].Text += " \x1b[1m" + plantedPassword[:4] + "\x1b[31m" + plantedPassword[4:9] + "\x1b[0m" + plantedPassword[9:]
		},
		"a credential file's value in a note": func(r *recording.Recording) {
			r.Scenarios[2].Events[0].Note += " " + plantedSecret
		},
	}
	for name, planted := range plant {
		t.Run(name, func(t *testing.T) {
			r := fixture()
			planted(r)
			out, _, err := build(t, r, secrets...)
			if err == nil {
				t.Fatal("the build published a planted credential")
			}
			for _, v := range []string{plantedPassword, plantedSecret} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the refusal prints the credential: %v", err)
				}
			}
			if !strings.Contains(err.Error(), ".cast") && !strings.Contains(err.Error(), "runs.json") {
				t.Errorf("the refusal does not name the file: %v", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused build left %s behind", out)
			}
		})
	}
	// Without a planted value the same lab's credentials let it build.
	if _, _, err := build(t, fixture(), secrets...); err != nil {
		t.Errorf("clean recording refused: %v", err)
	}
}

func TestEscapedCredentialInAPageIsFound(t *testing.T) {
	for name, content := range map[string]string{
		"a.html":        "<pre>" + html.EscapeString(plantedPassword) + "</pre>",
		"posters/a.svg": `<svg xmlns="http://www.w3.org/2000/svg"><text><tspan>` + strings.ReplaceAll(html.EscapeString(plantedPassword), "+", "&#43;") + `</tspan></text></svg>`,
		// Written across colour changes: each style is its own element.
		"b.html": `<pre><span class="line">` + html.EscapeString(plantedPassword[:4]) + `<span class="fg1 bold">` + html.EscapeString(plantedPassword[4:9]) + `</span>` + html.EscapeString(plantedPassword[9:]) + `</span></pre>`,
		"posters/b.svg": `<svg xmlns="http://www.w3.org/2000/svg"><text y="1"><tspan x="12.00">` + html.EscapeString(plantedPassword[:4]) + `</tspan><tspan x="45.72" fill="#ff8a80">` +
			html.EscapeString(plantedPassword[4:9]) + `</tspan><tspan x="87.87">` + html.EscapeString(plantedPassword[9:]) + `</tspan></text></svg>`,
		"casts/b.cast": "{\"version\": 2, \"width\": 80, \"height\": 24}\n" + `[0.1, "o", "` + plantedPassword[:4] + `\u001b[31m"]` + "\n" + `[0.2, "o", "` + plantedPassword[4:9] + `\u001b[0m` + plantedPassword[9:] + `\r\n"]` + "\n",
		// Shown whole only between the second event and the third, which
		// erases it: only a replay sees it.
		"casts/c.cast": "{\"version\": 2, \"width\": 80, \"height\": 24}\n" + `[0.1, "o", "` + plantedPassword[:4] + `\u001b7XXXX"]` + "\n" + `[0.2, "o", "\u001b8` + plantedPassword[4:] + `"]` + "\n" + `[0.3, "o", "\r\u001b[2K"]` + "\n",
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := refuseCredentials(scanner(Options{Secrets: fixtureLab(t)}), dir, "site/public")
		if err == nil || !strings.Contains(err.Error(), filepath.Join("site/public", name)) || strings.Contains(err.Error(), plantedPassword) {
			t.Errorf("err = %v, want a refusal naming site/public/%s without the value", err, name)
		}
	}
}

func TestFailedCheckIsNotPublished(t *testing.T) {
	r := fixture()
	r.Scenarios[0].Checks[6].Held = false
	_, _, err := build(t, r)
	if err == nil || !strings.Contains(err.Error(), "runs.json") || !strings.Contains(err.Error(), "/scenarios/0/checks/6/held") {
		t.Fatalf("err = %v, want a refusal naming runs.json and the check", err)
	}
}

func TestRecordingWithoutEnvironmentNamesIsRefused(t *testing.T) {
	r := fixture()
	r.Environment = []recording.Name{}
	if _, _, err := build(t, r); err == nil || !strings.Contains(err.Error(), "environment names") {
		t.Fatalf("err = %v, want a refusal: the page's environment list comes from the recording", err)
	}
}

func TestServeServesTheBuiltSite(t *testing.T) {
	out, _, err := build(t, fixture())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, out, "127.0.0.1:0", func(u string) { ready <- u }) }()
	base := <-ready
	for path, want := range map[string]string{"": "Recorded runs", "failure-recovery.html": "Fail, then recover", "casts/failure-recovery.cast": `"version":2`, "assets/player.js": "types out the session"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET /%s: %s, body lacks %q", path, resp.Status, want)
		}
	}
	resp, err := http.Post(base, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", resp.Status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	rec := filepath.Join(dir, "recording")
	writeRecording(b, rec, fixture())
	lab, err := labenv.Load(filepath.Join("testdata", "lab", "environment"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Build(Options{Recording: rec, Out: filepath.Join(dir, "public"), Secrets: lab.Secrets}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRepeatedRunsSayHowOftenAndHowLong(t *testing.T) {
	r := fixture()
	sc := &r.Scenarios[0]
	for i := range sc.Checks {
		sc.Checks[i].Runs = 5
		if strings.HasPrefix(sc.Checks[i].Claim, "ptahschema/") {
			sc.Checks[i].Evidence = runs.Evidence{WaitSeconds: new(2.5)}
		}
	}
	for i := range sc.Events {
		sc.Events[i].Timing = &runs.Timing{Runs: 5, Await: &runs.Spread{Min: 2.1, Median: 2.5, Max: 3.4}, Command: runs.Spread{Min: 0.4, Median: 0.5, Max: 0.6}}
	}
	out, _, err := build(t, r)
	if err != nil {
		t.Fatal(err)
	}
	doc := parse(t, filepath.Join(out, "failure-recovery.html"))
	rows := find(doc, func(n *html.Node) bool { return n.Data == "tr" && n.Parent.Data == "tbody" })
	var waited, ran int
	for i, row := range rows {
		held := text(find(row, func(n *html.Node) bool { return n.Data == "td" })[2])
		switch {
		case held == "yes, held in 5 of 5 runs; waited 2.1–3.4 s":
			waited++
		case held == "yes, held in 5 of 5 runs; ran 0.4–0.6 s":
			ran++
		case held != "yes, held in 5 of 5 runs" || strings.HasPrefix(text(find(row, func(n *html.Node) bool { return n.Data == "td" })[1]), "exits"):
			t.Errorf("row %d: held %q", i+1, held)
		}
	}
	if waited == 0 || ran == 0 {
		t.Errorf("%d rows say how long they waited, %d how long they ran; want both", waited, ran)
	}
}
