package jobsim

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createPod creates the Job's Pod as the Job controller does, recording a
// FailedCreate Warning on the Job for each refusal and trying again until
// ctx ends.
func (k *Kubelet) createPod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	labels := map[string]string{}
	for key, v := range job.Spec.Template.Labels {
		labels[key] = v
	}
	labels["batch.kubernetes.io/job-name"], labels["job-name"] = job.Name, job.Name
	labels[controllerUID], labels["controller-uid"] = string(job.UID), string(job.UID)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-", Namespace: job.Namespace,
			Labels: labels, Annotations: job.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	for delay := k.opts.RetryInterval; ; delay = min(2*delay, 10*time.Second) {
		created, err := k.cs.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := "Error creating: " + err.Error()
		k.update(job, func(r *Run) { r.Refusals = append(r.Refusals, err.Error()) })
		k.event(ctx, job, "FailedCreate", msg)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

func (k *Kubelet) event(ctx context.Context, job *batchv1.Job, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: job.Name + ".", Namespace: job.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Name: job.Name,
			Namespace: job.Namespace, UID: job.UID, ResourceVersion: job.ResourceVersion},
		Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "job-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	_, _ = k.cs.CoreV1().Events(job.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

// prepare does what the kubelet does before a container starts: it mounts
// the Pod's projected volumes under a fresh root directory and builds the
// container's environment. Like the kubelet it keeps trying while a Secret,
// ConfigMap or ServiceAccount is missing, with the Pod Pending.
func (k *Kubelet) prepare(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) (root string, env []string, err error) {
	if n := len(pod.Spec.Containers); n != 1 {
		return "", nil, fmt.Errorf("jobsim runs Pods of one container; %s has %d", pod.Name, n)
	}
	for _, c := range pod.Spec.InitContainers {
		if !isSidecar(c) {
			return "", nil, fmt.Errorf("jobsim runs native sidecars (restartPolicy: Always) only; init container %s of %s is none", c.Name, pod.Name)
		}
	}
	root, err = os.MkdirTemp("", "jobsim-pod-")
	if err != nil {
		return "", nil, err
	}
	// A sidecar may run as another user (see sidecar.go): it must reach its volumes.
	if err := os.Chmod(root, 0o755); err != nil {
		return "", nil, err
	}
	for delay := k.opts.RetryInterval; ; delay = min(2*delay, 10*time.Second) {
		reason, perr := k.mountVolumes(ctx, pod, root)
		if perr == nil {
			reason = "CreateContainerConfigError"
			env, perr = k.environment(ctx, pod)
		}
		if perr == nil {
			return root, env, nil
		}
		k.update(job, func(r *Run) { r.Log += fmt.Sprintf("jobsim: %s: %v\n", reason, perr) })
		k.podWaiting(ctx, pod, reason, perr.Error())
		select {
		case <-ctx.Done():
			os.RemoveAll(root)
			return "", nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// mountVolumes writes the service account tokens and ConfigMap keys of the
// Pod's projected volumes; an emptyDir is a directory anyone may write, as
// the kubelet makes it. Each volume is one directory, under root/volumes,
// and each container's mount of it a symbolic link at root/MOUNTPATH.
func (k *Kubelet) mountVolumes(ctx context.Context, pod *corev1.Pod, root string) (string, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	made := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				return "FailedMount", fmt.Errorf("volume %q is not in the Pod", m.Name)
			}
			dir := volumeDir(root, m.Name)
			if !made[m.Name] {
				if err := k.fillVolume(ctx, pod, v, dir); err != nil {
					return "FailedMount", err
				}
				made[m.Name] = true
			}
			link := filepath.Join(root, m.MountPath)
			if _, err := os.Lstat(link); err == nil {
				continue // the same path, mounted by another container
			}
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				return "FailedMount", err
			}
			if err := os.Symlink(dir, link); err != nil {
				return "FailedMount", err
			}
		}
	}
	return "", nil
}

