package externalsecret

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		newFirst.Create(context.Background(), event.CreateEvent{Object: es, IsInInitialList: true}, q)
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
