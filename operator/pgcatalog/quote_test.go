package pgcatalog

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/internal/testenv"
	"ptah.run/operator/operator/database"
)

// TestQuoteIdentIsPostgreSQLs holds QuoteIdent to quote_ident on a real
// PostgreSQL: every keyword it knows, and generated names of letters of
// both cases, digits, underscores, dollars, spaces and quotes.
func TestQuoteIdentIsPostgreSQLs(t *testing.T) {
	pg := testenv.StartPostgres(t)
	db, err := database.Open(context.Background(), pg.SuperURL("postgres"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quote := func(s string) string {
		var q string
		if err := db.QueryRow("SELECT quote_ident($1)", s).Scan(&q); err != nil {
			t.Fatalf("quote_ident(%q): %v", s, err)
		}
		return q
	}
	rows, err := db.Query("SELECT word FROM pg_get_keywords()")
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			t.Fatal(err)
		}
		words = append(words, w)
	}
	rows.Close()
	for _, w := range append(words, "", "a", "_", "a1", "1a", "a$", "A", "t_pkey") {
		if got, want := QuoteIdent(w), quote(w); got != want {
			t.Errorf("QuoteIdent(%q) = %s, quote_ident says %s", w, got, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("abcxyzAZ019_$ \"'é")), 1, 8, -1).Draw(rt, "name")
		if got, want := QuoteIdent(s), quote(s); got != want {
			rt.Fatalf("QuoteIdent(%q) = %s, quote_ident says %s", s, got, want)
		}
	})
}
