package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/database"
)

// The faults, each provoked for real: no hook in the operator knows.

// databaseLease is the manager's --database-lease-duration as the chart installs it.
const databaseLease = time.Minute

var managerKilled = fault{
	name: "manager SIGKILLed, kept down past the lease",
	inject: func(f *faultLab, _ *moment) error {
		// The process dies first (no shutdown of any kind), then the
		// Deployment is scaled to 0 and its Pod removed with no grace.
		if _, err := f.l.d.Exec(f.ctx, f.node, nil, "pkill", "-KILL", "-x", "manager"); err != nil {
			return fmt.Errorf("SIGKILL the manager in node %s: %w", f.node, err)
		}
		if _, err := f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "scale", "deployment/"+f.controller, "--replicas=0"); err != nil {
			return err
		}
		_, err := f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name="+f.controller,
			"--grace-period=0", "--force", "--wait=false")
		return err
	},
	down: databaseLease + 15*time.Second,
	lift: func(f *faultLab) error {
		if _, err := f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "scale", "deployment/"+f.controller, "--replicas=1"); err != nil {
			return err
		}
		_, err := f.l.kubectlCmd(f.ctx, "", "-n", OperatorNamespace, "rollout", "status", "deployment/"+f.controller, "--timeout=3m")
		return err
	},
}

var postgresStopped = fault{
	name: "PostgreSQL stopped (fast shutdown), then started",
	inject: func(f *faultLab, _ *moment) error {
		// docker stop's SIGTERM is PostgreSQL's smart shutdown, which lets
		// every open session finish; SIGINT is the fast one, which cuts them.
		if _, err := f.l.r.Output(f.ctx, "docker", "kill", "-s", "INT", f.postgres); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
		defer cancel()
		_, err := f.l.r.Output(ctx, "docker", "wait", f.postgres)
		return err
	},
	down: 15 * time.Second,
	lift: func(f *faultLab) error {
		if _, err := f.l.r.Output(f.ctx, "docker", "start", f.postgres); err != nil {
			return err
		}
		if err := f.sameAddress(f.postgres, f.postgresIP); err != nil {
			return err
		}
		return f.postgresReady()
	},
}

var postgresPaused = fault{
	name: "PostgreSQL paused, then unpaused",
	inject: func(f *faultLab, _ *moment) error {
		_, err := f.l.r.Output(f.ctx, "docker", "pause", f.postgres)
		return err
	},
	down: 20 * time.Second,
	lift: func(f *faultLab) error {
		_, err := f.l.r.Output(f.ctx, "docker", "unpause", f.postgres)
		return err
	},
}

var apiServerRestarted = fault{
	name: "kube-apiserver killed, static Pod restarted",
	inject: func(f *faultLab, _ *moment) error {
		_, err := f.l.d.Exec(f.ctx, f.node, nil, "pkill", "-KILL", "-x", "kube-apiserver")
		return err
	},
	lift: func(f *faultLab) error { return f.apiServerReady() },
}

var opPodDeleted = fault{
	name: "operation Pod deleted (grace 0)",
	inject: func(f *faultLab, hit *moment) error {
		if hit.job == "" {
			return errors.New("the moment names no Job")
		}
		pods, err := f.kube.CoreV1().Pods(Namespace).List(f.ctx, metav1.ListOptions{LabelSelector: "job-name=" + hit.job})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("Job %s has no Pod to delete", hit.job)
		}
		for _, p := range pods.Items {
			if err := f.kube.CoreV1().Pods(Namespace).Delete(f.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
				return err
			}
		}
		return nil
	},
	settle: true,
}

var registryStopped = fault{
	name: "registry stopped, then started",
	inject: func(f *faultLab, _ *moment) error {
		_, err := f.l.r.Output(f.ctx, "docker", "stop", "-t", "2", f.registry)
		return err
	},
	down: 20 * time.Second,
	lift: func(f *faultLab) error {
		if _, err := f.l.r.Output(f.ctx, "docker", "start", f.registry); err != nil {
			return err
		}
		if err := f.sameAddress(f.registry, f.registryIP); err != nil {
			return err
		}
		port, err := f.l.d.HostPort(f.ctx, f.registry, "5000/tcp")
		if err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get("http://127.0.0.1:" + port + "/v2/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusUnauthorized {
					return nil
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("registry not answering within 30s after its start")
			}
			time.Sleep(300 * time.Millisecond)
		}
	},
}

