// Package storewatch runs the change feeds of stores (engine.Watcher): for
// every SecretStore and ClusterSecretStore of this controller class that an
// ExternalSecret reads from and whose client can watch (CanWatch), one
// watch, whose changed keys go to the ExternalSecret controller's Notify,
// as the refresh endpoint's notifications do. A watch that breaks is
// started again with exponential backoff; a store that is deleted, changes
// (its generation or its credentials, that is its client) or is no longer
// read from has its watch stopped. Each store has at most one watch.
//
// What the loop knows of a store's watch is its state (a
// conditions.WatchState), which the store controller writes into the
// store's ChangesWatched condition: the loop itself writes no status.
package storewatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/conditions"
	"github.com/watchword-dev/watchword/internal/controller/storeaccess"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// Notifier refreshes the ExternalSecrets that read keys of a store; nil
// keys stand for every key (externalsecret.Reconciler.Notify).
type Notifier interface {
	Notify(ctx context.Context, kind, namespace, name string, keys []string) (int, error)
}

// ClientSource hands out a store's client, the same one as long as the
// store's generation and credentials do not change (storeaccess.Clients).
type ClientSource interface {
	Get(ctx context.Context, r *storeaccess.Resolved) (*engine.Client, error)
}

// ReadsFrom tells whether some ExternalSecret reads from a store
// (externalsecret.ReadsFrom).
type ReadsFrom func(ctx context.Context, kind, namespace, name string) (bool, error)

// Defaults.
const (
	// DefaultRecheck is how often a watched store's client is looked at
	// again, so that new credentials (a new client) restart its watch.
	DefaultRecheck = time.Minute
	// DefaultSettle is how long a watch must run before the store is
	// said to be watched, and before a watch that replaces another
	// announces that anything may have changed meanwhile.
	DefaultSettle = 3 * time.Second
)

// DefaultBackoff paces the restarts of a broken watch: 1s, doubling, up to
// 5 minutes, with jitter. A watch that held for a while starts again from
// the first step.
func DefaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 5 * time.Minute}
}

// Loop is the reconciler of store watches. A request names a store: an
// empty namespace is a ClusterSecretStore, any other a SecretStore (a
// SecretStore always has one).
type Loop struct {
	Reader    client.Reader
	Clients   ClientSource
	Notifier  Notifier
	ReadsFrom ReadsFrom
	Class     string
	// Backoff paces restarts; nil is DefaultBackoff.
	Backoff func() wait.Backoff
	// Recheck and Settle: zero is the default.
	Recheck time.Duration
	Settle  time.Duration

	mu sync.Mutex
	// ctx is the manager's: watches outlive the reconcile that starts
	// them.
	ctx     context.Context
	watches map[types.NamespacedName]*running
	states  map[types.NamespacedName]conditions.WatchState
	subs    []subscriber
}

// running is one store's watch.
type running struct {
	client *engine.Client
	uid    types.UID
	gen    int64
	stop   context.CancelFunc
	done   chan struct{}
}

type subscriber struct {
	cluster bool
	ch      chan event.GenericEvent
}

// Subscribe returns a channel that receives a store (of one kind) whose
// watch state changed. Subscribe before the manager starts.
func (l *Loop) Subscribe(cluster bool) <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 256)
	l.mu.Lock()
	l.subs = append(l.subs, subscriber{cluster: cluster, ch: ch})
	l.mu.Unlock()
	return ch
}

// State tells what ChangesWatched says of a store; false when the loop
// has no word on it.
func (l *Loop) State(kind, namespace, name string) (conditions.WatchState, bool) {
	if kind == v1alpha1.ClusterSecretStoreKind {
		namespace = ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.states[types.NamespacedName{Namespace: namespace, Name: name}]
	return s, ok
}

// Watching tells how many watches run.
func (l *Loop) Watching() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.watches)
}

// Start keeps the manager's context for the watches and stops them all
// when it ends. It implements the manager's Runnable.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	all := l.watches
	l.watches = nil
	l.mu.Unlock()
	for _, w := range all {
		w.stop()
		<-w.done
	}
	return nil
}

// NeedLeaderElection is true: watches feed the ExternalSecret controller, which
// runs on the leader only.
func (l *Loop) NeedLeaderElection() bool { return true }

func (l *Loop) recheck() time.Duration {
	if l.Recheck > 0 {
		return l.Recheck
	}
	return DefaultRecheck
}

func (l *Loop) settle() time.Duration {
	if l.Settle > 0 {
		return l.Settle
	}
	return DefaultSettle
}

func (l *Loop) backoff() wait.Backoff {
	if l.Backoff != nil {
		return l.Backoff()
	}
	return DefaultBackoff()
}

