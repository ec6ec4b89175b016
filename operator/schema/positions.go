package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"ptah.run/operator/operator/catalogread"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/pgcatalog"
)

// An identity's sequence is not an object of the schema (pg_dump prints
// it as part of its column), so what dropping the identity or changing
// its options can lose is the sequence's position. A sequence that has
// never generated a value holds nothing but its start: dropping the
// identity loses nothing, and changing its options may restart it at the
// new start, which is where the desired SQL loaded afresh has it. That
// holds only while nobody inserts a row, so the plan carries it as a
// guard run in the same transaction, just before the step, under the
// table's lock: if the sequence has moved since the plan read it, the
// apply stops there as a stale plan (database.StalePremise) instead of
// losing what the plan called safe to lose.

// unusedIdentity reads whether the identity s names has never generated
// a value, in a read-only transaction of its own, and if so returns s
// made to lose nothing and the guard to run before it. Any error reads as
// used: the step keeps its hazards.
func unusedIdentity(ctx context.Context, db *database.DB, schema string, s pgcatalog.Step) (pgcatalog.Step, *Statement) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s, nil
	}
	defer tx.Rollback()
	var table, column string
	var unused bool
	if err := tx.QueryRowContext(ctx, catalogread.IdentityUnused, schema, s.Identity.Table, s.Identity.Column).Scan(&table, &column, &unused); err != nil || !unused {
		return s, nil
	}
	name := s.Identity.Table + "." + s.Identity.Column
	what := "dropping it"
	if s.Deletes {
		s.Deletes = false
	} else {
		what = "restarting it at its new start"
		s.SQL += " RESTART"
		s.Validates = false
	}
	message := "the identity of column " + name + " has generated a value since the plan was computed, which took its sequence as never used (" +
		what + " lost nothing then, and would lose its position now); plan again"
	body := fmt.Sprintf(`
DECLARE
  seq regclass := pg_get_serial_sequence(%[1]s, %[2]s);
  unused boolean;
BEGIN
  LOCK TABLE %[3]s IN ACCESS EXCLUSIVE MODE;
  EXECUTE format('SELECT NOT s.is_called AND s.last_value = p.seqstart FROM %%s s, pg_sequence p WHERE p.seqrelid = %%s', seq, seq::oid) INTO unused;
  IF NOT unused THEN
    RAISE EXCEPTION USING ERRCODE = '%[4]s', MESSAGE = %[5]s;
  END IF;
END
`, literal(table), literal(column), table, database.StalePremise, literal(message))
	return s, &Statement{SQL: "DO " + dollarQuoted(body), Severity: Safe, Hazards: []Hazard{HazardAccessExclusiveLock},
		Reason: "checks that the identity of column " + name + " has still never generated a value, as when the plan was computed: " + what + " loses nothing only then"}
}

// literal is s as a string literal, whatever standard_conforming_strings
// says.
func literal(s string) string {
	return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// dollarQuoted quotes body with a tag it does not hold.
func dollarQuoted(body string) string {
	tag := "$ptah$"
	for n := 1; strings.Contains(body, tag); n++ {
		tag = fmt.Sprintf("$ptah%d$", n)
	}
	return tag + body + tag
}
