package operator

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// A namespaced operator (Options.Namespaces, `--namespace`) lists and
// watches only in its namespaces, so that Roles are enough for it. Two
// kinds it would otherwise watch are cluster-scoped and would need a
// ClusterRole: ClusterSecretStores, and Namespaces (whose labels decide
// which namespaces a ClusterSecretStore serves). Neither is served in this
// mode. Rather than teach every controller the mode, the manager's cache
// (which every controller's watches, indexes and cached reads go through)
// answers for those kinds itself and never reaches the API server:
//   - a watch of them never delivers an event, and counts as synced;
//   - an index on them is never built;
//   - a list of them is empty;
//   - a get of a ClusterSecretStore fails with InvalidStoreRef, a terminal
//     condition that says why, on the ExternalSecret or PushSecret that
//     names one; a get of a Namespace fails likewise.
//
// The ClusterSecretStore controller is not started at all.

// unservedKinds are the cluster-scoped kinds a namespaced operator does not
// serve.
var unservedKinds = map[schema.GroupKind]bool{
	v1alpha1.GroupVersion.WithKind(v1alpha1.ClusterSecretStoreKind).GroupKind(): true,
	{Group: "", Kind: "Namespace"}:                                              true,
}

// namespacedCache is the manager's cache of a namespaced operator.
type namespacedCache struct {
	cache.Cache
	scheme     *runtime.Scheme
	namespaces []string
}

// newNamespacedCache makes the manager's cache of an operator restricted to
// namespaces (at least one).
func newNamespacedCache(namespaces []string) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
		inner, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &namespacedCache{Cache: inner, scheme: opts.Scheme, namespaces: namespaces}, nil
	}
}

// unserved tells whether obj (an object or a list) is of a kind this cache
// does not serve.
func (c *namespacedCache) unserved(obj runtime.Object) (schema.GroupVersionKind, bool) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return gvk, false
	}
	gk := gvk.GroupKind()
	gk.Kind = strings.TrimSuffix(gk.Kind, "List")
	return gvk, unservedKinds[gk]
}

// notServed is the error of a get of an unserved kind.
func (c *namespacedCache) notServed(kind, name string) error {
	return failure.Terminalf(failure.InvalidStoreRef,
		"%s %q is not served: this controller runs namespaced (--namespace %s) and serves only SecretStores of those namespaces; use a SecretStore",
		kind, name, strings.Join(c.namespaces, ","))
}

func (c *namespacedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if gvk, ok := c.unserved(obj); ok {
		return c.notServed(gvk.Kind, key.Name)
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *namespacedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := c.unserved(list); ok {
		return nil // the list stays empty
	}
	return c.Cache.List(ctx, list, opts...)
}

func (c *namespacedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if _, ok := c.unserved(obj); ok {
		return silentInformer{}, nil
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *namespacedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gk := gvk.GroupKind()
	gk.Kind = strings.TrimSuffix(gk.Kind, "List")
	if unservedKinds[gk] {
		return silentInformer{}, nil
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c *namespacedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if _, ok := c.unserved(obj); ok {
		return nil
	}
	return c.Cache.RemoveInformer(ctx, obj)
}

func (c *namespacedCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, ok := c.unserved(obj); ok {
		return nil
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// silentInformer is the informer of an unserved kind: synced, and never
// an event.
type silentInformer struct{}

type syncedRegistration struct{}

func (syncedRegistration) HasSynced() bool { return true }

func (silentInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return syncedRegistration{}, nil
}

func (silentInformer) AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandler, time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return syncedRegistration{}, nil
}

func (silentInformer) AddEventHandlerWithOptions(toolscache.ResourceEventHandler, toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return syncedRegistration{}, nil
}

func (silentInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return nil
}
func (silentInformer) AddIndexers(toolscache.Indexers) error { return nil }
func (silentInformer) HasSynced() bool                       { return true }
func (silentInformer) IsStopped() bool                       { return false }