// The database's network is cut inside the node, where the cluster's
// traffic to it passes: iptables rules, marked, that drop every packet to
// and from the database's address (a partition: no refusal, no reset).
// Docker accepts no reconnection at a fixed address on kind's network,
// whose IPv4 subnet is not user-configured, so the container stays put and
// only the path is cut; the heal removes exactly the marked rules and
// proves the path open again.
var networkCut = fault{
	name:   "database network cut (the node drops its packets), then healed",
	inject: (*faultLab).cutNetwork,
	down:   20 * time.Second,
	lift:   (*faultLab).healNetwork,
}

// lossBound is how long ptah may take, with the fault table's connectTimeout
// of 5s, to find a session lost (database.LostAfter), plus what the runner
// and the manager take to deliver and record it.
var lossBound = database.LostAfter(5*time.Second) + 30*time.Second

// networkCutLasting is the cut outlasting the bound: the operator must
// report the loss (DatabaseReachable=False) while the partition lasts, not
// at the Job's deadline, and converge without a person after the heal.
var networkCutLasting = fault{
	name:    "database network cut past the loss bound (the node drops its packets), then healed",
	inject:  (*faultLab).cutNetwork,
	down:    lossBound + time.Minute,
	lift:    (*faultLab).healNetwork,
	lasting: true,
}

// cutMark tags the rules of a cut, so the heal removes exactly them and the
// teardown finds any a failed heal left.
const cutMark = "ptah-fault-cut"

func (f *faultLab) cutNetwork(_ *moment) error {
	for _, r := range [][]string{{"FORWARD", "-d"}, {"FORWARD", "-s"}, {"OUTPUT", "-d"}, {"INPUT", "-s"}} {
		if _, err := f.l.d.Exec(f.ctx, f.node, nil, "iptables", "-w", "-I", r[0], "1", r[1], f.postgresIP,
			"-m", "comment", "--comment", cutMark, "-j", "DROP"); err != nil {
			return fmt.Errorf("cut the database's network in node %s (iptables -I %s): %w", f.node, r[0], err)
		}
	}
	if f.databaseOpen(3 * time.Second) {
		return fmt.Errorf("the node still reaches %s:5432 after the cut", f.postgresIP)
	}
	return nil
}

func (f *faultLab) healNetwork() error {
	out, err := f.l.d.Exec(f.ctx, f.node, nil, "iptables", "-w", "-S")
	if err != nil {
		return fmt.Errorf("list the node's rules: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "-A" || !slices.Contains(fields, cutMark) {
			continue
		}
		fields[0] = "-D"
		if _, err := f.l.d.Exec(f.ctx, f.node, nil, append([]string{"iptables", "-w"}, fields...)...); err != nil {
			return fmt.Errorf("heal the database's network in node %s (iptables %s): %w", f.node, strings.Join(fields, " "), err)
		}
	}
	if out, err := f.l.d.Exec(f.ctx, f.node, nil, "iptables", "-w", "-S"); err != nil || strings.Contains(out, cutMark) {
		return fmt.Errorf("rules marked %s are still in node %s after the heal (%v)", cutMark, f.node, err)
	}
	if !f.databaseOpen(10 * time.Second) {
		return fmt.Errorf("the node does not reach %s:5432 10s after the heal", f.postgresIP)
	}
	return nil
}

// databaseOpen reports whether a TCP connection from the node to the
// database opens within timeout.
func (f *faultLab) databaseOpen(timeout time.Duration) bool {
	_, err := f.l.d.Exec(f.ctx, f.node, nil, "timeout", strconv.Itoa(int(timeout.Seconds())), "bash", "-c",
		"exec 3<>/dev/tcp/"+f.postgresIP+"/5432")
	return err == nil
}

