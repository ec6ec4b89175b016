package controller

import (
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/runner"
)

// undelivered is what the runner of the failed Job j said in its
// termination message when it exited without delivering its record (exit
// runner.ExitUndelivered, the message beginning runner.UndeliveredPrefix),
// or "" when no Pod of j says so. The message names the read that cannot
// succeed, since the record was never written: it is reported, never
// trusted for anything else.
func undelivered(ctx context.Context, api ctrl.Reader, j *batchv1.Job) string {
	var pods corev1.PodList
	if err := api.List(ctx, &pods, ctrl.InNamespace(j.Namespace), ctrl.MatchingLabels{"batch.kubernetes.io/controller-uid": string(j.UID)}); err != nil {
		return ""
	}
	for i := range pods.Items {
		st := terminated(&pods.Items[i])
		if st == nil || st.ExitCode != runner.ExitUndelivered {
			continue
		}
		if why, ok := strings.CutPrefix(st.Message, runner.UndeliveredPrefix); ok {
			return "the runner of Pod " + pods.Items[i].Name + " delivered no PtahResultRecord: " + why
		}
	}
	return ""
}
