package restart

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/steps"
)

// scope is one reconcile of one workload.
type scope struct {
	ref Ref
	key client.ObjectKey
	now time.Time

	// listers are the ExternalSecrets that list the workload in
	// spec.target.restartWorkloads.
	listers []*v1alpha1.ExternalSecret
	obj     client.Object
	ann     map[string]string
	optedIn bool

	// used are the Secrets an ExternalSecret writes that the workload
	// uses; watched the other Secrets and ConfigMaps it reloads for.
	used    map[string]Usage
	watched map[Object]Usage

	debounce  time.Duration
	window    *Window
	badWindow bool

	// sources are the ExternalSecrets that write each used Secret.
	sources map[string][]*v1alpha1.ExternalSecret
	plan    Plan

	// result is the reconcile's result once a step ended it.
	result ctrl.Result
}

// restartSteps is a reconcile of a workload, in order: each step may end
// it (with s.result) when there is nothing more to do.
var restartSteps = []steps.Step[*Reconciler, *scope]{
	{Name: "workload", Run: (*Reconciler).readWorkload},
	{Name: "opted-in", Run: (*Reconciler).optedIn},
	{Name: "consumed", Run: (*Reconciler).readConsumed},
	{Name: "annotations", Run: (*Reconciler).readAnnotations},
	{Name: "plan", Run: (*Reconciler).planRestart},
	{Name: "admit", Run: (*Reconciler).admitRestart},
	{Name: "restart", Run: (*Reconciler).restart},
}

// Reconcile records, delays, holds or makes the restart a workload owes.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &scope{ref: Ref{Kind: r.kind.name, Namespace: req.Namespace, Name: req.Name}, key: req.NamespacedName}
	if _, err := steps.Run(ctx, r, restartSteps, s); err != nil {
		return ctrl.Result{}, err
	}
	return s.result, nil
}

// end ends the reconcile with res, or with err; a conflict of a patch is
// retried quietly (conflictOr).
func (s *scope) end(res ctrl.Result, err error) (bool, error) {
	s.result = res
	return true, err
}

