package runs

// Check is one claim, whether it held, and what was seen.
type Check struct {
	Step  int    `json:"step"`
	Claim string `json:"claim"`
	Held  bool   `json:"held"`
	// Runs is set by record -repeat: the runs the claim held in, which is
	// every run, or nothing is published.
	Runs     int      `json:"runs,omitempty"`
	Evidence Evidence `json:"evidence"`
}

// Evidence is what the recorder observed when it judged a claim. Only the
// parts the claim is about are set.
type Evidence struct {
	Exit      *int               `json:"exit,omitempty"`
	Attempts  int                `json:"attempts,omitempty"`
	Condition *ConditionEvidence `json:"condition,omitempty"`
	Field     *FieldEvidence     `json:"field,omitempty"`
	Present   *bool              `json:"present,omitempty"`
	// WaitSeconds is how long an await or retry took to hold (or give up).
	WaitSeconds *float64 `json:"waitSeconds,omitempty"`
	// Why says in one line what was seen instead; empty when held.
	Why string `json:"why,omitempty"`
}

// ConditionEvidence is the condition as read from the live object.
type ConditionEvidence struct {
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	ObservedGeneration int64  `json:"observedGeneration"`
	Generation         int64  `json:"generation"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// FieldEvidence is a field's value as read; Exists is false when the path
// matched nothing.
type FieldEvidence struct {
	Path   string `json:"path"`
	Value  string `json:"value"`
	Exists bool   `json:"exists"`
}
