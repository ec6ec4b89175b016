package observe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"k8s.io/client-go/dynamic"

	"ptah.run/operator/internal/testenv"
)

// BenchmarkAwaitLatency measures the time from a status update on the API
// server to the await that watches for it returning.
func BenchmarkAwaitLatency(b *testing.B) {
	api := testenv.StartAPIServer(b, testenv.WithCRDs("testdata/crds"))
	dyn := dynamic.NewForConfigOrDie(api.Config)
	obs, err := New(api.Config, "default")
	if err != nil {
		b.Fatal(err)
	}
	createWidget(b, dyn, "bench")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		reason := fmt.Sprintf("R%d", i)
		returned := make(chan time.Time, 1)
		go func() {
			_, err := obs.Await(context.Background(), Target{Kind: "widget", Name: "bench"}, time.Minute, func(o Object) bool {
				return gjson.GetBytes(o.JSON, `status.conditions.#(type=="Ready").reason`).String() == reason
			})
			if err != nil {
				b.Error(err)
			}
			returned <- time.Now()
		}()
		// Let the watch start; only update-to-return is measured.
		time.Sleep(150 * time.Millisecond)
		updated := time.Now()
		setCondition(b, dyn, "bench", "Ready", "True", reason, 1)
		total += (<-returned).Sub(updated)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/update-to-return")
}
