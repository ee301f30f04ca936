package pushsecret

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/storeaccess"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// owner is the marker every remote secret of the PushSecret carries: its
// kind, namespace, name and UID.
func owner(ps *v1alpha1.PushSecret, adopt bool) engine.Owner {
	return engine.Owner{ID: fmt.Sprintf("PushSecret/%s/%s/%s", ps.Namespace, ps.Name, ps.UID), Adopt: adopt}
}

// sameDestination tells whether a status entry is of the destination.
func sameDestination(e v1alpha1.PushSecretDestinationStatus, d v1alpha1.PushSecretDestination) bool {
	ref := storeRef(d)
	return e.Name == d.Name && e.StoreKind == ref.Kind && e.StoreName == ref.Name
}

// previous is the last status of the destination, or nil.
func previous(ps *v1alpha1.PushSecret, d v1alpha1.PushSecretDestination) *v1alpha1.PushSecretDestinationStatus {
	for i := range ps.Status.Destinations {
		if sameDestination(ps.Status.Destinations[i], d) {
			return &ps.Status.Destinations[i]
		}
	}
	return nil
}

// publishAll publishes to every destination. A destination that fails is
// recorded and the others go on.
func (r *Reconciler) publishAll(ctx context.Context, s *scope) (bool, error) {
	for _, d := range s.ps.Spec.Destinations {
		entry, err := r.publishOne(ctx, s, d)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			entry = r.failed(s, entry, d, err)
			s.failures = append(s.failures, fmt.Errorf("destination %q of %s: %w", d.Name, describeStore(s.ps, entry), err))
		}
		s.destinations = append(s.destinations, entry)
	}
	return false, nil
}

// publishOne brings one destination up to date: it writes when what it
// publishes changed, or when a read-back is due and shows that someone
// changed the remote secret; otherwise it makes no call to the store.
func (r *Reconciler) publishOne(ctx context.Context, s *scope, d v1alpha1.PushSecretDestination) (v1alpha1.PushSecretDestinationStatus, error) {
	ref := storeRef(d)
	entry := v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name}
	prev := previous(s.ps, d)
	if prev != nil {
		entry = *prev
	}
	store, err := r.resolve(ctx, s.ps, ref)
	if err != nil {
		return entry, err
	}
	pub := publicationFor(s.publication, d)
	hash := hashOf(string(s.ps.UID), store.ID(), pub)
	unchanged := prev != nil && prev.State == v1alpha1.PushPublished && prev.DataHash == hash
	every := interval(s.ps)
	due := every > 0 && (prev == nil || prev.CheckedTime == nil || !s.now.Time.Before(prev.CheckedTime.Add(every)))
	if unchanged && !due {
		return entry, nil
	}
	c, err := r.Clients.Get(ctx, store)
	if err != nil {
		return entry, err
	}
	w, err := c.AsWriter()
	if err != nil {
		return entry, err
	}
	repair := false
	if unchanged {
		obj, rerr := c.GetSecret(ctx, engine.Ref{Key: d.Name})
		switch {
		case rerr == nil && sameFields(obj, pub.Fields):
			entry.CheckedTime = &s.now
			return entry, nil
		case rerr == nil || errors.Is(rerr, engine.ErrNotFound):
			repair = true
		default:
			return entry, rerr
		}
	}
	version, err := w.PutSecret(ctx, d.Name, pub, owner(s.ps, d.Adopt))
	if err != nil {
		return entry, err
	}
	entry.State, entry.Reason, entry.Message = v1alpha1.PushPublished, string(failure.Published), ""
	entry.Version, entry.DataHash = version, hash
	entry.PublishedTime, entry.CheckedTime = &s.now, &s.now
	where := fmt.Sprintf("%q of %s", d.Name, store.Describe())
	if repair {
		r.Recorder.Eventf(s.ps, corev1.EventTypeNormal, string(failure.DriftRepaired),
			"remote secret %s was changed or deleted by someone else; published keys %s again", where, keyList(s.remoteKeys))
	} else {
		r.Recorder.Eventf(s.ps, corev1.EventTypeNormal, string(failure.Published), "published keys %s to remote secret %s", keyList(s.remoteKeys), where)
	}
	return entry, nil
}

// resolve finds a destination's store and checks that this PushSecret
// may publish there.
func (r *Reconciler) resolve(ctx context.Context, ps *v1alpha1.PushSecret, ref v1alpha1.StoreRef) (*storeaccess.Resolved, error) {
	if ref.Kind == v1alpha1.ClusterSecretStoreKind {
		return nil, failure.Terminalf(failure.NotSupported,
			"ClusterSecretStore %q: publishing to a ClusterSecretStore is not supported yet (it has no per-namespace scope to keep PushSecrets of different namespaces apart); use a SecretStore of namespace %q",
			ref.Name, ps.Namespace)
	}
	store, err := storeaccess.Resolve(ctx, r.Client, ps.Namespace, ref)
	if err != nil {
		if failure.Classify(err).Reason == failure.StoreNotFound {
			return nil, failure.Terminalf(failure.StoreNotFound,
				"SecretStore %q not found in namespace %q; create it or fix the destination's configRef (a SecretStore named default when configRef is absent)", ref.Name, ps.Namespace)
		}
		return nil, err
	}
	if store.Controller != r.Class {
		return nil, failure.Terminalf(failure.NotSupported,
			"%s is served by controller class %q; PushSecrets are served only with stores of the default class for now", store.Describe(), store.Controller)
	}
	return store, nil
}

// failed records a destination's failure in its status entry, and tells
// of a new one in an event. The entry keeps what was last published.
func (r *Reconciler) failed(s *scope, entry v1alpha1.PushSecretDestinationStatus, d v1alpha1.PushSecretDestination, err error) v1alpha1.PushSecretDestinationStatus {
	class, msg := failure.Describe(err)
	switch {
	case class.Reason == failure.NotOwned:
		entry.State = v1alpha1.PushNotOwned
	case class.Terminal:
		entry.State = v1alpha1.PushFailed
	default:
		entry.State = v1alpha1.PushFailing
	}
	msg = clip(msg, 1024)
	if entry.Reason != string(class.Reason) || entry.Message != msg {
		where := fmt.Sprintf("%q of %s", d.Name, describeStore(s.ps, entry))
		r.Recorder.Eventf(s.ps, corev1.EventTypeWarning, string(class.Reason), "not published to remote secret %s: %s", where, msg)
	}
	entry.Reason, entry.Message = string(class.Reason), msg
	return entry
}

// clip shortens a message to n bytes, on a rune boundary.
func clip(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return strings.ToValidUTF8(msg[:n-4], "") + " …"
}

// describeStore names the store of a status entry for messages.
func describeStore(ps *v1alpha1.PushSecret, e v1alpha1.PushSecretDestinationStatus) string {
	if e.StoreKind == v1alpha1.ClusterSecretStoreKind {
		return storeaccess.Describe(e.StoreKind, "", e.StoreName)
	}
	return storeaccess.Describe(e.StoreKind, ps.Namespace, e.StoreName)
}
