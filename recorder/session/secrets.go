package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ptah.run/operator/recorder/credential"
)

// AddSecrets adds every value of every Secret the account can list, in
// every namespace and of every type (service-account and bootstrap tokens
// included), with the parts each value carries, to set; the Secrets named
// in placeholders (namespace/name) hold no credential and are left out. A
// value they share with another Secret or the lab's files is still known
// from there. It returns the list's resource version, from which
// WatchSecrets misses nothing.
//
// A Secret that is a placeholder copied into another namespace (a scenario
// running beside this one has the lab's placeholder Secret in a namespace
// of its own, its URL naming its own host and database) is left out too:
// see copiedPlaceholder.
func AddSecrets(ctx context.Context, cfg *rest.Config, placeholders []string, set *credential.Set) (*Listing, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("read Secrets: %w", err)
	}
	list, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, refusal("list", err)
	}
	var own []*corev1.Secret
	for i := range list.Items {
		if s := &list.Items[i]; slices.Contains(placeholders, s.Namespace+"/"+s.Name) {
			own = append(own, s)
		}
	}
	for i := range list.Items {
		if s := &list.Items[i]; !copiedPlaceholder(s, own) {
			addSecret(s, placeholders, set)
		}
	}
	return &Listing{Version: list.ResourceVersion, placeholders: own}, nil
}

// Listing is what a list of the cluster's Secrets leaves a watch: the
// version to watch from and the placeholders as they were.
type Listing struct {
	Version      string
	placeholders []*corev1.Secret
}

// refusal is the error for a Secret read the account is not allowed, or
// that failed: a value the recorder does not know it cannot keep back.
func refusal(verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("refused: the recording account may not %s Secrets at cluster scope (it needs list and watch on secrets in all namespaces, a ClusterRole bound by a ClusterRoleBinding), so the recorder cannot keep their values out of the recording: %w; nothing was written", verb, err)
	}
	return fmt.Errorf("refused: cannot %s the Secrets of the cluster, so cannot keep their values out of the recording: %w; nothing was written", verb, err)
}

// copiedPlaceholder reports whether s is one of the placeholders as the
// lab puts it in a scenario's namespace, named for the placeholder's with a
// tag after it (ptah-demo-3f9c1a for ptah-demo): the same name and keys, and
// each value the placeholder's once s's namespace reads as the
// placeholder's and the tag the lab adds elsewhere (a database named
// storefront_3f9c1a) is taken out. Anything else in a value (another
// password, a token in a query string) makes it no copy, so a value a step
// hides in a look-alike is still learned.
func copiedPlaceholder(s *corev1.Secret, placeholders []*corev1.Secret) bool {
	for _, p := range placeholders {
		tag, ok := strings.CutPrefix(s.Namespace, p.Namespace+"-")
		if p.Name != s.Name || !ok || tag == "" || len(p.Data) != len(s.Data) {
			continue
		}
		same := true
		for k, v := range p.Data {
			w, ok := s.Data[k]
			if !ok {
				same = false
				break
			}
			w = bytes.ReplaceAll(w, []byte(s.Namespace), []byte(p.Namespace))
			for _, sep := range []string{"-", "_"} {
				w = bytes.ReplaceAll(w, []byte(sep+tag), nil)
			}
			same = same && bytes.Equal(v, w)
		}
		if same {
			return true
		}
	}
	return false
}

func addSecret(s *corev1.Secret, placeholders []string, set *credential.Set) {
	if slices.Contains(placeholders, s.Namespace+"/"+s.Name) {
		return
	}
	for key, v := range s.Data {
		// A bootstrap token's id is the suffix of its Secret's name,
		// public by design; the token is id.secret.
		if s.Type == corev1.SecretTypeBootstrapToken && key == "token-id" {
			if sec, ok := s.Data["token-secret"]; ok {
				set.Add(append(append(append([]byte(nil), v...), '.'), sec...), fmt.Sprintf("the bootstrap token of Secret %s/%s", s.Namespace, s.Name))
			}
			continue
		}
		set.AddValue(v, fmt.Sprintf("the value of Secret %s/%s key %s", s.Namespace, s.Name, key))
	}
}

// settle is how long Stop keeps reading a watch after its last event: the
// events of what a step did just before it ended may still be on their way.
const settle = 300 * time.Millisecond

// SecretWatch is a watch of every Secret in the cluster, from a resource
// version on, collecting what each event carries.
type SecretWatch struct {
	w            watch.Interface
	placeholders []string
	own          []*corev1.Secret // the placeholders as the list read them
	done         chan struct{}
	mu           sync.Mutex
	seen         []*corev1.Secret
	stopped      bool
	err          error
}

// WatchSecrets starts watching every Secret in the cluster from version
// (AddSecrets's), so a Secret that is created and deleted between two lists
// is still seen.
func WatchSecrets(ctx context.Context, cfg *rest.Config, from *Listing, placeholders []string) (*SecretWatch, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("watch Secrets: %w", err)
	}
	w, err := cs.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{ResourceVersion: from.Version})
	if err != nil {
		return nil, refusal("watch", err)
	}
	sw := &SecretWatch{w: w, placeholders: placeholders, own: from.placeholders, done: make(chan struct{})}
	go sw.read()
	return sw, nil
}

func (sw *SecretWatch) read() {
	defer close(sw.done)
	defer func() {
		sw.mu.Lock()
		defer sw.mu.Unlock()
		// The server ends a watch after a while: what happened after
		// that is unknown.
		if !sw.stopped && sw.err == nil {
			sw.err = fmt.Errorf("refused: the watch of the cluster's Secrets ended before the step did, so a value that existed during the step may be unknown; nothing was written")
		}
	}()
	for ev := range sw.w.ResultChan() {
		sw.mu.Lock()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if s, ok := ev.Object.(*corev1.Secret); ok {
				sw.seen = append(sw.seen, s)
			}
		case watch.Error:
			// An expired version or a dropped watch: what happened since
			// is unknown, so the step's values are not all known. Stopping
			// the watch closes its stream, which is reported as an error
			// too.
			if sw.err == nil && !sw.stopped {
				sw.err = refusal("watch", apierrors.FromObject(ev.Object))
			}
		}
		sw.mu.Unlock()
	}
}

// Stop ends the watch once it has been quiet for a moment and adds every
// value it saw to set. A watch that failed is an error.
func (sw *SecretWatch) Stop(set *credential.Set) error {
	for n := -1; ; {
		sw.mu.Lock()
		seen := len(sw.seen)
		sw.mu.Unlock()
		if seen == n {
			break
		}
		n = seen
		select {
		case <-sw.done:
		case <-time.After(settle):
		}
	}
	sw.mu.Lock()
	sw.stopped = true
	sw.mu.Unlock()
	sw.w.Stop()
	<-sw.done
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, s := range sw.seen {
		if !copiedPlaceholder(s, sw.own) {
			addSecret(s, sw.placeholders, set)
		}
	}
	return sw.err
}
