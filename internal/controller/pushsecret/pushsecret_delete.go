package pushsecret

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// syncFinalizer keeps the finalizer on a PushSecret of deletionPolicy
// Delete, and takes it off one of Retain, which leaves everything in
// place when it goes.
func (r *Reconciler) syncFinalizer(ctx context.Context, s *scope) (bool, error) {
	want := s.ps.Spec.DeletionPolicy != v1alpha1.DeletionPolicyRetain
	if controllerutil.ContainsFinalizer(s.ps, Finalizer) == want {
		return false, nil
	}
	patch := client.MergeFrom(s.ps.DeepCopy())
	if want {
		controllerutil.AddFinalizer(s.ps, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(s.ps, Finalizer)
	}
	if err := r.Client.Patch(ctx, s.ps, patch); err != nil {
		return false, fmt.Errorf("updating the finalizer: %w", err)
	}
	s.before.ObjectMeta = *s.ps.ObjectMeta.DeepCopy()
	return false, nil
}

// unpublishRemoved deletes, under deletionPolicy Delete, the remote
// secrets of removed destinations that this PushSecret owns, after the
// current destinations are published: one that is the same remote secret
// as a current one (a store swapped for another that points at the same
// place) is kept. While a current destination fails, none is deleted
// (publishing.Defer). One that cannot be deleted yet stays in the status as Unpublishing and is tried
// again; a store that no longer exists deletes nothing anywhere.
func (r *Reconciler) unpublishRemoved(ctx context.Context, s *scope) (bool, error) {
	current := &publishing.Current{Entries: slices.Clone(s.destinations), EntryFields: make([]map[string][]byte, len(s.destinations))}
	for i, t := range s.targets {
		if t.src != nil {
			current.EntryFields[i] = t.src.publication.Fields
		}
	}
	failing := len(s.failures) > 0
	for _, e := range publishing.Removed(s.ps.Status.Destinations, dests(s)) {
		if failing && s.ps.Spec.DeletionPolicy != v1alpha1.DeletionPolicyRetain {
			s.destinations = append(s.destinations, publishing.Defer(e))
			continue
		}
		if s.ps.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
			r.Recorder.Eventf(s.ps, corev1.EventTypeNormal, string(failure.Retained),
				"%s was removed; its remote secret is left in place (deletionPolicy Retain)", removedWhat(e, describeStore(s.ps, e)))
			continue
		}
		if err := r.publisher().Unpublish(ctx, kind, s.ps, e, current); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			class, msg := failure.Describe(err)
			e.State, e.Reason, e.Message = v1alpha1.PushUnpublishing, string(class.Reason), publishing.Clip(msg, 1024)
			s.destinations = append(s.destinations, e)
			s.failures = append(s.failures, fmt.Errorf("unpublishing %q of %s: %w", e.Name, describeStore(s.ps, e), err))
		}
	}
	return false, nil
}

// removedWhat names a removed destination for events: with
// secretSelector, by the Secret it was published from.
func removedWhat(e v1alpha1.PushSecretDestinationStatus, store string) string {
	if e.SecretName != "" {
		return fmt.Sprintf("remote secret %q of %s, published from Secret %q, which is no longer selected or no longer named by a destination,", e.Name, store, e.SecretName)
	}
	return fmt.Sprintf("destination %q of %s", e.Name, store)
}

// finalize unpublishes what a deleted PushSecret of deletionPolicy Delete
// owns, then lets it go. Every destination of the spec is tried too, not
// only those of the status: a write whose status was lost is still found
// by its ownership marker.
func (r *Reconciler) finalize(ctx context.Context, s *scope) (ctrl.Result, error) {
	ps := s.ps
	if !controllerutil.ContainsFinalizer(ps, Finalizer) {
		return ctrl.Result{}, nil
	}
	if ps.Spec.DeletionPolicy != v1alpha1.DeletionPolicyRetain {
		entries := append([]v1alpha1.PushSecretDestinationStatus(nil), ps.Status.Destinations...)
		current := ps.Spec.Destinations
		if ps.Spec.SecretSelector != nil {
			// The remote secrets of the Secrets that match now (their
			// names only: nothing is read).
			var err error
			if current, err = r.matchedDestinations(ctx, ps); err != nil {
				return ctrl.Result{}, failure.Redacted(err)
			}
		}
		for _, d := range current {
			if publishing.Previous(ps.Status.Destinations, d) == nil {
				ref := publishing.StoreRef(d)
				entries = append(entries, v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name,
					State: v1alpha1.PushFailing, PublishedTime: &s.now})
			}
		}
		for _, e := range entries {
			if err := r.publisher().Unpublish(ctx, kind, ps, e, nil); err != nil {
				return ctrl.Result{}, failure.Redacted(fmt.Errorf("unpublishing %q of %s before the PushSecret goes: %w", e.Name, describeStore(ps, e), err))
			}
		}
	}
	patch := client.MergeFrom(ps.DeepCopy())
	controllerutil.RemoveFinalizer(ps, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ps, patch))
}

// matchedDestinations are the destinations of a PushSecret with
// secretSelector, named for each Secret that matches now. A selector that
// cannot be used gives none.
func (r *Reconciler) matchedDestinations(ctx context.Context, ps *v1alpha1.PushSecret) ([]v1alpha1.PushSecretDestination, error) {
	sel, err := selector(ps)
	if err != nil {
		return nil, nil
	}
	names, err := r.Selected.Matching(ctx, ps.Namespace, sel)
	if err != nil {
		return nil, err
	}
	sources := make([]*origin, len(names))
	for i, n := range names {
		sources[i] = &origin{name: n}
	}
	return dests(&scope{targets: expand(ps, sources)}), nil
}
