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
// error.code (see report.Code: usage, connection, connection_lost, auth, parse, not_found,
// artifact_type, policy_refused, protected_table, stale_plan, plan_invalid,
// destructive_refused, approval_required, lock_timeout, execution,
// history_modified, history_missing, out_of_order, dirty, not_transactional,
// pinned_setting, checksum_mismatch, sequence_mismatch, permission,
// internal). Without --json a person gets text on stdout
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
//
// # One migration, one transaction
//
// migrations up runs each version in its own transaction, with its history
// row written in that transaction, so every migration file is read with
// PostgreSQL's own parser (libpg_query, PostgreSQL 17's grammar, run as
// WebAssembly so ptah stays one static binary) before anything runs:
//
//   - A file wrapped whole in one leading BEGIN (or START TRANSACTION,
//     without options) and one trailing COMMIT (or END), as golang-migrate
//     and Flyway users write them, runs as its body inside ptah's
//     transaction; error lines stay those of the file.
//   - Any other transaction control is refused, naming file, line and
//     statement: COMMIT, END, ROLLBACK, ABORT, BEGIN, SAVEPOINT, RELEASE,
//     ROLLBACK TO, PREPARE TRANSACTION, COMMIT/ROLLBACK PREPARED, SET
//     TRANSACTION, SET SESSION CHARACTERISTICS and SET of the
//     transaction_* and default_transaction_* settings (error code
//     not_transactional). COMMIT inside a dollar-quoted function or DO body,
//     a string or a comment is not a statement of the file and is accepted;
//     CALL of a procedure that commits fails in PostgreSQL itself ("invalid
//     transaction termination") and rolls back with the rest of the file.
//   - A statement PostgreSQL refuses inside a transaction block (CREATE or
//     DROP INDEX CONCURRENTLY, REINDEX CONCURRENTLY, DETACH PARTITION ...
//     CONCURRENTLY, VACUUM, CREATE/DROP DATABASE or TABLESPACE, ALTER
//     SYSTEM, subscriptions, DISCARD ALL) runs outside a transaction only as
//     the single statement of its migration (Flyway's rule): the dirty
//     history row is written first, the statement runs on its own, then the
//     row is marked clean. If PostgreSQL refuses the statement, it rolled it
//     back, the row is deleted and the version is Failed (a failed CREATE
//     INDEX CONCURRENTLY can leave an INVALID index to drop before
//     retrying); if the session is lost, the row stays dirty (Unknown). Mixed
//     with any other statement, or inside a BEGIN ... COMMIT wrapper, it is
//     refused: move it to a migration of its own.
//   - A file that changes a setting PostgreSQL reads SQL text under is
//     refused, naming file, line and statement (error code pinned_setting):
//     SET, SET LOCAL or RESET of standard_conforming_strings,
//     backslash_quote or client_encoding, SET NAMES, RESET ALL, set_config
//     of one of them named by a constant, an UPDATE of pg_settings. Setting
//     one to the value ptah pins is accepted (pg_dump's header does), as are
//     a function's SET clause and ALTER ROLE/DATABASE ... SET.
//   - A file the parser cannot read is refused with code parse.
//
// Each version is sent to PostgreSQL whole, in one simple-protocol Query
// message, after standard_conforming_strings=on, backslash_quote=
// safe_encoding and client_encoding=UTF8 are set on the session (again
// before each version: an earlier one may have changed them at run time):
// PostgreSQL reads the whole text once, as the parser read it, before it
// runs any of it. Nothing is split again nor re-run: the line of an error is
// PostgreSQL's error position in the file, or the first line of the
// statement that failed, counted from the statements that completed. A
// failed version is rolled back whole and its history row removed (an error
// at COMMIT, such as a deferred constraint, is a rollback too).
//
// status and up start the parser only for a file holding a word that can
// begin or mark such a statement (BEGIN, START, COMMIT, END, ROLLBACK,
// ABORT, SAVEPOINT, RELEASE, PREPARE, CONCURRENTLY, REINDEX, VACUUM,
// CLUSTER, DATABASE, TABLESPACE, SYSTEM, SUBSCRIPTION, DISCARD,
// STANDARD_CONFORMING_STRINGS, BACKSLASH_QUOTE, CLIENT_ENCODING, NAMES,
// RESET, SET_CONFIG, PG_SETTINGS, in any case), "transaction" or "U&"
// anywhere, or a backslash: the parser's first use costs a process about 1 s
// and 250 MB. Any other file runs the same way without it; a syntax error
// in it (but a psql meta-command, which holds a backslash) is PostgreSQL's
// to report, which refuses the message whole, so nothing of the file runs.
// hash reads every file.
//
// migrations hash refuses such a file, so it is never written into ptah.sum
// nor pushed. status and up check every pending file again (a directory
// hashed by hand or by an older ptah) and refuse the whole run before any
// version runs, so an Apply never stops half way for a reason known in
// advance; up --to N checks only the versions it would run. Applied files
// are held only to their checksums, as before.
package main
