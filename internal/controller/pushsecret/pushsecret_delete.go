package pushsecret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
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

// removed lists the status entries whose destination is no longer in the
// spec: a destination removed, renamed or moved to another store.
func removed(ps *v1alpha1.PushSecret) []v1alpha1.PushSecretDestinationStatus {
	var out []v1alpha1.PushSecretDestinationStatus
	for _, e := range ps.Status.Destinations {
		found := false
		for _, d := range ps.Spec.Destinations {
			if sameDestination(e, d) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// unpublishRemoved deletes, under deletionPolicy Delete, the remote
// secrets of removed destinations that this PushSecret owns. One that
// cannot be deleted yet stays in the status as Unpublishing and is tried
// again; a store that no longer exists deletes nothing anywhere.
func (r *Reconciler) unpublishRemoved(ctx context.Context, s *scope) (bool, error) {
	for _, e := range removed(s.ps) {
		if s.ps.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
			r.Recorder.Eventf(s.ps, corev1.EventTypeNormal, string(failure.Retained),
				"destination %q of %s was removed; its remote secret is left in place (deletionPolicy Retain)", e.Name, describeStore(s.ps, e))
			continue
		}
		if err := r.unpublish(ctx, s.ps, e); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			class, msg := failure.Describe(err)
			e.State, e.Reason, e.Message = v1alpha1.PushUnpublishing, string(class.Reason), clip(msg, 1024)
			s.destinations = append(s.destinations, e)
			s.failures = append(s.failures, fmt.Errorf("unpublishing %q of %s: %w", e.Name, describeStore(s.ps, e), err))
		}
	}
	return false, nil
}

// unpublish deletes the remote secret of one status entry if this
// PushSecret owns it. It returns an error only when it should be tried
// again; a secret that another owns, a store that is gone or cannot
// delete, and a secret never written are left, with an event.
func (r *Reconciler) unpublish(ctx context.Context, ps *v1alpha1.PushSecret, e v1alpha1.PushSecretDestinationStatus) error {
	where := fmt.Sprintf("%q of %s", e.Name, describeStore(ps, e))
	leave := func(why string) error {
		r.Recorder.Eventf(ps, corev1.EventTypeWarning, string(failure.Retained), "remote secret %s is left in place: %s", where, why)
		return nil
	}
	if e.State == v1alpha1.PushNotOwned || e.PublishedTime == nil {
		// Never written by this PushSecret: nothing of ours is there.
		return nil
	}
	store, err := r.resolve(ctx, ps, v1alpha1.StoreRef{Kind: e.StoreKind, Name: e.StoreName})
	if err != nil {
		if failure.Terminal(err) {
			_, msg := failure.Describe(err)
			return leave(msg)
		}
		return err
	}
	c, err := r.Clients.Get(ctx, store)
	if err != nil {
		return err
	}
	w, err := c.AsWriter()
	if err != nil {
		_, msg := failure.Describe(err)
		return leave(msg)
	}
	err = w.DeleteSecret(ctx, e.Name, owner(ps, false))
	switch {
	case errors.Is(err, engine.ErrNotOwned):
		_, msg := failure.Describe(err)
		return leave(msg)
	case err != nil:
		return err
	}
	r.Recorder.Eventf(ps, corev1.EventTypeNormal, string(failure.Unpublished), "deleted remote secret %s (deletionPolicy Delete)", where)
	return nil
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
		for _, d := range ps.Spec.Destinations {
			if previous(ps, d) == nil {
				ref := storeRef(d)
				entries = append(entries, v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name,
					State: v1alpha1.PushFailing, PublishedTime: &s.now})
			}
		}
		for _, e := range entries {
			if err := r.unpublish(ctx, ps, e); err != nil {
				return ctrl.Result{}, failure.Redacted(fmt.Errorf("unpublishing %q of %s before the PushSecret goes: %w", e.Name, describeStore(ps, e), err))
			}
		}
	}
	patch := client.MergeFrom(ps.DeepCopy())
	controllerutil.RemoveFinalizer(ps, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ps, patch))
}
