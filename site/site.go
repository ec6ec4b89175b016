// Package site builds the static replay site from a recording: a catalog
// grouped by first tag and one page per scenario, laid out as seed 002. The
// transcript and the player's session are one markup rendered from the
// recording's events, and nothing is written when a credential would be.
package site

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/labenv"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options says where the recording is, where the site goes, and the lab's
// credential values, none of which may be published.
type Options struct {
	Recording string
	Out       string
	Secrets   []labenv.Secret
	// Credentials are further values that may not be published (the
	// kubeconfig's); the shapes of credentials are refused regardless.
	Credentials []credential.Credential
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	"prompted": func(cmd string) string { return "$ " + cmd },
	"at":       at,
	"clock":    clock,
	"head": func(title, description, image string) map[string]string {
		return map[string]string{"Title": title, "Description": description, "Image": image, "ImageAlt": "The final screen of the recorded session: " + title}
	},
}).ParseFS(templateFS, "templates/*.html"))

// at writes a moment in seconds as the page's data attributes and links do.
func at(seconds float64) string { return fmt.Sprintf("%.3f", seconds) }

// clock shows seconds as the player's time display does: 1:05.3.
func clock(seconds float64) string {
	m := int(seconds) / 60
	return fmt.Sprintf("%d:%04.1f", m, seconds-float64(m*60))
}

// Build writes the site for the recording in opts.Recording to opts.Out. It
// builds next to Out and replaces Out only when everything was written and
// no credential value appears in it, so a refused build publishes nothing.
func Build(opts Options) (*Site, error) {
	// The inputs are read first, so a refusal names the recording's file.
	sc := scanner(opts)
	if err := refuseCredentials(sc, opts.Recording, opts.Recording); err != nil {
		return nil, err
	}
	s, err := loadRecording(opts.Recording)
	if err != nil {
		return nil, err
	}
	if err := validate(s); err != nil {
		return nil, err
	}
	if s.Groups, err = groupByFirstTag(s.Pages); err != nil {
		return nil, err
	}

	out := filepath.Clean(opts.Out)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("create the site's parent folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+"-")
	if err != nil {
		return nil, fmt.Errorf("create the site's build folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := write(s, opts.Recording, tmp); err != nil {
		return nil, err
	}
	if err := refuseCredentials(sc, tmp, out); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, fmt.Errorf("remove the previous site at %s: %w", out, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("move the built site to %s: %w", out, err)
	}
	return s, nil
}

// validate refuses a recording the site would misrepresent. That every
// check held is the recording schema's rule, checked when it is read.
func validate(s *Site) error {
	if len(s.Environment) == 0 {
		return fmt.Errorf("the recording names no environment names: \"What the commands read\" is rendered from them; record again")
	}
	seen := map[string]bool{}
	for _, p := range s.Pages {
		switch {
		case !kebab.MatchString(p.ID):
			return fmt.Errorf("scenario id %q is not kebab-case: it names the page's file", p.ID)
		case seen[p.ID]:
			return fmt.Errorf("scenario %s is in the recording twice", p.ID)
		case len(p.Steps) == 0:
			return fmt.Errorf("scenario %s has no steps in the recording", p.ID)
		case len(p.Checks) == 0:
			return fmt.Errorf("scenario %s has no checks in the recording: a replay page states what held", p.ID)
		}
		seen[p.ID] = true
	}
	return nil
}

// write renders every page and copies the assets and casts into dir.
func write(s *Site, recording, dir string) error {
	if err := render(filepath.Join(dir, "index.html"), "catalog.html", s); err != nil {
		return err
	}
	for _, sub := range []string{"casts", "posters"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	for _, p := range s.Pages {
		castFile := filepath.Join(recording, p.ID+".cast")
		cast, err := os.ReadFile(castFile)
		if err != nil {
			return fmt.Errorf("scenario %s: read its cast: %w (record the scenario again)", p.ID, err)
		}
		header, events, err := readCast(cast)
		if err != nil {
			return fmt.Errorf("%s: %w", castFile, err)
		}
		var text strings.Builder
		for _, e := range events {
			text.WriteString(e.Data)
		}
		if d := agree(text.String(), p); d != "" {
			return fmt.Errorf("%s does not show the session runs.json holds: %s; record the scenario again", castFile, d)
		}
		duration := 0.0
		if len(events) > 0 {
			duration = events[len(events)-1].At
		}
		if err := p.setTimes(lineTimes(events), duration); err != nil {
			return fmt.Errorf("%s: %w", castFile, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p.PosterHref())), poster(p.Title, header, events), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p.CastHref())), cast, 0o644); err != nil {
			return err
		}
		if err := render(filepath.Join(dir, p.Href()), "scenario.html", struct {
			*Site
			Page *Page
		}{s, p}); err != nil {
			return err
		}
	}
	return fs.WalkDir(assetFS, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := assetFS.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

func render(path, name string, data any) error {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
