package externalsecret

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Field indexes on ExternalSecrets.
const (
	// IndexStore holds "SecretStore/NS/NAME" or "ClusterSecretStore/NAME"
	// of the store read from and of every store published to, now or in
	// the last status.
	IndexStore = "watchword.store"
	// IndexTemplate holds the names of template ConfigMaps.
	IndexTemplate = "watchword.templateConfigMap"
	// IndexTemplateSecret holds the names of template Secrets.
	IndexTemplateSecret = "watchword.templateSecret"
	// IndexStoreSecret, on stores, holds "NS/NAME" of every credential
	// Secret.
	IndexStoreSecret = "watchword.credentialSecret"
	// IndexMerge holds "true" for ExternalSecrets of creationPolicy Merge
	// and nothing for the others.
	IndexMerge = "watchword.merge"
)

// StoreKey is the IndexStore value of a store.
func StoreKey(kind, ns, name string) string {
	if kind == v1alpha1.ClusterSecretStoreKind {
		return kind + "/" + name
	}
	return v1alpha1.SecretStoreKind + "/" + ns + "/" + name
}

// Options tune the controller.
type Options struct {
	Workers     int
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// SecretChanges receives the changes of Secrets watched by name
	// (credentials and Merge targets).
	SecretChanges <-chan event.GenericEvent
}

// SetupWithManager registers indexes, watches and the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexStore, storeKeys); err != nil {
		return err
	}
	if err := targetindex.Register(ctx, idx, targetindex.Field, nil); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexTemplate, func(o client.Object) []string {
		t := o.(*v1alpha1.ExternalSecret).Spec.Target.Template
		if t == nil {
			return nil
		}
		var out []string
		for _, f := range t.TemplateFrom {
			if f.ConfigMap != nil {
				out = append(out, f.ConfigMap.Name)
			}
		}
		return out
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexTemplateSecret, func(o client.Object) []string {
		return templateSecretNames(o.(*v1alpha1.ExternalSecret))
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexMerge, func(o client.Object) []string {
		if o.(*v1alpha1.ExternalSecret).Spec.Target.CreationPolicy == v1alpha1.CreationPolicyMerge {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := indexStoreSecrets(ctx, mgr, r.Clients.Registry()); err != nil {
		return err
	}
	// Notifications are taken once this instance leads (notify.go); a
	// RunnableFunc runs on the leader only.
	if err := mgr.Add(manager.RunnableFunc(r.notices.lead)); err != nil {
		return err
	}
	c := mgr.GetClient()
	var err error
	if r.statusPut, err = newStatusPut(mgr); err != nil {
		return err
	}
	r.ahead.c = c
	if err := r.ahead.register(ctx, mgr); err != nil {
		return err
	}
	// Every source lets the workers start once the cache is filled, without
	// waiting for its handler to be handed every object again (ahead.go).
	cached := func(obj client.Object, h handler.EventHandler, preds ...predicate.Predicate) source.Source {
		return whenCacheSynced(mgr.GetCache(), obj, source.Kind(mgr.GetCache(), obj, h, preds...))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("externalsecret").
		// ExternalSecrets never synced go first (ahead.go).
		WatchesRawSource(source.Func(r.ahead.start)).
		WatchesRawSource(cached(&v1alpha1.ExternalSecret{}, r.externalSecretEvents())).
		WatchesRawSource(cached(&v1alpha1.SecretStore{}, fanOut(func(ctx context.Context, o client.Object) []reconcile.Request {
			return byIndex(ctx, c, IndexStore, StoreKey(v1alpha1.SecretStoreKind, o.GetNamespace(), o.GetName()), o.GetNamespace())
		}), predicate.GenerationChangedPredicate{})).
		WatchesRawSource(cached(&v1alpha1.ClusterSecretStore{}, fanOut(func(ctx context.Context, o client.Object) []reconcile.Request {
			return byIndex(ctx, c, IndexStore, StoreKey(v1alpha1.ClusterSecretStoreKind, "", o.GetName()), "")
		}), predicate.GenerationChangedPredicate{})).
		// The metadata cache holds only Secrets with Watchword's label: a
		// changed owned target is repaired at once.
		WatchesRawSource(cached(MetadataOf("Secret"), handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				// The targets of the initial list need nothing of their
				// own: their ExternalSecrets are all queued by theirs, and
				// look at their targets then. Looking each up here would
				// hold back a start by one index lookup per target (a start
				// tuning, measured with warmCaches in internal/operator).
				if !e.IsInInitialList {
					r.targetChanged(ctx, e.Object, q, false)
				}
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
					r.targetChanged(ctx, e.ObjectNew, q, false)
				}
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.targetChanged(ctx, e.Object, q, true)
			},
		})).
		// Secrets watched by name: a changed Merge target is repaired at
		// once, and so is the target of a changed template Secret; a
		// changed credential fans out to every user of its stores at low
		// priority.
		WatchesRawSource(source.Channel(opts.SecretChanges, handler.Funcs{
			GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.targetChanged(ctx, e.Object, q, e.Object.GetResourceVersion() == "")
				for _, req := range byIndex(ctx, c, IndexTemplateSecret, e.Object.GetName(), e.Object.GetNamespace()) {
					q.Add(req)
				}
				fanOut(r.usersOfCredential).Generic(ctx, e, q)
			},
		})).
		// ExternalSecrets whose keys were announced changed (notify.go).
		WatchesRawSource(source.Func(r.notices.start)).
		// ConfigMaps, from the metadata cache of every ConfigMap (name,
		// namespace and resourceVersion only, slimTransform): a changed
		// template ConfigMap renders its users again, and a changed or
		// deleted ConfigMap target is repaired at once, as a Secret
		// target is.
		WatchesRawSource(cached(MetadataOf("ConfigMap"), handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if !e.IsInInitialList {
					r.configMapChanged(ctx, c, e.Object, q, false)
				}
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
					r.configMapChanged(ctx, c, e.ObjectNew, q, false)
				}
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.configMapChanged(ctx, c, e.Object, q, true)
			},
		})).
		WatchesRawSource(cached(&corev1.Namespace{}, fanOut(r.usersOfClusterStores), predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, RateLimiter: opts.RateLimiter}).
		Complete(r)
}

