// Package runs holds the types runs.json is made of (the recording, its
// scenarios, events, checks and evidence), their JSON Schema and how to read
// and validate the file. It is a leaf: it links no cluster client and no
// shell parser, so the site and anything else that only reads a recording
// stay small. Package recording makes and publishes recordings.
package runs

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Schema is the JSON Schema runs.json is written against.
//
//go:embed runs.schema.json
var Schema []byte

// File is the recording's usual name, next to the casts.
const File = "runs.json"

// Recording is runs.json.
type Recording struct {
	RecordedAt        string   `json:"recordedAt"`
	Lab               Versions `json:"lab"`
	ScenariosCommit   string   `json:"scenariosCommit"`
	ScenariosDescribe string   `json:"scenariosDescribe"`
	Environment       []Name   `json:"environment"`
	// OperatorFiles is the sha256 of every file of the operator source the
	// lab's images were built from (Lab.OperatorSource is their digest), so
	// a stale recording can name what changed.
	OperatorFiles map[string]string `json:"operatorFiles"`
	Scenarios     []Scenario        `json:"scenarios"`
}

// Versions identify the lab a recording was made against; two recordings
// may be merged only when their versions are equal.
type Versions struct {
	Kubernetes     string `json:"kubernetes"`
	Kind           string `json:"kind"`
	OperatorCommit string `json:"operatorCommit"`
	// OperatorSource is the digest of the operator's own files the images
	// were built from (package opsource), beside the commit they were at.
	OperatorSource string `json:"operatorSource"`
	PtahVersion    string `json:"ptahVersion"`
	ExecutorDigest string `json:"executorDigest"`
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
	DefinitionDigest string  `json:"definitionDigest"`
	RecordedAt       string  `json:"recordedAt"`
	Events           []Event `json:"events"`
	Checks           []Check `json:"checks"`
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
	Start float64 `json:"start"`
	// Seconds is how long the command ran, every attempt of a retry
	// included.
	Seconds float64 `json:"seconds,omitempty"`
	// Timing is set by record -repeat: the step's await and command across
	// every run.
	Timing *Timing `json:"timing,omitempty"`
	Output []Line  `json:"output"`
}

// Timing is how long a step took across repeated runs.
type Timing struct {
	Runs    int     `json:"runs"`
	Await   *Spread `json:"await,omitempty"`
	Command Spread  `json:"command"`
}

// Spread is seconds across runs.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Line is one line of output: seconds from the command's start to its last
// byte, the stream it came from, and its text without the line ending.
type Line struct {
	T      float64 `json:"t"`
	Stream string  `json:"stream"`
	Text   string  `json:"text"`
}

// Read loads an existing runs.json.
func Read(file string) (*Recording, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("runs: read %s: %w", file, err)
	}
	var r Recording
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("runs: %s is not a recording: %w", file, err)
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
		return nil, fmt.Errorf("runs: encode runs.json: %w", err)
	}
	return append(raw, '\n'), nil
}
