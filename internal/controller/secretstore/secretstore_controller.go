// Package secretstore reconciles SecretStores and ClusterSecretStores: it
// validates the configuration and credentials and reports Ready.
package secretstore

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/record"
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
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/steps"
	"github.com/watchword-dev/watchword/internal/storeaccess"
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
	// APIReader reads from the API server, not the cache: whether the
	// objects a store names exist. Defaults to the manager's.
	APIReader client.Reader
	// Watches tells whether each store's changes are watched (package
	// storewatch), for the ChangesWatched condition; nil leaves the
	// condition out.
	Watches WatchStates
}

// Options are the controller's settings and the feeds of changes that
// queue stores, as the other controllers take them.
type Options struct {
	// RateLimiter paces the retries of stores that wait for a change in
	// the cluster. Defaults to RetryBackoff.
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// CredentialChanges receives the changes of credential Secrets.
	CredentialChanges <-chan event.GenericEvent
	// ConnectionChanges receives the stores whose client lost or
	// regained its connection (a plugin that went away or came back):
	// they are checked again at once. Nil watches none.
	ConnectionChanges <-chan event.GenericEvent
	// WatchChanges receives the stores whose watch state changed (for
	// the ChangesWatched condition). Nil watches none.
	WatchChanges <-chan event.GenericEvent
}

// WatchStates tells what a store's ChangesWatched condition says; false
// when nothing is known.
type WatchStates interface {
	State(kind, namespace, name string) (conditions.WatchState, bool)
}

func (r *Reconciler) newObject() client.Object {
	if r.Cluster {
		return &v1alpha1.ClusterSecretStore{}
	}
	return &v1alpha1.SecretStore{}
}

// scope is one reconcile of one store.
type scope struct {
	obj, before  client.Object
	status       *v1alpha1.SecretStoreStatus
	beforeStatus *v1alpha1.SecretStoreStatus
	resolved     *storeaccess.Resolved
	// checkErr is the outcome of the check: nil when the store is valid.
	// It is the store's state, recorded in its status, not a failed step.
	checkErr error
}

// checkSteps is a reconcile of a store, in order.
var checkSteps = []steps.Step[*Reconciler, *scope]{
	{Name: "provider", Run: (*Reconciler).nameProvider},
	{Name: "check", Run: (*Reconciler).checkStore},
	{Name: "watch", Run: (*Reconciler).reportWatch},
	{Name: "record", Run: (*Reconciler).record},
}

// Reconcile validates one store.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cached := r.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, cached); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The cache hands out shared objects of the store kinds: copy first.
	s := &scope{obj: cached.DeepCopyObject().(client.Object)}
	switch o := s.obj.(type) {
	case *v1alpha1.SecretStore:
		s.resolved, s.status = storeaccess.FromSecretStore(o), &o.Status
	case *v1alpha1.ClusterSecretStore:
		s.resolved, s.status = storeaccess.FromClusterSecretStore(o), &o.Status
	}
	if s.resolved.Controller != r.Class {
		return ctrl.Result{}, nil
	}
	s.before, s.beforeStatus = s.obj.DeepCopyObject().(client.Object), s.status.DeepCopy()
	if _, err := steps.Run(ctx, r, checkSteps, s); err != nil {
		return ctrl.Result{}, err
	}
	switch err := s.checkErr; {
	case err == nil:
		return ctrl.Result{RequeueAfter: recheck}, nil
	case failure.Terminal(err):
		// Only an edit of the store can help; the edit reconciles it.
		return ctrl.Result{}, reconcile.TerminalError(failure.Redacted(err))
	default:
		// The work queue tries again with backoff (RetryBackoff).
		return ctrl.Result{}, failure.Redacted(err)
	}
}

// nameProvider records the provider the store's block names.
func (r *Reconciler) nameProvider(_ context.Context, s *scope) (bool, error) {
	name, _, _ := r.Clients.Registry().Lookup(s.resolved.Store.Spec)
	if name == "" {
		if blocks := provider.SetBlocks(s.resolved.Store.Spec); len(blocks) == 1 {
			name = blocks[0]
		}
	}
	s.status.Provider = name
	return false, nil
}

// checkStore validates the configuration and credentials and sets Ready
// and the phase from the outcome. observedGeneration moves only when the
// generation was found valid: a failed check has observed the spec but not
// accepted it, and the Ready condition's own observedGeneration says which
// generation it describes.
func (r *Reconciler) checkStore(ctx context.Context, s *scope) (bool, error) {
	s.checkErr = r.check(ctx, s.resolved)
	gen := s.obj.GetGeneration()
	conditions.Set(&s.status.Conditions, checked(s.checkErr), gen)
	s.status.Phase = v1alpha1.StorePhaseRunning
	if s.checkErr != nil {
		s.status.Phase = v1alpha1.StorePhasePending
		return false, nil
	}
	s.status.ObservedGeneration = gen
	return false, nil
}

