package devdb

// ScramVerifier is scramVerifier, for the tests of package devdb_test.
var ScramVerifier = scramVerifier
