package site

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"ptah.run/operator/recorder/terminal"
)

// castHeader is the first line of an asciicast v2 file.
type castHeader struct {
	Version int `json:"version"`
	Width   int `json:"width"`
	Height  int `json:"height"`
}

// castOutput reads an asciicast v2 file and returns everything it writes to
// the terminal ("o" events) in order. Markers and input events are skipped.
func castOutput(data []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	if !sc.Scan() {
		return "", fmt.Errorf("empty cast: no asciicast v2 header")
	}
	var h castHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return "", fmt.Errorf("cast header: %w", err)
	}
	if h.Version != 2 {
		return "", fmt.Errorf("cast header: version %d, want asciicast v2", h.Version)
	}
	var out strings.Builder
	last := -1.0
	for n := 2; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev [3]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return "", fmt.Errorf("cast line %d: %w", n, err)
		}
		var at float64
		var code, text string
		if err := json.Unmarshal(ev[0], &at); err != nil {
			return "", fmt.Errorf("cast line %d: time: %w", n, err)
		}
		if at < last {
			return "", fmt.Errorf("cast line %d: time %.6f goes back from %.6f", n, at, last)
		}
		last = at
		if err := json.Unmarshal(ev[1], &code); err != nil {
			return "", fmt.Errorf("cast line %d: event code: %w", n, err)
		}
		if err := json.Unmarshal(ev[2], &text); err != nil {
			return "", fmt.Errorf("cast line %d: event data: %w", n, err)
		}
		if code == "o" {
			out.WriteString(text)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read cast: %w", err)
	}
	return out.String(), nil
}

// agree reports the first line where the cast's screen differs from the
// page's transcript, or "" when the two show the same session. The cast
// types a command's continuation lines after a "> " prompt, as a shell does.
func agree(cast string, p *Page) string {
	got := terminal.Lines(cast)
	want := p.session("> ")
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: the cast shows %q, the recording's events %q", i+1, g, w)
		}
	}
	return ""
}