// lossReported says, for a lasting fault, when the subject first said its
// database was not reached (DatabaseReachable=False, set after the fault
// began) and what it said, polling until the fault's down time is over.
func (f *faultLab) lossReported(start time.Time, down time.Duration, conditions func() ([]metav1.Condition, error)) (time.Duration, string) {
	for end := start.Add(down); time.Now().Before(end); time.Sleep(time.Second) {
		cs, err := conditions()
		if err != nil {
			continue
		}
		c := meta.FindStatusCondition(cs, v1alpha1.ConditionDatabaseReachable)
		if c != nil && c.Status == metav1.ConditionFalse && !c.LastTransitionTime.Time.Before(start.Truncate(time.Second)) {
			took := time.Since(start)
			time.Sleep(time.Until(end))
			return took, c.Reason + ": " + c.Message
		}
	}
	return 0, ""
}

// sameAddress puts a restarted container back at the address the lab's
// EndpointSlice names, if Docker gave it another.
func (f *faultLab) sameAddress(container, ip string) error {
	got, err := f.l.d.IP(f.ctx, container, "kind")
	if err == nil && got == ip {
		return nil
	}
	f.t.Logf("%s came back at %s, not %s: reconnecting it at its address", container, got, ip)
	_, _ = f.l.r.Output(f.ctx, "docker", "network", "disconnect", "kind", container)
	_, err = f.l.r.Output(f.ctx, "docker", "network", "connect", "--ip", ip, "kind", container)
	return err
}

