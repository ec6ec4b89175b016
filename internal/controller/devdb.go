package controller

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"ptah.run/operator/internal/runner"
	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
	"ptah.run/operator/operator/devdb"
)

// DefaultDevDatabaseImage is the dev database sidecar's image when the
// manager's --dev-database-image names none.
const DefaultDevDatabaseImage = "ptah-dev-database:15"

// Pod layout of the dev database sidecar: its socket is in an emptyDir it
// shares with the runner and nothing else; its data in one of its own. It
// has no TCP listener.
const (
	devContainer    = "dev-database"
	devSocketVolume = "dev-socket"
	devDataVolume   = "dev-data"
	devSocketDir    = "/run/ptah-dev"
	devDataDir      = "/var/lib/ptah-dev"
	// devReadySeconds is how long the sidecar's server has to accept
	// connections before its hook fails and the kubelet restarts it.
	devReadySeconds = 120
)

// devDataLimit bounds the sidecar's in-memory data directory; a Pod whose
// dev database grows past it is evicted, and its operation fails.
var devDataLimit = resource.MustParse("1Gi")

// loadsDesired says whether operation t loads desired SQL, so needs a dev
// database: Apply executes a plan and needs none.
func loadsDesired(t v1alpha1.OperationType) bool {
	switch t {
	case v1alpha1.OperationObserve, v1alpha1.OperationPlan, v1alpha1.OperationProof:
		return true
	}
	return false
}

// withDevDatabase gives j the dev database of claim c: the URL the owner's
// Secret holds, or else a throwaway PostgreSQL as a native sidecar (an init
// container that keeps running) which the runner starts after, once it
// accepts connections.
func (r *SchemaReconciler) withDevDatabase(j *batchv1.Job, s *v1alpha1.PtahSchema, c *v1alpha1.ActiveOperation) {
	if !loadsDesired(c.Type) && !c.ThenPlan {
		return
	}
	pod := &j.Spec.Template.Spec
	run := &pod.Containers[0]
	dev := s.Spec.Execution.DevDatabase
	if dev != nil && dev.URLFrom != nil {
		run.Env = append(run.Env, corev1.EnvVar{Name: runner.EnvDevURL, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: dev.URLFrom.Name}, Key: dev.URLFrom.Key,
		}}})
		return
	}
	image := r.DevDatabaseImage
	if image == "" {
		image = DefaultDevDatabaseImage
	}
	if dev != nil && dev.Image != "" {
		image = dev.Image
	}
	run.Env = append(run.Env, corev1.EnvVar{Name: runner.EnvDevURL, Value: devdb.SocketURL(devSocketDir)})
	run.VolumeMounts = append(run.VolumeMounts, corev1.VolumeMount{Name: devSocketVolume, MountPath: devSocketDir})
	sidecar := corev1.Container{
		Name:            devContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		Command:         []string{"/bin/sh", "-c", devdb.Script, "ptah-dev-database"},
		Env: []corev1.EnvVar{
			{Name: "PGDATA", Value: devDataDir + "/data"},
			{Name: "PTAH_DEV_SOCKET_DIR", Value: devSocketDir},
		},
		SecurityContext: run.SecurityContext.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: devSocketVolume, MountPath: devSocketDir},
			{Name: devDataVolume, MountPath: devDataDir},
		},
		// The kubelet starts the runner once this hook returns: the same
		// gate as a startup probe, polled ten times as often (a probe's
		// period is a second at least, and cost each dev database Pod about
		// one). A hook that fails has the sidecar restarted, as a probe's
		// last failure would.
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/sh", "-c", devdb.Ready, "ptah-dev-ready", devSocketDir, strconv.Itoa(devReadySeconds)},
		}}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if dev != nil && dev.Resources != nil {
		sidecar.Resources = *dev.Resources
	}
	pod.InitContainers = append(pod.InitContainers, sidecar)
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: devSocketVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		// In memory: the start copies the template cluster (about 40 MiB)
		// here, which took 0.45-0.8 s on a disk-backed emptyDir of the lab's
		// node and 75-100 ms in memory; the server runs with fsync off, and
		// nothing in it outlives the Pod.
		corev1.Volume{Name: devDataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(devDataLimit),
		}}})
}
