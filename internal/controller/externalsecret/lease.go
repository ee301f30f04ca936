package externalsecret

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// The lease of a dataFrom vaultDynamic entry. Vault hands out the
// credentials once, with the lease: they live only in the target, and the
// status records the lease (its ID, times and TTL, never the credentials).
// So a reconcile that has a lease renews it, or does nothing, and leaves
// the target as it is; new credentials are issued, and the target written,
// only when the lease is near its end (a rotation), gone, or when the
// target must be written anew (a new spec or store, a force-sync, a
// target that changed or was deleted). A restarted controller finds the
// lease in the status and renews it: it never issues again for that.

// leaseHeld is what the lease step left for the steps after it.
type leaseHeld struct {
	// kept: the lease stays (renewed or not): nothing is read or written.
	kept bool
	// leased are the credentials issued in this reconcile, for the fetch.
	leased map[engine.Ref]engine.Object
	// issued is the new lease, recorded once the target holds its
	// credentials, or revoked when the reconcile fails.
	issued *v1alpha1.VaultLeaseStatus
	// replaced is the lease that issued replaces; revoke: it is revoked
	// then (its target was deleted, and deletionPolicy is Revoke).
	replaced *v1alpha1.VaultLeaseStatus
	revoke   bool
	// recorded is the ID of the lease issued in this reconcile once the
	// status to be written records it.
	recorded string
}

// vaultDynamic is the spec's entry that holds a lease: its vaultDynamic
// entry, or its registryToken entry as engine.RegistryLease holds it (a
// token that is replaced renewBefore its expiry); nil when it has none.
func vaultDynamic(es *v1alpha1.ExternalSecret) *v1alpha1.VaultDynamicSecret {
	v, _ := engine.DynamicEntry(&es.Spec)
	return v
}

// dynamicWhat names the entry in errors: "dataFrom vaultDynamic" or
// "dataFrom registryToken".
func dynamicWhat(req *engine.LeaseRequest) string {
	if req != nil && req.Registry != "" {
		return "dataFrom registryToken"
	}
	return "dataFrom vaultDynamic"
}

// holdLease renews the lease, keeps it, or issues new credentials, as
// engine.NextLeaseAction says and the target needs.
func (r *Reconciler) holdLease(ctx context.Context, s *scope) (bool, error) {
	v, req := engine.DynamicEntry(&s.es.Spec)
	if v == nil {
		return false, nil
	}
	what := dynamicWhat(req)
	leaser, err := s.client.AsLeaser()
	if err != nil {
		if req.Registry != "" {
			return false, fmt.Errorf("%s: %s needs a store that issues registry tokens (awssm or awsps for ECR): %w", s.store.Describe(), what, err)
		}
		return false, fmt.Errorf("%s: %s needs a store that issues leases (Vault): %w", s.store.Describe(), what, err)
	}
	held := s.es.Status.Lease
	if held != nil && held.Path == v.Path {
		rewrite, gone := r.targetNeedsRewrite(ctx, s)
		if !rewrite {
			kept, rerr := r.renewIfDue(ctx, s, leaser, held, v)
			if kept || rerr != nil {
				return false, rerr
			}
		}
		s.lease.replaced, s.lease.revoke = held, gone && v.DeletionPolicy != v1alpha1.VaultLeaseRetain
	}
	obj, l, err := leaser.Issue(ctx, *req)
	if err != nil {
		return false, fmt.Errorf("%s: %s: %w", s.store.Describe(), what, err)
	}
	s.lease.leased = map[engine.Ref]engine.Object{engine.LeaseRef(v): obj}
	if l.ID != "" {
		s.lease.issued = &v1alpha1.VaultLeaseStatus{ID: l.ID, Path: v.Path, IssueTime: s.now,
			TTL: metav1.Duration{Duration: l.Duration}, Duration: metav1.Duration{Duration: l.Duration},
			ExpiryTime: metav1.NewTime(s.now.Add(l.Duration)), Renewable: l.Renewable}
	}
	return false, nil
}

// targetNeedsRewrite tells whether the target must be written anew, which
// takes new credentials: Vault gives the credentials of a lease only once.
// gone: the target was deleted.
func (r *Reconciler) targetNeedsRewrite(ctx context.Context, s *scope) (rewrite, gone bool) {
	if s.plan.forced || s.plan.inputsChanged {
		return true, false
	}
	if s.es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		return false, false
	}
	rv, ok := r.targetVersion(ctx, s.es)
	return !ok || rv != s.es.Status.TargetResourceVersion, !ok
}

// renewIfDue renews the held lease when it is due, and keeps it (kept)
// unless it needs new credentials: it cannot be renewed, its maximum TTL
// is near, or Vault no longer has it.
func (r *Reconciler) renewIfDue(ctx context.Context, s *scope, leaser engine.Leaser, held *v1alpha1.VaultLeaseStatus, v *v1alpha1.VaultDynamicSecret) (kept bool, err error) {
	action, _ := engine.NextLeaseActionFor(held, v, s.now.Time)
	switch action {
	case engine.LeaseRotate:
		return false, nil
	case engine.LeaseRenew:
		l, rerr := leaser.Renew(ctx, held.ID, held.TTL.Duration)
		if errors.Is(rerr, engine.ErrNotFound) {
			return false, nil
		}
		if rerr != nil {
			return false, fmt.Errorf("%s: renewing the lease of dataFrom vaultDynamic: %w", s.store.Describe(), rerr)
		}
		renewed := *held
		renewed.RenewTime = &s.now
		renewed.Duration = metav1.Duration{Duration: l.Duration}
		renewed.ExpiryTime = metav1.NewTime(s.now.Add(l.Duration))
		renewed.Renewable = l.Renewable
		s.es.Status.Lease = &renewed
	}
	st := &s.es.Status
	s.lease.kept = true
	s.result = &engine.Result{Versions: st.Versions, Found: st.Found}
	s.written = &writeResult{resourceVersion: st.TargetResourceVersion, keys: st.SyncedKeys}
	s.publishedTo = st.PublishedTo
	return true, nil
}