// readWorkload reads the workload. One that does not exist is forgotten,
// or, when an ExternalSecret lists it, awaited.
func (r *Reconciler) readWorkload(ctx context.Context, s *scope) (bool, error) {
	listers, err := r.listers(ctx, s.ref)
	if err != nil {
		return false, err
	}
	s.listers, s.obj = listers, r.kind.newObj()
	err = r.fetch(ctx, r.kind.name, s.key, s.obj, len(listers) > 0)
	switch {
	case err == nil:
		r.arrivals.forget(s.ref)
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	r.wake(r.Gate.Forget(s.ref))
	r.objects.track(s.ref, nil)
	r.recorded.Delete(s.ref)
	r.held.Delete(s.ref)
	if len(listers) > 0 {
		// Listed but missing: its creation is watched for, so that it is
		// taken as the baseline as soon as it appears (before a rotation
		// can come); looking again now and then is the fallback.
		r.arrivals.await(s.ref)
		return s.end(ctrl.Result{RequeueAfter: relookListed}, nil)
	}
	r.arrivals.forget(s.ref)
	return s.end(ctrl.Result{}, nil)
}

// optedIn goes on only for a workload of this instance's class that opted
// in or is listed, and is not being deleted. This reconcile may come from
// the workload's own change: if it is the workload restarted last and is
// now available, the restarts held for it go now.
func (r *Reconciler) optedIn(_ context.Context, s *scope) (bool, error) {
	r.wake(r.Gate.Observed(s.ref, s.obj.GetGeneration(), !r.inProgress(s.ref, s.obj)))
	s.ann = s.obj.GetAnnotations()
	s.optedIn = s.obj.GetLabels()[Label] == LabelValue
	if (!s.optedIn && len(s.listers) == 0) || s.ann[ClassAnnotation] != r.Class || !s.obj.GetDeletionTimestamp().IsZero() {
		r.objects.track(s.ref, nil)
		return s.end(ctrl.Result{}, nil)
	}
	return false, nil
}

// readConsumed finds what the workload uses, and watches by name the
// Secrets and ConfigMaps it reloads for.
func (r *Reconciler) readConsumed(ctx context.Context, s *scope) (bool, error) {
	used, watched, ok, err := r.consumed(ctx, s.ref, s.obj, s.optedIn, s.listers)
	if err != nil {
		return false, err
	}
	s.used, s.watched = used, watched
	r.objects.track(s.ref, slices.Collect(maps.Keys(watched)))
	if !ok {
		return s.end(ctrl.Result{}, nil)
	}
	return false, nil
}

// readAnnotations parses the debounce and the maintenance window; one
// that does not parse is told once (warn).
func (r *Reconciler) readAnnotations(_ context.Context, s *scope) (bool, error) {
	var err error
	s.debounce, err = Debounce(s.ann[DebounceAnnotation])
	r.warn(s.obj, s.ref, DebounceAnnotation, err)
	s.window, err = ParseWindow(s.ann[WindowAnnotation], s.ann[WindowDurationAnnotation])
	s.badWindow = r.warn(s.obj, s.ref, WindowAnnotation, err)
	return false, nil
}

// planRestart decides from the rotations of the Secrets it uses and the
// digests of what it reloads for whether a restart is due; one that is
// not is recorded and asked again when due (settle).
func (r *Reconciler) planRestart(ctx context.Context, s *scope) (bool, error) {
	rots, sources, err := r.rotations(ctx, s.ref.Namespace, s.used)
	if err != nil {
		return false, err
	}
	digests, err := r.digests(ctx, s.ref.Namespace, s.watched)
	if err != nil {
		return false, err
	}
	s.sources = sources
	s.now = r.Clock.Now()
	st := DecodeState(s.ann)
	changes, digests := Changes(s.now, digests, st.Digests)
	s.plan = Decide(s.now, s.used, st, append(rots, changes...), s.debounce).withDigests(digests)
	if !s.plan.Restart {
		return s.end(r.settle(ctx, s.now, s.ref, s.obj, s.plan))
	}
	return false, nil
}

// admitRestart holds a due restart while the window is closed or the
// gate says so (hold).
func (r *Reconciler) admitRestart(ctx context.Context, s *scope) (bool, error) {
	if v := r.admit(ctx, s.now, s.ref, s.obj, s.window, s.badWindow); !v.Go {
		return s.end(r.hold(ctx, s.now, s.ref, s.obj, s.plan, v))
	}
	return false, nil
}

// restart patches the workload (the restart annotation, or the env
// strategy's digest) and tells it.
func (r *Reconciler) restart(ctx context.Context, s *scope) (bool, error) {
	ref, obj, plan, now := s.ref, s.obj, s.plan, s.now
	envDigest, err := r.envDigest(ctx, ref, obj, s.used)
	if err != nil {
		r.Gate.Restarted(ref, 0)
		return false, err
	}
	if envDigest != "" && templateHasDigest(obj, envDigest) {
		// The env strategy's value is what the template holds already
		// (the keys in use are as they were: a change undone within the
		// debounce, a rotation of keys the workload does not read): a
		// patch would change no pod. The restart owed is settled, and
		// told as not needed, not as a restart.
		r.Gate.Restarted(ref, 0)
		r.Recorder.Event(obj, corev1.EventTypeNormal, ReasonRestartNotNeeded, "no restart for "+owedText(plan.Next.Pending)+
			": the keys in use hold what the running pods were started with")
		return s.end(r.settle(ctx, now, ref, obj, plan.settled()))
	}
	if err := r.patch(ctx, obj, plan.Next.Restarted(), &now, envDigest); err != nil {
		r.Gate.Restarted(ref, 0)
		return s.end(conflictOr(err))
	}
	r.Gate.Restarted(ref, obj.GetGeneration())
	r.held.Delete(ref)
	metrics.Restarts.WithLabelValues(ref.Namespace, ref.Kind).Inc()
	ctrl.LoggerFrom(ctx).Info("restarted for a rotation", "kind", ref.Kind, "secrets", slices.Sorted(maps.Keys(plan.Next.Pending)))
	r.Recorder.Event(obj, corev1.EventTypeNormal, ReasonRestarted, "restarted for "+owedText(plan.Next.Pending))
	r.notifyRestarted(ref, now, plan.Next.Pending, s.sources)
	for name, owed := range plan.Next.Pending {
		for _, es := range s.sources[name] {
			r.Recorder.Eventf(es, corev1.EventTypeNormal, ReasonRestarted, "%s restarted for Secret %q, keys: %s", ref, name, keyText(owed.Keys))
		}
	}
	return s.end(ctrl.Result{}, nil)
}
