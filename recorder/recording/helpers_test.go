package recording

import (
	"encoding/json"
	"fmt"
)

// fmtSscan reads the time of one asciicast event line.
func fmtSscan(line string, at *float64) (int, error) {
	var ev []json.RawMessage
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		return 0, err
	}
	if len(ev) != 3 {
		return 0, fmt.Errorf("event has %d fields, want 3", len(ev))
	}
	return 1, json.Unmarshal(ev[0], at)
}
