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

// publishAll publishes to every destination. A destination that fails is
// recorded and the others go on.
func (r *Reconciler) publishAll(ctx context.Context, s *scope) (bool, error) {
	p := r.publisher()
	for _, d := range s.ps.Spec.Destinations {
		entry, err := p.Publish(ctx, publishing.Request{Object: s.ps, Kind: kind, Destination: d,
			Previous: publishing.Previous(s.ps.Status.Destinations, d), Publication: s.publication, Keys: s.remoteKeys,
			Now: s.now, ReadBack: interval(s.ps), Others: s.ps.Status.Destinations,
			IfNotExists: s.ps.Spec.UpdatePolicy == v1alpha1.PushUpdateIfNotExists})
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			entry = p.Failed(kind, s.ps, entry, err)
			s.failures = append(s.failures, fmt.Errorf("destination %q of %s: %w", d.Name, describeStore(s.ps, entry), err))
		}
		s.destinations = append(s.destinations, entry)
	}
	return false, nil
}

// describeStore names the store of a status entry for messages.
func describeStore(ps *v1alpha1.PushSecret, e v1alpha1.PushSecretDestinationStatus) string {
	return publishing.DescribeStore(ps.Namespace, e)
}
