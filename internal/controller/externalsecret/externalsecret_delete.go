package externalsecret

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// needsFinalizer: the target or what is published needs us to act before
// we go.
func needsFinalizer(es *v1alpha1.ExternalSecret) bool {
	return targetNeedsFinalizer(es) || publishNeedsFinalizer(es) || needsLeaseFinalizer(es)
}

// targetNeedsFinalizer: an owned target with deletionPolicy Delete goes by
// garbage collection; Merge targets lose our keys and Retain targets lose
// our owner reference, both of which need us to act before we go.
func targetNeedsFinalizer(es *v1alpha1.ExternalSecret) bool {
	return es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyMerge ||
		(es.Spec.Target.CreationPolicy != v1alpha1.CreationPolicyNone && es.Spec.Target.DeletionPolicy == v1alpha1.DeletionPolicyRetain)
}

func (r *Reconciler) ensureFinalizer(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	if !needsFinalizer(es) || controllerutil.ContainsFinalizer(es, conditions.Finalizer) {
		return nil
	}
	patch := client.MergeFrom(es.DeepCopy())
	controllerutil.AddFinalizer(es, conditions.Finalizer)
	return r.Client.Patch(ctx, es, patch)
}

// finalize unpublishes what a deleted ExternalSecret owns (deletionPolicy
// Delete of publishConnectionDetailsTo) and cleans up its target, then lets
// it go. A destination store that is unreachable keeps it, and is tried
// again; one that is gone deletes nothing.
func (r *Reconciler) finalize(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	if !controllerutil.ContainsFinalizer(es, conditions.Finalizer) {
		return nil
	}
	if err := r.unpublishAll(ctx, es); err != nil {
		return err
	}
	if err := r.revokeLease(ctx, es); err != nil {
		return err
	}
	if targetNeedsFinalizer(es) {
		if err := r.cleanTarget(ctx, es); err != nil {
			return err
		}
	}
	patch := client.MergeFrom(es.DeepCopy())
	controllerutil.RemoveFinalizer(es, conditions.Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, es, patch))
}

func (r *Reconciler) cleanTarget(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	if isConfigMap(es) {
		return r.cleanConfigMap(ctx, es)
	}
	var cur corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: targetindex.Name(es)}, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	desired := cur.DeepCopy()
	switch es.Spec.Target.CreationPolicy {
	case v1alpha1.CreationPolicyMerge:
		claims := mergeClaims(desired)
		mine, ok := claims[es.Name]
		if !ok {
			return nil
		}
		if es.Spec.Target.DeletionPolicy != v1alpha1.DeletionPolicyRetain {
			for _, k := range mine {
				delete(desired.Data, k)
			}
		}
		delete(claims, es.Name)
		setMergeClaims(desired, claims)
	default:
		// Retain: let the Secret outlive us.
		desired.OwnerReferences, desired.Annotations = releasedMeta(desired.OwnerReferences, desired.Annotations, es)
	}
	if err := r.Client.Update(ctx, desired); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cleaning up Secret %q: %w", cur.Name, err)
	}
	return nil
}
