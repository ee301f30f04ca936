package externalsecret

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fanOut maps a change of a shared object (a store, a credential, a
// namespace, a template) to the ExternalSecrets that depend on it, and
// queues them at low priority: a store edit that touches ten thousand
// ExternalSecrets must not delay a new or changed one (queueAt says what
// that buys). The objects of the initial list after a start queue nothing:
// every ExternalSecret is queued by its own (ahead.go).
func fanOut(fn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		queueAt(q, handler.LowPriority, fn(ctx, obj)...)
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				add(ctx, e.Object, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// queueAt adds reqs to q at priority prio when q is a priority queue (as
// the controller's is), and plainly otherwise.
//
// Tuning: fan-out work and periodic refreshes (schedule.next) queue at low
// priority, so a new ExternalSecret synced in 0.12–0.41 s while all 10,000
// were due (0.21–1.52 s at 100,000: the store edit; FINDINGS.md, "Refreshes
// and the steady state"); if nothing ever makes thousands due at once, every
// caller can go back to q.Add.
func queueAt(q workqueue.TypedRateLimitingInterface[reconcile.Request], prio int, reqs ...reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(prio)}, reqs...)
		return
	}
	for _, r := range reqs {
		q.Add(r)
	}
}
