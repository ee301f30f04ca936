// Package secretstore reconciles SecretStores and ClusterSecretStores: it
// validates the configuration and credentials and reports Ready.
package secretstore

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/storeaccess"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// recheck is how often a valid store's credentials are checked again.
const recheck = 10 * time.Minute

// Reconciler reconciles one of the two store kinds.
type Reconciler struct {
	Client   client.Client
	Clients  *storeaccess.Clients
	Recorder record.EventRecorder
	Class    string
	// Cluster selects ClusterSecretStores instead of SecretStores.
	Cluster bool
	// CredentialIndex is the field index of stores by credential Secret.
	CredentialIndex string
	// CredentialChanges receives the changes of credential Secrets.
	CredentialChanges <-chan event.GenericEvent
}

func (r *Reconciler) newObject() client.Object {
	if r.Cluster {
		return &v1alpha1.ClusterSecretStore{}
	}
	return &v1alpha1.SecretStore{}
}

// Reconcile validates one store.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cached := r.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, cached); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The cache hands out shared objects of the store kinds: copy first.
	obj := cached.DeepCopyObject().(client.Object)
	var resolved *storeaccess.Resolved
	var status *v1alpha1.SecretStoreStatus
	switch s := obj.(type) {
	case *v1alpha1.SecretStore:
		resolved, status = storeaccess.FromSecretStore(s), &s.Status
	case *v1alpha1.ClusterSecretStore:
		resolved, status = storeaccess.FromClusterSecretStore(s), &s.Status
	}
	if resolved.Controller != r.Class {
		return ctrl.Result{}, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	beforeStatus := status.DeepCopy()

	name, _, _ := r.Clients.Registry().Lookup(resolved.Store.Spec)
	if name == "" {
		if blocks := provider.SetBlocks(resolved.Store.Spec); len(blocks) == 1 {
			name = blocks[0]
		}
	}
	status.Provider = name
	err := r.validate(ctx, resolved)
	cond := metav1.Condition{Type: "Ready", ObservedGeneration: obj.GetGeneration()}
	if err != nil {
		reason, _ := engine.Classify(err)
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, string(reason), fmt.Sprintf("%s: %v", resolved.Describe(), err)
		status.Phase = v1alpha1.StorePhasePending
	} else {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Valid", "configuration and credentials are valid"
		status.Phase = v1alpha1.StorePhaseRunning
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ObservedGeneration = obj.GetGeneration()
	if !apiequality.Semantic.DeepEqual(beforeStatus, status) {
		if err != nil {
			r.Recorder.Event(obj, corev1.EventTypeWarning, cond.Reason, cond.Message)
		}
		if perr := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before)); perr != nil {
			return ctrl.Result{}, client.IgnoreNotFound(perr)
		}
	}
	if err != nil {
		if _, retry := engine.Classify(err); retry {
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

func (r *Reconciler) validate(ctx context.Context, s *storeaccess.Resolved) error {
	c, err := r.Clients.Get(ctx, s)
	if err != nil {
		return err
	}
	return c.Check(ctx)
}

// SetupWithManager registers the controller; changes of credential Secrets
// (watched by name) validate their stores again at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	name := "secretstore"
	if r.Cluster {
		name = "clustersecretstore"
	}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.newObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A deleted store's provider client is closed and forgotten.
		Watches(r.newObject(), handler.Funcs{
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.Clients.Drop(e.Object.GetUID())
			},
		}).
		WatchesRawSource(source.Channel(r.CredentialChanges, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			key := o.GetNamespace() + "/" + o.GetName()
			var out []reconcile.Request
			if r.Cluster {
				var l v1alpha1.ClusterSecretStoreList
				if c.List(ctx, &l, client.MatchingFields{r.CredentialIndex: key}) == nil {
					for _, s := range l.Items {
						out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
					}
				}
				return out
			}
			var l v1alpha1.SecretStoreList
			if c.List(ctx, &l, client.MatchingFields{r.CredentialIndex: key}) == nil {
				for _, s := range l.Items {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
				}
			}
			return out
		}))).
		Complete(r)
}
