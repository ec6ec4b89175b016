// Package jobsim stands in for the kubelet and the Job controller in
// integration tests, which run a real API server but no nodes. For each Job
// it creates the Pod through the API server, runs the real runner with
// exactly that Pod's environment and credential, and writes the Pod's and
// the Job's status as the kubelet and the Job controller would.
package jobsim

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"ptah.run/operator/internal/runner"
)

// Options configure a Kubelet.
type Options struct {
	// Namespace limits the Jobs run to one namespace; empty runs them all.
	Namespace string
	// Ptah is the ptah binary the runner spawns (see BuildPtah).
	Ptah string
	// Runner replaces the runner's Config defaults for every Job (e.g. a
	// shorter CredentialTimeout); Environ, Ptah, paths and Log are set here.
	Runner runner.Config
	// Fail, when it returns true for a Job, fails it without creating a Pod,
	// with the condition reason and message it returns, as the Job
	// controller does when the deadline passes first ("DeadlineExceeded").
	Fail func(*batchv1.Job) (reason, message string, fail bool)
	// Complete, when it returns true for a Job, completes it without
	// running its container: a Job whose record never arrives, as when the
	// record the runner wrote was lost.
	Complete func(*batchv1.Job) bool
	// Hold, when set, is called after the Pod is admitted and its volumes
	// are mounted, before the container starts: a test acts while the
	// operation runs. The container starts when it returns.
	Hold func(context.Context, *batchv1.Job)
	// RetryInterval is how long Pod creation and volume setup wait before
	// trying again after a refusal (default 1s, doubling to 10s).
	RetryInterval time.Duration
	// APIServer, when set, is the host:port the Pods reach the API server
	// at instead of cfg's: a test puts a relay in between to cut it.
	APIServer string
}

// Run is what happened to one Job.
type Run struct {
	Job string
	// Pod is the Pod created for it ("" if none was admitted).
	Pod string
	// Outcome is the runner's (nil if it never ran).
	Outcome *runner.Outcome
	// Err is the runner's error: no record was delivered.
	Err error
	// Log is everything the runner and ptah wrote to the Pod's log.
	Log string
	// RunnerLog is the runner container's own log, as the kubelet would
	// serve it for that container (Log adds the sidecars' and jobsim's).
	RunnerLog string
	// Refusals are the API server's answers to refused Pod creations.
	Refusals []string
	// Condition is the Job's final condition type (Complete or Failed).
	Condition batchv1.JobConditionType
	Reason    string
}

// Kubelet runs Jobs until the test ends.
type Kubelet struct {
	opts  Options
	admin *rest.Config
	cs    kubernetes.Interface
	host  string
	port  string

	mu      sync.Mutex
	runs    map[string]*Run // by namespace/name
	cancels map[types.UID]context.CancelFunc
	// orphaned Jobs were deleted leaving their Pods running.
	orphaned map[types.UID]bool
	changed  chan struct{}
}

// Start watches Jobs with the admin credential in cfg and runs each new one.
func Start(t testing.TB, cfg *rest.Config, opts Options) *Kubelet {
	t.Helper()
	if opts.Ptah == "" {
		t.Fatal("jobsim: Options.Ptah is empty; build ptah with BuildPtah")
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = time.Second
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	host, port, err := hostPort(cfg.Host)
	if opts.APIServer != "" {
		host, port, err = net.SplitHostPort(opts.APIServer)
	}
	if err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	k := &Kubelet{opts: opts, admin: cfg, cs: cs, host: host, port: port,
		runs: map[string]*Run{}, cancels: map[types.UID]context.CancelFunc{}, orphaned: map[types.UID]bool{}, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(opts.Namespace))
	inf := factory.Batch().V1().Jobs().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			job := obj.(*batchv1.Job)
			if job.DeletionTimestamp != nil {
				k.collect(job)
				return
			}
			if finished(job) {
				return
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			if _, seen := k.cancels[job.UID]; seen {
				return
			}
			jctx, jcancel := context.WithCancel(ctx)
			k.cancels[job.UID] = jcancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				k.handle(jctx, job.DeepCopy())
			}()
		},
		UpdateFunc: func(_, obj any) {
			if job := obj.(*batchv1.Job); job.DeletionTimestamp != nil {
				k.collect(job)
			}
		},
		DeleteFunc: func(obj any) {
			job, ok := obj.(*batchv1.Job)
			if !ok {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					job, _ = d.Obj.(*batchv1.Job)
				}
			}
			if job != nil {
				k.deletePods(job)
			}
		},
	})
	if err != nil {
		t.Fatalf("jobsim: %v", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("jobsim: the Job informer did not sync")
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		wg.Wait()
	})
	return k
}

