package runner

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// record is the PtahResultRecord of an outcome. Its name, labels and echo of
// the operation's id and digest let the manager match it to its claim.
func record(op *Operation, out *Outcome) *v1alpha1.PtahResultRecord {
	kind, label := v1alpha1.KindPtahSchema, LabelSchema
	if op.Kind == v1alpha1.KindPtahMigration {
		kind, label = v1alpha1.KindPtahMigration, LabelMigration
	}
	rec := &v1alpha1.PtahResultRecord{
		ObjectMeta: metav1.ObjectMeta{
			Name: op.RecordName, Namespace: op.Namespace,
			Labels: map[string]string{label: op.Schema, LabelOperation: labelValue(op.ID)},
		},
		Spec: v1alpha1.PtahResultRecordSpec{
			Subject:        v1alpha1.ResultSubject{Kind: kind, Name: op.Schema},
			OperationID:    op.ID,
			Digest:         op.Digest,
			RunnerProtocol: ProtocolVersion,
			Result:         out.Fields,
		},
	}
	if op.SchemaUID != "" {
		// Not a controller reference, and blocking nothing: the record goes
		// with its schema, and the runner needs no permission on the schema.
		rec.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: op.Schema, UID: types.UID(op.SchemaUID)}}
	}
	if out.ChildExitCode >= 0 {
		rec.Spec.ChildExitCode = ptr(int32(out.ChildExitCode))
	}
	if out.Error != nil {
		rec.Spec.Error = &v1alpha1.OperationError{Code: out.Error.Code, Message: out.Error.Message}
	}
	if out.ChildError != nil {
		rec.Spec.ChildError = &v1alpha1.OperationError{Code: out.ChildError.Code, Message: out.ChildError.Message}
	}
	if rec.Spec.Result == nil && rec.Spec.Error == nil {
		// An admitted record carries a result or an error; an operation that
		// ended without either still says what it ran.
		rec.Spec.Result = &v1alpha1.OperationResult{}
	}
	return rec
}

// labelValue fits an operation id ("sha256:<64 hex>") into a label value,
// which allows neither ':' nor more than 63 characters: the hex, cut to 63.
func labelValue(id string) string {
	v := strings.TrimPrefix(id, "sha256:")
	if len(v) > 63 {
		v = v[:63]
	}
	return v
}
