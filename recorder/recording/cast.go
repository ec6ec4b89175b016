package recording

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"ptah.run/operator/recorder/execute"
)

// Cast timing: commands are typed at a fixed rate; output keeps its real
// relative timing, but no pause in the replay is longer than idleCap.
const (
	typeMicros    = 40_000
	idleCapMicros = 2_000_000
	pauseMicros   = 1_000_000
)

// Cast renders a scenario as asciicast v2: a header, one "m" marker per
// step, then the note, the typed command and its output as "o" events. Every
// byte follows from the recording, so rendering twice gives identical files.
func Cast(s Scenario) []byte {
	var b bytes.Buffer
	header, _ := json.Marshal(struct {
		Version int    `json:"version"`
		Width   int    `json:"width"`
		Height  int    `json:"height"`
		Title   string `json:"title"`
	}{2, execute.Columns, execute.Rows, s.Title})
	b.Write(header)
	b.WriteByte('\n')
	for _, e := range castEvents(s) {
		text, _ := json.Marshal(e.data)
		b.WriteString("[" + seconds(e.at) + ", \"" + e.kind + "\", ")
		b.Write(text)
		b.WriteString("]\n")
	}
	return b.Bytes()
}

// castEvent is one event of a cast and what wrote it: the step, and the
// note, the command or the output stream.
type castEvent struct {
	at         int64 // microseconds, integer so no float drift accumulates
	kind, data string
	step       int
	stream     string
}

func castEvents(s Scenario) []castEvent {
	var out []castEvent
	var now int64
	for _, e := range s.Events {
		emit := func(kind, data, stream string) {
			out = append(out, castEvent{now, kind, data, e.Step, stream})
		}
		emit("m", e.Note, "note")
		emit("o", "\x1b[2m# "+e.Note+"\x1b[0m\r\n", "note")
		now += pauseMicros / 2
		emit("o", "$ ", "command")
		for _, r := range e.Command {
			now += typeMicros
			if r == '\n' {
				emit("o", "\r\n> ", "command")
				continue
			}
			emit("o", string(r), "command")
		}
		now += typeMicros
		emit("o", "\r\n", "command")
		var last int64
		for _, l := range e.Output {
			at := int64(l.T * 1e6)
			now += min(max(at-last, 0), idleCapMicros)
			last = max(at, last)
			emit("o", strings.ReplaceAll(l.Text, "\n", "\r\n")+"\r\n", l.Stream)
		}
		now += pauseMicros
	}
	return out
}

func seconds(micros int64) string {
	return strconv.FormatFloat(float64(micros)/1e6, 'f', 6, 64)
}