// collect does the garbage collector's part in a Job's deletion, which
// envtest does not run: with the orphan finalizer (the default for a
// batch/v1 Job deleted without a propagation policy) its Pods lose their
// owner and keep running; with foregroundDeletion they are deleted first.
// Then the finalizer goes and the Job with it.
func (k *Kubelet) collect(job *batchv1.Job) {
	ctx := context.Background()
	var finalizers []string
	for _, f := range job.Finalizers {
		switch f {
		case metav1.FinalizerOrphanDependents:
			k.mu.Lock()
			k.orphaned[job.UID] = true
			k.mu.Unlock()
			pods, err := k.cs.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: controllerUID + "=" + string(job.UID)})
			if err != nil {
				return
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				p.OwnerReferences = nil
				if _, err := k.cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					return
				}
			}
		case metav1.FinalizerDeleteDependents:
			k.deletePods(job)
		default:
			finalizers = append(finalizers, f)
		}
	}
	if len(finalizers) == len(job.Finalizers) {
		return
	}
	live := job.DeepCopy()
	live.Finalizers = finalizers
	_, _ = k.cs.BatchV1().Jobs(job.Namespace).Update(ctx, live, metav1.UpdateOptions{})
}

// deletePods deletes a Job's Pods, which stops their containers.
func (k *Kubelet) deletePods(job *batchv1.Job) {
	k.mu.Lock()
	orphaned := k.orphaned[job.UID]
	if c := k.cancels[job.UID]; c != nil && !orphaned {
		c()
	}
	k.mu.Unlock()
	if orphaned {
		return
	}
	_ = k.cs.CoreV1().Pods(job.Namespace).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: controllerUID + "=" + string(job.UID)})
}

// controllerUID is the label the Job controller puts on its Pods.
const controllerUID = "batch.kubernetes.io/controller-uid"

// Runs returns a copy of every Job's Run so far.
func (k *Kubelet) Runs() []Run {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]Run, 0, len(k.runs))
	for _, r := range k.runs {
		out = append(out, *r)
	}
	return out
}

// Wait returns the Run of namespace/name once its Job has finished.
func (k *Kubelet) Wait(ctx context.Context, namespace, name string) (Run, error) {
	for {
		k.mu.Lock()
		r, ok := k.runs[namespace+"/"+name]
		ch := k.changed
		if ok && r.Condition != "" {
			defer k.mu.Unlock()
			return *r, nil
		}
		k.mu.Unlock()
		select {
		case <-ctx.Done():
			return Run{}, fmt.Errorf("jobsim: Job %s/%s did not finish: %w", namespace, name, ctx.Err())
		case <-ch:
		}
	}
}

func (k *Kubelet) update(job *batchv1.Job, f func(*Run)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := job.Namespace + "/" + job.Name
	r := k.runs[key]
	if r == nil {
		r = &Run{Job: job.Name}
		k.runs[key] = r
	}
	f(r)
	close(k.changed)
	k.changed = make(chan struct{})
}

