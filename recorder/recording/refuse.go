package recording

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"ptah.run/operator/recorder/labenv"
)

// CredentialError is a refusal to publish: where the credential was found
// and which credential file holds it, never the value.
type CredentialError struct {
	Where string
	From  string
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("refused: %s contains the credential from %s; nothing was written (change the step so it does not print it)", e.Where, e.From)
}

// forms are the ways a value can appear in published bytes: as itself, as
// base64 (kubectl get secret -o yaml), and escaped inside a JSON string.
func forms(v []byte) [][]byte {
	js, _ := json.Marshal(string(v))
	out := [][]byte{v, []byte(base64.StdEncoding.EncodeToString(v))}
	if esc := js[1 : len(js)-1]; !bytes.Equal(esc, v) {
		out = append(out, esc)
	}
	return out
}

func scanBytes(secrets []labenv.Secret, where string, data []byte) error {
	for _, s := range secrets {
		for _, f := range forms(s.Value) {
			if bytes.Contains(data, f) {
				return &CredentialError{Where: where, From: s.From}
			}
		}
	}
	return nil
}

// Scan refuses a scenario in which any published text (notes, commands,
// output, claims, evidence) contains a credential, naming the step.
func Scan(secrets []labenv.Secret, s Scenario) error {
	for _, e := range s.Events {
		where := fmt.Sprintf("scenario %s step %d", s.ID, e.Step)
		for _, part := range []string{e.Note, e.Command} {
			if err := scanBytes(secrets, where, []byte(part)); err != nil {
				return err
			}
		}
		var out strings.Builder
		for _, l := range e.Output {
			out.WriteString(l.Text)
			out.WriteByte('\n')
		}
		if err := scanBytes(secrets, where+" output", []byte(out.String())); err != nil {
			return err
		}
	}
	for _, c := range s.Checks {
		raw, _ := json.Marshal(c)
		if err := scanBytes(secrets, fmt.Sprintf("scenario %s step %d check %q", s.ID, c.Step, c.Claim), raw); err != nil {
			return err
		}
	}
	return nil
}

// ScanText refuses text printed to the operator (diagnostics), which is
// never published but may still be pasted somewhere.
func ScanText(secrets []labenv.Secret, where, text string) error {
	return scanBytes(secrets, where, []byte(text))
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
