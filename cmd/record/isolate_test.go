package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// aheadLab is a lab program whose namespaces are directories: scenario-up
// makes one (and fails, making none, for the calls listed in $FAIL_CALLS,
// counted from 0 in the order they take a number),
// logging how many are in being once it is made; scenario-down removes it.
const aheadLab = `#!/bin/sh
set -e
case "$1" in
scenario-up)
  call=0
  until mkdir "$SPACES/.call.$call" 2>/dev/null; do call=$((call + 1)); done
  for f in $FAIL_CALLS; do [ "$f" = "$call" ] && { echo "no namespace for call $call" >&2; exit 1; }; done
  ns=own-$call-$$
  mkdir "$SPACES/$ns"
  echo "$(ls "$SPACES" | grep -c '^own-')" >> "$SPACES/.inbeing"
  echo "NAMESPACE=$ns"
  echo "name $ns ptah-demo" ;;
scenario-down)
  [ -d "$SPACES/$2" ] || { echo "no namespace $2" >&2; exit 1; }
  rm -r "$SPACES/$2"
  echo "$2" >> "$SPACES/.downs" ;;
*) exit 2 ;;
esac
`

// TestNamespacesAreMadeAhead holds what making namespaces ahead of their
// scenarios must keep, over generated numbers of scenarios and workers and
// generated scenario-up failures and interruptions: each scenario gets a
// namespace no other
// scenario gets (or the error of the call that made none), never more than
// the workers and the spare are in being at once, and every namespace made
// is removed before the run ends.
func TestNamespacesAreMadeAhead(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "lab")
	if err := os.WriteFile(prog, []byte(aheadLab), 0o755); err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		spaces, err := os.MkdirTemp("", "ahead-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(spaces)
		count := rapid.IntRange(1, 9).Draw(rt, "scenarios")
		workers := rapid.IntRange(1, 4).Draw(rt, "workers")
		fails := map[int]bool{}
		var failing []string
		for i := range count {
			if rapid.IntRange(0, 4).Draw(rt, "up fails (0)") == 0 {
				fails[i] = true
				failing = append(failing, strconv.Itoa(i))
			}
		}
		t.Setenv("SPACES", spaces)
		t.Setenv("FAIL_CALLS", strings.Join(failing, " "))
		is := &isolation{program: prog, root: t.TempDir()}
		limit := min(workers, count) + aheadSpare
		// The run interrupted after some scenarios took theirs (count: never).
		cancelAfter := rapid.IntRange(0, count).Draw(rt, "interrupted after takes")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := is.ahead(ctx, count, limit)
		takes := 0
		work := make(chan int)
		var mu sync.Mutex
		seen := map[string]bool{}
		errs := 0
		var wg sync.WaitGroup
		for range min(workers, count) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range work {
					own, err := a.take()
					mu.Lock()
					if takes++; takes == cancelAfter {
						cancel()
					}
					if err != nil {
						errs++
						mu.Unlock()
						continue
					}
					if seen[own.namespace] {
						rt.Errorf("namespace %s given to two scenarios", own.namespace)
					}
					seen[own.namespace] = true
					mu.Unlock()
					time.Sleep(time.Duration(len(own.namespace)%3) * 10 * time.Millisecond)
					a.giveBack(own, "s", io.Discard)
				}
			}()
		}
		for i := range count {
			work <- i
		}
		close(work)
		wg.Wait()
		a.wait()
		if errs+len(seen) != count || cancelAfter == count && (errs != len(failing) || len(seen) != count-len(failing)) {
			rt.Fatalf("%d namespaces and %d errors for %d scenarios, %d of whose scenario-up failed", len(seen), errs, count, len(failing))
		}
		inBeing, _ := os.ReadFile(filepath.Join(spaces, ".inbeing"))
		for _, f := range strings.Fields(string(inBeing)) {
			if n, _ := strconv.Atoi(f); n > limit {
				rt.Fatalf("%d namespaces in being at once, limit %d (%d workers, %d spare)", n, limit, workers, aheadSpare)
			}
		}
		left, _ := filepath.Glob(filepath.Join(spaces, "own-*"))
		downs, _ := os.ReadFile(filepath.Join(spaces, ".downs"))
		if len(left) != 0 || len(strings.Fields(string(downs))) != len(seen) {
			rt.Fatalf("after the run: %v left, %d removed of %d made", left, len(strings.Fields(string(downs))), len(seen))
		}
	})
}