// Reconcile starts, keeps, replaces or stops the watch of one store.
func (l *Loop) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	store, err := l.resolve(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	if store == nil || store.Controller != l.Class {
		// Deleted, or not this class's: no watch and no word on it.
		l.stop(key, nil)
		return ctrl.Result{}, nil
	}
	reads, err := l.ReadsFrom(ctx, store.Store.Kind, store.Store.Namespace, store.Store.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !reads {
		l.stop(key, &conditions.WatchState{Reason: conditions.WatchUnneeded,
			Message: "no ExternalSecret reads from this store, so its changes are not watched"})
		// Looked at again in case a reader arrived while this one looked.
		return ctrl.Result{RequeueAfter: l.recheck()}, nil
	}
	c, err := l.Clients.Get(ctx, store)
	if err != nil {
		// The store's Ready condition tells why; its fix (an edit, a
		// credential) queues the store again, and so does the recheck.
		l.stop(key, &conditions.WatchState{Reason: conditions.WatchStoreNotReady,
			Message: "the store's client cannot be built (see Ready), so its changes are not watched; ExternalSecrets refresh at their refreshInterval"})
		return ctrl.Result{RequeueAfter: l.recheck()}, nil
	}
	w, err := c.AsWatcher()
	if err != nil {
		l.stop(key, &conditions.WatchState{Reason: conditions.WatchUnsupported,
			Message: "the " + c.Provider() + " provider cannot tell of changes; ExternalSecrets refresh at their refreshInterval, or at once on a notification to the refresh endpoint"})
		return ctrl.Result{}, nil
	}
	if !l.start(key, store, c, w) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{RequeueAfter: l.recheck()}, nil
}

func (l *Loop) resolve(ctx context.Context, key types.NamespacedName) (*storeaccess.Resolved, error) {
	if key.Namespace == "" {
		var s v1alpha1.ClusterSecretStore
		if err := l.Reader.Get(ctx, key, &s); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if !s.DeletionTimestamp.IsZero() {
			return nil, nil
		}
		return storeaccess.FromClusterSecretStore(&s), nil
	}
	var s v1alpha1.SecretStore
	if err := l.Reader.Get(ctx, key, &s); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return storeaccess.FromSecretStore(&s), nil
}

// start runs the store's watch unless the same client's already runs; a
// watch of an earlier client (an older generation or credentials) is
// stopped first, and has ended before the new one starts.
func (l *Loop) start(key types.NamespacedName, store *storeaccess.Resolved, c *engine.Client, w engine.Watcher) bool {
	l.mu.Lock()
	if l.ctx == nil || l.ctx.Err() != nil {
		// Not started (yet), or stopping.
		l.mu.Unlock()
		return false
	}
	old := l.watches[key]
	if old != nil && old.client == c && old.uid == store.UID && old.gen == store.Generation {
		l.mu.Unlock()
		return true
	}
	if l.watches == nil {
		l.watches = map[types.NamespacedName]*running{}
	}
	ctx, stop := context.WithCancel(l.ctx)
	r := &running{client: c, uid: store.UID, gen: store.Generation, stop: stop, done: make(chan struct{})}
	l.watches[key] = r
	l.mu.Unlock()
	replaces := old != nil
	if old != nil {
		old.stop()
		<-old.done
	}
	ref := storeRef{kind: store.Store.Kind, namespace: store.Store.Namespace, name: store.Store.Name}
	l.setState(key, &conditions.WatchState{Reason: conditions.WatchStarting, Message: "a watch of the store's changes is starting"})
	go l.run(ctx, r, key, ref, w, replaces)
	return true
}

// stop ends the store's watch, if any, and sets its state (nil forgets it).
func (l *Loop) stop(key types.NamespacedName, state *conditions.WatchState) {
	l.mu.Lock()
	r := l.watches[key]
	delete(l.watches, key)
	l.mu.Unlock()
	if r != nil {
		r.stop()
		<-r.done
	}
	l.setState(key, state)
}

type storeRef struct{ kind, namespace, name string }

// run watches until ctx ends, restarting a broken watch with backoff.
func (l *Loop) run(ctx context.Context, r *running, key types.NamespacedName, s storeRef, w engine.Watcher, replaces bool) {
	defer close(r.done)
	log := ctrl.Log.WithName("storewatch").WithValues("storeKind", s.kind, "storeNamespace", s.namespace, "storeName", s.name)
	backoff := l.backoff()
	changed := func(keys []string) {
		metrics.WatchNotifications.WithLabelValues(s.kind, metrics.StoreLabel(s.namespace, s.name)).Inc()
		queued, err := l.Notifier.Notify(ctx, s.kind, s.namespace, s.name, keys)
		if err != nil {
			log.V(1).Info("a change could not be handed to the ExternalSecret controller", "reason", failure.Classify(err).Reason)
			return
		}
		log.V(1).Info("store changed", "keys", len(keys), "everything", keys == nil, "queued", queued)
	}
	for {
		// Once the watch has held for the settle time the store is said
		// to be watched, and a watch that replaced another announces that
		// anything may have changed between the two. The timer ends with
		// the watch, before its outcome is recorded.
		held := false
		watchCtx, endWatch := context.WithCancel(ctx)
		var timer sync.WaitGroup
		timer.Add(1)
		go func() {
			defer timer.Done()
			select {
			case <-watchCtx.Done():
				return
			case <-time.After(l.settle()):
			}
			held = true
			l.setState(key, &conditions.WatchState{Watched: true, Reason: conditions.WatchActive,
				Message: "changes of the store's objects are watched: the ExternalSecrets that read a changed key refresh at once"})
			if replaces {
				replaces = false
				changed(nil)
			}
		}()
		err := w.Watch(watchCtx, changed)
		endWatch()
		timer.Wait()
		if ctx.Err() != nil {
			return
		}
		if held {
			// It held: the next break starts from the first step.
			backoff = l.backoff()
		}
		delay := backoff.Step()
		l.setState(key, brokenState(err, delay))
		log.Info("the watch of the store's changes ended; watching again after a backoff", "reason", failure.Classify(err).Reason, "after", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// brokenState is the state of a store whose watch ended with err.
func brokenState(err error, delay time.Duration) *conditions.WatchState {
	_, msg := failure.Describe(err)
	if errors.Is(err, engine.ErrPermissionDenied) {
		return &conditions.WatchState{Reason: conditions.WatchDenied,
			Message: msg + "; ExternalSecrets refresh at their refreshInterval; watching is tried again with backoff"}
	}
	return &conditions.WatchState{Reason: conditions.WatchBroken,
		Message: "the watch of the store's changes broke (" + msg + "); watching again after " + delay.Round(time.Second).String()}
}

// setState records a store's state, and tells the subscribers of its kind
// when it changed.
func (l *Loop) setState(key types.NamespacedName, s *conditions.WatchState) {
	l.mu.Lock()
	old, had := l.states[key]
	switch {
	case s == nil && !had:
		l.mu.Unlock()
		return
	case s == nil:
		delete(l.states, key)
	case had && old == *s:
		l.mu.Unlock()
		return
	default:
		if l.states == nil {
			l.states = map[types.NamespacedName]conditions.WatchState{}
		}
		l.states[key] = *s
	}
	subs := l.subs
	ctx := l.ctx
	l.mu.Unlock()
	cluster := key.Namespace == ""
	var obj client.Object = &v1alpha1.SecretStore{}
	if cluster {
		obj = &v1alpha1.ClusterSecretStore{}
	}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	for _, sub := range subs {
		if sub.cluster != cluster {
			continue
		}
		if ctx == nil {
			select {
			case sub.ch <- event.GenericEvent{Object: obj}:
			default:
			}
			continue
		}
		select {
		case sub.ch <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return
		}
	}
}

// StoreOf maps an ExternalSecret to the request of the store it reads
// from.
func StoreOf(_ context.Context, o client.Object) []reconcile.Request {
	es, ok := o.(*v1alpha1.ExternalSecret)
	if !ok {
		return nil
	}
	ref := es.Spec.SecretStoreRef
	if ref.Kind == v1alpha1.ClusterSecretStoreKind {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: es.Namespace, Name: ref.Name}}}
}

// SetupWithManager registers the loop: a store's changes, and those of the
// ExternalSecrets that read from it, queue the store.
func (l *Loop) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(l); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("storewatch").
		Watches(&v1alpha1.SecretStore{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterSecretStore{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ExternalSecret{}, l.readers(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(l)
}

// readers queues the stores an ExternalSecret reads from, before and
// after a change. A new ExternalSecret queues its store only while the
// store's watch is not settled either way: a store already watched, or
// whose provider cannot watch, has nothing to learn from one more reader.
// Without that, a burst of ExternalSecrets of one store would look for
// readers among all of them once per ExternalSecret.
func (l *Loop) readers() handler.Funcs {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], created bool) {
		for _, req := range StoreOf(ctx, o) {
			if !created || l.awaitsReaders(req.NamespacedName) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q, true)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectOld, q, false)
			add(ctx, e.ObjectNew, q, false)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q, false)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q, false)
		},
	}
}

// awaitsReaders tells whether a new reader of the store could change its
// watch: not when it runs, nor when its provider cannot watch.
func (l *Loop) awaitsReaders(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.watches[key]; ok {
		return false
	}
	st, ok := l.states[key]
	return !ok || st.Reason != conditions.WatchUnsupported
}
