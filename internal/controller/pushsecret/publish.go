package pushsecret

import (
	"context"
	"fmt"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// kind is the publisher kind in ownership markers and messages.
const kind = "PushSecret"

// publisher publishes through the stores of this instance's class.
func (r *Reconciler) publisher() *publishing.Publisher {
	return &publishing.Publisher{Client: r.Client, Clients: r.Clients, Recorder: r.Recorder, Class: r.Class, Keys: r.DigestKeys}
}

// publishAll publishes to every target. A target that fails, or is
// refused before any write (a collision, a source that publishes
// nothing), is recorded and the others go on.
func (r *Reconciler) publishAll(ctx context.Context, s *scope) (bool, error) {
	p := r.publisher()
	for _, t := range s.targets {
		d := t.dest
		prev := publishing.Previous(s.ps.Status.Destinations, d)
		var entry v1alpha1.PushSecretDestinationStatus
		err := t.err
		if err == nil {
			entry, err = p.Publish(ctx, publishing.Request{Object: s.ps, Kind: kind, Destination: d,
				Previous: prev, Publication: t.src.publication, Keys: t.src.keys,
				Now: s.now, ReadBack: interval(s.ps), Others: s.ps.Status.Destinations,
				IfNotExists: s.ps.Spec.UpdatePolicy == v1alpha1.PushUpdateIfNotExists})
		} else {
			entry = refused(d, prev)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			entry = p.Failed(kind, s.ps, entry, err)
			s.failures = append(s.failures, fmt.Errorf("destination %q of %s: %w", d.Name, describeStore(s.ps, entry), err))
		}
		if s.ps.Spec.SecretSelector != nil && t.src != nil {
			entry.SecretName = t.src.name
		}
		s.destinations = append(s.destinations, entry)
	}
	return false, nil
}

// refused is the entry of a target refused before any write: its last
// status, which keeps what was published there, or a new one.
func refused(d v1alpha1.PushSecretDestination, prev *v1alpha1.PushSecretDestinationStatus) v1alpha1.PushSecretDestinationStatus {
	if prev != nil {
		return *prev
	}
	ref := publishing.StoreRef(d)
	return v1alpha1.PushSecretDestinationStatus{Name: d.Name, StoreKind: ref.Kind, StoreName: ref.Name}
}

// dests are the destinations of the targets, with their names made.
func dests(s *scope) []v1alpha1.PushSecretDestination {
	out := make([]v1alpha1.PushSecretDestination, len(s.targets))
	for i, t := range s.targets {
		out[i] = t.dest
	}
	return out
}

// describeStore names the store of a status entry for messages.
func describeStore(ps *v1alpha1.PushSecret, e v1alpha1.PushSecretDestinationStatus) string {
	return publishing.DescribeStore(ps.Namespace, e)
}
