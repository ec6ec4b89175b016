package recording

import (
	"slices"
	"sort"
	"strings"

	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/normalize"
	"ptah.run/operator/recorder/terminal"
)

// MaxLines is how many lines of output one step may publish; a step that
// prints more is refused (FORMAT.md), never cut.
const MaxLines = 500

// Lines turns a command's output chunks into published lines: split per
// stream, each line stamped with the arrival of its last byte, terminal line
// endings dropped, normalized, and only the streams show names (all when
// show is empty).
func Lines(r execute.Result, show []string, n normalize.Normalizer) []Line {
	shown := func(stream string) bool {
		return len(show) == 0 || slices.Contains(show, stream) || (stream == execute.Terminal && slices.Contains(show, execute.Stdout))
	}
	var out []Line
	partial := map[string]*strings.Builder{}
	lastAt := map[string]float64{}
	for _, c := range r.Chunks {
		if !shown(c.Stream) {
			continue
		}
		buf := partial[c.Stream]
		if buf == nil {
			buf = &strings.Builder{}
			partial[c.Stream] = buf
		}
		at := c.At.Seconds()
		rest := string(c.Data)
		for {
			i := strings.IndexByte(rest, '\n')
			if i < 0 {
				buf.WriteString(rest)
				break
			}
			buf.WriteString(rest[:i])
			out = append(out, line(at, c.Stream, buf.String(), n))
			buf.Reset()
			rest = rest[i+1:]
		}
		lastAt[c.Stream] = at
	}
	for stream, buf := range partial {
		if buf.Len() > 0 {
			out = append(out, line(lastAt[stream], stream, buf.String(), n))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

func line(at float64, stream, text string, n normalize.Normalizer) Line {
	// Microsecond resolution keeps runs.json and the cast free of float noise.
	at = float64(int64(at*1e6)) / 1e6
	return Line{T: at, Stream: stream, Text: n.Line(terminal.ValidUTF8(strings.TrimSuffix(text, "\r")))}
}
