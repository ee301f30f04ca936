package externalsecret

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// publisherKind is the kind in the ownership marker of what an
// ExternalSecret publishes.
const publisherKind = "ExternalSecret"

// publisher publishes through the stores of this instance's class.
func (r *Reconciler) publisher() *publishing.Publisher {
	return &publishing.Publisher{Client: r.Client, Clients: r.Clients, Recorder: r.Recorder, Class: r.Class, Keys: r.DigestKeys}
}

// destinations is publishConnectionDetailsTo as a list: none or one.
func destinations(es *v1alpha1.ExternalSecret) []v1alpha1.PushSecretDestination {
	if pc := es.Spec.PublishConnectionDetailsTo; pc != nil {
		return []v1alpha1.PushSecretDestination{pc.PushSecretDestination}
	}
	return nil
}

// publishRetains: the published copy outlives the ExternalSecret and a
// changed destination. Without publishConnectionDetailsTo its deletion
// policy is gone too, so what was published is left in place: removing
// the block never deletes anything.
func publishRetains(es *v1alpha1.ExternalSecret) bool {
	pc := es.Spec.PublishConnectionDetailsTo
	return pc == nil || pc.DeletionPolicy == v1alpha1.DeletionPolicyRetain
}

// publishNeedsFinalizer: what is published is deleted when the
// ExternalSecret goes.
func publishNeedsFinalizer(es *v1alpha1.ExternalSecret) bool {
	return !publishRetains(es)
}

// retainedWhy says why a former destination's remote secret is left.
func retainedWhy(es *v1alpha1.ExternalSecret) string {
	if es.Spec.PublishConnectionDetailsTo == nil {
		return "publishConnectionDetailsTo was removed"
	}
	return "deletionPolicy Retain"
}

// publishInputs identifies the destination's store for the schedule, so
// that a changed or created destination store publishes again. It reads
// the cache only, and never fails: a store that cannot be resolved is a
// failure of the publish step.
func (r *Reconciler) publishInputs(ctx context.Context, es *v1alpha1.ExternalSecret) string {
	ds := destinations(es)
	if len(ds) == 0 {
		return ""
	}
	store, err := storeaccess.Resolve(ctx, r.Client, es.Namespace, publishing.StoreRef(ds[0]))
	if err != nil {
		return "|publish=?"
	}
	return "|publish=" + store.ID()
}

// publish publishes the rendered data to publishConnectionDetailsTo, after
// the target is written, and unpublishes (deletionPolicy Delete) what this
// ExternalSecret owns at a former destination. A failure is recorded for
// the status and does not undo the target write; the data itself goes
// from the fetch to the store in memory only.
func (r *Reconciler) publish(ctx context.Context, s *scope) (bool, error) {
	if s.lease.kept {
		return false, nil
	}
	es := s.es
	p := r.publisher()
	dests := destinations(es)
	var entries []v1alpha1.PushSecretDestinationStatus
	var failures []error
	for _, d := range dests {
		entry, err := p.Publish(ctx, publishing.Request{Object: es, Kind: publisherKind, Destination: d,
			Previous: publishing.Previous(es.Status.PublishedTo, d), Publication: engine.Publication{Fields: s.result.Data},
			Keys: slices.Sorted(maps.Keys(s.result.Data)), Now: s.now, ReadBack: s.plan.interval, Others: es.Status.PublishedTo})
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			entry = p.Failed(publisherKind, es, entry, err)
			failures = append(failures, fmt.Errorf("publishing to %q of %s: %w", d.Name, publishing.DescribeStore(es.Namespace, entry), err))
		}
		entries = append(entries, entry)
	}
	// Removed destinations go after the current ones are written, so that
	// one that is the same remote secret as a current one is recognised
	// and kept.
	current := &publishing.Current{Entries: entries, Fields: s.result.Data}
	failing := len(failures) > 0
	var unpublishing []v1alpha1.PushSecretDestinationStatus
	for _, e := range publishing.Removed(es.Status.PublishedTo, dests) {
		if failing && !publishRetains(es) {
			unpublishing = append(unpublishing, publishing.Defer(e))
			continue
		}
		if publishRetains(es) {
			r.Recorder.Eventf(es, corev1.EventTypeNormal, string(failure.Retained),
				"destination %q of %s was removed; its remote secret is left in place (%s)", e.Name, publishing.DescribeStore(es.Namespace, e), retainedWhy(es))
			continue
		}
		if err := p.Unpublish(ctx, publisherKind, es, e, current); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			class, msg := failure.Describe(err)
			e.State, e.Reason, e.Message = v1alpha1.PushUnpublishing, string(class.Reason), publishing.Clip(msg, 1024)
			unpublishing = append(unpublishing, e)
			failures = append(failures, fmt.Errorf("unpublishing %q of %s: %w", e.Name, publishing.DescribeStore(es.Namespace, e), err))
		}
	}
	entries = append(entries, unpublishing...)
	s.publishedTo = entries
	s.publishErr = worst(failures)
	return false, nil
}

// worst is the failure that matters most: one a retry may cure before one
// that waits for a change; nil when there is none.
func worst(failures []error) error {
	for _, f := range failures {
		if !failure.Terminal(f) {
			return f
		}
	}
	if len(failures) > 0 {
		return failures[0]
	}
	return nil
}

// publishFailed records, after a successful sync, that publishing failed:
// Ready is False with the failure's reason, InSync stays True (the target
// holds the data), and the reconcile is retried with backoff or, for a
// failure that waits for a change, looked at again on the recheck.
func (r *Reconciler) publishFailed(s *scope) {
	err := s.publishErr
	class := failure.Classify(err)
	st := &s.es.Status
	var recheck time.Duration
	st.Phase = v1alpha1.PhaseFailing
	if class.Terminal {
		st.Phase = v1alpha1.PhaseFailed
		recheck = terminalRecheck(s.es, class.Reason)
	}
	state := targetWord(s.es) + " " + quote(targetindex.Name(s.es)) + " holds the data; it is not published"
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		state = "the data was read (creationPolicy None: no Secret written); it is not published"
	}
	conditions.SetES(&st.Conditions, conditions.Outcome{Err: err, Message: state, Recheck: recheck}, s.es.Generation, s.now)
	if class.Terminal {
		if recheck > 0 {
			s.outcome = ctrl.Result{RequeueAfter: recheck}
		}
		return
	}
	s.outcome, s.retry = ctrl.Result{}, failure.Redacted(err)
}

// unpublishAll deletes, before a deleted ExternalSecret of deletionPolicy
// Delete goes, every remote secret it owns: those of its status, and that
// of its destination, found by its ownership marker even if the status of
// its write was lost.
func (r *Reconciler) unpublishAll(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	if publishRetains(es) {
		return nil
	}
	entries := append([]v1alpha1.PushSecretDestinationStatus(nil), es.Status.PublishedTo...)
	for _, d := range destinations(es) {
		if publishing.Previous(es.Status.PublishedTo, d) == nil {
			ref := publishing.StoreRef(d)
			now := es.DeletionTimestamp
			entries = append(entries, v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name,
				State: v1alpha1.PushFailing, PublishedTime: now})
		}
	}
	p := r.publisher()
	for _, e := range entries {
		if err := p.Unpublish(ctx, publisherKind, es, e, nil); err != nil {
			return fmt.Errorf("unpublishing %q of %s before the ExternalSecret goes: %w", e.Name, publishing.DescribeStore(es.Namespace, e), err)
		}
	}
	return nil
}