// recordLease records the lease that the target's new credentials hold,
// revokes the one it replaces where it must, and tells the metrics.
func (r *Reconciler) recordLease(ctx context.Context, s *scope) {
	if s.lease.leased != nil {
		s.es.Status.Lease = s.lease.issued
		if s.lease.issued != nil {
			s.lease.recorded = s.lease.issued.ID
		}
		s.lease.issued = nil
		if old := s.lease.replaced; old != nil && s.lease.revoke {
			if leaser, err := s.client.AsLeaser(); err == nil {
				if err := leaser.Revoke(ctx, old.ID); err != nil {
					ctrl.LoggerFrom(ctx).Info("revoking the lease of a deleted target failed; it expires at its end", "reason", failure.Classify(err).Reason, "expiry", old.ExpiryTime)
				}
			}
		}
	}
	key := s.es.Namespace + "/" + s.es.Name
	if l := s.es.Status.Lease; l != nil {
		kind, name := storeLabels(s)
		metrics.Leases.Hold(key, kind, name, l.ExpiryTime.Time)
	} else {
		metrics.Leases.Drop(key)
	}
}

// dropIssued revokes the lease issued in a reconcile that failed after
// it, so that no lease is left that nothing records.
func (r *Reconciler) dropIssued(ctx context.Context, s *scope) {
	if s.lease.issued == nil || s.client == nil {
		return
	}
	id := s.lease.issued.ID
	s.lease.issued = nil
	leaser, err := s.client.AsLeaser()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := leaser.Revoke(ctx, id); err != nil {
		ctrl.LoggerFrom(ctx).Info("revoking the lease of a failed sync failed; it expires at its end", "reason", failure.Classify(err).Reason)
	}
}

// dropUnrecorded revokes the lease issued in this reconcile when the
// status that records it could not be written (the ExternalSecret changed
// or is being deleted meanwhile): nothing would renew or revoke it, and
// the next reconcile, finding the target changed, issues new credentials.
func (r *Reconciler) dropUnrecorded(ctx context.Context, s *scope) {
	if s.lease.recorded == "" || s.recorded {
		return
	}
	s.lease.issued, s.lease.recorded = &v1alpha1.VaultLeaseStatus{ID: s.lease.recorded}, ""
	r.dropIssued(ctx, s)
}

// leaseCaughtUp tells whether a cached status shows the lease this
// instance recorded last. A renewal, or new credentials written between
// refreshes, leave refreshTime as it was: without this, a reconcile that
// read the status from before them would take the lease they replaced for
// the current one, and the target it wrote for a drift.
func leaseCaughtUp(cached, wrote *v1alpha1.VaultLeaseStatus) bool {
	if wrote == nil {
		return true
	}
	return cached != nil && cached.ID == wrote.ID && cached.ExpiryTime.Unix() == wrote.ExpiryTime.Unix()
}

// leaseDue tells whether the held lease needs renewal or new credentials.
func leaseDue(es *v1alpha1.ExternalSecret, now time.Time) bool {
	v, l := vaultDynamic(es), es.Status.Lease
	if v == nil || l == nil {
		return false
	}
	action, _ := engine.NextLeaseActionFor(l, v, now)
	return action != engine.LeaseKeep
}

// leaseWake brings res forward to the held lease's next renewal or
// rotation.
func leaseWake(es *v1alpha1.ExternalSecret, now time.Time, res ctrl.Result) ctrl.Result {
	v, l := vaultDynamic(es), es.Status.Lease
	if v == nil || l == nil {
		return res
	}
	_, at := engine.NextLeaseActionFor(l, v, now)
	wait := max(at.Sub(now), time.Second)
	if res.RequeueAfter == 0 || wait < res.RequeueAfter {
		return ctrl.Result{RequeueAfter: wait}
	}
	return res
}

// needsLeaseFinalizer: the lease is revoked when the ExternalSecret goes.
func needsLeaseFinalizer(es *v1alpha1.ExternalSecret) bool {
	v := vaultDynamic(es)
	return v != nil && v.DeletionPolicy != v1alpha1.VaultLeaseRetain
}

// revokeLease revokes the lease of a deleted ExternalSecret. A store that
// is gone revokes nothing (the lease expires at its end); one that fails
// keeps the ExternalSecret, and is tried again.
func (r *Reconciler) revokeLease(ctx context.Context, es *v1alpha1.ExternalSecret) error {
	l := es.Status.Lease
	metrics.Leases.Drop(es.Namespace + "/" + es.Name)
	if l == nil || !needsLeaseFinalizer(es) {
		return nil
	}
	store, err := storeaccess.Resolve(ctx, r.Client, es.Namespace, es.Spec.SecretStoreRef)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("the store of a deleted ExternalSecret is gone; its lease expires at its end", "expiry", l.ExpiryTime)
		return nil
	}
	c, err := r.Clients.Get(ctx, store)
	if err != nil {
		return fmt.Errorf("revoking the lease of dataFrom vaultDynamic: %s: %w", store.Describe(), err)
	}
	leaser, err := c.AsLeaser()
	if err != nil {
		return nil
	}
	if err := leaser.Revoke(ctx, l.ID); err != nil {
		return fmt.Errorf("revoking the lease of dataFrom vaultDynamic: %s: %w", store.Describe(), err)
	}
	return nil
}
