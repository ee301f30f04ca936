package externalsecret

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// The conditions of an ExternalSecret:
//
//   - InSync (seed 004): the outcome of the last sync. True with
//     lastSyncTime, the time of the last successful sync; False with the
//     reason and message of the failure, lastSyncTime still telling when
//     the target last got its data.
//   - Ready: the ExternalSecret is fully reconciled, its target holding the
//     data of its current spec. False while a sync fails, with the same
//     reason, and a message that says what the target holds meanwhile.
//   - Stalled: present while a terminal failure waits for a change.
//   - Fresh: True (reason Refreshed) after a successful sync; False with
//     reason Stale once no refresh has succeeded for more than
//     staleIntervals refresh intervals (schedule.go), its message naming
//     the failure that keeps it stale. Ready and InSync keep that
//     failure's own reason, so an alert on a reason stays specific.
//
// A refresh that changes none of this writes nothing: refreshTime and
// InSync's lastSyncTime then move at most once per status period
// (settleRefreshTime).

// succeed records a successful sync. A due refresh moves refreshTime to
// now, which schedules the next one; a drift repair or re-render between
// refreshes leaves it.
func (r *Reconciler) succeed(s *scope) {
	st := &s.es.Status
	if s.plan.due() || st.RefreshTime == nil {
		st.RefreshTime = &s.now
	}
	read := *st.RefreshTime
	st.Versions = s.result.Versions
	st.Found = s.result.Found
	st.InputsVersion = s.inputs
	st.ForceSyncedValue = s.es.Annotations[conditions.ForceSyncAnnotation]
	st.ObservedGeneration = s.es.Generation
	st.SyncedKeys, st.SyncedKeyCount = syncedKeys(s.written.keys)
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		st.Target = ""
		st.TargetResourceVersion = ""
	} else {
		st.Target = targetindex.Name(s.es)
		st.TargetResourceVersion = s.written.resourceVersion
	}
	st.Phase = v1alpha1.PhaseSyncing
	if s.plan.interval == 0 {
		st.Phase = v1alpha1.PhaseCompleted
	}
	from := s.store.Describe()
	ready := targetWord(s.es) + " " + quote(targetindex.Name(s.es)) + " holds the data of " + from
	inSync := "synced from " + from
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		ready = "data read from " + from + " (creationPolicy None: no Secret written)"
		inSync = ready
	}
	if empty := emptyFinds(s.result.Found); empty != "" {
		ready += "; " + empty
		inSync += "; " + empty
	}
	conditions.SetES(&st.Conditions, conditions.Outcome{Reason: failure.Synced, Message: ready}, s.es.Generation, s.now)
	conditions.PutES(&st.Conditions, v1alpha1.ExternalSecretCondition{
		Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: string(failure.Synced), Message: inSync,
		LastSyncTime: &read, ObservedGeneration: s.es.Generation,
	}, s.now)
	conditions.PutES(&st.Conditions, v1alpha1.ExternalSecretCondition{
		Type: v1alpha1.ConditionFresh, Status: metav1.ConditionTrue, Reason: string(failure.Refreshed),
		Message: "the last sync read the data successfully", ObservedGeneration: s.es.Generation,
	}, s.now)
}

// maxSyncedKeys is the bound of status.syncedKeys (the CRD's MaxItems).
const maxSyncedKeys = 1024

// syncedKeys is status.syncedKeys and syncedKeyCount for the keys a sync
// wrote (in order): the first maxSyncedKeys of them, and how many there
// are, so that the status can tell of any number of keys and the API
// server never refuses it for their number.
func syncedKeys(keys []string) ([]string, int32) {
	return slices.Clone(keys[:min(len(keys), maxSyncedKeys)]), int32(min(len(keys), math.MaxInt32))
}

