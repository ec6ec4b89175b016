package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// The manager's own series, served beside controller-runtime's on its
// metrics endpoint: what a dashboard of schemas needs, one series per
// schema for its state, and per namespace and operation type for work done.
var (
	schemaState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ptah_schema_state",
		Help: "1 when the PtahSchema is in the named state (in_sync, drift_detected, awaiting_approval, blocked, failed), else 0.",
	}, []string{"namespace", "name", "state"})
	lastApply = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ptah_schema_last_successful_apply_timestamp_seconds",
		Help: "When an Apply of the PtahSchema was last proved by a fresh plan with no changes.",
	}, []string{"namespace", "name"})
	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ptah_operation_duration_seconds",
		Help:    "Time from an operation's Job creation to its result being settled, by type and outcome (succeeded, failed, refused, unknown, discarded).",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
	}, []string{"namespace", "type", "outcome"})
	jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ptah_jobs_created_total",
		Help: "Jobs the manager created, by operation type.",
	}, []string{"namespace", "type"})
)

func init() {
	metrics.Registry.MustRegister(schemaState, lastApply, operationDuration, jobsCreated)
}

var states = []string{"in_sync", "drift_detected", "awaiting_approval", "blocked", "failed"}

// observe publishes the schema's state series from what its status says.
func observe(s *v1alpha1.PtahSchema) {
	in := map[string]bool{
		"in_sync":           conditionIs(s, v1alpha1.ConditionInSync, "True", v1alpha1.ReasonScopedConverged) && s.Status.Phase == v1alpha1.PhaseInSync,
		"drift_detected":    conditionIs(s, v1alpha1.ConditionDriftDetected, "True", v1alpha1.ReasonDriftFound),
		"awaiting_approval": s.Status.Phase == v1alpha1.PhaseAwaitingApproval,
		"blocked":           s.Status.Phase == v1alpha1.PhaseBlocked,
		"failed":            s.Status.Phase == v1alpha1.PhaseFailed,
	}
	for _, st := range states {
		v := 0.0
		if in[st] {
			v = 1
		}
		schemaState.WithLabelValues(s.Namespace, s.Name, st).Set(v)
	}
}

// forget drops the series of a schema that is gone.
func forget(namespace, name string) {
	for _, st := range states {
		schemaState.DeleteLabelValues(namespace, name, st)
	}
	lastApply.DeleteLabelValues(namespace, name)
}

// ended records how long a dispatched operation took to settle.
func (r *SchemaReconciler) ended(s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation, outcome string) {
	if c.JobUID == "" || s.Status.LastAttemptTime == nil {
		return
	}
	operationDuration.WithLabelValues(s.Namespace, string(c.Type), outcome).Observe(r.clock().Sub(s.Status.LastAttemptTime.Time).Seconds())
}

func applyProved(s *v1alpha1.PtahSchema, at time.Time) {
	lastApply.WithLabelValues(s.Namespace, s.Name).Set(float64(at.Unix()))
}
