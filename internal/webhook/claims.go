// Package webhook is Watchword's validating admission webhook: it refuses
// an ExternalSecret or a PushSecret that would write to what another
// object already writes to (the same target Secret, or the same remote
// secret of the same store), when it is applied, naming the holder. It
// serves TLS with a certificate the operator issues and renews itself
// (certs.go), or with certificates from a mounted directory (cert-manager).
//
// The webhook is a convenience in front of the reconcile-time checks,
// never a replacement: its ValidatingWebhookConfiguration fails open, and
// the controllers still refuse to write over what another object owns.
package webhook

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Field indexes the webhook looks claims up by, on the manager's cache.
const (
	// IndexTarget holds the name of the Secret an ExternalSecret writes
	// (with creationPolicy Owner or Merge) when it is not the
	// ExternalSecret's own name (targetindex).
	IndexTarget = "watchword.admission.target"
	// IndexDestination holds destinationKey of every remote secret a
	// PushSecret, or an ExternalSecret's publishConnectionDetailsTo,
	// publishes to.
	IndexDestination = "watchword.admission.destination"
)

// holder is an object that claims something.
type holder struct {
	Kind, Namespace, Name string
	created               int64
	uid                   string
}

func (h holder) String() string { return fmt.Sprintf("%s %s/%s", h.Kind, h.Namespace, h.Name) }

// creationPolicy is spec.target.creationPolicy with its default.
func creationPolicy(es *v1alpha1.ExternalSecret) v1alpha1.CreationPolicy {
	if es.Spec.Target.CreationPolicy == "" {
		return v1alpha1.CreationPolicyOwner
	}
	return es.Spec.Target.CreationPolicy
}

// writesTarget tells whether an ExternalSecret writes a Secret: not when
// its creationPolicy is None.
func writesTarget(es *v1alpha1.ExternalSecret) bool {
	return creationPolicy(es) != v1alpha1.CreationPolicyNone
}

// targetClaim is the Secret an ExternalSecret writes, with its policy
// ("Owner/NAME"), or "" when it writes none.
func targetClaim(es *v1alpha1.ExternalSecret) string {
	if !writesTarget(es) {
		return ""
	}
	return string(creationPolicy(es)) + "/" + targetindex.Name(es)
}

// destinationKey names a remote secret: the store's kind and name and the
// remote name. A SecretStore is of the publisher's namespace, which the
// namespaced index adds.
func destinationKey(d v1alpha1.PushSecretDestination) string {
	ref := publishing.StoreRef(d)
	return ref.Kind + "/" + ref.Name + "/" + d.Name
}

func destinations(o client.Object) []v1alpha1.PushSecretDestination {
	switch obj := o.(type) {
	case *v1alpha1.PushSecret:
		return obj.Spec.Destinations
	case *v1alpha1.ExternalSecret:
		if p := obj.Spec.PublishConnectionDetailsTo; p != nil {
			return []v1alpha1.PushSecretDestination{p.PushSecretDestination}
		}
	}
	return nil
}

func destinationKeys(o client.Object) []string {
	var out []string
	for _, d := range destinations(o) {
		out = append(out, destinationKey(d))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Index registers the field indexes on the manager's cache; it must run
// before the cache starts.
func Index(ctx context.Context, idx client.FieldIndexer) error {
	if err := targetindex.Register(ctx, idx, IndexTarget, writesTarget); err != nil {
		return fmt.Errorf("indexing ExternalSecret targets: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexDestination, destinationKeys); err != nil {
		return fmt.Errorf("indexing ExternalSecret publications: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.PushSecret{}, IndexDestination, destinationKeys); err != nil {
		return fmt.Errorf("indexing PushSecret destinations: %w", err)
	}
	return nil
}

// Claims finds the holders of targets and destinations in the cache.
type Claims struct {
	Reader client.Reader
}

// targetHolders are the ExternalSecrets other than self that write the
// object of kind (Secret or ConfigMap) and name of namespace ns in a way
// that excludes policy p: an Owner target excludes every other writer;
// Merge targets share an object (their keys are checked when they sync)
// but exclude an Owner. A Secret and a ConfigMap of one name are two
// objects and exclude nothing.
func (c Claims) targetHolders(ctx context.Context, ns, kind, name string, p v1alpha1.CreationPolicy, self string) ([]holder, error) {
	excluded := []v1alpha1.CreationPolicy{v1alpha1.CreationPolicyOwner}
	if p == v1alpha1.CreationPolicyOwner {
		excluded = append(excluded, v1alpha1.CreationPolicyMerge)
	}
	writers, err := targetindex.WritersOf(ctx, c.Reader, IndexTarget, ns, kind, name)
	if err != nil {
		return nil, err
	}
	var out []holder
	for i := range writers {
		if slices.Contains(excluded, creationPolicy(&writers[i])) {
			out = appendHolder(out, &writers[i], "ExternalSecret", self)
		}
	}
	return oldestFirst(out), nil
}

// destinationHolders are the publishers other than self (PushSecrets and
// ExternalSecrets) that publish to destination d from namespace ns.
func (c Claims) destinationHolders(ctx context.Context, ns string, d v1alpha1.PushSecretDestination, self string) ([]holder, error) {
	opts := []client.ListOption{client.MatchingFields{IndexDestination: destinationKey(d)}}
	if publishing.StoreRef(d).Kind != v1alpha1.ClusterSecretStoreKind {
		opts = append(opts, client.InNamespace(ns))
	}
	var out []holder
	var pss v1alpha1.PushSecretList
	if err := c.Reader.List(ctx, &pss, opts...); err != nil {
		return nil, err
	}
	for i := range pss.Items {
		out = appendHolder(out, &pss.Items[i], "PushSecret", self)
	}
	var ess v1alpha1.ExternalSecretList
	if err := c.Reader.List(ctx, &ess, opts...); err != nil {
		return nil, err
	}
	for i := range ess.Items {
		out = appendHolder(out, &ess.Items[i], "ExternalSecret", self)
	}
	return oldestFirst(out), nil
}

// appendHolder adds o unless it is the object under review (self is
// "Kind/namespace/name").
func appendHolder(out []holder, o client.Object, kind, self string) []holder {
	if kind+"/"+o.GetNamespace()+"/"+o.GetName() == self {
		return out
	}
	return append(out, holder{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName(),
		created: o.GetCreationTimestamp().UnixNano(), uid: string(o.GetUID())})
}

// oldestFirst sorts holders by creation, then by name: the first one is
// the one that got there first.
func oldestFirst(hs []holder) []holder {
	slices.SortFunc(hs, func(a, b holder) int {
		if a.created != b.created {
			if a.created < b.created {
				return -1
			}
			return 1
		}
		if a.String() < b.String() {
			return -1
		}
		return 1
	})
	return hs
}