// markStale turns Fresh False once the ExternalSecret has gone more than
// staleIntervals refresh intervals without a successful refresh; why says
// what stands in the way. The message names it and the last refresh seen,
// which stay the same while the cause lasts: a failure retried again and
// again writes the status once.
func markStale(s *scope, why string) {
	plan := s.schedule()
	if !plan.stale() {
		return
	}
	st := &s.es.Status
	conditions.PutES(&st.Conditions, v1alpha1.ExternalSecretCondition{
		Type: v1alpha1.ConditionFresh, Status: metav1.ConditionFalse, Reason: string(failure.Stale),
		Message: fmt.Sprintf("no successful refresh seen since %s, more than %d refresh intervals of %s; %s",
			plan.lastRead.UTC().Format(time.RFC3339), staleIntervals, plan.interval, why),
		ObservedGeneration: s.es.Generation,
	}, s.now)
}

// fail records a failed sync and decides how to retry. The target is left
// as it is: it keeps its last good data.
func (r *Reconciler) fail(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	if wait, ok := failure.RetryAfter(err); ok && errors.Is(err, engine.ErrHeldBack) {
		// Not a failure: the store's own call limits (calls in flight,
		// call budget) hold the call back. The worker is freed for
		// other stores, and the sync tried again when the limit allows,
		// with jitter, with nothing recorded: the target keeps its data.
		// Only a refresh held back for longer than staleIntervals
		// intervals shows, as Fresh False: the limits starve it.
		_, msg := failure.Describe(err)
		markStale(s, "the store's call limits (spec.limits, or the controller's defaults) hold its refreshes back: "+msg)
		retry := wait + time.Duration(rand.Int64N(int64(wait/2)+1))
		// A read that waits its turn in line (engine.Turn) may wait
		// several intervals: it comes back when it turns stale too, to
		// say so (its reserved call is kept meanwhile).
		if d, ok := s.schedule().untilStale(); ok && d+time.Second < retry {
			retry = d + time.Second
		}
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	class, msg := failure.Describe(err)
	st := &s.es.Status
	switch {
	case class.Reason == failure.StoreNotFound || class.Reason == failure.TargetMissing || class.Reason == failure.TemplateNotFound:
		st.Phase = v1alpha1.PhasePending
	case class.Terminal:
		st.Phase = v1alpha1.PhaseFailed
	default:
		st.Phase = v1alpha1.PhaseFailing
	}
	var recheck time.Duration
	if class.Terminal {
		recheck = terminalRecheck(s.es, class.Reason)
	}
	conditions.SetES(&st.Conditions, conditions.Outcome{Err: err, Message: r.targetState(s), Recheck: recheck}, s.es.Generation, s.now)
	conditions.PutES(&st.Conditions, v1alpha1.ExternalSecretCondition{
		Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: string(class.Reason), Message: msg,
		ObservedGeneration: s.es.Generation,
	}, s.now)
	markStale(s, fmt.Sprintf("the sync fails with %s: %s", class.Reason, msg))
	recordForceFailure(s, class)
	r.Recorder.Event(s.es, corev1.EventTypeWarning, string(class.Reason), msg)
	switch {
	case class.Reason == failure.WriteConflict:
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case class.Terminal:
		// No backoff: a change of the ExternalSecret, its store, its
		// templates or its target queues it again, and so does the
		// recheck, for a cause no watch sees.
		ctrl.LoggerFrom(ctx).Info("sync failed; waiting for a change", "reason", class.Reason, "error", msg, "recheckIn", recheck)
		return ctrl.Result{RequeueAfter: recheck}, nil
	default:
		if wait, ok := failure.RetryAfter(err); ok && !errors.Is(err, engine.ErrUnauthenticated) {
			// The store asked to slow down: try when its hold ends,
			// not sooner nor much later. (A hold after refused
			// credentials keeps the backoff: new credentials end it
			// at once, and the next try must not wait for its end.)
			return ctrl.Result{RequeueAfter: wait + time.Duration(rand.Int64N(int64(wait/10)+1))}, nil
		}
		// The work queue retries with exponential backoff; the error's
		// text is redacted, as it is logged.
		return ctrl.Result{}, failure.Redacted(err)
	}
}

// recordForceFailure records that the sync asked for by the force-sync
// annotation's current value failed, so that whoever set that value can
// tell its own request's failure from an older one. A write conflict or a
// cancelled reconcile is no outcome: the sync is retried at once.
func recordForceFailure(s *scope, class failure.Class) {
	if !forcePending(s.es) || class.Reason == failure.WriteConflict || class.Reason == failure.ReconcileCanceled {
		return
	}
	s.es.Status.ForceSyncFailedValue = s.es.Annotations[conditions.ForceSyncAnnotation]
}

// targetState says, for Ready's message, what the target holds while a
// sync fails.
func (r *Reconciler) targetState(s *scope) string {
	st := &s.es.Status
	switch {
	case s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone:
		return "no Secret is written (creationPolicy None)"
	case st.Target == "" || st.RefreshTime == nil:
		return targetWord(s.es) + " " + quote(targetindex.Name(s.es)) + " has not been written yet"
	default:
		at := st.RefreshTime.Time
		if m := s.mem.refreshed; m != nil && m.After(at) {
			at = *m
		}
		return targetWord(s.es) + " " + quote(st.Target) + " keeps the data last synced at " + at.UTC().Format("2006-01-02T15:04:05Z")
	}
}

// writeStatus writes the status once, if it changed, and returns the
// reconcile's result. It is a whole update of the status subresource
// carrying the resourceVersion that was read: cheaper for the API server
// than a patch (which it must apply to the stored object first: about 15 %,
// FINDINGS.md, "Where the API server's time goes"), and a
// concurrent change of the ExternalSecret makes it fail with a conflict
// instead of recording the outcome of a stale spec; then the
// ExternalSecret is synced again as it is now (its target write, if any,
// is remembered).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, res ctrl.Result, err error) (ctrl.Result, error) {
	if s.abandoned {
		return res, err
	}
	settleRefreshTime(s)
	if apiequality.Semantic.DeepEqual(s.before.Status, s.es.Status) {
		s.recorded = true
		return res, err
	}
	perr := r.putStatus(ctx, s.es)
	s.recorded = perr == nil
	key := s.es.Namespace + "/" + s.es.Name
	switch {
	case perr != nil:
	case s.es.Status.RefreshTime != nil && !failing(s.es):
		r.pending.Store(key, s.es.Status.DeepCopy())
	default:
		r.pending.Delete(key)
	}
	if refused := failure.Rejected(perr, failure.StatusRejected); refused != perr { //nolint:errorlint // the very error: Rejected returns it unchanged when the API server did not refuse the write
		return r.statusRefused(ctx, s, res, err, refused)
	}
	switch {
	case perr == nil || apierrors.IsNotFound(perr) || err != nil || ctx.Err() != nil:
		return res, err
	case apierrors.IsConflict(perr):
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	default:
		return ctrl.Result{}, failure.Redacted(perr)
	}
}