// reportWatch sets ChangesWatched from the state of the store's change
// feed, when the feeds are known.
func (r *Reconciler) reportWatch(_ context.Context, s *scope) (bool, error) {
	if r.Watches == nil {
		return false, nil
	}
	var watch *conditions.WatchState
	st := s.resolved.Store
	if state, ok := r.Watches.State(st.Kind, st.Namespace, st.Name); ok {
		watch = &state
	}
	conditions.SetWatch(&s.status.Conditions, watch, s.obj.GetGeneration())
	return false, nil
}

// record writes the status when it changed, with a Warning event for a
// failed check.
func (r *Reconciler) record(ctx context.Context, s *scope) (bool, error) {
	if apiequality.Semantic.DeepEqual(s.beforeStatus, s.status) {
		return false, nil
	}
	if s.checkErr != nil {
		class, msg := failure.Describe(s.checkErr)
		r.Recorder.Event(s.obj, corev1.EventTypeWarning, string(class.Reason), msg)
	}
	if err := r.Client.Status().Patch(ctx, s.obj, client.MergeFrom(s.before)); err != nil {
		return false, failure.Redacted(client.IgnoreNotFound(err))
	}
	return false, nil
}

// checked is the outcome of a store's check: valid, or the failure alone.
// (An outcome's message on a failure is added to the error's: a failed
// check must not go on to say that the store is valid.)
func checked(err error) conditions.Outcome {
	if err != nil {
		return conditions.Outcome{Err: err}
	}
	return conditions.Outcome{Reason: failure.Valid, Message: "configuration and credentials are valid"}
}

// check validates a store; the error it returns is classed by the error
// model and says what is wrong in a message fit for the condition. A
// store whose validation fails because a Secret, ConfigMap, service
// account or namespace it names does not exist waits for it, with backoff:
// nothing else tells it that the object appeared (only credential Secrets
// are watched). The objects are looked up before and after the validation,
// so that one created while it ran is not taken for a configuration error.
func (r *Reconciler) check(ctx context.Context, s *storeaccess.Resolved) error {
	deps := dependencies(s.Store)
	missingBefore, lookupErr := missing(ctx, r.APIReader, s.Store, deps)
	err := r.validate(ctx, s)
	if err == nil {
		return nil
	}
	class, described := failure.Describe(err)
	if !class.Terminal {
		return &failure.Error{Class: class, Msg: fmt.Sprintf("%s: %s; retrying with backoff", s.Describe(), described), Err: err}
	}
	if class.Reason != failure.InvalidStoreConf {
		// An unimplemented provider or capability does not come with an
		// object that appears.
		return &failure.Error{Class: class, Msg: fmt.Sprintf("%s: %s", s.Describe(), described), Err: err}
	}
	missingAfter, err2 := missing(ctx, r.APIReader, s.Store, deps)
	waitingFor := missingAfter
	if len(waitingFor) == 0 {
		waitingFor = missingBefore
	}
	switch {
	case len(waitingFor) > 0:
		return failure.Retryf(failure.DependencyMissing, "%s: waiting for %s to exist; retrying with backoff", s.Describe(), listed(waitingFor))
	case lookupErr != nil || err2 != nil:
		// Whether the objects exist is unknown: try again rather than
		// wait for an edit that may not be needed.
		return &failure.Error{Class: failure.Class{Reason: class.Reason}, Msg: fmt.Sprintf("%s: %s; retrying with backoff", s.Describe(), described), Err: err}
	}
	return &failure.Error{Class: class, Msg: fmt.Sprintf("%s: %s", s.Describe(), described), Err: err}
}

func (r *Reconciler) validate(ctx context.Context, s *storeaccess.Resolved) error {
	c, err := r.Clients.Get(ctx, s)
	if err != nil {
		return err
	}
	return c.Check(ctx)
}

// SetupWithManager registers the controller; changes of credential Secrets
// (watched by name) validate their stores again at once, and a store that
// waits for a change in the cluster is retried with opts.RateLimiter.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts Options) error {
	name := "secretstore"
	if r.Cluster {
		name = "clustersecretstore"
	}
	c := mgr.GetClient()
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = RetryBackoff()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{RateLimiter: opts.RateLimiter}).
		For(r.newObject(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A deleted store's provider client is closed and forgotten.
		Watches(r.newObject(), handler.Funcs{
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.Clients.Drop(e.Object.GetUID())
			},
		}).
		WatchesRawSource(source.Channel(orNever(opts.CredentialChanges), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
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
		WatchesRawSource(source.Channel(orNever(opts.WatchChanges), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(orNever(opts.ConnectionChanges), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// orNever is c, or a channel that never receives when c is nil: the
// stores whose watch or connection changed come from optional feeds.
func orNever(c <-chan event.GenericEvent) <-chan event.GenericEvent {
	if c == nil {
		return make(chan event.GenericEvent)
	}
	return c
}
