package session

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ptah.run/operator/recorder/credential"
)

// AddSecrets adds every value of every Secret in the namespaces, with the
// parts each value carries, to set; the Secrets named in placeholders
// (namespace/name) hold no credential and are left out. A value they share
// with another Secret or the lab's files is still known from there.
func AddSecrets(ctx context.Context, cfg *rest.Config, namespaces, placeholders []string, set *credential.Set) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("read Secrets: %w", err)
	}
	for _, ns := range namespaces {
		list, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("refused: cannot list the Secrets of namespace %s, so cannot keep their values out of the recording: %w; nothing was written", ns, err)
		}
		for _, s := range list.Items {
			if slices.Contains(placeholders, ns+"/"+s.Name) {
				continue
			}
			for key, v := range s.Data {
				set.AddValue(v, fmt.Sprintf("the value of Secret %s/%s key %s", ns, s.Name, key))
			}
		}
	}
	return nil
}