// putStatus updates the status subresource of es.
func (r *Reconciler) putStatus(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	if r.statusPut != nil {
		return r.statusPut.put(ctx, es)
	}
	return r.Client.Status().Update(ctx, es)
}

// statusRefused tells that the API server refused the status of this
// reconcile (refused, of class StatusRejected), so that the status does
// not go on showing an earlier sync as if it were the last: the status as
// it is stored gets Ready False (and Stalled, for a refusal that the same
// status would meet again), saying that the status could not be written,
// why (the field paths and reasons of the refusal, never a value), and
// what the sync itself concluded; a Warning event says the same, in case
// that write is refused too. A refusal that retrying can cure (an
// admission rule) is retried with backoff; another waits for the next
// sync the schedule plans, or the recheck of a terminal failure.
func (r *Reconciler) statusRefused(ctx context.Context, s *scope, res ctrl.Result, err, refused error) (ctrl.Result, error) {
	class, msg := failure.Describe(refused)
	outcome := "the sync's own outcome could not be told"
	if c := conditions.FindES(s.es.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		outcome = "the sync itself: " + c.Reason + ": " + c.Message
	}
	told := s.before.DeepCopy()
	st := &told.Status
	recheck := terminalRecheck(s.es, class.Reason)
	conditions.SetES(&st.Conditions, conditions.Outcome{
		Err:     &failure.Error{Class: class, Msg: "the status of this ExternalSecret could not be written, and its other fields show an earlier sync: " + msg, Err: refused},
		Message: outcome, Recheck: recheck,
	}, s.es.Generation, s.now)
	st.Phase = v1alpha1.PhaseFailing
	if class.Terminal {
		st.Phase = v1alpha1.PhaseFailed
	}
	r.Recorder.Event(s.es, corev1.EventTypeWarning, string(class.Reason), "the status of this ExternalSecret could not be written: "+msg)
	if !apiequality.Semantic.DeepEqual(s.before.Status, told.Status) {
		if perr := r.putStatus(ctx, told); perr != nil {
			ctrl.LoggerFrom(ctx).Info("the status that tells of a refused status was not written either", "reason", failure.Classify(perr).Reason, "error", failure.Redact(perr))
		}
	}
	// What the reconcile reports (metrics, freshness) is what the
	// status says now.
	s.es.Status = told.Status
	switch {
	case err != nil || ctx.Err() != nil:
		return res, err
	case !class.Terminal:
		return ctrl.Result{}, failure.Redacted(refused)
	case res.RequeueAfter > 0 && res.RequeueAfter < recheck:
		return res, nil
	default:
		return ctrl.Result{RequeueAfter: recheck}, nil
	}
}

