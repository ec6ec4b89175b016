// Package observe reads live objects for the recorder: kinds resolve through
// API discovery the way kubectl resolves them, and waiting is a watch that
// returns on the first matching state. A server that does not answer is an
// error, never an absent object.
package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Target names one object as a scenario writes it.
type Target struct {
	Kind      string
	Name      string
	Namespace string
}

// Object is one read of a target. JSON is nil when the object is absent.
type Object struct {
	Target Target
	// Resource is the resolved resource, e.g. "widgets.test.ptah.run".
	Resource string
	JSON     []byte
	// Unstructured is the same object decoded; nil when absent.
	Unstructured *unstructured.Unstructured
}

// Absent reports whether the read found no object.
func (o Object) Absent() bool { return o.JSON == nil }

// ErrTimeout is returned (wrapped) when an await's deadline passes first.
var ErrTimeout = errors.New("timed out")

// Observer reads and watches objects of any kind the server serves.
type Observer struct {
	dyn      dynamic.Interface
	mapper   meta.RESTMapper
	deferred *restmapper.DeferredDiscoveryRESTMapper
	// Namespace is used for namespaced kinds whose target names none.
	Namespace string
}

// New connects to the API server in cfg.
func New(cfg *rest.Config, namespace string) (*Observer, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("observe: discovery client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("observe: dynamic client for %s: %w", cfg.Host, err)
	}
	cached := memory.NewMemCacheClient(dc)
	deferred := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	mapper := restmapper.NewShortcutExpander(deferred, cached, nil)
	return &Observer{dyn: dyn, mapper: mapper, deferred: deferred, Namespace: namespace}, nil
}

// Mapping resolves a kind as kubectl does: resource (plural, singular or
// short name, optionally .group or .version.group) first, then kind. An
// unknown kind is an error naming it.
func (o *Observer) Mapping(kind string) (*meta.RESTMapping, error) {
	m, err := o.mapping(kind)
	// A scenario may install a CRD after discovery was cached, and the API
	// server serves a new kind in discovery a moment after the CRD reads
	// Established: look again, for a few seconds, before calling the kind
	// unknown.
	for wait := 50 * time.Millisecond; err != nil && errors.Is(err, errNoKind) && wait <= 2*time.Second; wait *= 2 {
		time.Sleep(wait)
		o.deferred.Reset()
		m, err = o.mapping(kind)
	}
	return m, err
}

var errNoKind = errors.New("no such resource type")

func (o *Observer) mapping(kind string) (*meta.RESTMapping, error) {
	arg := strings.ToLower(kind)
	gvr, gr := schema.ParseResourceArg(arg)
	var gvk schema.GroupVersionKind
	var lastErr error
	if gvr != nil {
		gvk, lastErr = o.mapper.KindFor(*gvr)
	}
	if gvk.Empty() {
		gvk, lastErr = o.mapper.KindFor(gr.WithVersion(""))
	}
	if !gvk.Empty() {
		return o.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if lastErr != nil && !meta.IsNoMatchError(lastErr) {
		return nil, fmt.Errorf("observe: resolve kind %q: %w", kind, lastErr)
	}
	fullGVK, gk := schema.ParseKindArg(kind)
	if fullGVK != nil {
		if m, err := o.mapper.RESTMapping(fullGVK.GroupKind(), fullGVK.Version); err == nil {
			return m, nil
		}
	}
	m, err := o.mapper.RESTMapping(gk)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("observe: the server has no resource type %q: check the kind's spelling and that its CRD is installed: %w", kind, errNoKind)
		}
		return nil, fmt.Errorf("observe: resolve kind %q: %w", kind, err)
	}
	return m, nil
}

func (o *Observer) resource(t Target) (dynamic.ResourceInterface, string, error) {
	m, err := o.Mapping(t.Kind)
	if err != nil {
		return nil, "", err
	}
	name := m.Resource.Resource
	if m.Resource.Group != "" {
		name += "." + m.Resource.Group
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return o.dyn.Resource(m.Resource), name, nil
	}
	ns := t.Namespace
	if ns == "" {
		ns = o.Namespace
	}
	if ns == "" {
		return nil, "", fmt.Errorf("observe: %s/%s is namespaced and neither the step nor the lab names a namespace", t.Kind, t.Name)
	}
	return o.dyn.Resource(m.Resource).Namespace(ns), name, nil
}

// Read gets the object once. Not found is an absent Object; any other
// failure (including a server that does not answer) is an error.
func (o *Observer) Read(ctx context.Context, t Target) (Object, error) {
	ri, res, err := o.resource(t)
	if err != nil {
		return Object{}, err
	}
	return read(ctx, ri, t, res)
}

func read(ctx context.Context, ri dynamic.ResourceInterface, t Target, res string) (Object, error) {
	u, err := ri.Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Object{Target: t, Resource: res}, nil
	}
	if err != nil {
		return Object{}, fmt.Errorf("observe: get %s/%s: %w", res, t.Name, err)
	}
	return objectOf(t, res, u)
}

func objectOf(t Target, res string, u *unstructured.Unstructured) (Object, error) {
	raw, err := u.MarshalJSON()
	if err != nil {
		return Object{}, fmt.Errorf("observe: encode %s/%s: %w", res, t.Name, err)
	}
	return Object{Target: t, Resource: res, JSON: raw, Unstructured: u}, nil
}

// Await watches the target until holds reports true for its state (an
// absent object included) and returns that state. When timeout passes first
// it returns a fresh read of the object and an error wrapping ErrTimeout, so
// the caller can say what the object looked like instead.
func (o *Observer) Await(ctx context.Context, t Target, timeout time.Duration, holds func(Object) bool) (Object, error) {
	ri, res, err := o.resource(t)
	if err != nil {
		return Object{}, err
	}
	// One direct read first: it answers at once when the state already
	// holds, and it fails loudly when the server does not answer.
	first, err := read(ctx, ri, t, res)
	if err != nil {
		return Object{}, err
	}
	if holds(first) {
		return first, nil
	}

	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	selector := fields.OneTermEqualSelector("metadata.name", t.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return ri.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return ri.Watch(ctx, opts)
		},
	}
	var found Object
	match := func(obj any) (bool, error) {
		cur := Object{Target: t, Resource: res}
		if u, ok := obj.(*unstructured.Unstructured); ok && u != nil {
			var err error
			if cur, err = objectOf(t, res, u); err != nil {
				return false, err
			}
		}
		if holds(cur) {
			found = cur
			return true, nil
		}
		return false, nil
	}
	_, err = watchtools.UntilWithSync(wctx, lw, &unstructured.Unstructured{},
		func(store cache.Store) (bool, error) {
			items := store.List()
			if len(items) == 0 {
				return match(nil)
			}
			return match(items[0])
		},
		func(ev watch.Event) (bool, error) {
			switch ev.Type {
			case watch.Deleted:
				return match(nil)
			case watch.Added, watch.Modified:
				return match(ev.Object)
			}
			return false, nil
		})
	if err == nil {
		return found, nil
	}
	if ctx.Err() != nil {
		return Object{}, fmt.Errorf("observe: await %s/%s: %w", res, t.Name, ctx.Err())
	}
	// Whatever the watch saw, the answer given is a fresh read: a server
	// that stopped answering is reported as such, not as a timeout.
	last, rerr := read(ctx, ri, t, res)
	if rerr != nil {
		return Object{}, rerr
	}
	if holds(last) {
		return last, nil
	}
	return last, fmt.Errorf("observe: await %s/%s for %s: %w", res, t.Name, timeout, ErrTimeout)
}
