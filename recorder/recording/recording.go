// Package recording is what the recorder publishes: runs.json (documented by
// runs.schema.json) and one asciicast per scenario, written only after every
// byte has been scanned for the lab's credentials. A recording pins the
// commit it was made from and the lab it ran against.
package recording

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/runs"
	"ptah.run/operator/recorder/scenario"
)

// The recording's types live in package runs, a leaf the site reads without
// this package's scanners and shell parser; these are the same types.
type (
	Recording = runs.Recording
	Name      = runs.Name
	Scenario  = runs.Scenario
	Event     = runs.Event
	Line      = runs.Line
)

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
		if err := scanCast(sc, s); err != nil {
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
