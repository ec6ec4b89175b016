package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// OperationStatus is the status PtahSchema and PtahMigration share: where
// the resource stands, its conditions, the operation it runs and when it
// runs the next. Both statuses embed it inline, so their JSON keeps the
// same fields in the same place.
type OperationStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// +optional
	ActiveOperation *ActiveOperation `json:"activeOperation,omitempty"`
	// +optional
	Source *Source `json:"source,omitempty"`
	// +optional
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// +optional
	NextReconciliationTime *metav1.Time `json:"nextReconciliationTime,omitempty"`
	// +optional
	ExecutionBinding *ExecutionBinding `json:"executionBinding,omitempty"`
	// +optional
	LastFailure *Failure `json:"lastFailure,omitempty"`
}
