// Package storewatch runs the change feeds of stores (engine.Watcher): for
// every SecretStore and ClusterSecretStore of this controller class that an
// ExternalSecret reads from and whose client can watch (CanWatch), one
// watch, whose changed keys go to the ExternalSecret controller's Notify,
// as the refresh endpoint's notifications do. A watch that breaks is
// started again with exponential backoff, and at once when its store's
// Ready condition turns True again (its client can reach the store again:
// a plugin that came back); a store that is deleted, changes (its
// generation or its credentials, that is its client) or is no longer read
// from has its watch stopped. Each store has at most one watch.
//
// Every watch, the first one as much as one that follows a break or
// replaces another, makes every ExternalSecret of its store refresh once
// it is in place (the watcher's first call is changed(nil)): a change made
// before it, which it cannot tell of, would otherwise wait for the next
// periodic refresh.
//
// What the loop knows of a store's watch is its state (a
// conditions.WatchState), which the store controller writes into the
// store's ChangesWatched condition: the loop itself writes no status.
package storewatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/storeaccess"
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
	// DefaultSettle is how long a watch must hold, once in place, for
	// the backoff of its next break to start again from the first step.
	DefaultSettle = 3 * time.Second
	// notifyRetry is how soon a notification the ExternalSecret
	// controller could not take (it was not running yet) is made again,
	// as a notification of every key.
	notifyRetry = time.Second
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
	// retry ends the backoff after a break at once (retryNow).
	retry chan struct{}
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
	r := &running{client: c, uid: store.UID, gen: store.Generation, stop: stop, done: make(chan struct{}), retry: make(chan struct{}, 1)}
	l.watches[key] = r
	l.mu.Unlock()
	if old != nil {
		old.stop()
		<-old.done
	}
	ref := storeRef{kind: store.Store.Kind, namespace: store.Store.Namespace, name: store.Store.Name}
	l.setState(key, startingState())
	go l.run(ctx, r, key, ref, w)
	return true
}

// startingState is the state of a store whose watch is being put in
// place: until it is, changes are not watched.
func startingState() *conditions.WatchState {
	return &conditions.WatchState{Reason: conditions.WatchStarting,
		Message: "a watch of the store's changes is being put in place; until it is, changes are not watched and ExternalSecrets refresh at their refreshInterval"}
}

// retryNow ends the backoff of the store's broken watch, if it waits in
// one, so that it is started again at once.
func (l *Loop) retryNow(key types.NamespacedName) {
	l.mu.Lock()
	r := l.watches[key]
	l.mu.Unlock()
	if r == nil {
		return
	}
	select {
	case r.retry <- struct{}{}:
	default:
	}
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

// run watches until ctx ends, restarting a broken watch with backoff (cut
// short by retryNow).
func (l *Loop) run(ctx context.Context, r *running, key types.NamespacedName, s storeRef, w engine.Watcher) {
	defer close(r.done)
	log := ctrl.Log.WithName("storewatch").WithValues("storeKind", s.kind, "storeNamespace", s.namespace, "storeName", s.name)
	backoff := l.backoff()
	notify := l.notifier(ctx, log, s)
	for {
		// A retry asked for before this watch starts is this watch.
		select {
		case <-r.retry:
		default:
		}
		// The watcher's first call tells that its watch is in place:
		// from then on the store's changes are watched, and what
		// changed before (before the first watch, between a break and
		// this one, or while another client's watch was replaced) is
		// not known, so every ExternalSecret of the store refreshes.
		var (
			mu      sync.Mutex
			inPlace time.Time
		)
		err := w.Watch(ctx, func(keys []string) {
			mu.Lock()
			first := inPlace.IsZero()
			if first {
				inPlace = time.Now()
			}
			mu.Unlock()
			if first {
				l.setState(key, &conditions.WatchState{Watched: true, Reason: conditions.WatchActive,
					Message: "changes of the store's objects are watched: the ExternalSecrets that read a changed key refresh at once"})
				keys = nil
			}
			metrics.WatchNotifications.WithLabelValues(s.kind, metrics.StoreLabel(s.namespace, s.name)).Inc()
			notify(keys)
		})
		if ctx.Err() != nil {
			return
		}
		mu.Lock()
		held := !inPlace.IsZero() && time.Since(inPlace) >= l.settle()
		mu.Unlock()
		if held {
			// It held: the next break starts from the first step.
			backoff = l.backoff()
		}
		delay := backoff.Step()
		l.setState(key, brokenState(err, delay))
		log.Info("the watch of the store's changes ended; watching again after a backoff", "reason", failure.Classify(err).Reason, "after", delay)
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-r.retry:
			timer.Stop()
			log.Info("the store is ready again: watching again at once")
		case <-timer.C:
		}
		l.setState(key, startingState())
	}
}

