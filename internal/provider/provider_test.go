package provider_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// listed is a factory whose Refs returns refs.
type listed struct{ refs []provider.ObjectRef }

func (listed) Validate(provider.Store) error              { return nil }
func (l listed) Refs(provider.Store) []provider.ObjectRef { return l.refs }
func (listed) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	return engine.Ops{}, nil
}

func store(kind, ns string) provider.Store {
	return provider.Store{Kind: kind, Namespace: ns, Name: "s", Spec: &v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}
}

func TestRegistryRefsResolvesNamespaces(t *testing.T) {
	reg := provider.Registry{"fake": listed{refs: []provider.ObjectRef{
		{Kind: provider.KindSecret, Field: "a", Name: "token"},
		{Kind: provider.KindSecret, Field: "b", Namespace: "app", Name: "token"},
		{Kind: provider.KindSecret, Field: "c", Name: "ca"},
		{Kind: provider.KindConfigMap, Field: "d", Name: "bundle"},
		{Kind: provider.KindServiceAccount, Field: "e", Name: "reader"},
	}}}
	got, err := reg.Refs(store(v1alpha1.SecretStoreKind, "app"))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Refs{
		Secrets:         []provider.NamespacedName{{Namespace: "app", Name: "ca"}, {Namespace: "app", Name: "token"}},
		ConfigMaps:      []provider.NamespacedName{{Namespace: "app", Name: "bundle"}},
		ServiceAccounts: []provider.NamespacedName{{Namespace: "app", Name: "reader"}},
	}
	if !slices.Equal(got.Secrets, want.Secrets) || !slices.Equal(got.ConfigMaps, want.ConfigMaps) || !slices.Equal(got.ServiceAccounts, want.ServiceAccounts) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if !got.Has(provider.KindServiceAccount, provider.NamespacedName{Namespace: "app", Name: "reader"}) ||
		got.Has(provider.KindSecret, provider.NamespacedName{Namespace: "app", Name: "reader"}) {
		t.Fatal("Has must look at the kind asked for")
	}
}

func TestRegistryRefsNamespaceRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  string
		ref   provider.ObjectRef
		wants []string
	}{
		{"SecretStore naming another namespace", v1alpha1.SecretStoreKind,
			provider.ObjectRef{Kind: provider.KindSecret, Field: "x.tokenRef", Namespace: "other", Name: "t"},
			[]string{"x.tokenRef", `"other"`, "may only reference Secrets in its own namespace"}},
		{"SecretStore naming a service account of another namespace", v1alpha1.SecretStoreKind,
			provider.ObjectRef{Kind: provider.KindServiceAccount, Field: "x.sa", Namespace: "other", Name: "sa"},
			[]string{"x.sa", "may only reference ServiceAccounts in its own namespace"}},
		{"ClusterSecretStore without a namespace", v1alpha1.ClusterSecretStoreKind,
			provider.ObjectRef{Kind: provider.KindConfigMap, Field: "x.ca", Name: "ca"},
			[]string{"x.ca", "ConfigMap", "must give the namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := provider.Registry{"fake": listed{refs: []provider.ObjectRef{tc.ref}}}
			_, err := reg.Refs(store(tc.kind, "app"))
			if !errors.Is(err, engine.ErrInvalidConfig) {
				t.Fatalf("got %v, want an invalid configuration", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %s", err, w)
				}
			}
		})
	}
	// The same refs with the SecretStore's own namespace spelled out, or
	// in a ClusterSecretStore with namespaces, are fine.
	reg := provider.Registry{"fake": listed{refs: []provider.ObjectRef{{Kind: provider.KindSecret, Field: "f", Namespace: "app", Name: "t"}}}}
	for _, kind := range []string{v1alpha1.SecretStoreKind, v1alpha1.ClusterSecretStoreKind} {
		if _, err := reg.Refs(store(kind, "app")); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

func TestRegistryRefsOfAnUnimplementedProvider(t *testing.T) {
	_, err := provider.Registry{}.Refs(store(v1alpha1.SecretStoreKind, "app"))
	if !errors.Is(err, engine.ErrNotImplemented) {
		t.Fatalf("got %v", err)
	}
}
