package refreshhook

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaderLabel (with the value "true") marks the pod of the replica whose refresh
// endpoint listens: the leader, the one replica whose controllers sync.
// The endpoint's Service selects it, so that a notification sent to the
// Service reaches the leader rather than a standby, which does not listen.
//
// Why a label rather than a standby forwarding to the leader: the Service
// then routes by itself, with no second hop, no proxy in every replica and
// no port open on the standbys; `kubectl get pods -L watchword.io/leader`
// shows which pod leads. The cost is one permission, patch on pods in the
// controller's own namespace, and a label that can outlive the leadership
// when a process ends without removing it: a crashed process's pod keeps
// it until its container starts again, and the new process removes it
// before it is ready (Remove, called at start); a pod on a lost node keeps
// it until the pod is deleted, but is no longer ready, so the Service
// leaves it out. While the lease moves, no pod has the label for a moment
// and a sender's connection is refused: it retries.
const LeaderLabel = "watchword.io/leader"

// LeaderPod labels this replica's pod with LeaderLabel while its endpoint
// listens (Server.Start).
type LeaderPod struct {
	// Client writes the pod: patch on pods in its namespace.
	Client client.Client
	// Pod is this replica's pod.
	Pod types.NamespacedName
	// backoff paces the attempts to label; zero: defaultBackoff.
	backoff wait.Backoff
}

// defaultBackoff retries a failed label from half a second, doubling up
// to 30 s: until the label is on, the Service sends notifications nowhere.
var defaultBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * time.Second}

// set puts the label on (or takes it off) the pod, with a JSON merge
// patch that touches the label alone.
func (p *LeaderPod) set(ctx context.Context, on bool) error {
	var v any // null removes the label
	if on {
		v = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{LeaderLabel: v}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Pod.Namespace, Name: p.Pod.Name}}
	return p.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
}

// Label puts the label on the pod, trying again until it succeeds or ctx
// ends.
func (p *LeaderPod) Label(ctx context.Context) {
	log := ctrl.Log.WithName("refresh-hook").WithValues("pod", p.Pod.String(), "label", LeaderLabel)
	b := p.backoff
	if b.Duration == 0 {
		b = defaultBackoff
	}
	_ = wait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		if err := p.set(ctx, true); err != nil {
			if ctx.Err() == nil {
				log.Error(nil, "cannot label this replica's pod as the leader's; the refresh endpoint's Service does not reach it until it can; trying again",
					"reason", reasonOf(err))
			}
			return false, nil
		}
		log.Info("labelled this replica's pod as the leader's: the refresh endpoint's Service now reaches it")
		return true, nil
	})
}

// Remove takes the label off the pod, if it is there; a pod that is gone
// has none.
func (p *LeaderPod) Remove(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.set(ctx, false); err != nil && !apierrors.IsNotFound(err) {
		ctrl.Log.WithName("refresh-hook").Error(nil, "cannot remove the leader label from this replica's pod; the refresh endpoint's Service may send notifications to it, which does not listen",
			"pod", p.Pod.String(), "label", LeaderLabel, "reason", reasonOf(err))
	}
}
