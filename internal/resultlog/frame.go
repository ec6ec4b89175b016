// Package resultlog is the legacy result transport: a Job that cannot
// deliver a PtahResultRecord through the API writes its result as one framed
// line in its container log, and a short summary to its Pod's termination
// message. The runner writes both; the manager reads them. Nothing else in
// the log can pass for a frame: the runner quotes every other line it lets
// through (its own and ptah's, which carry text the migrations' SQL chose),
// and a frame names its operation and carries the digest of its payload.
package resultlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Marker begins a frame line, and only a frame line: Quote puts QuotePrefix
// before every other line, so no line the executor printed starts with it.
const (
	Marker      = "ptah.run/result-frame/v1 "
	QuotePrefix = "| "
)

// Frame is one result as the log carries it: the PtahResultRecord spec the
// runner would have created, and the operation it belongs to.
type Frame struct {
	OperationID string
	Spec        v1alpha1.PtahResultRecordSpec
}

// Encode is the frame line of spec, newline included:
//
//	ptah.run/result-frame/v1 <operation id> sha256:<hex of payload> <base64 payload>
func Encode(spec *v1alpha1.PtahResultRecordSpec) (string, error) {
	payload, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("encode the result of operation %s: %w", spec.OperationID, err)
	}
	return Marker + spec.OperationID + " " + digest(payload) + " " + base64.StdEncoding.EncodeToString(payload) + "\n", nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Scan is what a log holds for one operation.
type Scan struct {
	// Mine are the readable frames of the operation asked about.
	Mine []Frame
	// Others are the operation IDs of readable frames of other operations.
	Others []string
	// Broken counts lines that begin as a frame and do not read as one: cut
	// short, or their payload does not digest to what they carry.
	Broken int
}

// Read scans a container log for the frames of operationID. Only a line
// that begins with Marker is a frame; its payload must digest to the digest
// it carries and name the operation the line names.
func Read(log []byte, operationID string) Scan {
	var s Scan
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, Marker) {
			continue
		}
		f, ok := parse(strings.TrimPrefix(line, Marker))
		switch {
		case !ok:
			s.Broken++
		case f.OperationID == operationID:
			s.Mine = append(s.Mine, f)
		default:
			s.Others = append(s.Others, f.OperationID)
		}
	}
	if sc.Err() != nil {
		s.Broken++
	}
	return s
}

func parse(rest string) (Frame, bool) {
	fields := strings.Split(strings.TrimRight(rest, "\r"), " ")
	if len(fields) != 3 {
		return Frame{}, false
	}
	payload, err := base64.StdEncoding.DecodeString(fields[2])
	if err != nil || digest(payload) != fields[1] {
		return Frame{}, false
	}
	var spec v1alpha1.PtahResultRecordSpec
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if dec.Decode(&spec) != nil || spec.OperationID != fields[0] {
		return Frame{}, false
	}
	return Frame{OperationID: fields[0], Spec: spec}, true
}

// Quote copies everything written to it to w with QuotePrefix at the start
// of every line, so no line of it can begin a frame whatever its bytes.
// Close ends a line left open, so the frame written after it starts a line.
type Quote struct {
	w   io.Writer
	mid bool // inside a line: the prefix was written
}

// NewQuote quotes what is written to w.
func NewQuote(w io.Writer) *Quote { return &Quote{w: w} }

func (q *Quote) Write(p []byte) (int, error) {
	var buf bytes.Buffer
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !q.mid {
			buf.WriteString(QuotePrefix)
		}
		buf.Write(line)
		q.mid = line[len(line)-1] != '\n'
	}
	if _, err := q.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends an open line.
func (q *Quote) Close() error {
	if !q.mid {
		return nil
	}
	q.mid = false
	_, err := io.WriteString(q.w, "\n")
	return err
}
