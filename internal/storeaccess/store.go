// Package storeaccess resolves the store an ExternalSecret names, checks
// that the ExternalSecret may use it, and hands out provider clients, one per
// store generation and credential version, reused across reconciles.
package storeaccess

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Resolved is a store as an ExternalSecret sees it.
type Resolved struct {
	Store provider.Store
	// Limits are the store's spec.limits; nil when it sets none.
	Limits     *v1alpha1.StoreLimits
	Controller string
	UID        types.UID
	Generation int64
	Object     client.Object
}

// ID identifies the store generation in the shared fetch cache.
func (r *Resolved) ID() string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", r.Store.Kind, r.Store.Namespace, r.Store.Name, r.UID, r.Generation)
}

// Describe names the store for messages: `SecretStore "ns/name"`.
func (r *Resolved) Describe() string {
	return Describe(r.Store.Kind, r.Store.Namespace, r.Store.Name)
}

// Describe names a store for messages.
func Describe(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s %q", kind, name)
	}
	return fmt.Sprintf("%s %q", kind, namespace+"/"+name)
}

// FromSecretStore turns a SecretStore into a Resolved.
func FromSecretStore(s *v1alpha1.SecretStore) *Resolved {
	return &Resolved{
		Store:      provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: s.Namespace, Name: s.Name, Spec: &s.Spec.SecretStoreProvider},
		Limits:     s.Spec.Limits,
		Controller: s.Spec.Controller, UID: s.UID, Generation: s.Generation, Object: s,
	}
}

// FromClusterSecretStore turns a ClusterSecretStore into a Resolved.
func FromClusterSecretStore(s *v1alpha1.ClusterSecretStore) *Resolved {
	return &Resolved{
		Store:      provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: s.Name, Spec: &s.Spec.SecretStoreProvider},
		Limits:     s.Spec.Limits,
		Controller: s.Spec.Controller, UID: s.UID, Generation: s.Generation, Object: s,
	}
}

// ListStores lists the SecretStores and ClusterSecretStores of the cache
// that match opts, shared with the cache: the caller must not modify them.
func ListStores(ctx context.Context, c client.Reader, opts ...client.ListOption) ([]*Resolved, error) {
	opts = append(opts, client.UnsafeDisableDeepCopy)
	var ss v1alpha1.SecretStoreList
	if err := c.List(ctx, &ss, opts...); err != nil {
		return nil, err
	}
	var css v1alpha1.ClusterSecretStoreList
	if err := c.List(ctx, &css, opts...); err != nil {
		return nil, err
	}
	out := make([]*Resolved, 0, len(ss.Items)+len(css.Items))
	for i := range ss.Items {
		out = append(out, FromSecretStore(&ss.Items[i]))
	}
	for i := range css.Items {
		out = append(out, FromClusterSecretStore(&css.Items[i]))
	}
	return out, nil
}

// Resolve loads the store an ExternalSecret in namespace ns names and checks
// that the namespace may use it. The store is shared with the cache, not
// copied (every sync of every ExternalSecret resolves its store, and a store
// can be large): the caller must not modify it.
//
// Tuning: the copy was 56 KB per sync with the benchmark's 1,000-entry fake
// store (FINDINGS.md, "Memory"); if stores were small, a copy would do.
func Resolve(ctx context.Context, c client.Reader, ns string, ref v1alpha1.StoreRef) (*Resolved, error) {
	switch ref.Kind {
	case "", v1alpha1.SecretStoreKind:
		var s v1alpha1.SecretStore
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &s, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, failure.Terminalf(failure.StoreNotFound, "SecretStore %q not found in namespace %q; create it or fix spec.secretStoreRef", ref.Name, ns)
			}
			return nil, err
		}
		return FromSecretStore(&s), nil
	case v1alpha1.ClusterSecretStoreKind:
		var s v1alpha1.ClusterSecretStore
		if err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, &s, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, failure.Terminalf(failure.StoreNotFound, "ClusterSecretStore %q not found; create it or fix spec.secretStoreRef", ref.Name)
			}
			return nil, err
		}
		if err := allowNamespace(ctx, c, &s, ns); err != nil {
			return nil, err
		}
		return FromClusterSecretStore(&s), nil
	default:
		return nil, failure.Terminalf(failure.InvalidStoreRef, "spec.secretStoreRef.kind %q is not SecretStore or ClusterSecretStore", ref.Kind)
	}
}

// allowNamespace checks a ClusterSecretStore's namespace conditions.
func allowNamespace(ctx context.Context, c client.Reader, s *v1alpha1.ClusterSecretStore, ns string) error {
	if len(s.Spec.Namespaces) == 0 && s.Spec.NamespaceSelector == nil {
		return nil
	}
	if slices.Contains(s.Spec.Namespaces, ns) {
		return nil
	}
	var allowedBy []string
	if len(s.Spec.Namespaces) > 0 {
		allowedBy = append(allowedBy, "namespaces ["+strings.Join(s.Spec.Namespaces, ", ")+"]")
	}
	if s.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.NamespaceSelector)
		if err != nil {
			return failure.Terminalf(failure.InvalidStore, "ClusterSecretStore %q has an invalid namespaceSelector: %s", s.Name, failure.Redact(err))
		}
		var nsObj corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
			return fmt.Errorf("reading namespace %q: %w", ns, err)
		}
		if sel.Matches(labels.Set(nsObj.Labels)) {
			return nil
		}
		allowedBy = append(allowedBy, "those matching namespaceSelector "+sel.String())
	}
	return failure.Terminalf(failure.NamespaceDenied,
		"ClusterSecretStore %q does not allow namespace %q (it allows %s); ask its owner to add the namespace, or use another store",
		s.Name, ns, strings.Join(allowedBy, " or "))
}
