package restart

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kind is one kind of workload that can be restarted.
type kind struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
	items   func(client.ObjectList) []client.Object
}

// Kinds are the workloads Watchword restarts.
var kinds = []kind{
	{"Deployment", func() client.Object { return &appsv1.Deployment{} }, func() client.ObjectList { return &appsv1.DeploymentList{} },
		func(l client.ObjectList) []client.Object { return ptrs(l.(*appsv1.DeploymentList).Items) }},
	{"StatefulSet", func() client.Object { return &appsv1.StatefulSet{} }, func() client.ObjectList { return &appsv1.StatefulSetList{} },
		func(l client.ObjectList) []client.Object { return ptrs(l.(*appsv1.StatefulSetList).Items) }},
	{"DaemonSet", func() client.Object { return &appsv1.DaemonSet{} }, func() client.ObjectList { return &appsv1.DaemonSetList{} },
		func(l client.ObjectList) []client.Object { return ptrs(l.(*appsv1.DaemonSetList).Items) }},
	// A CronJob is "restarted" by stamping the template of the Jobs it
	// will create: the next Job runs with the new stamp, and the Jobs
	// running already are left alone. It has no rollout to wait for.
	{"CronJob", func() client.Object { return &batchv1.CronJob{} }, func() client.ObjectList { return &batchv1.CronJobList{} },
		func(l client.ObjectList) []client.Object { return ptrs(l.(*batchv1.CronJobList).Items) }},
}

// templatePatch is the part of a patch of the workload's spec that
// patches its pod template with tmpl.
func (k kind) templatePatch(tmpl map[string]any) map[string]any {
	if k.name == "CronJob" {
		return map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": tmpl}}}
	}
	return map[string]any{"template": tmpl}
}

func ptrs[T any, P interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// podTemplate is the pod template of a workload.
func podTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	case *batchv1.CronJob:
		return &w.Spec.JobTemplate.Spec.Template
	case *unstructured.Unstructured:
		return rolloutTemplate(w)
	}
	return &corev1.PodTemplateSpec{}
}

// rollingOut tells whether a workload's rollout has not finished, from
// what its controller reports in its status: the spec it has seen, and
// how many replicas are updated and available.
func rollingOut(obj client.Object) bool {
	return observedGeneration(obj) < obj.GetGeneration() || replicasBehind(obj)
}

// observedGeneration is the generation the workload's controller has seen.
func observedGeneration(obj client.Object) int64 {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Status.ObservedGeneration
	case *appsv1.StatefulSet:
		return w.Status.ObservedGeneration
	case *appsv1.DaemonSet:
		return w.Status.ObservedGeneration
	case *unstructured.Unstructured:
		return rolloutObservedGeneration(w)
	}
	return obj.GetGeneration()
}

// replicasBehind tells whether fewer replicas are updated or available
// than the workload asks for, or old ones remain.
func replicasBehind(obj client.Object) bool {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		want := ptr.Deref(w.Spec.Replicas, 1)
		s := w.Status
		return s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > s.UpdatedReplicas
	case *appsv1.StatefulSet:
		want := ptr.Deref(w.Spec.Replicas, 1)
		s := w.Status
		// With OnDelete, pods are updated only when someone deletes them.
		updating := w.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && s.UpdatedReplicas < want
		return updating || s.AvailableReplicas < want
	case *appsv1.DaemonSet:
		s := w.Status
		updating := w.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType && s.UpdatedNumberScheduled < s.DesiredNumberScheduled
		return updating || s.NumberAvailable < s.DesiredNumberScheduled
	case *unstructured.Unstructured:
		return rolloutBehind(w)
	}
	return false
}