func (f *faultLab) postgresReady() error {
	deadline := time.Now().Add(90 * time.Second)
	for !f.l.r.Succeeds(f.ctx, "docker", "exec", f.postgres, "pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres") {
		if time.Now().After(deadline) {
			return errors.New("PostgreSQL not ready within 90s of its start")
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

// The phases, each found by watching the schema's active operation, its
// Job's Pod and the database's own sessions.

// claimOf is the schema's active claim, when there is one of this
// generation that is.
func (f *faultLab) claimOf(is func(*v1alpha1.ActiveOperation) bool) (*v1alpha1.ActiveOperation, error) {
	s, err := f.schema()
	if err != nil {
		return nil, err
	}
	c := s.Status.ActiveOperation
	if c == nil || !is(c) || s.Status.ObservedGeneration != s.Generation {
		return nil, nil
	}
	return c, nil
}

var resolveClaimed = phase{
	name: "Resolve",
	reached: func(f *faultLab) (*moment, error) {
		c, err := f.claimOf(func(c *v1alpha1.ActiveOperation) bool { return c.Type == v1alpha1.OperationResolve })
		if c == nil || err != nil {
			return nil, err
		}
		return &moment{what: "Resolve claimed, " + f.podState(c.JobName), job: c.JobName}, nil
	},
}

func opRunning(typ v1alpha1.OperationType) phase {
	return phase{
		name: string(typ),
		reached: func(f *faultLab) (*moment, error) {
			c, err := f.claimOf(func(c *v1alpha1.ActiveOperation) bool { return c.Type == typ })
			if c == nil || err != nil {
				return nil, err
			}
			pods, err := f.kube.CoreV1().Pods(Namespace).List(f.ctx, metav1.ListOptions{LabelSelector: "job-name=" + c.JobName})
			if err != nil {
				return nil, err
			}
			if f.recordState(c.JobName) != "no result record yet" {
				return nil, nil // too late: the operation has delivered
			}
			for _, p := range pods.Items {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == "runner" && cs.State.Running != nil {
						return &moment{what: fmt.Sprintf("%s Job running, runner started %s before", typ,
							time.Since(cs.State.Running.StartedAt.Time).Round(100*time.Millisecond)), job: c.JobName}, nil
					}
				}
			}
			return nil, nil
		},
	}
}

// recheckInterval is spec.interval in an observeRunning row: the wait
// between the row's first apply and the re-examination its fault hits.
const recheckInterval = "30s"

var (
	// observeRunning is an Observe, which only re-examines a schema a fresh
	// plan already proved at this generation (before that, Resolve is
	// followed by a Plan at once): the row's revision is applied with a
	// short interval, converges, and the fault hits the first re-check.
	observeRunning = phase{
		name:    string(v1alpha1.OperationObserve),
		recheck: true,
		hold: func(f *faultLab) (func(), error) {
			f.spec.interval = recheckInterval
			return nil, nil
		},
		reached: opRunning(v1alpha1.OperationObserve).reached,
	}
	// planRunning is a revision's first plan, which its Resolve's Pod makes
	// right after resolving (a claim marked thenPlan): no Plan Pod of its
	// own runs in a first apply. Its runner resolves and plans in about
	// half a second, less than the kubelet takes to report the container
	// running, so the phase is the claim's Job dispatched with no record
	// yet: the fault lands while the Pod starts or runs.
	planRunning = phase{
		name: "Resolve+Plan",
		reached: func(f *faultLab) (*moment, error) {
			c, err := f.claimOf(func(c *v1alpha1.ActiveOperation) bool {
				return c.Type == v1alpha1.OperationResolve && c.ThenPlan && c.JobUID != ""
			})
			if c == nil || err != nil {
				return nil, err
			}
			if f.recordState(c.JobName) != "no result record yet" {
				return nil, nil // too late: the operation has delivered
			}
			return &moment{what: "Resolve+Plan Job dispatched, " + f.podState(c.JobName), job: c.JobName}, nil
		},
	}
	proofRunning = opRunning(v1alpha1.OperationProof)
)

// podState says where the Job's Pod is.
func (f *faultLab) podState(job string) string {
	pods, err := f.kube.CoreV1().Pods(Namespace).List(f.ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil || len(pods.Items) == 0 {
		return "no Pod yet"
	}
	p := pods.Items[0]
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "runner" && cs.State.Running != nil {
			return "runner running"
		}
	}
	return "Pod " + string(p.Status.Phase)
}

// applyBackend is the Apply's session as PostgreSQL sees it, matching cond.
func (f *faultLab) applyBackend(cond string) (*moment, error) {
	s, err := f.schema()
	if err != nil {
		return nil, err
	}
	c := s.Status.ActiveOperation
	if c == nil || c.Type != v1alpha1.OperationApply {
		return nil, nil
	}
	out, err := f.superErr(fmt.Sprintf("SELECT wait_event_type || '/' || wait_event || ': ' || left(query, 120) FROM pg_stat_activity WHERE usename = '%s' AND state = 'active' AND %s LIMIT 1", appRole, cond))
	if err != nil || strings.TrimSpace(out) == "" {
		return nil, err
	}
	return &moment{what: "Apply statement waiting on " + strings.TrimSpace(out), job: c.JobName}, nil
}

// applyLockWait holds the phase open with a real lock: another session
// holds ACCESS SHARE on customers, so the Apply's ALTER TABLE waits for it.
var applyLockWait = phase{
	name: "Apply (a statement waiting on a lock)",
	hold: func(f *faultLab) (func(), error) {
		return f.holdSession("faults-locker", "BEGIN; LOCK TABLE customers IN ACCESS SHARE MODE",
			"l.granted AND l.relation = 'customers'::regclass")
	},
	reached: func(f *faultLab) (*moment, error) {
		return f.applyBackend("wait_event_type = 'Lock' AND query ILIKE 'ALTER TABLE%customers%'")
	},
}

// applyCommitting holds the Apply in its COMMIT: with a synchronous standby
// named that never connects, the commit is written locally and waits for
// the standby's acknowledgement, the client not yet told.
var applyCommitting = phase{
	name: "Apply (in COMMIT, before the client heard)",
	hold: func(f *faultLab) (func(), error) {
		if _, err := f.superErr("ALTER SYSTEM SET synchronous_standby_names = 'ptah_faults_never'; SELECT pg_reload_conf()"); err != nil {
			return nil, err
		}
		return func() {
			if _, err := f.superErr("ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf()"); err != nil {
				f.t.Logf("release the commit: %v", err)
			}
		}, nil
	},
	reached: func(f *faultLab) (*moment, error) {
		return f.applyBackend("wait_event = 'SyncRep'")
	},
}
