package restart

import (
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRollingOut(t *testing.T) {
	gen := metav1.ObjectMeta{Generation: 2}
	cases := []struct {
		name string
		obj  client.Object
		want bool
	}{
		{"deployment done", &appsv1.Deployment{ObjectMeta: gen, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}, false},
		{"deployment not yet seen", &appsv1.Deployment{ObjectMeta: gen, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}, true},
		{"deployment with old pods", &appsv1.Deployment{ObjectMeta: gen, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}}, true},
		// A Deployment scaled to zero has finished its rollout as soon as
		// its controller has seen the spec.
		{"deployment without replicas, seen", &appsv1.Deployment{ObjectMeta: gen, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2}}, false},
		{"deployment without replicas, not yet seen", &appsv1.Deployment{ObjectMeta: gen, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1}}, true},
		{"deployment not available", &appsv1.Deployment{ObjectMeta: gen,
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1}}, true},
		{"statefulset updating", &appsv1.StatefulSet{ObjectMeta: gen,
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, AvailableReplicas: 1}}, true},
		{"statefulset on delete", &appsv1.StatefulSet{ObjectMeta: gen,
			Spec:   appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, AvailableReplicas: 1}}, false},
		{"daemonset done", &appsv1.DaemonSet{ObjectMeta: gen,
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}}, false},
		{"daemonset updating", &appsv1.DaemonSet{ObjectMeta: gen,
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberAvailable: 3}}, true},
	}
	for _, c := range cases {
		if got := rollingOut(c.obj); got != c.want {
			t.Errorf("%s: rollingOut = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOwnRecordIsNoRollout: a Deployment's generation moves when Watchword
// records in its annotations; until the deployment controller has seen it,
// that generation alone is no rollout, and any other is.
func TestOwnRecordIsNoRollout(t *testing.T) {
	r := &Reconciler{recorded: &sync.Map{}}
	ref := Ref{"Deployment", "ns", "web"}
	dep := func(gen, seen int64) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DeploymentStatus{ObservedGeneration: seen, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}}
	}
	if !r.inProgress(ref, dep(3, 2)) {
		t.Error("an unseen generation Watchword did not make is no rollout")
	}
	r.recorded.Store(ref, int64(3))
	if r.inProgress(ref, dep(3, 2)) {
		t.Error("the generation of Watchword's own record counts as a rollout")
	}
	if !r.inProgress(ref, dep(4, 2)) {
		t.Error("a change after Watchword's record is no rollout")
	}
	if !r.inProgress(ref, dep(3, 1)) {
		t.Error("a record over an unfinished rollout hides it")
	}
	behind := dep(3, 3)
	behind.Status.AvailableReplicas = 0
	if !r.inProgress(ref, behind) {
		t.Error("replicas not available are no rollout")
	}
}
