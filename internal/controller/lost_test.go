package controller

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ptah.run/operator/internal/testenv"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/database"
)

// TestALostDatabaseIsReportedLost cuts the target off (a real partition:
// its server's network namespace drops every packet, both ways) while a
// PtahMigration's Apply waits on the database for the ptah writer lock
// another session holds. The Apply ends within the connect timeout plus
// 30 s, not at its Job's deadline, and the migration says
// DatabaseReachable=False (ConnectionLost) instead of the Connected its
// Observe left; once the partition heals and the lock is free, it converges
// without a person.
func TestALostDatabaseIsReportedLost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network partition needs root (ip netns)")
	}
	t.Parallel()
	part := testenv.NewPartition(t)
	pg := testenv.StartPostgres(t, testenv.Behind(part))
	url := pg.CreateDatabase(t, "lost")
	e := newEnv(t)
	e.secret("lost-db", map[string]string{"url": url})
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", database.LockKey); err != nil {
		t.Fatal(err)
	}
	const connectTimeout = 5 * time.Second
	e.migration(pushMigrations(t, "lost-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) {
		m.Spec.Target.URLFrom.Name = "lost-db"
		m.Spec.Policy.LockTimeout = &metav1.Duration{Duration: 10 * time.Minute}
		m.Spec.Execution.ConnectTimeout = &metav1.Duration{Duration: connectTimeout}
		m.Spec.Execution.Deadline = &metav1.Duration{Duration: 10 * time.Minute}
	})
	waiting := time.Now().Add(converge)
	for {
		var n int
		if err := holder.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'lost' AND wait_event_type = 'Lock'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(waiting) {
			t.Fatalf("no operation waited on the writer lock within %s: %s", converge, conditions(e.getMigration()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	cut := time.Now()
	part.Cut()
	bound := database.LostAfter(connectTimeout)
	// The bound, plus the time the manager takes to read the result.
	m := e.awaitMigration("DatabaseReachable=False (ConnectionLost)", bound+time.Minute,
		migrationCondition(v1alpha1.ConditionDatabaseReachable, metav1.ConditionFalse, v1alpha1.ReasonConnectionLost))
	t.Logf("reported %s after the cut (ptah's bound %s): %s", time.Since(cut).Round(time.Second), bound, conditions(m))
	if holds(m, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonConnected) {
		t.Fatalf("still claims Connected: %s", conditions(m))
	}
	part.Heal()
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", database.LockKey); err != nil {
		t.Logf("the lock holder's session did not outlive the partition (%v): its lock went with it", err)
	}
	migrated(e, 3)
}
