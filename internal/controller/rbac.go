// Package controller reconciles PtahSchema and PtahMigration resources
// through the pipelines of docs/design.md section 3, one Job per operation. The RBAC markers below are the
// manager's whole permission set; controller-gen writes them to
// operator/config/rbac/role.yaml, and no rule may name Secrets.
package controller

// The manager reads its own resources through its cache (list and watch:
// a cached get asks the API server nothing) and writes their status,
// publishes plans and Jobs, and issues each operation's result credential: a
// ServiceAccount bound to a Role that may only create PtahResultRecords and,
// for an Apply, get its one PtahSchemaPlan. RBAC lets it grant that Role
// only because it holds the same permissions itself. Reads that must not be
// stale (a result record, a plan, an approval being consumed, the running
// Apply's Job, the database Lease, the owner's ServiceAccount, the Pod a
// record's admission stamp names) go past the cache,
// hence get. Pods of its own operations are watched so one that cannot be
// configured (a missing Secret or key) is diagnosed at once. Owner references
// block their owner's deletion, which clusters running the
// OwnerReferencesPermissionEnforcement admission plugin allow only to holders
// of ptahschemas/finalizers update. Core Events are listed to find the Job
// controller's Pod refusals and created by leader election; the manager's
// own Events are events.k8s.io, patched when they repeat. Database URLs and
// registry passwords reach Pods by secretKeyRef, so the manager never reads a
// Secret. A PtahMigration is patched for its finalizer and the copy of an
// unresolved run in its annotation; its approvals are consumed as a schema's
// are, and acknowledgments are only read. A Job dispatched under the legacy
// result transport delivers its result in its Pod's log, hence pods/log
// get. Record admission is proven by a dry-run create of a
// PtahResultRecord (the create it already holds), and when it does not
// hold, the admission policies and their bindings are read to name the
// cause (cluster-scoped: under the per-namespace RoleBindings of a
// watchNamespaces install these reads are refused, and the cause is named
// generically). TestManagerClusterRole fails when a rule is missing or unused.
//
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas,verbs=list;watch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas/status,verbs=update
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemas/finalizers,verbs=update
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemaplans,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahschemaapprovals,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrations/status,verbs=update
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrations/finalizers,verbs=update
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrationplans,verbs=get;create
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrationapprovals,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahmigrationrunacknowledgments,verbs=list;watch
// +kubebuilder:rbac:groups=operator.ptah.run,resources=ptahresultrecords,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=list;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=list;create;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;validatingadmissionpolicies,verbs=get
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicybindings;validatingadmissionpolicybindings,verbs=list
