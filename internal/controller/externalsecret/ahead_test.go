package externalsecret

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// aheadES is an ExternalSecret of generation gen, synced at generation
// synced (0: never).
func aheadES(name string, gen, synced int64) *v1alpha1.ExternalSecret {
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: gen}}
	if synced > 0 {
		now := metav1.Now()
		es.Status.RefreshTime, es.Status.ObservedGeneration = &now, synced
	}
	return es
}

// drainQueue returns the names in q and their priorities.
func drainQueue(q priorityqueue.PriorityQueue[reconcile.Request]) map[string]int {
	got := map[string]int{}
	for q.Len() > 0 {
		item, prio, _ := q.GetWithPriority()
		got[item.Name] = prio
		q.Done(item)
	}
	return got
}

func TestUnsyncedExternalSecretsAreQueuedAheadOfTheReplayAtStart(t *testing.T) {
	objs := []client.Object{aheadES("synced", 1, 1), aheadES("new", 1, 0), aheadES("changed", 2, 1), aheadES("also-synced", 3, 3)}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&v1alpha1.ExternalSecret{}, IndexUnsynced, unsyncedIndex).Build()
	a := &ahead{c: c}
	h := a.handler()
	// Before the controller starts, the handler has no queue and drops
	// what it sees: the list at the start finds it.
	h.OnAdd(aheadES("before-start", 1, 0), false)

	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	if err := a.start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	// The replay then queues everything at low priority, which does not
	// lower what ahead queued.
	for _, o := range objs {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	got := drainQueue(q)
	want := map[string]int{"new": 0, "changed": 0, "synced": handler.LowPriority, "also-synced": handler.LowPriority}
	for name, prio := range want {
		if p, ok := got[name]; !ok || p != prio {
			t.Errorf("%s: queued %v at priority %d, want priority %d", name, ok, p, prio)
		}
	}
	if _, ok := got["before-start"]; ok {
		t.Errorf("an ExternalSecret seen before the start was queued by the handler")
	}

	// Once started, the handler queues a new unsynced ExternalSecret and a
	// spec change, not a synced one nor a status update.
	h.OnAdd(aheadES("created", 1, 0), false)
	h.OnAdd(aheadES("created-synced", 1, 1), false)
	h.OnUpdate(aheadES("edited", 1, 1), aheadES("edited", 2, 1))
	h.OnUpdate(aheadES("failing", 1, 0), aheadES("failing", 1, 0))
	got = drainQueue(q)
	if len(got) != 2 || got["created"] != 0 || got["edited"] != 0 {
		t.Errorf("after the start the handler queued %v, want created and edited at priority 0", got)
	}
}
