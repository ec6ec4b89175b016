package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// subject is a resource the operation machinery runs Jobs for: a
// PtahSchema or a PtahMigration. Claims, Jobs, credentials and the checks a
// result record must pass are built from it alone, so both kinds get the
// same guarantees from one implementation.
type subject interface {
	ctrl.Object
	SubjectKind() string
	SubjectTarget() v1alpha1.Target
	SubjectExecution() *v1alpha1.Execution
	SubjectRegistryAuth() *v1alpha1.LocalRef
	SubjectConditions() *[]metav1.Condition
	SubjectSuspended() bool
	SubjectSpec() any
	SubjectPlanFingerprint() string
	Operation() *v1alpha1.OperationStatus
}

var (
	_ subject = (*v1alpha1.PtahSchema)(nil)
	_ subject = (*v1alpha1.PtahMigration)(nil)
)

// subjectLabel is the label naming the subject on its Jobs, Pods, credentials
// and records.
func subjectLabel(s subject) string {
	if s.SubjectKind() == v1alpha1.KindPtahMigration {
		return runner.LabelMigration
	}
	return runner.LabelSchema
}

// applyRunning reports whether the claim c of s is an Apply whose Job was
// created. A Job a manager created but stopped before recording is found by
// its name past the cache and adopted (its UID written on c), so a restart
// never mistakes it for an undispatched claim and deletes it.
func applyRunning(ctx context.Context, reader ctrl.Reader, s subject, c *v1alpha1.ActiveOperation) (bool, error) {
	if c == nil || c.Type != v1alpha1.OperationApply {
		return false, nil
	}
	if c.JobUID != "" {
		return true, nil
	}
	var j batchv1.Job
	err := reader.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: c.JobName}, &j)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read Job %s/%s of the active Apply of %s %s: %w", s.GetNamespace(), c.JobName, s.SubjectKind(), s.GetName(), err)
	}
	if !metav1.IsControlledBy(&j, s) {
		return false, nil
	}
	c.JobUID = string(j.UID)
	return true, nil
}
