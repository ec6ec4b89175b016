package execute

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkOverhead runs a trivial command through the recorder's shell
// (pty, scrubbed env, stdin at EOF, timed chunks, group kill, orphan sweep)
// and bare with sh -c, interleaved in the same loop so both see the same
// machine, and reports the ratio.
func BenchmarkOverhead(b *testing.B) {
	s := Shell{Dir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Timeout: time.Minute}
	const cmd = "echo ok"
	var bare, recorder time.Duration
	for b.Loop() {
		start := time.Now()
		c := exec.Command("/bin/sh", "-c", cmd)
		c.Dir = s.Dir
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(start)

		start = time.Now()
		if _, err := s.Run(context.Background(), cmd, false); err != nil {
			b.Fatal(err)
		}
		recorder += time.Since(start)
	}
	b.ReportMetric(float64(bare.Microseconds())/float64(b.N), "µs/bare")
	b.ReportMetric(float64(recorder.Microseconds())/float64(b.N), "µs/recorder")
	b.ReportMetric(float64(recorder)/float64(bare), "x-bare")
}
