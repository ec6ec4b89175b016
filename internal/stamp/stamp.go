// Package stamp writes the identity stamps of approvals, acknowledgments
// and result records from a mutating admission webhook the manager serves,
// for clusters that serve no MutatingAdmissionPolicy (Kubernetes 1.33, and
// 1.34 and 1.35 without v1beta1 enabled).
//
// The stamps are those the policies of operator/config/admission write
// (the *-stamp.yaml files): on CREATE, the field is replaced by the
// requesting user, empty fields left out. The validating policies of the
// same directory stay in force on every path and refuse any object whose
// stamp is not exactly the requester, so a stamp this webhook failed to
// write is refused, not trusted.
package stamp

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Path is where the webhook is served; the chart's
// MutatingWebhookConfiguration calls it.
const Path = "/stamp"

// podName and podUID are the extra fields the API server adds for a
// service account token bound to a Pod.
const (
	podName = "authentication.kubernetes.io/pod-name"
	podUID  = "authentication.kubernetes.io/pod-uid"
)

// fields maps each stamped resource to the field its stamp replaces.
var fields = map[string]string{
	"ptahschemaapprovals":             "approvedBy",
	"ptahmigrationapprovals":          "approvedBy",
	"ptahmigrationrunacknowledgments": "acknowledgedBy",
	"ptahresultrecords":               "createdBy",
}

// Resources are the resources of group operator.ptah.run the webhook
// stamps, sorted, for a configuration to match.
func Resources() []string {
	return slices.Sorted(maps.Keys(fields))
}

// Field is the field the webhook stamps on resource, if it stamps it.
func Field(resource string) (string, bool) {
	f, ok := fields[resource]
	return f, ok
}

// Webhook stamps the request's identity over the client's.
type Webhook struct{}

var _ admission.Handler = Webhook{}

// Handle answers one admission request.
func (Webhook) Handle(_ context.Context, req admission.Request) admission.Response {
	field, ok := fields[req.Resource.Resource]
	if req.Resource.Group != v1alpha1.GroupVersion.Group || !ok {
		// A configuration that sends more than it should: refuse, so the
		// mistake shows rather than passing objects unstamped.
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("ptah's stamp webhook stamps only %v of group %s, not %s: fix the rules of its MutatingWebhookConfiguration", Resources(), v1alpha1.GroupVersion.Group, req.Resource.String()))
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed("stamps are written at creation only")
	}
	u := req.UserInfo
	var value any
	switch field {
	case "createdBy":
		c := v1alpha1.Creator{Username: u.Username, UID: u.UID}
		if v := u.Extra[podName]; len(v) == 1 {
			c.PodName = v[0]
		}
		if v := u.Extra[podUID]; len(v) == 1 {
			c.PodUID = v[0]
		}
		value = c
	case "acknowledgedBy":
		value = v1alpha1.Acknowledger{Username: u.Username, UID: u.UID, Groups: u.Groups}
	default:
		value = v1alpha1.Approver{Username: u.Username, UID: u.UID, Groups: u.Groups}
	}
	// "add" replaces a member that exists (RFC 6902), as the policies' patch does.
	return admission.Patched("", jsonpatch.NewOperation("add", "/"+field, value))
}
