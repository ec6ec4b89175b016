package controller

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// TestMetricsAfterConvergence scrapes the manager's metrics endpoint after a
// real convergence of a PtahSchema and a PtahMigration and finds the series
// of each there, told apart by kind where they share a metric.
func TestMetricsAfterConvergence(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	start := time.Now()
	e := newEnv(t, func(o *envOption) {
		o.manager = func(opts *ctrl.Options) { opts.Metrics = metricsserver.Options{BindAddress: addr} }
	})
	e.schema()
	// The migration on a database of its own: the schema's desired state
	// would drop its tables.
	shared.pg.Exec(t, "postgres", fmt.Sprintf("CREATE DATABASE %s_m OWNER %s", e.db, e.db))
	e.secret("mig-db", map[string]string{"url": shared.pg.URL(e.db, e.password, e.db+"_m")})
	e.migration(pushMigrations(t, "metrics-"+e.ns, migrationsV1), func(m *v1alpha1.PtahMigration) { m.Spec.Target.URLFrom.Name = "mig-db" })
	inSync(e)
	migrated(e, 3)

	// The gauges follow the status write that the test saw, so the scrape is
	// repeated until it reflects it or the bound passes.
	var families map[string]*dto.MetricFamily
	scrape := func() {
		resp, err := http.Get("http://" + addr + "/metrics")
		must(t, err)
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(resp.Body)
		must(t, err)
	}
	value := func(family string, labels map[string]string) (float64, bool) {
		f, ok := families[family]
		if !ok {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, lp := range m.Label {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return metricValue(m), true
		}
		return 0, false
	}
	mine := func(extra ...string) map[string]string {
		m := map[string]string{"namespace": e.ns}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	checks := []struct {
		family string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		{"ptah_schema_state", mine("name", "shop", "state", "in_sync"), func(v float64) bool { return v == 1 }, "1"},
		{"ptah_schema_state", mine("name", "shop", "state", "drift_detected"), func(v float64) bool { return v == 0 }, "0"},
		{"ptah_schema_state", mine("name", "shop", "state", "blocked"), func(v float64) bool { return v == 0 }, "0"},
		{"ptah_schema_last_successful_apply_timestamp_seconds", mine("name", "shop"), func(v float64) bool { return v >= float64(start.Unix()) }, "after the test started"},
		{"ptah_jobs_created_total", mine("kind", "PtahSchema", "type", "Apply"), func(v float64) bool { return v == 1 }, "1"},
		{"ptah_jobs_created_total", mine("kind", "PtahSchema", "type", "Proof"), func(v float64) bool { return v == 1 }, "1"},
		{"ptah_operation_duration_seconds", mine("kind", "PtahSchema", "type", "Apply", "outcome", "succeeded"), func(v float64) bool { return v == 1 }, "1 observation"},
		{"ptah_operation_duration_seconds", mine("kind", "PtahSchema", "type", "Resolve", "outcome", "succeeded"), func(v float64) bool { return v >= 1 }, "at least 1 observation"},
		// The migration's, apart from the schema's by kind.
		{"ptah_migration_state", mine("name", "shop", "state", "in_sync"), func(v float64) bool { return v == 1 }, "1"},
		{"ptah_migration_state", mine("name", "shop", "state", "unresolved_run"), func(v float64) bool { return v == 0 }, "0"},
		{"ptah_jobs_created_total", mine("kind", "PtahMigration", "type", "Apply"), func(v float64) bool { return v == 1 }, "1"},
		{"ptah_operation_duration_seconds", mine("kind", "PtahMigration", "type", "Apply", "outcome", "succeeded"), func(v float64) bool { return v == 1 }, "1 observation"},
		{"ptah_operation_duration_seconds", mine("kind", "PtahMigration", "type", "Observe", "outcome", "succeeded"), func(v float64) bool { return v >= 1 }, "at least 1 observation"},
		{"controller_runtime_reconcile_total", map[string]string{"controller": "ptahschema", "result": "success"}, func(v float64) bool { return v > 0 }, "controller-runtime's series too"},
	}
	var failures []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		scrape()
		failures = failures[:0]
		for _, c := range checks {
			v, ok := value(c.family, c.labels)
			if !ok || !c.ok(v) {
				failures = append(failures, fmt.Sprintf("%s%v = %v (present %v), want %s", c.family, c.labels, v, ok, c.want))
			}
		}
		if len(failures) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		var names []string
		for n := range families {
			if strings.HasPrefix(n, "ptah_") {
				names = append(names, n)
			}
		}
		t.Logf("ptah families scraped: %v", names)
	}
}

// metricValue is a gauge's or counter's value, or a histogram's count.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}
