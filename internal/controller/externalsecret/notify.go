package externalsecret

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// This file is event-driven refresh: a notification that keys of a store
// changed (the refresh hook) makes every ExternalSecret that reads one of
// them due at once. The scheduling policy (schedule.go) decides from the
// notices; a successful sync consumes them.

// notifyDelay is how long a notified ExternalSecret waits in the queue
// before its sync, so that a burst of notifications of one key ends in
// one sync of each ExternalSecret and one read of the key.
const notifyDelay = 500 * time.Millisecond

// ErrNotRunning tells that the controller has not started (yet): this
// instance is not the leader, or it is still starting.
var ErrNotRunning = errors.New("the ExternalSecret controller is not running")

// notices holds, for each ExternalSecret ("ns/name"), the remote keys
// announced changed since its last successful sync, with the time of the
// latest announcement of each.
type notices struct {
	mu      sync.Mutex
	pending map[string]map[string]time.Time
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	// leading is set once this instance leads: a standby's sources, and
	// so its queue, start before it leads (controller warmup), and a
	// notification it took would wait for a leadership that may never
	// come, while the leader never hears of it.
	leading bool
}

// Notify makes every ExternalSecret that reads one of keys of the store
// (kind, namespace, name) refresh at once, reading those keys anew, once
// for all of them. Nil keys (a change feed that lost track: anything may
// have changed) stand for every key of the store: every ExternalSecret
// that reads from it refreshes, reading each of its keys anew, through the
// same queue, delay and shared reads as a named key. It returns how many
// ExternalSecrets it queued.
func (r *Reconciler) Notify(ctx context.Context, kind, namespace, name string, keys []string) (int, error) {
	r.notices.mu.Lock()
	q := r.notices.queue
	if !r.notices.leading {
		q = nil
	}
	r.notices.mu.Unlock()
	if q == nil {
		return 0, ErrNotRunning
	}
	store := StoreKey(kind, namespace, name)
	var list v1alpha1.ExternalSecretList
	opts := []client.ListOption{client.MatchingFields{IndexStore: store}, client.UnsafeDisableDeepCopy}
	if kind != v1alpha1.ClusterSecretStoreKind {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		return 0, fmt.Errorf("listing the ExternalSecrets of %s: %w", store, err)
	}
	now := r.Clock.Now()
	var reqs []reconcile.Request
	for i := range list.Items {
		es := &list.Items[i]
		if read := readKeys(es, store, keys); len(read) > 0 {
			r.notices.add(es.Namespace+"/"+es.Name, read, now)
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(es)})
		}
	}
	// The queue holds each request once: notifications that come while
	// one waits add nothing.
	for _, req := range reqs {
		q.AddAfter(req, notifyDelay)
	}
	return len(reqs), nil
}

// readKeys lists those of keys that the ExternalSecret reads from the
// store (an IndexStore value; with finds, a key they matched or would
// match), or every key it reads there when keys is nil; a store it only
// publishes to does not count.
func readKeys(es *v1alpha1.ExternalSecret, store string, keys []string) []string {
	if readStore(es) != store {
		return nil
	}
	if keys == nil {
		return keysRead(es)
	}
	var out []string
	for _, k := range keys {
		if !slices.Contains(out, k) && readsKey(es, k) {
			out = append(out, k)
		}
	}
	return out
}

// start is the controller's source of notified ExternalSecrets: it keeps
// the controller's queue.
func (n *notices) start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = q
	return nil
}

// lead runs on the leader only, from when it leads until it stops.
func (n *notices) lead(ctx context.Context) error {
	n.mu.Lock()
	n.leading = true
	n.mu.Unlock()
	<-ctx.Done()
	n.mu.Lock()
	n.leading = false
	n.mu.Unlock()
	return nil
}

func (n *notices) add(es string, keys []string, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pending == nil {
		n.pending = map[string]map[string]time.Time{}
	}
	m := n.pending[es]
	if m == nil {
		m = map[string]time.Time{}
		n.pending[es] = m
	}
	for _, k := range keys {
		m[k] = at
	}
}

// of returns a copy of the notices of an ExternalSecret.
func (n *notices) of(es string) map[string]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.pending[es])
}

// consume drops the notices of an ExternalSecret made at or before a
// sync's start: the sync read those keys after them. Later ones stay, and
// their ExternalSecret is queued again.
func (n *notices) consume(es string, syncStart time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.pending[es]
	maps.DeleteFunc(m, func(_ string, at time.Time) bool { return !at.After(syncStart) })
	if len(m) == 0 {
		delete(n.pending, es)
	}
}

// drop forgets a deleted ExternalSecret's notices.
func (n *notices) drop(es string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pending, es)
}

// ReadsFrom tells whether some ExternalSecret of the cache reads from the
// store (kind, namespace, name); one that only publishes to it does not
// count. The store watch (package storewatch) watches only such stores.
func ReadsFrom(ctx context.Context, c client.Reader, kind, namespace, name string) (bool, error) {
	store := StoreKey(kind, namespace, name)
	opts := []client.ListOption{client.MatchingFields{IndexStore: store}, client.UnsafeDisableDeepCopy}
	if kind != v1alpha1.ClusterSecretStoreKind {
		opts = append(opts, client.InNamespace(namespace))
	}
	reads := func(list *v1alpha1.ExternalSecretList) bool {
		for i := range list.Items {
			es := &list.Items[i]
			if readStore(es) == store {
				return true
			}
		}
		return false
	}
	// Most ExternalSecrets of the index read from the store (the others
	// only publish to it): one is looked at before all of them (a tuning,
	// with storewatch's Loop.readers, which says what it buys).
	var first v1alpha1.ExternalSecretList
	if err := c.List(ctx, &first, append(opts, client.Limit(1))...); err != nil {
		return false, fmt.Errorf("listing the ExternalSecrets of %s: %w", store, err)
	}
	if len(first.Items) == 0 || reads(&first) {
		return len(first.Items) > 0, nil
	}
	var list v1alpha1.ExternalSecretList
	if err := c.List(ctx, &list, opts...); err != nil {
		return false, fmt.Errorf("listing the ExternalSecrets of %s: %w", store, err)
	}
	return reads(&list), nil
}

// readStore is the IndexStore value of the store an ExternalSecret reads
// from.
func readStore(es *v1alpha1.ExternalSecret) string {
	return StoreKey(es.Spec.SecretStoreRef.Kind, es.Namespace, es.Spec.SecretStoreRef.Name)
}
