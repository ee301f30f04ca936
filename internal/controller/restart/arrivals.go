package restart

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
)

// arrivals watches, by name and metadata only, the workloads that an
// ExternalSecret lists but that do not exist yet, so that one is
// reconciled (and takes the current rotation as its baseline) as soon as
// it is created. Listed workloads carry no label and are not cached; a
// watch of every workload of a kind would bring every change of every
// workload of the cluster, where this brings the creation of the few
// that are awaited. There is at most one watch per awaited workload, and
// it ends when the workload appears, is no longer awaited, or the
// controller stops.
type arrivals struct {
	ctx  context.Context
	meta metadata.Interface
	// arrived is called with a workload that has just been created.
	arrived func(Ref)

	mu      sync.Mutex
	waiting map[Ref]context.CancelFunc
}

// resources are the API resources of the kinds, by kind name.
var resources = map[string]schema.GroupVersionResource{
	"Deployment":  {Group: "apps", Version: "v1", Resource: "deployments"},
	"StatefulSet": {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"DaemonSet":   {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"Rollout":     {Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"},
}

// await watches for ref to be created, unless that is being done.
func (a *arrivals) await(ref Ref) {
	gvr, ok := resources[ref.Kind]
	if a == nil || !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[ref]; ok {
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	a.waiting[ref] = cancel
	go func() {
		defer a.done(ctx, ref)
		a.watch(ctx, ref, gvr)
	}()
}

// forget stops awaiting ref.
func (a *arrivals) forget(ref Ref) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel, ok := a.waiting[ref]; ok {
		cancel()
		delete(a.waiting, ref)
	}
}

// done removes the watch of ref that ctx belongs to, if it is still the
// current one.
func (a *arrivals) done(ctx context.Context, ref Ref) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[ref]; ok && ctx.Err() == nil {
		a.waiting[ref]()
		delete(a.waiting, ref)
	}
}

// watch lists ref by name and, while it does not exist, watches from
// that list for its creation; a broken watch or a refused list is tried
// again with backoff (1 s doubling to 1 min).
func (a *arrivals) watch(ctx context.Context, ref Ref, gvr schema.GroupVersionResource) {
	byName := fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	res := a.meta.Resource(gvr).Namespace(ref.Namespace)
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 7, Cap: time.Minute}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		list, err := res.List(ctx, metav1.ListOptions{FieldSelector: byName})
		if err == nil && len(list.Items) > 0 {
			a.arrived(ref)
			return
		}
		if err == nil {
			var w watch.Interface
			if w, err = res.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: list.ResourceVersion}); err == nil {
				if created(ctx, w) {
					a.arrived(ref)
					return
				}
				// The watch ended (the server ends them now and then):
				// list again at once.
				backoff = newBackoff()
				continue
			}
		}
		ctrl.LoggerFrom(ctx).V(1).Info("watching for a listed workload to be created", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name, "error", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Step()):
		}
	}
}

// created tells whether w reported a creation before it ended.
func created(ctx context.Context, w watch.Interface) bool {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return false
			}
			if ev.Type == watch.Added {
				return true
			}
		}
	}
}
