// Package recording is what the recorder publishes: runs.json (documented by
// runs.schema.json) and one asciicast per scenario, written only after every
// byte has been scanned for the lab's credentials. A recording pins the
// commit it was made from and the lab it ran against.
package recording

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/evidence"
	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/scenario"
)

// Schema is the JSON Schema runs.json is written against.
//
//go:embed runs.schema.json
var Schema []byte

// RunsFile is the recording's usual name, next to the casts.
const RunsFile = "runs.json"

// Recording is runs.json.
type Recording struct {
	RecordedAt        string          `json:"recordedAt"`
	Lab               labenv.Versions `json:"lab"`
	ScenariosCommit   string          `json:"scenariosCommit"`
	ScenariosDescribe string          `json:"scenariosDescribe"`
	Environment       []Name          `json:"environment"`
	Scenarios         []Scenario      `json:"scenarios"`
}

// Name is a published environment name with its meaning.
type Name struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// Scenario is one recorded scenario.
type Scenario struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Tagline string   `json:"tagline"`
	Learn   string   `json:"learn"`
	Tags    []string `json:"tags"`
	File    string   `json:"file"`
	// DefinitionDigest covers what runs and what is checked, not narration.
	DefinitionDigest string           `json:"definitionDigest"`
	RecordedAt       string           `json:"recordedAt"`
	Events           []Event          `json:"events"`
	Checks           []evidence.Check `json:"checks"`
}

// Event is one step as it played: its note, the command as written, and the
// output it printed.
type Event struct {
	Step    int      `json:"step"`
	Note    string   `json:"note"`
	Command string   `json:"command"`
	Sync    string   `json:"sync,omitempty"`
	Show    []string `json:"show,omitempty"`
	// Start is seconds from the scenario's first step to this command.
	Start  float64 `json:"start"`
	Output []Line  `json:"output"`
}

// Line is one line of output: seconds from the command's start to its last
// byte, the stream it came from, and its text without the line ending.
type Line struct {
	T      float64 `json:"t"`
	Stream string  `json:"stream"`
	Text   string  `json:"text"`
}

// DefinitionDigest is sha256 over what changes what runs or what is checked:
// the id, reset commands and each step's await, run, retry, show and expect.
// Narration (title, tagline, learn, tags, note, sync) is left out, so
// rewording a note does not invalidate a recording.
func DefinitionDigest(s scenario.Scenario) string {
	steps := make([]scenario.Step, len(s.Steps))
	for i, st := range s.Steps {
		st.Note, st.Sync = "", ""
		steps[i] = st
	}
	raw, err := json.Marshal(struct {
		ID    string          `json:"id"`
		Reset []string        `json:"reset"`
		Steps []scenario.Step `json:"steps"`
	}{s.ID, s.Reset, steps})
	if err != nil {
		panic(fmt.Sprintf("recording: scenario %s does not encode: %v", s.ID, err))
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Read loads an existing runs.json.
func Read(file string) (*Recording, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("recording: read %s: %w", file, err)
	}
	var r Recording
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("recording: %s is not a recording: %w", file, err)
	}
	return &r, nil
}

// Merge puts s into r in place of the scenario with its id, or adds it.
// Scenarios stay sorted by id so a merge never reorders the file otherwise.
func (r *Recording) Merge(s Scenario) {
	i := slices.IndexFunc(r.Scenarios, func(x Scenario) bool { return x.ID == s.ID })
	if i >= 0 {
		r.Scenarios[i] = s
	} else {
		r.Scenarios = append(r.Scenarios, s)
	}
	slices.SortFunc(r.Scenarios, func(a, b Scenario) int { return strings.Compare(a.ID, b.ID) })
}

// Encode renders runs.json.
func (r *Recording) Encode() ([]byte, error) {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("recording: encode runs.json: %w", err)
	}
	return append(raw, '\n'), nil
}

// Publish scans everything for credentials and, only when nothing is found,
// writes r to runsFile and one <id>.cast per scenario next to it. Files are
// written to temporaries and renamed, so a failed publish leaves the old
// recording whole.
func Publish(runsFile string, r *Recording, sc *credential.Scanner) error {
	dir := filepath.Dir(runsFile)
	files := map[string][]byte{}
	for _, s := range r.Scenarios {
		if err := Scan(sc, s); err != nil {
			return err
		}
		cast := Cast(s)
		if err := scanBytes(sc, "scenario "+s.ID+" cast", cast); err != nil {
			return err
		}
		files[s.ID+".cast"] = cast
	}
	runs, err := r.Encode()
	if err != nil {
		return err
	}
	if err := scanBytes(sc, filepath.Base(runsFile), runs); err != nil {
		return err
	}
	files[filepath.Base(runsFile)] = runs
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("recording: create %s: %w", dir, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		tmp := filepath.Join(dir, "."+n+".tmp")
		if err := os.WriteFile(tmp, files[n], 0o644); err != nil {
			return fmt.Errorf("recording: write %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("recording: rename %s: %w", tmp, err)
		}
	}
	return nil
}
