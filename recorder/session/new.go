package session

import (
	"fmt"
	"io"

	"k8s.io/client-go/tools/clientcmd"

	"ptah.run/operator/recorder/envnames"
	"ptah.run/operator/recorder/execute"
	"ptah.run/operator/recorder/observe"
)

// New returns a Runner whose commands run in dir with exactly the
// environment envnames builds from lookup, against the cluster and
// namespace that lookup's KUBECONFIG and NAMESPACE name. The recorder and
// the acceptance repetition differ only in what they pass here.
func New(dir string, lookup func(string) (string, bool), progress io.Writer) (*Runner, error) {
	kubeconfig, _ := lookup("KUBECONFIG")
	if kubeconfig == "" {
		return nil, fmt.Errorf("KUBECONFIG is not set: it names the cluster the commands run against")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read KUBECONFIG %s: %w", kubeconfig, err)
	}
	namespace, _ := lookup("NAMESPACE")
	obs, err := observe.New(cfg, namespace)
	if err != nil {
		return nil, err
	}
	return &Runner{
		Shell:    execute.Shell{Dir: dir, Env: envnames.Environ(lookup), Timeout: DefaultCommand},
		Observer: obs,
		Config:   cfg,
		Progress: progress,
	}, nil
}
