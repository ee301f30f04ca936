// Package conditions sets the status conditions of every kind from the
// outcome of a reconcile, and holds the labels and annotations Watchword
// puts on the objects it writes.
//
// Every kind has the same two standard conditions:
//
//   - Ready: the object is fully reconciled, and what it manages (a target
//     Secret, a store's client) is up to date with its current spec. False
//     while it fails, with the reason of the failure.
//   - Stalled: present, and True, only while the object cannot make
//     progress until the user changes something (a terminal error of the
//     error model). It is not retried with backoff: a change of the object
//     or of what it names queues it, and where the cause may be something
//     no watch sees (the data in a store), it is looked at again on a
//     timer, which its message names.
//
// An ExternalSecret also has seed 004's InSync, with the time of the last
// successful sync; see package externalsecret.
package conditions

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// Labels and annotations on written Secrets.
const (
	// ManagedByLabel marks the Secrets Watchword creates and owns
	// (creationPolicy Owner). A Merge target belongs to someone else and
	// keeps its own labels; MergeClaimsAnnotation marks it instead.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "watchword"
	// OwnerAnnotation names the ExternalSecret that owns a target.
	OwnerAnnotation = "watchword.io/owner"
	// MergeClaimsAnnotation records, on a Merge target, which
	// ExternalSecret wrote which keys.
	MergeClaimsAnnotation = "watchword.io/merged-keys"
	// AllowWriteAnnotation ("true"), set by a Secret's owner, lets
	// Watchword's account merge into or adopt the Secret where the
	// shipped admission policy guards its writes (config/policy).
	AllowWriteAnnotation = "watchword.io/allow-write"
	// ForceSyncAnnotation on an ExternalSecret: a new value syncs now,
	// bypassing every cache.
	ForceSyncAnnotation = "watchword.io/force-sync"
	// Finalizer lets an ExternalSecret clean up what it merged or retained.
	Finalizer = "watchword.io/target-cleanup"
)

// Outcome is what one reconcile concluded: the input of the standard
// conditions.
type Outcome struct {
	// Err is the failure, nil on success.
	Err error
	// Reason and Message describe a success.
	Reason  failure.Reason
	Message string
	// Recheck, for a terminal failure, is how often the object is looked
	// at again all the same, for a cause that no watch sees (the data of
	// a store); 0 when only a change queues it.
	Recheck time.Duration
}

// Standard returns the Ready condition of an outcome and, when the error
// is terminal, the Stalled condition (nil otherwise). The messages of
// errors are redacted by the error model: they name objects, keys and
// fields, never a value.
func Standard(o Outcome, generation int64) (ready metav1.Condition, stalled *metav1.Condition) {
	ready = metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: generation}
	defer func() {
		ready.Message = clip(ready.Message)
		if stalled != nil {
			stalled.Message = clip(stalled.Message)
		}
	}()
	if o.Err == nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, string(o.Reason), o.Message
		return ready, nil
	}
	class, msg := failure.Describe(o.Err)
	ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(class.Reason), msg
	if o.Message != "" {
		// The caller's view of what the failure means for the object.
		ready.Message = msg + "; " + o.Message
	}
	if !class.Terminal {
		return ready, nil
	}
	wait := "not retried until the object or what it names changes"
	if o.Recheck > 0 {
		wait += ", and checked again every " + o.Recheck.String()
	}
	return ready, &metav1.Condition{
		Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: string(class.Reason), Message: wait + ": " + msg,
	}
}

// Set records the standard conditions of an outcome in conds: the
// conditions of a store, or of any kind with metav1.Conditions.
func Set(conds *[]metav1.Condition, o Outcome, generation int64) {
	ready, stalled := Standard(o, generation)
	meta.SetStatusCondition(conds, ready)
	if stalled != nil {
		meta.SetStatusCondition(conds, *stalled)
	} else {
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
	}
}

// SetES records the standard conditions of an outcome in the conditions
// of an ExternalSecret, which carry the time of the last sync.
func SetES(conds *[]v1alpha1.ExternalSecretCondition, o Outcome, generation int64, now metav1.Time) {
	ready, stalled := Standard(o, generation)
	PutES(conds, fromMeta(ready), now)
	if stalled != nil {
		PutES(conds, fromMeta(*stalled), now)
	} else {
		RemoveES(conds, v1alpha1.ConditionStalled)
	}
}

func fromMeta(c metav1.Condition) v1alpha1.ExternalSecretCondition {
	return v1alpha1.ExternalSecretCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
}

// PutES sets one condition of an ExternalSecret, moving
// lastTransitionTime only when the status changes. InSync keeps its
// lastSyncTime when c has none (a failure does not move it); no other
// condition carries one.
func PutES(conds *[]v1alpha1.ExternalSecretCondition, c v1alpha1.ExternalSecretCondition, now metav1.Time) {
	c.Message = clip(c.Message)
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
		if c.LastSyncTime == nil && c.Type == v1alpha1.ConditionInSync {
			c.LastSyncTime = old.LastSyncTime
		}
		*old = c
		return
	}
	if c.Type != v1alpha1.ConditionInSync {
		c.LastSyncTime = nil
	}
	c.LastTransitionTime = now
	*conds = append(*conds, c)
}

// maxMessage is the bound of a condition message in the API (4096 for an
// ExternalSecret's; a metav1.Condition allows more).
const maxMessage = 4096

// clip shortens a message to what the API accepts, on a rune boundary.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	const more = " …"
	cut := maxMessage - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}

// RemoveES drops the condition of the given type.
func RemoveES(conds *[]v1alpha1.ExternalSecretCondition, t string) {
	out := (*conds)[:0]
	for _, c := range *conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	*conds = out
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

// ChangesWatched is a store's condition that tells whether Watchword
// watches the store for changes (a change feed, engine.Watcher), so that
// the ExternalSecrets that read a changed key refresh at once: True while
// a watch runs; False, with the reason, while none does, and then those
// ExternalSecrets refresh at their refreshInterval as usual. It is absent
// while nothing is known (before the first look, or where no watch loop
// runs).
const ChangesWatched = "ChangesWatched"

// The reasons of ChangesWatched.
const (
	// WatchActive: a watch runs.
	WatchActive = "Watching"
	// WatchStarting: a watch was started and has not yet held.
	WatchStarting = "WatchStarting"
	// WatchUnsupported: the store's provider has no change feed.
	WatchUnsupported = "WatchNotSupported"
	// WatchUnneeded: no ExternalSecret reads from the store.
	WatchUnneeded = "NotRead"
	// WatchStoreNotReady: the store's client cannot be built (see Ready).
	WatchStoreNotReady = "StoreNotReady"
	// WatchDenied: the store's credentials may not watch; the watch is
	// tried again with backoff.
	WatchDenied = "WatchNotAllowed"
	// WatchBroken: the watch broke and is tried again with backoff.
	WatchBroken = "WatchRetrying"
)

// WatchState is what ChangesWatched says.
type WatchState struct {
	Watched bool
	Reason  string
	Message string
}

// SetWatch records a store's ChangesWatched condition; a nil state removes
// it.
func SetWatch(conds *[]metav1.Condition, s *WatchState, generation int64) {
	if s == nil {
		meta.RemoveStatusCondition(conds, ChangesWatched)
		return
	}
	status := metav1.ConditionFalse
	if s.Watched {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: ChangesWatched, Status: status, Reason: s.Reason,
		Message: clip(s.Message), ObservedGeneration: generation})
}
