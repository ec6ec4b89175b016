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

	var now int64 // microseconds, integer so no float drift accumulates
	emit := func(kind, data string) {
		text, _ := json.Marshal(data)
		b.WriteString("[" + seconds(now) + ", \"" + kind + "\", ")
		b.Write(text)
		b.WriteString("]\n")
	}
	for _, e := range s.Events {
		emit("m", e.Note)
		emit("o", "\x1b[2m# "+e.Note+"\x1b[0m\r\n")
		now += pauseMicros / 2
		emit("o", "$ ")
		for _, r := range e.Command {
			now += typeMicros
			if r == '\n' {
				emit("o", "\r\n> ")
				continue
			}
			emit("o", string(r))
		}
		now += typeMicros
		emit("o", "\r\n")
		var last int64
		for _, l := range e.Output {
			at := int64(l.T * 1e6)
			now += min(max(at-last, 0), idleCapMicros)
			last = max(at, last)
			emit("o", strings.ReplaceAll(l.Text, "\n", "\r\n")+"\r\n")
		}
		now += pauseMicros
	}
	return b.Bytes()
}

func seconds(micros int64) string {
	return strconv.FormatFloat(float64(micros)/1e6, 'f', 6, 64)
}
