// Package conditions sets status conditions, and holds the labels and
// annotations Watchword puts on the objects it writes.
package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Labels and annotations on written Secrets.
const (
	// ManagedByLabel marks every Secret Watchword writes to.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "watchword"
	// OwnerAnnotation names the ExternalSecret that owns a target.
	OwnerAnnotation = "watchword.io/owner"
	// MergeClaimsAnnotation records, on a Merge target, which
	// ExternalSecret wrote which keys.
	MergeClaimsAnnotation = "watchword.io/merged-keys"
	// ForceSyncAnnotation on an ExternalSecret: a new value syncs now,
	// bypassing every cache.
	ForceSyncAnnotation = "watchword.io/force-sync"
	// Finalizer lets an ExternalSecret clean up what it merged or retained.
	Finalizer = "watchword.io/target-cleanup"
)

// SetES sets a condition of an ExternalSecret, moving lastTransitionTime
// only when the status changes. It reports whether anything changed.
func SetES(conds *[]v1alpha1.ExternalSecretCondition, c v1alpha1.ExternalSecretCondition, now metav1.Time) bool {
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		if c.LastSyncTime == nil {
			c.LastSyncTime = old.LastSyncTime
		}
		changed := *old != c && !equalCond(*old, c)
		*old = c
		return changed
	}
	c.LastTransitionTime = now
	*conds = append(*conds, c)
	return true
}

func equalCond(a, b v1alpha1.ExternalSecretCondition) bool {
	sameSync := (a.LastSyncTime == nil) == (b.LastSyncTime == nil) && (a.LastSyncTime == nil || a.LastSyncTime.Equal(b.LastSyncTime))
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.LastTransitionTime.Equal(&b.LastTransitionTime) && sameSync && a.ObservedGeneration == b.ObservedGeneration
}

// FindES returns the condition of the given type, or nil.
func FindES(conds []v1alpha1.ExternalSecretCondition, t string) *v1alpha1.ExternalSecretCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
