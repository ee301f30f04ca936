package restart

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Argo Rollouts. A Rollout is restarted the way Argo Rollouts restarts
// one (`kubectl argo rollouts restart`): spec.restartAt is set, and the
// Rollout's controller replaces its pods one at a time without going
// through the canary or blue-green steps, then records status.restartedAt.
// Changing the pod template instead would start a full rollout, with its
// steps, pauses and analysis, for a Secret that did not change the
// version. Rollouts are watched, like the other kinds, only when they
// carry the label, in a cache of their own that is made once the cluster
// serves argoproj.io/v1alpha1 Rollouts (at start, or when the CRD
// appears later).

var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// rolloutPoll is how often Watchword looks for the Rollout CRD until the
// cluster serves it.
const rolloutPoll = 15 * time.Second

// rolloutKind is the Rollout as a kind of workload.
var rolloutKind = kind{
	name: "Rollout",
	newObj: func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rolloutGVK)
		return u
	},
	newList: func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(rolloutGVK.GroupVersion().WithKind("RolloutList"))
		return l
	},
	items: func(l client.ObjectList) []client.Object {
		items := l.(*unstructured.UnstructuredList).Items
		out := make([]client.Object, len(items))
		for i := range items {
			out[i] = &items[i]
		}
		return out
	},
}

// rolloutTemplate is a Rollout's pod template; empty for one that refers
// to a Deployment's template (spec.workloadRef) or does not parse.
func rolloutTemplate(u *unstructured.Unstructured) *corev1.PodTemplateSpec {
	out := &corev1.PodTemplateSpec{}
	if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "template"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, out)
	}
	return out
}

// rolloutObservedGeneration is the generation the Rollout's controller
// has seen; Argo Rollouts writes it as a string.
func rolloutObservedGeneration(u *unstructured.Unstructured) int64 {
	s, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
	g, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Some versions write a number.
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return n
	}
	return g
}

// rolloutBehind tells whether a Rollout has not finished: a phase other
// than Healthy, a restart asked for (spec.restartAt) that its status does
// not report done (status.restartedAt), or fewer replicas updated or
// available than it asks for.
func rolloutBehind(u *unstructured.Unstructured) bool {
	if phase, ok, _ := unstructured.NestedString(u.Object, "status", "phase"); ok && phase != "Healthy" {
		return true
	}
	if asked, ok, _ := unstructured.NestedString(u.Object, "spec", "restartAt"); ok && asked != "" {
		done, _, _ := unstructured.NestedString(u.Object, "status", "restartedAt")
		a, errA := time.Parse(time.RFC3339, asked)
		d, errD := time.Parse(time.RFC3339, done)
		if errA == nil && (errD != nil || d.Before(a)) {
			return true
		}
	}
	want, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !ok {
		want = 1
	}
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	return updated < want || available < want
}

// rolloutWatch looks for the Rollout CRD and, once the cluster serves
// it, starts the restart controller of Rollouts.
type rolloutWatch struct {
	disc   discovery.DiscoveryInterface
	served atomic.Bool
	start  func() error
}

// Start looks at once, then every rolloutPoll until it finds Rollouts.
func (w *rolloutWatch) Start(ctx context.Context) error {
	tick := time.NewTicker(rolloutPoll)
	defer tick.Stop()
	for {
		found, err := w.find()
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "looking for the Argo Rollouts API")
		}
		if found {
			if err := w.start(); err != nil {
				return err
			}
			ctrl.LoggerFrom(ctx).Info("the cluster serves Argo Rollouts: restarting opted-in and listed Rollouts")
			w.served.Store(true)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NeedLeaderElection: every replica looks; the controller it starts is
// leader-elected as the others are.
func (w *rolloutWatch) NeedLeaderElection() bool { return false }

func (w *rolloutWatch) find() (bool, error) {
	res, err := w.disc.ServerResourcesForGroupVersion(rolloutGVK.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range res.APIResources {
		if r.Name == "rollouts" {
			return true, nil
		}
	}
	return false, nil
}
