package restart

import (
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
