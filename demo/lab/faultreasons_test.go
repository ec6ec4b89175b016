package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/image"
)

// The faults that provoke the reasons the simulated kubelet of the
// controller tests provokes by failing or completing a Job it never ran:
// here each one comes by its production path on a real cluster. A row
// holds only when the Events of its reasons were recorded on the subject
// during the run; the whole table fails when one of labReasons is provoked
// by no row that held.
var labReasons = []string{
	v1alpha1.EventApplyOutcomeUnknown,
	v1alpha1.EventRunnerProtocolMismatch,
	v1alpha1.EventResultReadFailed,
	v1alpha1.EventOperationRetried,
}

// runSpec is what a fault changes in the spec of the run's revision.
type runSpec struct {
	deadline    string // spec.execution.deadline ("" is the table's 15m)
	runnerImage string // spec.execution.runnerImage ("" is the manager's)
	interval    string // spec.interval ("" is the table's 1h)
}

// applyDeadline is the execution deadline of the deadline row: long enough
// for every read-only operation of the lab, short of the lock wait.
const applyDeadline = 60 * time.Second

var deadlineExpired = fault{
	name: "the Apply Job's activeDeadlineSeconds expiring during its lock wait",
	prepare: func(f *faultLab) error {
		f.spec.deadline = applyDeadline.String()
		return nil
	},
	inject: func(f *faultLab, hit *moment) error {
		// The fault is the spec's own deadline: the Job controller ends
		// the Job and the kubelet stops its Pod, the statement still waiting.
		return f.jobEnds(hit.job, batchv1.JobReasonDeadlineExceeded, applyDeadline+2*time.Minute)
	},
	settle:   true,
	provokes: []string{v1alpha1.EventApplyOutcomeUnknown},
}

var previousProtocol = fault{
	name: "an executor image of the previous runner protocol in spec.execution.runnerImage",
	prepare: func(f *faultLab) error {
		ref, err := f.previousExecutor()
		f.spec.runnerImage = ref
		return err
	},
	inject: func(f *faultLab, _ *moment) error {
		if !f.awaitEvent(faultsSchema, v1alpha1.EventRunnerProtocolMismatch, f.runStart, 3*time.Minute) {
			return errors.New("no RunnerProtocolMismatch Event within 3m of the runner image's change")
		}
		return nil
	},
	lift: func(f *faultLab) error {
		// The person's fix: the runner image goes back to the manager's.
		f.spec.runnerImage = ""
		_, err := f.l.kubectlCmd(f.ctx, f.manifest(f.rev), "apply", "-f", "-")
		return err
	},
	provokes: []string{v1alpha1.EventRunnerProtocolMismatch},
}

// apiServerManifest is the kubelet's static Pod manifest of the
// kube-apiserver in the control-plane node; stoppedManifest is where the
// fault keeps it while the API server is to stay down.
const (
	apiServerManifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	stoppedManifest   = "/etc/kubernetes/kube-apiserver.yaml.stopped"
)

var apiServerStopped = fault{
	name: "kube-apiserver stopped while the runner delivers, past the runner's delivery timeout",
	inject: func(f *faultLab, hit *moment) error {
		if hit.job == "" || hit.release == nil {
			return errors.New("the moment names no Job, or holds nothing to release")
		}
		pods, err := f.kube.CoreV1().Pods(Namespace).List(f.ctx, metav1.ListOptions{LabelSelector: "job-name=" + hit.job})
		if err != nil || len(pods.Items) != 1 {
			return fmt.Errorf("the Pod of Job %s (%d found): %v", hit.job, len(pods.Items), err)
		}
		pod := pods.Items[0].Name
		if err := f.stopAPIServer(); err != nil {
			return err
		}
		// The operation goes on to its end with no API server to take its
		// record: its runner sends it until its delivery timeout (3m).
		hit.release()
		return f.runnerExited(pod, 6*time.Minute)
	},
	lift:     func(f *faultLab) error { return f.startAPIServer() },
	provokes: []string{v1alpha1.EventResultReadFailed},
}

