package site

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"ptah.run/operator/recorder/terminal"
)

// castHeader is the first line of an asciicast v2 file.
type castHeader struct {
	Version int `json:"version"`
	Width   int `json:"width"`
	Height  int `json:"height"`
}

// castEvent is one "o" event of a cast: when, and the bytes written.
type castEvent struct {
	At   float64
	Data string
}

// readCast reads an asciicast v2 file: its header and everything it writes
// to the terminal ("o" events) in order. Markers and input are skipped.
func readCast(data []byte) (castHeader, []castEvent, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var h castHeader
	if !sc.Scan() {
		return h, nil, fmt.Errorf("empty cast: no asciicast v2 header")
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return h, nil, fmt.Errorf("cast header: %w", err)
	}
	if h.Version != 2 {
		return h, nil, fmt.Errorf("cast header: version %d, want asciicast v2", h.Version)
	}
	var out []castEvent
	last := -1.0
	for n := 2; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev [3]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return h, nil, fmt.Errorf("cast line %d: %w", n, err)
		}
		var at float64
		var code, text string
		if err := json.Unmarshal(ev[0], &at); err != nil {
			return h, nil, fmt.Errorf("cast line %d: time: %w", n, err)
		}
		if at < last {
			return h, nil, fmt.Errorf("cast line %d: time %.6f goes back from %.6f", n, at, last)
		}
		last = at
		if err := json.Unmarshal(ev[1], &code); err != nil {
			return h, nil, fmt.Errorf("cast line %d: event code: %w", n, err)
		}
		if err := json.Unmarshal(ev[2], &text); err != nil {
			return h, nil, fmt.Errorf("cast line %d: event data: %w", n, err)
		}
		if code == "o" {
			out = append(out, castEvent{At: at, Data: text})
		}
	}
	if err := sc.Err(); err != nil {
		return h, nil, fmt.Errorf("read cast: %w", err)
	}
	return h, out, nil
}

// castOutput returns everything a cast writes to the terminal, in order.
func castOutput(data []byte) (string, error) {
	_, events, err := readCast(data)
	var out strings.Builder
	for _, e := range events {
		out.WriteString(e.Data)
	}
	return out.String(), err
}

// span is when the cast writes one screen line: the first byte after the
// previous line's end, and the newline that ends it.
type span struct{ Start, End float64 }

// lineTimes returns when each screen line of the cast (as terminal.Lines
// counts them) is written, so the player's clock is the cast's.
func lineTimes(events []castEvent) []span {
	// Where each event's bytes start in the cast's output. Events are JSON
	// strings, so valid UTF-8, and the rows' offsets are offsets in text.
	starts := make([]int, len(events))
	var text strings.Builder
	for i, e := range events {
		starts[i] = text.Len()
		text.WriteString(e.Data)
	}
	// when is the time of the event that wrote the byte at offset off.
	when := func(off int) float64 {
		return events[sort.Search(len(starts), func(i int) bool { return starts[i] > off })-1].At
	}
	rows := terminal.Rows(text.String())
	out := make([]span, 0, len(rows))
	start := 0
	for _, r := range rows {
		out = append(out, span{when(start), when(r.End - 1)})
		start = r.End
	}
	return out
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
