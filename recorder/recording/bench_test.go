package recording

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/runs"
)

// benchCredentials is a lab's worth of credentials: the generated
// passwords, the Secrets with their parts, a Helm release's blob and the
// kubeconfig's key and certificate.
func benchCredentials(b testing.TB) []credential.Credential {
	random := func(n int) string {
		buf := make([]byte, n)
		_, _ = rand.Read(buf)
		return base64.RawURLEncoding.EncodeToString(buf)[:n]
	}
	set := credential.NewSet("ptah", "registry.ptah-demo.svc:5000", "ptah-demo", "ptah-system")
	for range 3 {
		set.AddValue([]byte(random(24)), "a lab value")
	}
	set.AddValue([]byte("postgres://storefront_app:"+random(24)+"@demo-postgres.ptah-demo.svc:5432/storefront?sslmode=disable"), "Secret url")
	auth := "ptah:" + random(24)
	dc, _ := json.Marshal(map[string]any{"auths": map[string]any{"registry.ptah-demo.svc:5000": map[string]string{"username": "ptah", "password": auth[5:], "auth": base64.StdEncoding.EncodeToString([]byte(auth))}}})
	set.AddValue(dc, "Secret .dockerconfigjson")
	set.AddValue([]byte(random(16<<10)), "a Helm release")
	set.AddValue([]byte("-----BEGIN RSA PRIVATE KEY-----\n"+random(1600)+"\n-----END RSA PRIVATE KEY-----\n"), "client key")
	set.AddValue([]byte("-----BEGIN CERTIFICATE-----\n"+random(1100)+"\n-----END CERTIFICATE-----\n"), "client certificate")
	for range 20 {
		set.AddValue([]byte(random(40)), "a token")
	}
	if set.Len() < 30 {
		b.Fatalf("only %d credentials", set.Len())
	}
	return set.Credentials()
}

// BenchmarkScanCensus scans the committed census recording as Publish does
// (every scenario, its cast's bytes and its cast replayed in a player's
// terminal, and runs.json) and reports the cost as a
// fraction of the time the recording's commands took (from their recorded
// start and output times, which leaves out resets and awaits before the
// first step, so the fraction is an upper bound).
func BenchmarkScanCensus(b *testing.B) {
	r, err := runs.Read(filepath.Join("..", "..", "demo", "recordings", runs.File))
	if err != nil {
		b.Fatal(err)
	}
	var recorded float64
	for _, s := range r.Scenarios {
		if n := len(s.Events); n > 0 {
			last := s.Events[n-1]
			end := last.Start
			if m := len(last.Output); m > 0 {
				end += last.Output[m-1].T
			}
			recorded += end
		}
	}
	creds := benchCredentials(b)
	start := time.Now()
	for b.Loop() {
		sc := credential.NewScanner(creds)
		for _, s := range r.Scenarios {
			if err := Scan(sc, s); err != nil {
				b.Fatal(err)
			}
			if err := scanBytes(sc, "cast", Cast(s)); err != nil {
				b.Fatal(err)
			}
			if err := scanCast(sc, s); err != nil {
				b.Fatal(err)
			}
		}
		runs, err := r.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if err := scanBytes(sc, "runs.json", runs); err != nil {
			b.Fatal(err)
		}
	}
	each := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(each*1000, "ms/scan")
	b.ReportMetric(recorded, "s-recorded")
	b.ReportMetric(each/recorded, "fraction")
}