// MetadataOf is the metadata-only object of a core kind, as the cache
// holds it.
func MetadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// storeKeys lists the IndexStore values of an ExternalSecret: a change
// of the store it reads from or publishes to queues it.
func storeKeys(o client.Object) []string {
	es := o.(*v1alpha1.ExternalSecret)
	out := []string{readStore(es)}
	add := func(kind, name string) {
		if k := StoreKey(kind, es.Namespace, name); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, d := range destinations(es) {
		ref := publishing.StoreRef(d)
		add(ref.Kind, ref.Name)
	}
	for _, e := range es.Status.PublishedTo {
		add(e.StoreKind, e.StoreName)
	}
	return out
}

// externalSecretEvents handles the changes of ExternalSecrets. Every
// update, even of the status only, lets the controller forget what it no
// longer needs to remember; a change of spec or annotations, the start of a
// deletion and a deletion queue the ExternalSecret. The initial list after
// a start queues every ExternalSecret, at low priority (controller-runtime
// lowers it), since most only need their next refresh scheduled; one that
// was never synced, or whose spec changed since its last sync, is queued
// ahead of them (newFirst, and ahead.go for the moments after a start).
func (r *Reconciler) externalSecretEvents() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: newFirst,
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.forget(e.ObjectNew.(*v1alpha1.ExternalSecret), false)
			if queuedOnUpdate.Update(e) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if es, ok := e.Object.(*v1alpha1.ExternalSecret); ok {
				r.forget(es, true)
			}
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
		},
	}
}

// queuedOnUpdate lets through the updates that queue an ExternalSecret.
var queuedOnUpdate = predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted)

// newFirst queues a created ExternalSecret: at the default priority if
// it is unsynced, at the queue's priority otherwise.
func newFirst(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
	if es, ok := e.Object.(*v1alpha1.ExternalSecret); ok && unsynced(es) {
		queueAt(q, 0, req)
		return
	}
	q.Add(req)
}

// deletionStarted lets through the update that sets deletionTimestamp.
var deletionStarted = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