// apiServerStoppedRetried is apiServerStopped on a PtahMigration's
// read-only Observe, whose failed attempt is retried.
var apiServerStoppedRetried = withProvokes(apiServerStopped, v1alpha1.EventOperationRetried)

func withProvokes(f fault, reasons ...string) fault {
	f.provokes = append(append([]string(nil), f.provokes...), reasons...)
	return f
}

// stopAPIServer takes the kube-apiserver's manifest out of the kubelet's
// directory and kills it, and waits until no kube-apiserver container runs.
func (f *faultLab) stopAPIServer() error {
	if _, err := f.l.d.Exec(f.ctx, f.node, nil, "mv", apiServerManifest, stoppedManifest); err != nil {
		return fmt.Errorf("move the kube-apiserver manifest aside in node %s: %w", f.node, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, _ = f.l.d.Exec(f.ctx, f.node, nil, "pkill", "-KILL", "-x", "kube-apiserver")
		all, running, err := f.containers(`labels."io.kubernetes.container.name"==kube-apiserver`)
		if err == nil && running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a kube-apiserver container still runs 90s after its manifest was moved aside (%d of %d running): %v", running, all, err)
		}
		time.Sleep(time.Second)
	}
}

// startAPIServer puts the manifest back and waits until /readyz answers.
func (f *faultLab) startAPIServer() error {
	if _, err := f.l.d.Exec(f.ctx, f.node, nil, "sh", "-c", "test ! -e "+stoppedManifest+" || mv "+stoppedManifest+" "+apiServerManifest); err != nil {
		return fmt.Errorf("put the kube-apiserver manifest back in node %s: %w", f.node, err)
	}
	return f.apiServerReady()
}

func (f *faultLab) apiServerReady() error {
	time.Sleep(2 * time.Second) // it is down before it is up again
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		_, err := f.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within 3m: %w", err)
		}
		time.Sleep(time.Second)
	}
}

// containers counts the node's containers matching a ctr filter, and those
// of them whose task runs: the node has containerd's ctr, not crictl.
func (f *faultLab) containers(filter string) (all, running int, err error) {
	ids, err := f.l.d.Exec(f.ctx, f.node, nil, "ctr", "--namespace=k8s.io", "containers", "ls", "-q", filter)
	if err != nil {
		return 0, 0, fmt.Errorf("list containers %s in node %s: %w", filter, f.node, err)
	}
	tasks, err := f.l.d.Exec(f.ctx, f.node, nil, "ctr", "--namespace=k8s.io", "tasks", "ls")
	if err != nil {
		return 0, 0, fmt.Errorf("list tasks in node %s: %w", f.node, err)
	}
	live := map[string]bool{}
	for _, line := range strings.Split(tasks, "\n") {
		if fs := strings.Fields(line); len(fs) == 3 && fs[2] == "RUNNING" {
			live[fs[0]] = true
		}
	}
	for _, id := range strings.Fields(ids) {
		all++
		if live[id] {
			running++
		}
	}
	return all, running, nil
}

// runnerExited waits, through the node's container runtime (the API server
// is down), until the runner container of pod has exited.
func (f *faultLab) runnerExited(pod string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		all, running, err := f.containers(`labels."io.kubernetes.container.name"==runner,labels."io.kubernetes.pod.name"==` + pod)
		if err == nil && all > 0 && running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runner of Pod %s had not exited %s after the API server stopped: %v", pod, timeout, err)
		}
		time.Sleep(2 * time.Second)
	}
}

// jobEnds waits until Job job has failed for reason.
func (f *faultLab) jobEnds(job, reason string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		j, err := f.kube.BatchV1().Jobs(Namespace).Get(f.ctx, job, metav1.GetOptions{})
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue {
					if c.Type == batchv1.JobFailed && c.Reason == reason {
						return nil
					}
					return fmt.Errorf("Job %s ended %s (%s), not failed for %s", job, c.Type, c.Reason, reason)
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Job %s had not failed for %s within %s", job, reason, timeout)
		}
		time.Sleep(time.Second)
	}
}

