package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/internal/testenv"
)

// TestBenchProof is `make bench-proof`: the cost of the Proof, a no-change
// `ptah schema plan` (the binary $PTAH_BENCH_PROOF) of 2,000 objects
// against a database already holding them, as a multiple of loading the
// same DDL with psql -f into a fresh database, the two interleaved round by
// round ($PTAH_BENCH_ROUNDS, 5 by default) on the same servers. A second
// binary in $PTAH_BENCH_BASELINE (one built without the proof) is timed in
// the same rounds. It prints the medians and the ratios.
func TestBenchProof(t *testing.T) {
	bin := os.Getenv("PTAH_BENCH_PROOF")
	if bin == "" {
		t.Skip("make bench-proof runs this (PTAH_BENCH_PROOF names the ptah binary)")
	}
	rounds, _ := strconv.Atoi(os.Getenv("PTAH_BENCH_ROUNDS"))
	if rounds <= 0 {
		rounds = 5
	}
	baseline := os.Getenv("PTAH_BENCH_BASELINE")
	pg := testenv.StartPostgres(t)
	target := pg.CreateDatabase(t, "target")
	devPG := testenv.StartPostgres(t)
	devURL := devPG.CreateDatabase(t, "dev")
	devPG.Exec(t, "postgres", "ALTER ROLE dev CREATEDB CREATEROLE") // each comparison makes a database and a role of its own
	ddl := filepath.Join(t.TempDir(), "objects.sql")
	if err := os.WriteFile(ddl, []byte(testenv.ObjectSchema(2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	psql := func(url string) error {
		out, err := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", ddl, url).CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql: %v\n%s", err, out)
		}
		return nil
	}
	if err := psql(target); err != nil {
		t.Fatal(err)
	}
	plan := func(bin string) error {
		out, err := exec.Command(bin, "schema", "plan", "--url", target, "--dev-url", devURL, "--schema-file", ddl, "--json").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s schema plan: %v\n%s", bin, err, out)
		}
		if !strings.Contains(string(out), `"statements":[]`) {
			return fmt.Errorf("%s schema plan: want an empty plan over the database holding the DDL, got:\n%.2000s", bin, out)
		}
		return nil
	}
	timed := func(f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	// warm both servers and the page cache once
	if err := plan(bin); err != nil {
		t.Fatal(err)
	}
	var loads, proofs, bases []time.Duration
	for i := range rounds {
		url := devPG.CreateDatabase(t, fmt.Sprintf("fresh%d", i))
		loads = append(loads, timed(func() error { return psql(url) }))
		proofs = append(proofs, timed(func() error { return plan(bin) }))
		if baseline != "" {
			bases = append(bases, timed(func() error { return plan(baseline) }))
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	l, p := median(loads), median(proofs)
	t.Logf("bench-proof: %d rounds, 2,000 objects: psql -f into a fresh database %v (median), ptah schema plan with the proof %v: ratio %.2fx (limit 2.5x)",
		rounds, l.Round(time.Millisecond), p.Round(time.Millisecond), float64(p)/float64(l))
	if baseline != "" {
		b := median(bases)
		t.Logf("bench-proof: baseline %s %v: ratio %.2fx; the proof adds %.2fx of psql's time", baseline, b.Round(time.Millisecond),
			float64(b)/float64(l), float64(p-b)/float64(l))
	}
	if float64(p)/float64(l) >= 2.5 {
		t.Errorf("the Proof costs %.2fx loading the DDL with psql; the limit is 2.5x", float64(p)/float64(l))
	}
}
