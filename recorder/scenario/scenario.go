// Package scenario holds the scenario file format (docs/design.md section 5;
// FORMAT.md for authors) and its loader. A scenario that loads is one the
// recorder may run: every rule a reader depends on is checked here, before
// anything executes.
package scenario

// Scenario is one YAML file under scenarios/: a titled session of steps.
type Scenario struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Tagline string   `json:"tagline"`
	Learn   string   `json:"learn"`
	Tags    []string `json:"tags"`
	// Reset runs before the steps and is not published.
	Reset []string `json:"reset,omitempty"`
	Steps []Step   `json:"steps"`

	// File is the path the scenario was loaded from (not part of the YAML).
	File string `json:"-"`
}

// Step is one published command with what must hold around it.
type Step struct {
	Note string `json:"note"`
	// Await is observed before the command runs.
	Await *Observation `json:"await,omitempty"`
	// Run is shell text, published exactly as written.
	Run string `json:"run"`
	// Retry repeats a command that changes nothing until its expectations hold.
	Retry string `json:"retry,omitempty"`
	// Timeout is the deadline of one run of the command (FORMAT.md states
	// the default); past it the command's whole process group is killed.
	Timeout string `json:"timeout,omitempty"`
	// Sync is the phase pill the player shows while the step plays.
	Sync   string   `json:"sync,omitempty"`
	Show   []string `json:"show,omitempty"`
	Expect *Expect  `json:"expect"`
}

// Expect is what the command's result must show.
type Expect struct {
	Exit           *int         `json:"exit"`
	StdoutContains []string     `json:"stdout_contains,omitempty"`
	StdoutAbsent   []string     `json:"stdout_absent,omitempty"`
	StderrContains []string     `json:"stderr_contains,omitempty"`
	StderrAbsent   []string     `json:"stderr_absent,omitempty"`
	Resource       *Observation `json:"resource,omitempty"`
}

// Observation reads one live object: a condition, fields, or its absence.
type Observation struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	// Generation "current": the condition's observedGeneration must equal
	// the object's metadata.generation when it is read.
	Generation string     `json:"generation,omitempty"`
	Condition  *Condition `json:"condition,omitempty"`
	Fields     []Field    `json:"fields,omitempty"`
	Absent     bool       `json:"absent,omitempty"`
}

// Condition is matched on type, status and reason, never on message text.
type Condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Field is a gjson path on the live object with exactly one expectation.
type Field struct {
	Path     string  `json:"path"`
	Equals   *string `json:"equals,omitempty"`
	NotEmpty bool    `json:"notEmpty,omitempty"`
}
