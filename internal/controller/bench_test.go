package controller

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ptah.run/operator/internal/jobsim"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

const (
	benchSchemas   = 200
	benchDatabases = 20
)

// BenchmarkReconcile200Schemas measures the manager binary (cmd/manager, a
// separate process, so its memory is its own) taking 200 new PtahSchemas on
// 20 databases in one namespace to InSync, reconciling one object at a time
// and at the default --max-concurrent-reconciles. Schemas of one database
// still take turns through its Lease. Jobs are run by the simulated kubelet
// with the real runner around jobsim.NoChangePtah, a stand-in for ptah that
// reports a database already in the desired state: each schema takes a
// Resolve, an Observe and a Plan Job, and the figure is the manager's and
// the API's throughput, not ptah's. It reports schemas/s and the manager's
// peak and final resident set size.
func BenchmarkReconcile200Schemas(b *testing.B) {
	for _, c := range []int{1, 4} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) { benchReconcile(b, c) })
	}
}

func benchReconcile(b *testing.B, concurrency int) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	fake := jobsim.NoChangePtah(b, digest)
	mgr, logs := managerProcess(b, fmt.Sprintf("--max-concurrent-reconciles=%d", concurrency))
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := "bench-" + rand.String(6)
		must(b, shared.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		for n := 0; n < benchDatabases; n++ {
			must(b, shared.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%03d", n), Namespace: ns},
				StringData: map[string]string{"url": fmt.Sprintf("postgres://bench:never-read@127.0.0.1:1/db%03d", n)}}))
		}
		// The stand-in ptah loads no SQL: no dev database sidecar, whose
		// initdb would be what is measured.
		must(b, shared.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dev-db", Namespace: ns},
			StringData: map[string]string{"url": "postgres://bench:never-read@127.0.0.1:2/dev"}}))
		for _, o := range []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
				StringData: map[string]string{"registry": shared.reg.Host, "username": shared.reg.Username, "password": shared.reg.Password}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": string(shared.api.Config.CAData)}},
		} {
			must(b, shared.c.Create(ctx, o))
		}
		kb := &subTB{TB: b}
		jobsim.Start(kb, shared.api.Config, jobsim.Options{Namespace: ns, Ptah: fake})
		b.StartTimer()
		start := time.Now()
		for n := 0; n < benchSchemas; n++ {
			must(b, shared.c.Create(ctx, &v1alpha1.PtahSchema{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", n), Namespace: ns},
				Spec: v1alpha1.PtahSchemaSpec{
					// Ten schemas per database, whose Lease they share.
					Target:    v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: fmt.Sprintf("db-%03d", n%benchDatabases), Key: "url"}},
					Desired:   v1alpha1.Desired{OCIRef: shared.refV1, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
					Policy:    v1alpha1.Policy{Apply: v1alpha1.ApplyAlways},
					Execution: v1alpha1.Execution{DevDatabase: &v1alpha1.DevDatabase{URLFrom: &v1alpha1.SecretKeyRef{Name: "dev-db", Key: "url"}}},
				},
			}))
		}
		for {
			var list v1alpha1.PtahSchemaList
			must(b, shared.c.List(ctx, &list, client.InNamespace(ns)))
			done := 0
			for i := range list.Items {
				if conditionIs(&list.Items[i], v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) {
					done++
				}
			}
			if done == benchSchemas {
				break
			}
			if time.Since(start) > 15*time.Minute {
				b.Fatalf("%d of %d schemas InSync after 15m; manager log tail:\n%s", done, benchSchemas, tail(logs.String(), 20))
			}
			time.Sleep(250 * time.Millisecond)
		}
		total += time.Since(start)
		b.StopTimer()
		kb.cleanup()
		b.StartTimer()
	}
	b.ReportMetric(float64(benchSchemas*b.N)/total.Seconds(), "schemas/s")
	hwm, rss := procMemory(b, mgr.Process.Pid)
	b.ReportMetric(hwm/1024, "MiB-peak-rss")
	b.ReportMetric(rss/1024, "MiB-rss")
}

// managerProcess builds cmd/manager and runs it as a process of its own
// (so its memory is its own) against the shared API server until b ends.
func managerProcess(b *testing.B, args ...string) (*exec.Cmd, *syncBuffer) {
	bin := filepath.Join(b.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	mgr := exec.Command(bin, "--executor-image=ptah-executor:bench", "--plain-http-registries="+shared.reg.Host,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--kubeconfig="+shared.api.Kubeconfig)
	mgr.Args = append(mgr.Args, args...)
	logs := &syncBuffer{}
	mgr.Stdout, mgr.Stderr = logs, logs
	if err := mgr.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = mgr.Process.Kill()
		_ = mgr.Wait()
	})
	return mgr, logs
}