// reasonsSince lists the reasons of the Events recorded on the object
// named name in the lab namespace since then.
func (f *faultLab) reasonsSince(name string, since time.Time) []string {
	evs, err := f.kube.CoreV1().Events(Namespace).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return []string{"(Events unread: " + shortErr(err) + ")"}
	}
	seen := map[string]bool{}
	for _, e := range evs.Items {
		at := e.LastTimestamp.Time
		if e.EventTime.After(at) {
			at = e.EventTime.Time
		}
		if !at.Before(since.Truncate(time.Second)) && e.Type == corev1.EventTypeWarning {
			seen[e.Reason] = true
		}
	}
	var out []string
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func (f *faultLab) awaitEvent(name, reason string, since time.Time, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, r := range f.reasonsSince(name, since) {
			if r == reason {
				return true
			}
		}
		time.Sleep(2 * time.Second)
	}
	return false
}

// provoked checks the row's reasons against the Events recorded: the
// reasons missing are named in the outcome, and the row does not hold.
func provoked(res *faultResult, want, got []string) {
	res.events = strings.Join(got, ", ")
	if res.events == "" {
		res.events = "no warning"
	}
	for _, r := range want {
		found := false
		for _, g := range got {
			found = found || g == r
		}
		if !found {
			res.missing = append(res.missing, r)
		} else {
			res.provoked = append(res.provoked, r)
		}
	}
	if len(res.missing) > 0 {
		res.outcome += "; did not provoke " + strings.Join(res.missing, ", ")
		res.holds = false
	}
}

// checkLabReasons fails the whole table when one of labReasons was provoked
// by no row that held.
func checkLabReasons(t *testing.T, results []faultResult) {
	t.Helper()
	by := map[string]bool{}
	for _, r := range results {
		if r.holds {
			for _, p := range r.provoked {
				by[p] = true
			}
		}
	}
	for _, r := range labReasons {
		if !by[r] {
			t.Errorf("%s was provoked by no row of the fault table that held: the lab has not shown it by its production path", r)
		}
	}
}

// The previous runner protocol is the one the runner spoke before the
// commit that set its current ProtocolVersion; its executor image is
// assembled from ptah-runner and ptah built from that commit's parent.
var protocolLine = regexp.MustCompile(`(?m)^const ProtocolVersion = "([^"]+)"`)

