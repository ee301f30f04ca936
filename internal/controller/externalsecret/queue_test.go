package externalsecret

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestInitialListQueuesNeverSyncedFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	synced := func(name string) *v1alpha1.ExternalSecret {
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1}}
		now := metav1.Now()
		es.Status.RefreshTime, es.Status.ObservedGeneration = &now, 1
		return es
	}
	changed := synced("changed")
	changed.Generation = 2
	fresh := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new", Generation: 1}}
	for _, es := range []*v1alpha1.ExternalSecret{synced("a"), synced("b"), fresh, synced("c"), changed} {
		(&Reconciler{}).externalSecretEvents().Create(context.Background(), event.CreateEvent{Object: es, IsInInitialList: true}, q)
	}
	got := map[string]int{}
	for range 5 {
		item, prio, _ := q.GetWithPriority()
		got[item.Name] = prio
		q.Done(item)
	}
	for name, want := range map[string]int{"new": 0, "changed": 0, "a": handler.LowPriority, "b": handler.LowPriority, "c": handler.LowPriority} {
		if got[name] != want {
			t.Errorf("%s queued at priority %d, want %d", name, got[name], want)
		}
	}
}

func TestFanOutQueuesNothingForTheInitialList(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	users := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "user"}}}
	}
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "store"}}
	h := fanOut(users)
	h.Create(context.Background(), event.CreateEvent{Object: store, IsInInitialList: true}, q)
	if q.Len() != 0 {
		t.Fatalf("the initial list queued %d ExternalSecrets; each is queued by its own", q.Len())
	}
	h.Create(context.Background(), event.CreateEvent{Object: store}, q)
	item, prio, _ := q.GetWithPriority()
	if item.Name != "user" || prio != handler.LowPriority {
		t.Errorf("a store created later queued %v at priority %d, want its user at low priority", item, prio)
	}
}
