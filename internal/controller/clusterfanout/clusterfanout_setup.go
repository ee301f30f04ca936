package clusterfanout

import (
	"context"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// IndexOwner is the field index of stamped objects by the UID of the
// cluster object that controls them.
const IndexOwner = "watchword.stamped.owner"

// Options tune the controller.
type Options struct {
	Workers     int
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
}

// SetupWithManager registers the index, the watches and the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	kind := r.Kind.Name
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.Kind.NewStamp(), IndexOwner, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == kind {
			return []string{string(ref.UID)}
		}
		return nil
	}); err != nil {
		return err
	}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(kind)).
		For(r.Kind.NewCluster(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A new, relabelled or deleted namespace may change what every
		// cluster object selects.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return r.all(ctx, c)
		}), builder.WithPredicates(namespaceChanged)).
		// A stamp that is changed, deleted or becomes (not) Ready changes
		// the cluster object's status.
		Owns(r.Kind.NewStamp(), builder.WithPredicates(r.stampChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, RateLimiter: opts.RateLimiter}).
		Complete(r)
}

// all are the requests of every cluster object of the kind.
func (r *Reconciler) all(ctx context.Context, c client.Reader) []reconcile.Request {
	list := r.Kind.NewClusterList()
	if err := c.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing cluster objects for a namespace change", "kind", r.Kind.Name)
		return nil
	}
	var out []reconcile.Request
	for _, o := range objects(list) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: o.GetName()}})
	}
	return out
}

// namespaceChanged passes the namespace events that can change a
// selection: creation, deletion, and a change of labels or of the start
// of deletion.
var namespaceChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// stampChanged passes the stamp events that can change the cluster
// object's status or call for a new write: creation, deletion, a change
// of spec (generation) or annotations, and a change of readiness.
func (r *Reconciler) stampChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
				o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero() {
				return true
			}
			or, ok, oreason := r.Kind.Ready(o)
			nr, nk, nreason := r.Kind.Ready(n)
			return or != nr || ok != nk || oreason != nreason
		},
	}
}

// objects are the items of a typed list.
func objects(list client.ObjectList) []client.Object {
	var out []client.Object
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if co, ok := o.(client.Object); ok {
			out = append(out, co)
		}
		return nil
	})
	return out
}
