package externalsecret

import (
	"context"
	"errors"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// New work goes ahead of the rest from the first moment this instance
// leads. When a controller starts, controller-runtime hands each of its
// handlers every object of the cache again, and waits for all of them
// before it starts a worker: with a hundred thousand ExternalSecrets and
// their targets, that takes seconds on two cores, and a new ExternalSecret
// waits behind it, whatever its priority. So:
//   - the handler of the ExternalSecrets and the one of the targets let
//     the workers start once the cache is filled (cacheSynced): what they
//     are handed again only queues resyncs at low priority, or nothing;
//   - the ExternalSecrets that need a sync for their own sake (unsynced)
//     are indexed, listed as the controller starts and queued first;
//   - a handler added to the informer before the cache starts, so that it
//     is never handed the cache again, queues the new and changed ones from
//     then on, without waiting behind the replay of the others (ahead).
//
// Tuning: after a restart at 100,000 a new ExternalSecret synced 1.11 s and
// 0.30 s after the lease, against 2.76 s and 4.21 s before (FINDINGS.md,
// "Restart and takeover"); if controller-runtime starts workers before the
// replay ends, this can go back to Kind sources and one create handler.

// IndexUnsynced holds "true" for the ExternalSecrets that unsynced tells
// apart, and nothing for the others.
const IndexUnsynced = "watchword.unsynced"

// unsynced tells whether an ExternalSecret was never synced, or its spec
// changed since its last sync.
func unsynced(es *v1alpha1.ExternalSecret) bool {
	return es.Status.RefreshTime == nil || es.Status.ObservedGeneration != es.Generation
}

// unsyncedIndex is IndexUnsynced's function.
func unsyncedIndex(o client.Object) []string {
	if unsynced(o.(*v1alpha1.ExternalSecret)) {
		return []string{"true"}
	}
	return nil
}

// queueRef holds the controller's queue once it has started.
type queueRef struct {
	q workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// ahead queues unsynced ExternalSecrets at the default priority, above the
// low priority of the initial list.
type ahead struct {
	c client.Reader
	q atomic.Pointer[queueRef]
}

// register indexes the unsynced ExternalSecrets and adds ahead's handler
// to the informer of ExternalSecrets, which the cache has not started yet.
func (a *ahead) register(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexUnsynced, unsyncedIndex); err != nil {
		return err
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.ExternalSecret{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(a.handler())
	return err
}

// handler queues the new ExternalSecrets that are unsynced, and those
// whose spec changed, once the controller has started. Not a status
// change: an unsynced ExternalSecret whose sync fails updates its status,
// and must wait for its retry.
func (a *ahead) handler() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if es, ok := obj.(*v1alpha1.ExternalSecret); ok && unsynced(es) {
				a.add(es)
			}
		},
		UpdateFunc: func(old, obj any) {
			before, okBefore := old.(*v1alpha1.ExternalSecret)
			es, ok := obj.(*v1alpha1.ExternalSecret)
			if ok && okBefore && before.Generation != es.Generation {
				a.add(es)
			}
		},
	}
}

// add queues one ExternalSecret, once the controller has started.
func (a *ahead) add(es *v1alpha1.ExternalSecret) {
	ref := a.q.Load()
	if ref == nil {
		return
	}
	queueAt(ref.q, 0, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(es)})
}

// start is the controller's source: it takes the queue, then queues the
// unsynced ExternalSecrets the cache holds. One that changes in between is
// queued by both, which the queue folds into one.
func (a *ahead) start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	a.q.Store(&queueRef{q: q})
	var list v1alpha1.ExternalSecretList
	if err := a.c.List(ctx, &list, client.MatchingFields{IndexUnsynced: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		a.add(&list.Items[i])
	}
	return nil
}

// cacheSynced is a source that the controller waits for until the cache
// of its objects is filled, but not until its handler has been handed them
// all, as controller-runtime's Kind source does.
type cacheSynced struct {
	source.Source
	cache cache.Cache
	obj   client.Object
}

// whenCacheSynced wraps a Kind source of obj from c.
func whenCacheSynced(c cache.Cache, obj client.Object, src source.Source) source.Source {
	return cacheSynced{Source: src, cache: c, obj: obj}
}

// WaitForSync returns once the informer of the source's objects has synced.
func (s cacheSynced) WaitForSync(ctx context.Context) error {
	inf, err := s.cache.GetInformer(ctx, s.obj)
	if err != nil {
		return err
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("the cache did not sync")
	}
	return nil
}
