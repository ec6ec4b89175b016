// Command ptah keeps PostgreSQL schemas where their owners declared them:
// it pushes and pulls schema artifacts, plans, applies and reports drift, and
// runs versioned migrations. The operator's Jobs run it with --json and read
// the one line it prints on stdout.
//
// # Output
//
// With --json every command prints one line of JSON, the document of package
// ptah.run/operator/operator/report:
//
//	{"apiVersion":"ptah.run/report/v1","command":"schema plan","exitCode":0,
//	 "result":{...},"error":{"code":"stale_plan","message":"..."}}
//
// exitCode is also the process's exit code: 0 success, 1 an expected
// negative answer (schema drift found), 2 an error, whose stable code is
// error.code (see report.Code: usage, connection, auth, parse, not_found,
// artifact_type, policy_refused, protected_table, stale_plan, plan_invalid,
// destructive_refused, approval_required, lock_timeout, execution,
// history_modified, history_missing, out_of_order, dirty, checksum_mismatch,
// sequence_mismatch, permission, internal). Without --json a person gets text on stdout
// and "ptah COMMAND: CODE: MESSAGE" on stderr. Nothing ptah prints holds a
// password, a database user or a database URL.
//
// # Results
//
// Fields are only ever added. Digests and fingerprints are "sha256:HEX".
//
//	version              {version}
//	schema push          {reference (oci://HOST/REPO@DIGEST), tag, digest, mediaType, artifactType, size, files:[{name}]}
//	migrations push      the same
//	schema pull          {reference, digest, mediaType, artifactType, size, files:[{name}], out}
//	migrations pull      {reference, digest, mediaType, artifactType, size, dir, migrations:[{version,name,file,checksum}]}
//	oci resolve          {reference, digest, mediaType, artifactType, size}
//	oci inspect          resolve's fields and {registry, repository, annotations:{}, layers:[{title,mediaType,digest,size}]}
//	oci verify           resolve's fields and {verified, findings:[{rule,message}]}; refused: exit 2, policy_refused, result kept
//	schema plan          the plan document: {apiVersion:"ptah.run/plan/v1", schema, exclude:[], baseFingerprint,
//	                     desiredFingerprint, destructive, statements:[{sql,severity:"safe"|"destructive",reason}], digest}
//	schema drift         {drift, changes, categories:{CATEGORY:count}, highestSeverity, baseFingerprint,
//	                     desiredFingerprint, objects:[{category,object,severity,reason}] (with --show-objects)}
//	schema apply         {applied, dryRun, planDigest, statements, fingerprint, converged}
//	migrations hash      {dir, sumFile, migrations:[{version,name,file,checksum}]}
//	migrations status    {status:"UpToDate"|"Pending", current, appliedNow:[], pending:[{version,name}],
//	                     history:[{version,name,checksum,appliedAt,dirty}]}
//	migrations up        the same with status "Applied"|"UpToDate"|"Failed"|"Partial"|"Unknown",
//	                     appliedNow (committed by this run) and failedVersion; kept on exit 2
//
// A plan's baseFingerprint is the managed schema as inspected, its
// desiredFingerprint the desired SQL inspected the same way, so the two are
// equal exactly when the database is in sync; digest covers the document
// with digest empty. Plan output holds no time, so planning twice against
// the same state prints the same bytes. Drift categories say what the
// database has compared with the desired state (table_missing,
// table_unexpected, column_missing, column_unexpected, column_changed,
// index_*, foreign_key_*, check_*, primary_key_*, object_*); a severity is
// that of the statement that would correct it.
//
// # Inputs
//
// The database URL comes from --url or PTAH_DB_URL; registry credentials
// from PTAH_OCI_USERNAME and PTAH_OCI_PASSWORD, sent only to the registry
// PTAH_OCI_REGISTRY names (to any registry when it is unset). schema apply
// and migrations up take the same PostgreSQL advisory lock, so two ptah
// writers on one database never interleave; --lock-timeout bounds that wait
// and every lock wait of the statements after it. migrations status
// --lock-timeout reads the history under the same lock, so no run is in
// progress while it reads; migrations up --to N stops at version N.
package main