// indexStoreSecrets indexes both store kinds by the Secrets they reference.
func indexStoreSecrets(ctx context.Context, mgr ctrl.Manager, reg provider.Registry) error {
	idx := mgr.GetFieldIndexer()
	refs := func(s provider.Store) []string {
		var out []string
		declared, _ := reg.Refs(s)
		for _, n := range declared.Secrets {
			out = append(out, n.String())
		}
		return out
	}
	if err := idx.IndexField(ctx, &v1alpha1.SecretStore{}, IndexStoreSecret, func(o client.Object) []string {
		return refs(storeaccess.FromSecretStore(o.(*v1alpha1.SecretStore)).Store)
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1alpha1.ClusterSecretStore{}, IndexStoreSecret, func(o client.Object) []string {
		return refs(storeaccess.FromClusterSecretStore(o.(*v1alpha1.ClusterSecretStore)).Store)
	})
}

// configMapChanged queues the users of a template ConfigMap at low
// priority (fanOut), and the
// ExternalSecrets whose target is the ConfigMap unless the change is the
// echo of this instance's own last write.
func (r *Reconciler) configMapChanged(ctx context.Context, c client.Reader, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], deleted bool) {
	queueAt(q, handler.LowPriority, byIndex(ctx, c, IndexTemplate, o.GetName(), o.GetNamespace())...)
	r.kindChanged(ctx, "ConfigMap", o, q, deleted)
}

// targetChanged queues the ExternalSecrets whose target is the Secret,
// unless the change is the echo of this instance's own last write.
func (r *Reconciler) targetChanged(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], deleted bool) {
	r.kindChanged(ctx, "Secret", o, q, deleted)
}

// kindChanged queues the ExternalSecrets whose target is the object o of
// kind (Secret or ConfigMap), unless the change is the echo of this
// instance's own last write. An ExternalSecret that writes the other kind
// under the same name may be queued too; its reconcile then finds its own
// target unchanged, from the metadata cache alone.
func (r *Reconciler) kindChanged(ctx context.Context, kind string, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], deleted bool) {
	if w, ok := r.ownWrites.Load(ownKeyOf(kind, o.GetNamespace(), o.GetName())); deleted || !ok || w.(ownWrite).resourceVersion != o.GetResourceVersion() {
		keys, _ := targetindex.Keys(ctx, r.Client, targetindex.Field, o.GetNamespace(), o.GetName())
		for _, key := range keys {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
}

// NamedSecrets lists the Secrets to watch by name: every credential of a
// store in the cache, and every target of creationPolicy Merge.
func NamedSecrets(c client.Reader, reg provider.Registry) func(ctx context.Context) (map[provider.NamespacedName]bool, error) {
	return func(ctx context.Context) (map[provider.NamespacedName]bool, error) {
		out, err := storeaccess.CredentialSecrets(ctx, c, reg)
		if err != nil {
			return nil, err
		}
		var list v1alpha1.ExternalSecretList
		if err := c.List(ctx, &list, client.MatchingFields{IndexMerge: "true"}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range list.Items {
			out[provider.NamespacedName{Namespace: list.Items[i].Namespace, Name: targetindex.Name(&list.Items[i])}] = true
		}
		return out, nil
	}
}

// usersOfCredential finds the ExternalSecrets of every store that uses the
// Secret o as a credential: a rotated credential reaches them at once.
func (r *Reconciler) usersOfCredential(ctx context.Context, o client.Object) []reconcile.Request {
	stores, err := storeaccess.ListStores(ctx, r.Client, client.MatchingFields{IndexStoreSecret: o.GetNamespace() + "/" + o.GetName()})
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, s := range stores {
		out = append(out, byIndex(ctx, r.Client, IndexStore, StoreKey(s.Store.Kind, s.Store.Namespace, s.Store.Name), s.Store.Namespace)...)
	}
	return out
}

// usersOfClusterStores finds the ExternalSecrets of a namespace that use a
// ClusterSecretStore: a namespace's labels decide whether they may.
func (r *Reconciler) usersOfClusterStores(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ExternalSecretList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, es := range list.Items {
		if es.Spec.SecretStoreRef.Kind == v1alpha1.ClusterSecretStoreKind {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&es)})
		}
	}
	return out
}

func byIndex(ctx context.Context, c client.Reader, field, value, ns string) []reconcile.Request {
	var list v1alpha1.ExternalSecretList
	// The list is read for names only: no deep copies.
	opts := []client.ListOption{client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i, es := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&es)}
	}
	return out
}
