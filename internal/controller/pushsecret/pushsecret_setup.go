package pushsecret

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/secretwatch"
)

// Field indexes on PushSecrets.
const (
	// IndexSource holds the name of the source Secret, or selectedSource
	// for a PushSecret with secretSelector.
	IndexSource = "watchword.push.source"
	// IndexStore holds every store a destination, or a destination's last
	// status, names (storeKey).
	IndexStore = "watchword.push.store"
)

// selectedSource is the IndexSource value of every PushSecret with
// secretSelector: no Secret has this name, and a change of any watched
// Secret of its namespace queues it (the PushSecrets of a namespace that
// select by label are few; a Secret that stops matching can no longer
// be told apart by its labels).
const selectedSource = "*"

// Options tune the controller.
type Options struct {
	Workers     int
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// SourceChanges receives the changes of the source Secrets, watched
	// by name.
	SourceChanges <-chan event.GenericEvent
}

// SetupWithManager registers the indexes, the watches and the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.PushSecret{}, IndexSource, func(o client.Object) []string {
		ps := o.(*v1alpha1.PushSecret)
		if ps.Spec.SecretSelector != nil {
			return []string{selectedSource}
		}
		return []string{ps.Spec.SecretName}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.PushSecret{}, IndexStore, storeNames); err != nil {
		return err
	}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("pushsecret").
		For(&v1alpha1.PushSecret{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		Watches(&v1alpha1.SecretStore{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return byIndex(ctx, c, IndexStore, o.GetName(), o.GetNamespace())
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterSecretStore{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return byIndex(ctx, c, IndexStore, storeKey(v1alpha1.ClusterSecretStoreKind, o.GetName()), "")
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(opts.SourceChanges, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return append(byIndex(ctx, c, IndexSource, o.GetName(), o.GetNamespace()), byIndex(ctx, c, IndexSource, selectedSource, o.GetNamespace())...)
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, RateLimiter: opts.RateLimiter}).
		Complete(r)
}

// storeKey is the index value of a store: a SecretStore's name, or
// "ClusterSecretStore/<name>".
func storeKey(kind, name string) string {
	if kind == v1alpha1.ClusterSecretStoreKind {
		return kind + "/" + name
	}
	return name
}

// storeNames lists the stores a PushSecret names, now or in its last
// status, as index values (storeKey).
func storeNames(o client.Object) []string {
	ps := o.(*v1alpha1.PushSecret)
	seen := map[string]bool{}
	var out []string
	add := func(kind, name string) {
		key := storeKey(kind, name)
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	for _, d := range ps.Spec.Destinations {
		ref := publishing.StoreRef(d)
		add(ref.Kind, ref.Name)
	}
	for _, e := range ps.Status.Destinations {
		add(e.StoreKind, e.StoreName)
	}
	return out
}

// deletionStarted lets through the update that sets deletionTimestamp.
var deletionStarted = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

func byIndex(ctx context.Context, c client.Reader, field, value, ns string) []reconcile.Request {
	var list v1alpha1.PushSecretList
	if err := c.List(ctx, &list, client.MatchingFields{field: value}, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// SourceSecrets lists the source Secrets of every PushSecret in the cache:
// the Secrets their watch by name must keep watching.
func SourceSecrets(c client.Reader) func(ctx context.Context) (map[provider.NamespacedName]bool, error) {
	return func(ctx context.Context) (map[provider.NamespacedName]bool, error) {
		var list v1alpha1.PushSecretList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := make(map[provider.NamespacedName]bool, len(list.Items))
		for i := range list.Items {
			if list.Items[i].Spec.SecretName != "" {
				out[provider.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Spec.SecretName}] = true
			}
		}
		return out, nil
	}
}

// SourceSelections lists the secretSelectors of every PushSecret in the
// cache: the selections their watches must keep watching.
func SourceSelections(c client.Reader) secretwatch.ReferencedSelections {
	return func(ctx context.Context) (map[secretwatch.Selection]bool, error) {
		var list v1alpha1.PushSecretList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := map[secretwatch.Selection]bool{}
		for i := range list.Items {
			if list.Items[i].Spec.SecretSelector == nil {
				continue
			}
			if sel, err := selector(&list.Items[i]); err == nil {
				out[secretwatch.Selection{Namespace: list.Items[i].Namespace, Selector: sel.String()}] = true
			}
		}
		return out, nil
	}
}
