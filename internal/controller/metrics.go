package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The manager's own series, served beside controller-runtime's on its
// metrics endpoint: what a dashboard needs, one series per PtahSchema and
// PtahMigration for its state, and per namespace, kind and operation type
// for work done.
var (
	schemaState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ptah_schema_state",
		Help: "1 when the PtahSchema is in the named state (in_sync, drift_detected, awaiting_approval, blocked, failed), else 0.",
	}, []string{"namespace", "name", "state"})
	migrationState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ptah_migration_state",
		Help: "1 when the PtahMigration is in the named state (in_sync, awaiting_approval, blocked, failed, unresolved_run), else 0.",
	}, []string{"namespace", "name", "state"})
	lastApply = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ptah_schema_last_successful_apply_timestamp_seconds",
		Help: "When an Apply of the PtahSchema was last proved by a fresh plan with no changes.",
	}, []string{"namespace", "name"})
	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ptah_operation_duration_seconds",
		Help:    "Time from an operation's Job creation to its result being settled, by kind (PtahSchema, PtahMigration), type and outcome (succeeded, failed, refused, unknown, discarded).",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
	}, []string{"namespace", "kind", "type", "outcome"})
	jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ptah_jobs_created_total",
		Help: "Jobs the manager created, by kind (PtahSchema, PtahMigration) and operation type.",
	}, []string{"namespace", "kind", "type"})
)

func init() {
	metrics.Registry.MustRegister(schemaState, migrationState, lastApply, operationDuration, jobsCreated)
}

var (
	schemaStates    = []string{"in_sync", "drift_detected", "awaiting_approval", "blocked", "failed"}
	migrationStates = []string{"in_sync", "awaiting_approval", "blocked", "failed", "unresolved_run"}
)

// publishState sets the state series of one object: 1 for the states in
// holds, 0 for the others.
func publishState(g *prometheus.GaugeVec, states []string, namespace, name string, in map[string]bool) {
	for _, st := range states {
		v := 0.0
		if in[st] {
			v = 1
		}
		g.WithLabelValues(namespace, name, st).Set(v)
	}
}

// publishSchemaState publishes the schema's state series from what its
// status says.
func publishSchemaState(s *v1alpha1.PtahSchema) {
	publishState(schemaState, schemaStates, s.Namespace, s.Name, map[string]bool{
		"in_sync":           conditionIs(s, v1alpha1.ConditionInSync, "True", v1alpha1.ReasonScopedConverged) && s.Status.Phase == v1alpha1.PhaseInSync,
		"drift_detected":    conditionIs(s, v1alpha1.ConditionDriftDetected, "True", v1alpha1.ReasonDriftFound),
		"awaiting_approval": s.Status.Phase == v1alpha1.PhaseAwaitingApproval,
		"blocked":           s.Status.Phase == v1alpha1.PhaseBlocked,
		"failed":            s.Status.Phase == v1alpha1.PhaseFailed,
	})
}

// publishMigrationState publishes the migration's state series from what
// its status says.
func publishMigrationState(m *v1alpha1.PtahMigration) {
	publishState(migrationState, migrationStates, m.Namespace, m.Name, map[string]bool{
		"in_sync":           conditionIs(m, v1alpha1.ConditionInSync, "True", v1alpha1.ReasonScopedConverged) && m.Status.Phase == v1alpha1.PhaseInSync,
		"awaiting_approval": m.Status.Phase == v1alpha1.PhaseAwaitingApproval,
		"blocked":           m.Status.Phase == v1alpha1.PhaseBlocked,
		"failed":            m.Status.Phase == v1alpha1.PhaseFailed,
		"unresolved_run":    m.Status.UnresolvedRun != nil,
	})
}

// forgetSchema drops the series of a schema that is gone.
func forgetSchema(namespace, name string) {
	for _, st := range schemaStates {
		schemaState.DeleteLabelValues(namespace, name, st)
	}
	lastApply.DeleteLabelValues(namespace, name)
}

// forgetMigration drops the series of a migration that is gone.
func forgetMigration(namespace, name string) {
	for _, st := range migrationStates {
		migrationState.DeleteLabelValues(namespace, name, st)
	}
}

func operationEnded(kind, namespace string, c *v1alpha1.ActiveOperation, started *metav1.Time, outcome string, now time.Time) {
	if c == nil || c.JobUID == "" || started == nil {
		return
	}
	operationDuration.WithLabelValues(namespace, kind, string(c.Type), outcome).Observe(now.Sub(started.Time).Seconds())
}

func applyProved(s *v1alpha1.PtahSchema, at time.Time) {
	lastApply.WithLabelValues(s.Namespace, s.Name).Set(float64(at.Unix()))
}
