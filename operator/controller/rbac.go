// Package controller reconciles PtahSchema resources through the pipeline of
// DESIGN.md section 3, one Job per operation. The RBAC markers below are the
// manager's whole permission set; controller-gen writes them to
// operator/config/rbac/role.yaml, and no rule may name Secrets.
package controller

// The manager reads its own resources and writes their status, publishes
// plans and Jobs, and issues each operation's result credential: a service
// account token bound to a Role that may only create PtahResultRecords. RBAC
// lets it grant that Role only because it holds the same permission itself.
// Database URLs and registry passwords reach Pods by secretKeyRef, so the
// manager never reads a Secret.
//
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas/finalizers,verbs=update
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemaplans,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemaapprovals,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahresultrecords,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
