package pushsecret

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// The conditions of a PushSecret are the standard ones: Ready (every
// destination holds the selected data; otherwise the reason of the
// failure that matters most, and how many destinations are published) and
// Stalled (present while every failure waits for a change). The state of
// each destination is in status.destinations.

// record records the outcome of the destinations and schedules the next
// read-back. A failure that a retry may cure is retried with backoff; when
// every failure is terminal, the PushSecret waits for a change (of itself,
// its source Secret or a store), and reads back on its interval.
func (r *Reconciler) record(_ context.Context, s *scope) (bool, error) {
	st := &s.ps.Status
	gen := s.ps.Generation
	st.Destinations = s.destinations
	s.outcome = ctrl.Result{RequeueAfter: nextCheck(s)}
	if len(s.failures) == 0 {
		st.ObservedGeneration = gen
		msg := fmt.Sprintf("Secret %q is published to %d of %d destinations", s.ps.Spec.SecretName, published(s), len(s.targets))
		if s.ps.Spec.SecretSelector != nil {
			msg = selectedMessage(s)
		}
		if n := existing(s); n > 0 {
			msg += fmt.Sprintf("; %d left as they exist (updatePolicy IfNotExists)", n)
		}
		conditions.Set(&st.Conditions, conditions.Outcome{Reason: failure.Published, Message: msg}, gen)
		return true, nil
	}
	err := s.failures[0]
	for _, f := range s.failures {
		if !failure.Terminal(f) {
			err = f
			break
		}
	}
	conditions.Set(&st.Conditions, conditions.Outcome{Err: err,
		Message: fmt.Sprintf("%d of %d destinations published, %d failing", published(s), len(s.targets), len(s.failures))}, gen)
	if wait, ok := failure.RetryAfter(err); ok && !failure.Terminal(err) && !errors.Is(err, engine.ErrUnauthenticated) {
		// The store asked to slow down, or its call budget is spent:
		// try when that ends. (A hold after refused credentials keeps
		// the backoff: new credentials end it at once.)
		s.outcome = ctrl.Result{RequeueAfter: wait}
	} else if !failure.Terminal(err) {
		s.outcome, s.retry = ctrl.Result{}, failure.Redacted(err)
	}
	return true, nil
}

// selectedMessage says what a PushSecret with secretSelector published.
func selectedMessage(s *scope) string {
	names := selectedNames(s)
	if len(names) == 0 {
		return "no Secret of the namespace matches spec.secretSelector: nothing is published"
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return publishing.Clip(fmt.Sprintf("%d Secrets matched by spec.secretSelector are published to %d of %d remote secrets (status.destinations): %s",
		len(names), published(s), len(s.targets), strings.Join(quoted, ", ")), 1024)
}

func published(s *scope) int {
	n := 0
	for _, d := range s.destinations {
		if d.State == v1alpha1.PushPublished {
			n++
		}
	}
	return n
}

// existing counts the destinations left as they exist (updatePolicy
// IfNotExists).
func existing(s *scope) int {
	n := 0
	for _, d := range s.destinations {
		if d.State == v1alpha1.PushExists {
			n++
		}
	}
	return n
}

// fail records a failure that stopped the reconcile before any
// destination: nothing published is changed, and the destinations keep
// their last status.
func (r *Reconciler) fail(s *scope, err error) (ctrl.Result, error) {
	class, msg := failure.Describe(err)
	st := &s.ps.Status
	old := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	conditions.Set(&st.Conditions, conditions.Outcome{Err: err, Message: "nothing published was changed"}, s.ps.Generation)
	if now := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); old == nil || old.Reason != now.Reason || old.Message != now.Message {
		r.Recorder.Event(s.ps, corev1.EventTypeWarning, string(class.Reason), msg)
	}
	if class.Terminal {
		// A change of the PushSecret, its source Secret or a store
		// queues it again.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, failure.Redacted(err)
}

// writeStatus writes the status once, if it changed. It is an update
// carrying the resourceVersion that was read, so a concurrent change of the
// PushSecret makes it fail and the PushSecret is reconciled again as it is
// now.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, res ctrl.Result, err error) (ctrl.Result, error) {
	if apiequality.Semantic.DeepEqual(s.before.Status, s.ps.Status) {
		return res, err
	}
	perr := r.Client.Status().Update(ctx, s.ps)
	switch {
	case perr == nil || apierrors.IsNotFound(perr) || err != nil:
		return res, err
	case apierrors.IsConflict(perr):
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	default:
		return ctrl.Result{}, failure.Redacted(perr)
	}
}
