package devdb

// ScramVerifier is scramVerifier, for the tests of package devdb_test.
var ScramVerifier = scramVerifier

// PostgresUser is postgresUser: the user a server runs as when the caller
// is root.
var PostgresUser = postgresUser