// fillVolume makes the directory of volume v and writes a projected one's files.
func (k *Kubelet) fillVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if v.EmptyDir != nil {
		return os.Chmod(dir, 0o1777)
	}
	if v.Projected == nil {
		return nil
	}
	for _, src := range v.Projected.Sources {
		switch {
		case src.ServiceAccountToken != nil:
			token, err := k.token(ctx, pod, src.ServiceAccountToken)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, src.ServiceAccountToken.Path), []byte(token), 0o600); err != nil {
				return err
			}
		case src.ConfigMap != nil:
			cm, err := k.configMap(ctx, pod.Namespace, src.ConfigMap.Name)
			if err != nil {
				return err
			}
			for _, item := range src.ConfigMap.Items {
				data, ok := cm.Data[item.Key]
				if !ok {
					return fmt.Errorf("configmap %q has no key %q", cm.Name, item.Key)
				}
				if err := os.WriteFile(filepath.Join(dir, item.Path), []byte(data), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// token asks the TokenRequest API for the Pod's service account, with the
// projected source's audience, bound to the Pod, as the kubelet does.
func (k *Kubelet) token(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	got, err := k.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return got.Status.Token, nil
}

// configMap reads a ConfigMap; kube-root-ca.crt is published first when
// missing, as kube-controller-manager's root CA publisher would have.
func (k *Kubelet) configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := k.cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && name == "kube-root-ca.crt" {
		ca, rerr := caData(k.admin.CAData, k.admin.CAFile)
		if rerr != nil {
			return nil, rerr
		}
		cm, err = k.cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Data:       map[string]string{"ca.crt": string(ca)},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cm, err = k.cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

func caData(data []byte, file string) ([]byte, error) {
	if len(data) > 0 {
		return data, nil
	}
	return os.ReadFile(file)
}

// environment is the container's environment as the kubelet builds it: the
// image's PATH, HOSTNAME, the API server's service variables, then env and
// envFrom with Secret and ConfigMap keys read with the admin credential.
func (k *Kubelet) environment(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	return k.containerEnv(ctx, pod, pod.Spec.Containers[0])
}

// containerEnv is container c's environment, as environment describes it.
func (k *Kubelet) containerEnv(ctx context.Context, pod *corev1.Pod, c corev1.Container) ([]string, error) {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/home/nonroot",
		"HOSTNAME=" + pod.Name,
		"KUBERNETES_SERVICE_HOST=" + k.host,
		"KUBERNETES_SERVICE_PORT=" + k.port,
		"KUBERNETES_SERVICE_PORT_HTTPS=" + k.port,
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.SecretRef != nil:
			s, err := k.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional)) {
				return nil, fmt.Errorf("secret %q: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			if s != nil {
				for key, v := range s.Data {
					data[key] = string(v)
				}
			}
		case from.ConfigMapRef != nil:
			cm, err := k.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional)) {
				return nil, fmt.Errorf("configmap %q: %w", from.ConfigMapRef.Name, err)
			}
			if cm != nil {
				data = cm.Data
			}
		}
		for key, v := range data {
			env = append(env, from.Prefix+key+"="+v)
		}
	}
	for _, e := range c.Env {
		v, ok, err := k.value(ctx, pod, e)
		if err != nil {
			return nil, err
		}
		if ok {
			env = append(env, e.Name+"="+v)
		}
	}
	return env, nil
}

func (k *Kubelet) value(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar) (string, bool, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return e.Value, true, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := k.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q not found", ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := k.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configmap %q not found", ref.Name)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, true, nil
	case src.FieldRef != nil:
		switch src.FieldRef.FieldPath {
		case "metadata.name":
			return pod.Name, true, nil
		case "metadata.namespace":
			return pod.Namespace, true, nil
		case "metadata.uid":
			return string(pod.UID), true, nil
		case "spec.serviceAccountName":
			return pod.Spec.ServiceAccountName, true, nil
		}
		return "", false, fmt.Errorf("jobsim does not resolve fieldRef %s of %s", src.FieldRef.FieldPath, e.Name)
	}
	return "", false, fmt.Errorf("jobsim does not resolve the valueFrom of %s", e.Name)
}

func isTrue(b *bool) bool { return b != nil && *b }

// podWaiting records a container that cannot start yet, as the kubelet does.
func (k *Kubelet) podWaiting(ctx context.Context, pod *corev1.Pod, reason, msg string) {
	k.setPodStatus(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	})
}

// podPhase records the container running, or terminated when term is set.
func (k *Kubelet) podPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, term *corev1.ContainerStateTerminated) {
	k.setPodStatus(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase = phase
		now := metav1.Now()
		if s.StartTime == nil {
			s.StartTime = &now
		}
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		if term != nil {
			state = corev1.ContainerState{Terminated: term}
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, State: state, Started: ptr(term == nil)}}
	})
}

func (k *Kubelet) setPodStatus(ctx context.Context, pod *corev1.Pod, f func(*corev1.PodStatus)) {
	for {
		live, err := k.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		f(&live.Status)
		if _, err = k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, live, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return
		}
	}
}

func hostPort(server string) (string, string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", "", fmt.Errorf("API server address %q: %w", server, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return u.Host, "443", nil
	}
	return host, port, nil
}

// BuildPtah builds cmd/ptah of this module into a temporary directory and
// returns the binary's path. moduleRoot is the repository's top directory.
func BuildPtah(t testing.TB, moduleRoot string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ptah")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ptah")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("jobsim: go build ./cmd/ptah: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return bin
}
