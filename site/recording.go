package site

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Provisional shape of demo/recordings/runs.json (DESIGN.md section 5) until
// recorder/recording lands; then these types go and the loader imports it.
type runs struct {
	RecordedAt      time.Time     `json:"recordedAt"`
	Lab             labVersions   `json:"lab"`
	ScenariosCommit string        `json:"scenariosCommit"`
	Environment     []EnvName     `json:"environment"`
	Scenarios       []runScenario `json:"scenarios"`
}

type labVersions struct {
	Kubernetes     string `json:"kubernetes"`
	Kind           string `json:"kind"`
	OperatorCommit string `json:"operatorCommit"`
	PtahVersion    string `json:"ptahVersion"`
	ExecutorDigest string `json:"executorDigest"`
}

type runScenario struct {
	ID               string     `json:"id"`
	Title            string     `json:"title"`
	Tagline          string     `json:"tagline"`
	Learn            string     `json:"learn"`
	Tags             []string   `json:"tags"`
	File             string     `json:"file"`
	DefinitionDigest string     `json:"definitionDigest"`
	Events           []runEvent `json:"events"`
	Checks           []runCheck `json:"checks"`
}

type runEvent struct {
	Step    int         `json:"step"`
	Note    string      `json:"note"`
	Command string      `json:"command"`
	Sync    string      `json:"sync,omitempty"`
	Output  []runOutput `json:"output"`
}

type runOutput struct {
	At     float64 `json:"at"`
	Stream string  `json:"stream"`
	Data   string  `json:"data"`
}

type runCheck struct {
	Step  int    `json:"step"`
	Claim string `json:"claim"`
	Held  bool   `json:"held"`
}

// loadRecording reads runs.json in dir and builds the site's model from it.
func loadRecording(dir string) (*Site, error) {
	path := filepath.Join(dir, "runs.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the recording: %w (record the scenarios first, or pass -recording)", err)
	}
	var r runs
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Site{
		Lab: Lab{
			Kubernetes: Value{Short: r.Lab.Kubernetes, Full: r.Lab.Kubernetes},
			Operator:   short(r.Lab.OperatorCommit),
			Ptah:       Value{Short: r.Lab.PtahVersion, Full: r.Lab.PtahVersion},
			Executor:   short(r.Lab.ExecutorDigest),
			Recorded:   Value{Short: r.RecordedAt.UTC().Format("2006-01-02"), Full: r.RecordedAt.UTC().Format(time.RFC3339)},
			Scenarios:  short(r.ScenariosCommit),
		},
		Environment: r.Environment,
	}
	for _, sc := range r.Scenarios {
		p := &Page{ID: sc.ID, Title: sc.Title, Tagline: sc.Tagline, Learn: sc.Learn, Tags: sc.Tags, File: sc.File}
		for _, e := range sc.Events {
			chunks := make([]Chunk, len(e.Output))
			for i, o := range e.Output {
				chunks[i] = Chunk{At: o.At, Stream: o.Stream, Data: o.Data}
			}
			p.Steps = append(p.Steps, Step{Number: e.Step, Note: e.Note, Command: e.Command, Sync: e.Sync, Lines: ScreenLines(chunks)})
		}
		for _, c := range sc.Checks {
			p.Checks = append(p.Checks, Check{Step: c.Step, Claim: c.Claim, Held: c.Held})
		}
		s.Pages = append(s.Pages, p)
	}
	return s, nil
}
