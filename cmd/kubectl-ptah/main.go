// Command kubectl-ptah is the kubectl plugin that shows what the operator
// decided, from the Kubernetes API only: it never connects to a database.
//
//	kubectl ptah plan SCHEMA [--applied] [-o text|sql|FORMAT]
//	kubectl ptah status SCHEMA [-o text|FORMAT]
//	kubectl ptah events SCHEMA [-o text|FORMAT]
//	kubectl ptah approve SCHEMA [--name APPROVAL] [-o text|FORMAT]
//	kubectl ptah revoke SCHEMA [-o text|FORMAT]
//	kubectl ptah migration [status|plan|events] MIGRATION [-o text|FORMAT]
//	kubectl ptah migration approve MIGRATION [--name APPROVAL] [-o text|FORMAT]
//	kubectl ptah migration acknowledge MIGRATION --outcome Applied|NotApplied|Partial
//	    [--last-committed-version N] [--note TEXT] [--name NAME] [-o text|FORMAT]
//	kubectl ptah version
//	kubectl ptah completion bash|zsh|fish|powershell
//
// FORMAT is one of kubectl's printers: json, yaml, name, jsonpath=TEMPLATE,
// go-template=TEMPLATE. Every verb takes kubectl's --kubeconfig, --context,
// -n/--namespace (default: the context's), --as and --request-timeout
// (default 30s), before or after the verb.
//
// approve, revoke, migration approve and migration acknowledge are its
// writes: approve creates a PtahSchemaApproval of the plan the schema awaits,
// checked against its digest first, and revoke deletes the approvals of that
// plan; migration approve creates a PtahMigrationApproval, migration
// acknowledge a PtahMigrationRunAcknowledgment of the unresolved run.
// Admission stamps who decided.
//
// Exit status: 0 done (and for --help), 1 the cluster refused or the objects
// do not allow it, 2 a command line it cannot run. kubectl_complete-ptah,
// installed beside kubectl-ptah on PATH, lets kubectl complete its verbs and
// the names of PtahSchemas and PtahMigrations.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
