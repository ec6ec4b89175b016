package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/runner"
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