// previousExecutor builds, once per table, the executor image of the
// previous runner protocol, loads it into the node and returns its ref.
func (f *faultLab) previousExecutor() (string, error) {
	if f.oldExecutor != "" {
		return f.oldExecutor, nil
	}
	const file = "internal/runner/protocol.go"
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(f.ctx, "git", append([]string{"-C", f.l.Root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	now, err := git("show", "HEAD:"+file)
	if err != nil {
		return "", fmt.Errorf("read %s at HEAD (the table needs the repository's history): %w", file, err)
	}
	current := protocolLine.FindStringSubmatch(now)
	set, err := git("log", "-1", "--format=%H", "-G", `^const ProtocolVersion = `, "--", file)
	if err != nil || current == nil || set == "" {
		return "", fmt.Errorf("find the commit that set the runner protocol in %s: %v", file, err)
	}
	before, err := git("show", set+"^:"+file)
	prev := protocolLine.FindStringSubmatch(before)
	if err != nil || prev == nil || prev[1] == current[1] {
		return "", fmt.Errorf("the protocol before commit %s: %v (%v)", set, prev, err)
	}
	src := filepath.Join(f.t.TempDir(), "previous-protocol")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(f.ctx, "sh", "-c", fmt.Sprintf("git -C %q archive %s^ | tar -x -C %q", f.l.Root, set, src))
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("check out %s^: %v: %s", set, err, out)
	}
	bin := filepath.Join(src, "bin")
	build := exec.CommandContext(f.ctx, "go", "build", "-trimpath", "-o", bin+"/", "./cmd/ptah", "./cmd/ptah-runner")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the runner of protocol %s from %s^: %v: %s", prev[1], set, err, out)
	}
	spec := image.Executor(filepath.Join(bin, image.PtahBinary), filepath.Join(bin, image.RunnerBinary))
	spec.Ref = "ptah-executor:runner-" + strings.ReplaceAll(strings.TrimPrefix(prev[1], "ptah.run/runner/"), "/", "-")
	img, err := image.Build(spec)
	if err != nil {
		return "", err
	}
	tar := filepath.Join(src, "executor.tar")
	if err := image.WriteTarball(tar, spec.Ref, img); err != nil {
		return "", err
	}
	nodeList, err := f.l.provider().ListInternalNodes(strings.TrimSuffix(f.node, "-control-plane"))
	if err != nil {
		return "", err
	}
	for _, n := range nodeList {
		if err := loadArchive(n, tar); err != nil {
			return "", err
		}
	}
	f.t.Logf("executor image %s: runner protocol %s, built from %s^ (this tree speaks %s)", spec.Ref, prev[1], set[:12], current[1])
	f.oldExecutor = spec.Ref
	return spec.Ref, nil
}

// migrationPhase is where in run n a migration row's fault lands: hold
// keeps the run there, reached finds the moment.
type migrationPhase struct {
	name    string
	hold    func(f *faultLab, n int) (func(), error)
	reached func(f *faultLab, n int) (*moment, error)
}

// migObserveHeld is the PtahMigration phase of apiServerStoppedRetried:
// the Observe that reads run n's history first (a new revision is read
// before it is planned) waits for the history table, which a superuser
// session holds locked, its release left to the fault. The reading takes
// no writer lock (only the one settling an unresolved run does), so the
// table's lock is what holds it.
var migObserveHeld = &migrationPhase{
	name: "PtahMigration Observe (its reading of the history waiting on the table's lock)",
	hold: func(f *faultLab, _ int) (func(), error) {
		return f.holdSession("faults-history-lock", "BEGIN; LOCK TABLE ptah.migration_revisions IN ACCESS EXCLUSIVE MODE",
			"l.locktype = 'relation' AND l.granted AND l.relation = 'ptah.migration_revisions'::regclass AND l.mode = 'AccessExclusiveLock'")
	},
	reached: func(f *faultLab, _ int) (*moment, error) {
		m, err := f.migration()
		if err != nil {
			return nil, err
		}
		c := m.Status.ActiveOperation
		if c == nil || c.Type != v1alpha1.OperationObserve || m.Status.ObservedGeneration != m.Generation {
			return nil, nil
		}
		out, err := f.superErr(fmt.Sprintf("SELECT wait_event_type || '/' || wait_event || ': ' || left(query, 80) FROM pg_stat_activity WHERE usename = '%s' AND state = 'active' AND wait_event_type = 'Lock' AND query LIKE '%%ptah.migration_revisions%%' LIMIT 1", appRole))
		if err != nil || strings.TrimSpace(out) == "" {
			return nil, err
		}
		return &moment{what: "Observe waiting on " + strings.TrimSpace(out), job: c.JobName}, nil
	},
}

// holdSession runs sql in a superuser session named app that then sleeps,
// waits until pg_locks shows its lock (cond on l), and returns its release.
func (f *faultLab) holdSession(app, sql, cond string) (func(), error) {
	done := make(chan error, 1)
	go func() {
		_, err := f.superErr(fmt.Sprintf("SET application_name = '%s'; %s; SELECT pg_sleep(1200)", app, sql))
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := f.superErr(fmt.Sprintf("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.application_name = '%s' AND %s", app, cond))
		if strings.TrimSpace(out) == "1" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %s session did not take its lock within 30s", app)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return func() {
		if _, err := f.superErr(fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '%s'", app)); err != nil {
			f.t.Logf("release the %s session: %v", app, err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			f.t.Logf("the %s session had not ended 30s after its release", app)
		}
	}, nil
}