// procMemory reads VmHWM and VmRSS (KiB) of pid.
func procMemory(b *testing.B, pid int) (hwm, rss float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmHWM":
			hwm = kb
		case "VmRSS":
			rss = kb
		}
	}
	return hwm, rss
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// subTB scopes the simulated kubelet to one benchmark iteration: its
// cleanups run when the iteration ends rather than when the benchmark does.
type subTB struct {
	testing.TB
	cleanups []func()
}

func (s *subTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }
func (s *subTB) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

const benchTables = 2000

// BenchmarkApply2000Tables measures the manager binary taking one PtahSchema
// whose desired schema has 2,000 tables to InSync through real Jobs: the
// real runner and the real ptah on a real PostgreSQL, so the plan (about
// 2,000 statements, far past the 128 KiB one environment variable may hold)
// travels from the Plan's record to the PtahSchemaPlan and from there to
// the Apply's runner. It reports the seconds to InSync and the manager's
// peak and final resident set size.
func BenchmarkApply2000Tables(b *testing.B) {
	var ddl strings.Builder
	for n := 0; n < benchTables; n++ {
		fmt.Fprintf(&ddl, "CREATE TABLE t%04d (id bigint PRIMARY KEY, name text NOT NULL, created timestamptz NOT NULL DEFAULT now());\n", n)
	}
	ref := push(b, "wide", ddl.String())
	mgr, logs := managerProcess(b)
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := "wide-" + rand.String(6)
		db := strings.ReplaceAll(ns, "-", "_")
		password := rand.String(16)
		must(b, shared.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		shared.pg.Exec(b, "postgres", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", db, password))
		shared.pg.Exec(b, "postgres", fmt.Sprintf("CREATE DATABASE %s OWNER %s", db, db))
		for _, o := range []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"url": shared.pg.URL(db, password, db)}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
				StringData: map[string]string{"registry": shared.reg.Host, "username": shared.reg.Username, "password": shared.reg.Password}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": string(shared.api.Config.CAData)}},
		} {
			must(b, shared.c.Create(ctx, o))
		}
		kb := &subTB{TB: b}
		jobsim.Start(kb, shared.api.Config, jobsim.Options{Namespace: ns, Ptah: shared.ptah})
		b.StartTimer()
		start := time.Now()
		must(b, shared.c.Create(ctx, &v1alpha1.PtahSchema{
			ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: ns},
			Spec: v1alpha1.PtahSchemaSpec{
				Target:    v1alpha1.Target{URLFrom: v1alpha1.SecretKeyRef{Name: "db", Key: "url"}},
				Desired:   v1alpha1.Desired{OCIRef: ref, RegistryAuthFrom: &v1alpha1.LocalRef{Name: "registry"}},
				Policy:    v1alpha1.Policy{Apply: v1alpha1.ApplyAlways},
				Execution: v1alpha1.Execution{Deadline: &metav1.Duration{Duration: 20 * time.Minute}},
			},
		}))
		for {
			var s v1alpha1.PtahSchema
			must(b, shared.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wide"}, &s))
			if conditionIs(&s, v1alpha1.ConditionInSync, metav1.ConditionTrue, v1alpha1.ReasonScopedConverged) {
				break
			}
			if time.Since(start) > 20*time.Minute {
				b.Fatalf("not InSync after 20m: phase %s, %s, lastFailure %+v; manager log tail:\n%s", s.Status.Phase, conditions(&s), s.Status.LastFailure, tail(logs.String(), 20))
			}
			time.Sleep(250 * time.Millisecond)
		}
		total += time.Since(start)
		b.StopTimer()
		var n int
		row := fmt.Sprintf("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 't%%' -- %d", i)
		must(b, sqlCount(shared.pg.SuperURL(db), row, &n))
		if n != benchTables {
			b.Fatalf("%d tables in the database after InSync, want %d", n, benchTables)
		}
		kb.cleanup()
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-insync")
	hwm, rss := procMemory(b, mgr.Process.Pid)
	b.ReportMetric(hwm/1024, "MiB-peak-rss")
	b.ReportMetric(rss/1024, "MiB-rss")
}

func sqlCount(url, query string, n *int) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.QueryRow(query).Scan(n)
}
