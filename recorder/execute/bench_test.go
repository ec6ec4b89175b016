package execute

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkOverhead runs a trivial command through the recorder's shell
// (pty, scrubbed env, timed chunks, group kill) and reports the ratio to the
// same command run bare with sh -c.
func BenchmarkOverhead(b *testing.B) {
	s := Shell{Dir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Timeout: time.Minute}
	const cmd = "echo ok"
	bare := func() {
		c := exec.Command("/bin/sh", "-c", cmd)
		c.Dir = s.Dir
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
	const n = 50
	start := time.Now()
	for range n {
		bare()
	}
	bareEach := time.Since(start) / n

	start = time.Now()
	runs := 0
	for b.Loop() {
		if _, err := s.Run(context.Background(), cmd, false); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	recorderEach := time.Since(start) / time.Duration(runs)
	b.ReportMetric(float64(bareEach.Microseconds()), "µs/bare")
	b.ReportMetric(float64(recorderEach)/float64(bareEach), "x-bare")
}