// handle is one Job's life: Pod admission, volumes, the container, status.
func (k *Kubelet) handle(ctx context.Context, job *batchv1.Job) {
	k.update(job, func(*Run) {})
	start := metav1.Now()
	if job.Status.StartTime != nil {
		start = *job.Status.StartTime
	}
	if err := k.setJobStatus(ctx, job, func(s *batchv1.JobStatus) {
		s.StartTime = &start
	}); err != nil {
		return
	}
	if k.opts.Fail != nil {
		if reason, msg, fail := k.opts.Fail(job); fail {
			k.finish(ctx, job, nil, batchv1.JobFailed, reason, msg)
			return
		}
	}
	if k.opts.Complete != nil && k.opts.Complete(job) {
		k.finish(ctx, job, nil, batchv1.JobComplete, "", "")
		return
	}
	// The Job controller and kubelet give up when the deadline passes.
	if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(time.Duration(*d)*time.Second))
		defer cancel()
	}
	deadline := func() {
		k.finish(context.WithoutCancel(ctx), job, nil, batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
	}

	pod, err := k.createPod(ctx, job)
	if err != nil {
		if ctx.Err() != nil && jobExists(k.cs, job) {
			deadline()
		}
		return
	}
	k.update(job, func(r *Run) { r.Pod = pod.Name })
	root, env, err := k.prepare(ctx, job, pod)
	if err != nil {
		if ctx.Err() != nil && jobExists(k.cs, job) {
			deadline()
		}
		return
	}
	defer os.RemoveAll(root)

	if k.opts.Hold != nil {
		k.opts.Hold(ctx, job)
	}
	sc, err := k.startSidecars(ctx, pod, root)
	if err != nil {
		k.update(job, func(r *Run) { r.Log += fmt.Sprintf("jobsim: %v\n", err) })
		if ctx.Err() != nil {
			if jobExists(k.cs, job) {
				deadline()
			}
			return
		}
		bg := context.WithoutCancel(ctx)
		k.podPhase(bg, pod, corev1.PodFailed, &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: err.Error(), StartedAt: start, FinishedAt: metav1.Now()})
		k.finish(bg, job, pod, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
		return
	}
	k.podPhase(ctx, pod, corev1.PodRunning, nil)
	var log bytes.Buffer
	cfg := k.opts.Runner
	cfg.Environ, cfg.Ptah, cfg.Log = rewriteAll(env, pod.Spec.Containers[0], root), k.opts.Ptah, &log
	cfg.TokenPath = filepath.Join(root, runner.TokenPath)
	cfg.CAPath = filepath.Join(root, runner.CAPath)
	cfg.WorkDir = filepath.Join(root, "tmp")
	cfg.TerminationLog = filepath.Join(root, runner.TerminationLog)
	for _, d := range []string{cfg.WorkDir, filepath.Dir(cfg.TerminationLog)} {
		if err := os.MkdirAll(d, 0o1777); err != nil {
			panic(err)
		}
	}
	outcome, runErr := runner.Run(ctx, cfg)
	exit := runner.ExitDelivered
	if runErr != nil {
		exit = runner.ExitUndelivered
		fmt.Fprintf(&log, "ptah-runner: %v\n", runErr)
	}
	runnerLog := log.String()
	log.WriteString(sc.stop())
	k.update(job, func(r *Run) { r.Outcome, r.Err, r.Log, r.RunnerLog = outcome, runErr, log.String(), runnerLog })
	if ctx.Err() != nil {
		if jobExists(k.cs, job) {
			deadline()
		}
		return
	}
	bg := context.WithoutCancel(ctx)
	k.podPhase(bg, pod, podPhaseOf(exit), &corev1.ContainerStateTerminated{ExitCode: int32(exit), Reason: terminationReason(exit),
		Message: terminationMessage(cfg.TerminationLog), StartedAt: start, FinishedAt: metav1.Now()})
	if exit == 0 {
		k.finish(bg, job, pod, batchv1.JobComplete, "", "")
	} else {
		k.finish(bg, job, pod, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
	}
}

// terminationMessage is what the kubelet reports of a container's
// termination message file: at most its first 4096 bytes.
func terminationMessage(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	return string(b)
}

// maxTerminationMessage is the kubelet's bound on one container's message.
const maxTerminationMessage = 4096

// PodLog is the log of the runner container of the Pod namespace/pod, as the
// kubelet would serve it, once the container has run; ok is false before.
func (k *Kubelet) PodLog(namespace, pod string) (log string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, r := range k.runs {
		if r.Pod == pod && strings.HasPrefix(key, namespace+"/") && r.Outcome != nil {
			return r.RunnerLog, true
		}
	}
	return "", false
}

func podPhaseOf(exit int) corev1.PodPhase {
	if exit == 0 {
		return corev1.PodSucceeded
	}
	return corev1.PodFailed
}

func terminationReason(exit int) string {
	if exit == 0 {
		return "Completed"
	}
	return "Error"
}

func jobExists(cs kubernetes.Interface, job *batchv1.Job) bool {
	j, err := cs.BatchV1().Jobs(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
	return err == nil && j.UID == job.UID
}

// finish writes the Job's terminal status the way the Job controller does:
// the interim condition (SuccessCriteriaMet or FailureTarget) first, then
// Complete or Failed, with the counts and times.
func (k *Kubelet) finish(ctx context.Context, job *batchv1.Job, pod *corev1.Pod, cond batchv1.JobConditionType, reason, message string) {
	now := metav1.Now()
	interim := batchv1.JobSuccessCriteriaMet
	if cond == batchv1.JobFailed {
		interim = batchv1.JobFailureTarget
	} else {
		reason, message = batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"
	}
	err := k.setJobStatus(ctx, job, func(s *batchv1.JobStatus) {
		s.Active = 0
		s.Ready = ptr(int32(0))
		s.Terminating = ptr(int32(0))
		s.Conditions = append(s.Conditions,
			batchv1.JobCondition{Type: interim, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now},
			batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now})
		switch {
		case cond == batchv1.JobComplete:
			s.Succeeded = 1
			s.CompletionTime = &now
		case pod != nil:
			s.Failed = 1
		}
	})
	if err != nil {
		return
	}
	k.update(job, func(r *Run) { r.Condition, r.Reason = cond, reason })
}

// setJobStatus applies f to the live Job's status, retrying on conflicts.
func (k *Kubelet) setJobStatus(ctx context.Context, job *batchv1.Job, f func(*batchv1.JobStatus)) error {
	for {
		live, err := k.cs.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if live.UID != job.UID {
			return fmt.Errorf("job %s/%s was replaced", job.Namespace, job.Name)
		}
		f(&live.Status)
		_, err = k.cs.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, live, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				k.update(job, func(r *Run) { r.Log += fmt.Sprintf("jobsim: update Job status: %v\n", err) })
			}
			return err
		}
	}
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