// notifier returns the function that hands a watch's changed keys (nil:
// every key) to the ExternalSecret controller. A notification it could
// not hand over (the controller is not running yet, or its cache failed)
// is made again shortly as one of every key, until one is taken or ctx
// ends: a lost notification would leave a target stale until its next
// periodic refresh.
func (l *Loop) notifier(ctx context.Context, log logr.Logger, s storeRef) func(keys []string) {
	var retrying atomic.Bool
	var notify func(keys []string)
	notify = func(keys []string) {
		queued, err := l.Notifier.Notify(ctx, s.kind, s.namespace, s.name, keys)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.V(1).Info("a change could not be handed to the ExternalSecret controller; every key is notified again shortly", "reason", failure.Classify(err).Reason)
			if retrying.CompareAndSwap(false, true) {
				time.AfterFunc(notifyRetry, func() {
					retrying.Store(false)
					if ctx.Err() == nil {
						notify(nil)
					}
				})
			}
			return
		}
		log.V(1).Info("store changed", "keys", len(keys), "everything", keys == nil, "queued", queued)
	}
	return notify
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

// SetupWithManager registers the loop: a store's changes (of its spec, or
// of its Ready condition's status), and those of the ExternalSecrets that
// read from it, queue the store.
func (l *Loop) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(l); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("storewatch").
		Watches(&v1alpha1.SecretStore{}, l.stores(), builder.WithPredicates(storeChanged())).
		Watches(&v1alpha1.ClusterSecretStore{}, l.stores(), builder.WithPredicates(storeChanged())).
		Watches(&v1alpha1.ExternalSecret{}, l.readers(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(l)
}

// storeChanged lets through the changes of a store that matter to its
// watch: its spec (generation), and the status of its Ready condition.
// The ChangesWatched condition, which follows the watch, does not queue
// it.
func storeChanged() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return readyStatus(e.ObjectOld) != readyStatus(e.ObjectNew)
		},
	})
}

// stores queues a store that changed. A store whose Ready condition
// turned True can be reached again (its plugin came back, its
// credentials were fixed): a watch that waited for its client starts, and
// a broken one, waiting in its backoff, is started again at once, so that
// ChangesWatched follows Ready rather than lag behind by a backoff.
func (l *Loop) stores() handler.Funcs {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if readyStatus(e.ObjectOld) != metav1.ConditionTrue && readyStatus(e.ObjectNew) == metav1.ConditionTrue {
				l.retryNow(types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: e.ObjectNew.GetName()})
			}
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// readyStatus is the status of a store's Ready condition ("" when it has
// none, or o is no store).
func readyStatus(o client.Object) metav1.ConditionStatus {
	var conds []metav1.Condition
	switch s := o.(type) {
	case *v1alpha1.SecretStore:
		conds = s.Status.Conditions
	case *v1alpha1.ClusterSecretStore:
		conds = s.Status.Conditions
	default:
		return ""
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		return c.Status
	}
	return ""
}

// readers queues the stores an ExternalSecret reads from, before and
// after a change. A new ExternalSecret queues its store only while the
// store's watch is not settled either way: a store already watched, or
// whose provider cannot watch, has nothing to learn from one more reader.
// Without that, a burst of ExternalSecrets of one store would look for
// readers among all of them once per ExternalSecret.
//
// Tuning (with externalsecret.ReadsFrom, which looks at one reader first):
// at 20,000 that search was 45 % of the controller's CPU, 50.5 s against
// 25.2 s after (FINDINGS.md, "The controller's CPU"); if stores had few
// readers each, every reader could queue its store and the check list them.
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
