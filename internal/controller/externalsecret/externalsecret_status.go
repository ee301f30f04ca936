package externalsecret

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/conditions"
	"github.com/watchword-dev/watchword/internal/controller/storeaccess"
	"github.com/watchword-dev/watchword/internal/engine"
)

// conflictRetry is how soon a sync that met a concurrent change runs again
// (by then the cache shows the change).
const conflictRetry = time.Second

// succeed records a successful sync.
// A due refresh moves refreshTime to now, which schedules the next one; a
// drift repair or re-render between refreshes leaves it.
func (r *Reconciler) succeed(s *scope, res *engine.Result, w *writeResult, inputs, force string, refreshed bool) {
	st := &s.es.Status
	if refreshed || st.RefreshTime == nil {
		st.RefreshTime = &s.now
	}
	read := *st.RefreshTime
	st.Versions = res.Versions
	st.InputsVersion = inputs
	st.ForceSyncedValue = force
	st.ObservedGeneration = s.es.Generation
	st.SyncedKeys = w.keys
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		st.Target = ""
		st.TargetResourceVersion = ""
	} else {
		st.Target = targetName(s.es)
		st.TargetResourceVersion = w.resourceVersion
	}
	st.Phase = v1alpha1.PhaseSyncing
	msg := "Secret " + quote(targetName(s.es)) + " holds the data of " + s.store.Describe()
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		msg = "data read from " + s.store.Describe() + " (creationPolicy None: no Secret written)"
	}
	if s.interval == 0 {
		st.Phase = v1alpha1.PhaseCompleted
	}
	r.setConds(s, metav1.ConditionTrue, "SecretSynced", msg, &read)
}

// fail records a failed sync and decides how to retry. The target is left
// as it is: it keeps its last good data.
func (r *Reconciler) fail(s *scope, err error) (ctrl.Result, error) {
	reason, msg := describe(err)
	retry := retryable(err)
	switch {
	case reason == "StoreNotFound" || reason == "TargetMissing" || reason == "TemplateNotFound":
		s.es.Status.Phase = v1alpha1.PhasePending
	case retry:
		s.es.Status.Phase = v1alpha1.PhaseFailing
	default:
		s.es.Status.Phase = v1alpha1.PhaseFailed
	}
	r.setConds(s, metav1.ConditionFalse, reason, msg, nil)
	r.Recorder.Event(s.es, corev1.EventTypeWarning, reason, msg)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if retry {
		// Returned so that the work queue retries with exponential
		// backoff; the message names keys and stores, never values.
		return ctrl.Result{}, err
	}
	if reason == "TargetMissing" {
		// The Secret's creation also triggers a reconcile; this is a
		// safety net.
		return ctrl.Result{RequeueAfter: 5 * time.Minute}, nil
	}
	return ctrl.Result{}, nil
}

// describe turns an error into a condition reason and message.
func describe(err error) (string, string) {
	var ue *storeaccess.UserError
	if errors.As(err, &ue) {
		return ue.Reason, ue.Msg
	}
	if apierrors.IsConflict(err) {
		return "WriteConflict", "the target changed while it was being written; retrying: " + err.Error()
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return "TargetRejected", "the API server refused the target Secret: " + err.Error()
	}
	reason, _ := engine.Classify(err)
	return string(reason), err.Error()
}

func (r *Reconciler) setConds(s *scope, status metav1.ConditionStatus, reason, msg string, synced *metav1.Time) {
	for _, t := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInSync} {
		conditions.SetES(&s.es.Status.Conditions, v1alpha1.ExternalSecretCondition{
			Type: t, Status: status, Reason: reason, Message: msg, LastSyncTime: synced, ObservedGeneration: s.es.Generation,
		}, s.now)
	}
}

// writeStatus writes the status once, if it changed. It is a whole update
// of the status subresource carrying the resourceVersion that was read:
// cheaper for the API server than a patch (which it must apply to the
// stored object first), and a concurrent change of the ExternalSecret
// makes it fail with a conflict instead of recording the outcome of a
// stale spec.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if apiequality.Semantic.DeepEqual(s.before.Status, s.es.Status) {
		return nil
	}
	err := r.Client.Status().Update(ctx, s.es)
	key := s.es.Namespace + "/" + s.es.Name
	switch {
	case err != nil:
	case s.es.Status.RefreshTime != nil && !failing(s.es):
		r.pending.Store(key, s.es.Status.DeepCopy())
	default:
		r.pending.Delete(key)
	}
	return client.IgnoreNotFound(err)
}

func quote(s string) string { return `"` + s + `"` }
