package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/terminal"
)

// CredentialError is a refusal to publish, from the credential scanner.
type CredentialError = credential.Refusal

func scanBytes(sc *credential.Scanner, where string, data []byte) error {
	return sc.Refuse(where, data)
}

// scanCast replays the scenario's cast from its start to its end in one
// terminal of the cast's size, as a player shows it, and refuses a
// credential any screen shows, naming the step and stream that wrote the
// chunk it showed after.
func scanCast(sc *credential.Scanner, s Scenario) error {
	var chunks []string
	var from []castEvent
	for _, e := range castEvents(s) {
		if e.kind == "o" {
			chunks = append(chunks, e.data)
			from = append(from, e)
		}
	}
	n, f := sc.ScanSession(execute.Columns, execute.Rows, chunks)
	if f == nil {
		return nil
	}
	e := from[n-1]
	return &CredentialError{Where: fmt.Sprintf("scenario %s cast, step %d %s", s.ID, e.step, e.stream), Found: *f}
}

// Scan refuses a scenario in which any published text (notes, commands,
// output of both streams, claims, evidence) holds a credential, naming the
// step and where in it.
func Scan(sc *credential.Scanner, s Scenario) error {
	for _, e := range s.Events {
		where := fmt.Sprintf("scenario %s step %d", s.ID, e.Step)
		if err := scanBytes(sc, where+" note", []byte(e.Note)); err != nil {
			return err
		}
		if err := scanBytes(sc, where+" command", []byte(e.Command)); err != nil {
			return err
		}
		// Each stream as recorded, and line by line as the page shows it
		// (an escape sequence left open on one line does not hide the next
		// there); the cast is replayed whole by scanCast.
		var streams []string
		out, shown := map[string]*bytes.Buffer{}, map[string]*bytes.Buffer{}
		for _, l := range e.Output {
			if out[l.Stream] == nil {
				streams = append(streams, l.Stream)
				out[l.Stream], shown[l.Stream] = &bytes.Buffer{}, &bytes.Buffer{}
			}
			out[l.Stream].WriteString(l.Text + "\n")
			shown[l.Stream].WriteString(terminal.Line(l.Text) + "\n")
		}
		for _, st := range streams {
			if err := scanBytes(sc, where+" "+st, out[st].Bytes()); err != nil {
				return err
			}
			if err := scanBytes(sc, where+" "+st+" (each line as the page shows it)", shown[st].Bytes()); err != nil {
				return err
			}
		}
	}
	for _, c := range s.Checks {
		where := fmt.Sprintf("scenario %s step %d check", s.ID, c.Step)
		if err := scanBytes(sc, where+" claim", []byte(c.Claim)); err != nil {
			return err
		}
		raw, _ := json.Marshal(c.Evidence)
		if err := scanBytes(sc, where+" evidence", raw); err != nil {
			return err
		}
		if f := c.Evidence.Field; f != nil {
			if err := scanBytes(sc, where+" evidence", []byte(f.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ScanText refuses text the recorder writes besides the recording (the
// JUnit report).
func ScanText(sc *credential.Scanner, where, text string) error {
	return scanBytes(sc, where, []byte(text))
}

// Pin returns the commit and `git describe` of the tree at dir, refusing a
// tree with changes or untracked files (ignored files do not count): a
// recording must be reproducible from the commit it names. The recording's
// own output (outputs, paths relative to dir) is left out: re-recording over
// a recording changes nothing that is recorded from.
func Pin(dir string, outputs ...string) (commit, describe string, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("recording: git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	args := []string{"status", "--porcelain=v1", "--untracked-files=all", "--", "."}
	for _, o := range outputs {
		args = append(args, ":(exclude)"+filepath.ToSlash(o))
	}
	status, err := git(args...)
	if err != nil {
		return "", "", err
	}
	if status != "" {
		lines := strings.Split(status, "\n")
		more := ""
		if len(lines) > 5 {
			more = fmt.Sprintf(" and %d more", len(lines)-5)
			lines = lines[:5]
		}
		return "", "", fmt.Errorf("recording: refused: the tree at %s has uncommitted changes (%s%s); commit them first, so the recording names the commit it was made from",
			dir, strings.Join(lines, ", "), more)
	}
	if commit, err = git("rev-parse", "HEAD"); err != nil {
		return "", "", err
	}
	if describe, err = git("describe", "--tags", "--always", "--long"); err != nil {
		return "", "", err
	}
	return commit, describe, nil
}