func quote(s string) string { return `"` + s + `"` }

// settleRefreshTime decides the refreshTime (and InSync's lastSyncTime) of
// the status about to be written (schedule.go). When nothing else
// changed, a refresh moves it only for the coarse write of its status
// period, to the period's phase point, and otherwise leaves the status as
// it was: nothing is written. When something else changed, the status is
// written anyway and carries the exact time of the last refresh, the one
// this instance remembers if the status shows an older one.
func settleRefreshTime(s *scope) {
	st, old := &s.es.Status, &s.before.Status
	if st.RefreshTime == nil || old.RefreshTime == nil {
		return
	}
	if onlyRefreshMoved(old, st) {
		if at, ok := s.plan.coarseWrite(); ok && s.refreshed {
			stampRefresh(st, metav1.NewTime(at))
		} else {
			*st = *old.DeepCopy()
		}
		return
	}
	if m := s.mem.refreshed; m != nil && m.After(st.RefreshTime.Time) {
		stampRefresh(st, metav1.NewTime(*m))
	}
}

// onlyRefreshMoved tells whether the new status differs from the old one
// in refreshTime and InSync's lastSyncTime at most.
func onlyRefreshMoved(old, st *v1alpha1.ExternalSecretStatus) bool {
	c := st.DeepCopy()
	c.RefreshTime = old.RefreshTime
	if in := conditions.FindES(c.Conditions, v1alpha1.ConditionInSync); in != nil {
		in.LastSyncTime = nil
		if was := conditions.FindES(old.Conditions, v1alpha1.ConditionInSync); was != nil {
			in.LastSyncTime = was.LastSyncTime
		}
	}
	return apiequality.Semantic.DeepEqual(*old, *c)
}

// stampRefresh records at as the time of the last refresh: refreshTime
// and InSync's lastSyncTime, which are the same.
func stampRefresh(st *v1alpha1.ExternalSecretStatus, at metav1.Time) {
	st.RefreshTime = &at
	if in := conditions.FindES(st.Conditions, v1alpha1.ConditionInSync); in != nil && in.LastSyncTime != nil {
		t := at
		in.LastSyncTime = &t
	}
}

// emptyFinds names the finds that matched nothing, for the conditions'
// messages: a find that matches nothing is not an error (its keys are
// simply absent), but it is told.
func emptyFinds(found []v1alpha1.FoundCount) string {
	var empty []string
	for _, f := range found {
		if f.Matched == 0 {
			empty = append(empty, fmt.Sprintf("dataFrom[%d].find", f.DataFrom))
		}
	}
	if len(empty) == 0 {
		return ""
	}
	return strings.Join(empty, ", ") + " matched no remote object"
}
