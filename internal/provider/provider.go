// Package provider holds what every provider shares: the registry that main
// builds, the view of a store a provider gets, the references to Kubernetes
// objects a provider declares, and the dependencies it may use to resolve
// credentials. docs/provider-contract.md describes the contract.
package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// Store is what a provider knows of the store it serves.
type Store struct {
	// Kind is SecretStore or ClusterSecretStore.
	Kind string
	// Namespace of a SecretStore; empty for a ClusterSecretStore.
	Namespace string
	Name      string
	Spec      *v1alpha1.SecretStoreProvider
}

// Cluster reports whether the store is a ClusterSecretStore.
func (s Store) Cluster() bool { return s.Kind == v1alpha1.ClusterSecretStoreKind }

// NamespaceOf is the namespace of an object the store names with namespace
// ns: a SecretStore's own, or the one a ClusterSecretStore gives.
func (s Store) NamespaceOf(ns string) string {
	if s.Cluster() {
		return ns
	}
	return s.Namespace
}

// Deps are what a provider may use while it builds a client. They hand out
// only the objects that the provider's Refs declared for the store.
type Deps interface {
	// SecretValue returns one key of a Secret.
	SecretValue(ctx context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error)
	// ConfigMapValue returns one key of a ConfigMap (namespace may be
	// empty for a SecretStore: its own).
	ConfigMapValue(ctx context.Context, namespace, name, key string) ([]byte, error)
	// ServiceAccountToken requests a short-lived token for a service
	// account and returns it with its lifetime in seconds.
	ServiceAccountToken(ctx context.Context, sel v1alpha1.ServiceAccountSelector) (token string, expiresIn int64, err error)
	// LocalConfig is how Watchword itself reaches this cluster (host and
	// CA only are meant to be used; never its credentials).
	LocalConfig() *rest.Config
}

// Self is implemented by the Deps of the controller: it tells who
// Watchword itself acts as on this cluster (for a pod, its service
// account: "system:serviceaccount:NAMESPACE:NAME" and the account's UID),
// as the API server reports it. A provider uses it to refuse a store that
// would lend Watchword's own identity to a tenant.
type Self interface {
	SelfUser(ctx context.Context) (User, error)
}

// User is an identity as an API server reports it (a SelfSubjectReview's
// user info): its name and, for a service account, the account's UID. A
// name alone is not an identity across clusters (every cluster can have a
// "watchword" account in a "watchword-system" namespace); the UID is, as
// each account's is its own.
type User struct {
	Name string
	UID  string
}

// Factory builds clients for one provider block.
type Factory interface {
	// Validate checks the store's configuration without any I/O.
	Validate(store Store) error
	// Refs lists every Kubernetes object the store's provider block
	// names (credentials, CA bundles, service accounts), set or not in
	// the union it belongs to, as written in the spec.
	Refs(store Store) []ObjectRef
	// New builds the operations of a client for the store.
	New(ctx context.Context, store Store, deps Deps) (engine.Ops, error)
}

// Kind is the kind of a Kubernetes object a store may reference.
type Kind string

// The kinds a store may reference.
const (
	KindSecret         Kind = "Secret"
	KindConfigMap      Kind = "ConfigMap"
	KindServiceAccount Kind = "ServiceAccount"
)

// ObjectRef is one object a provider block names, as written in the spec.
type ObjectRef struct {
	Kind Kind
	// Field is the path of the reference in the store's spec, such as
	// "vault.auth.tokenSecretRef", for messages.
	Field string
	// Namespace as written; empty means the SecretStore's own.
	Namespace string
	Name      string
}

// SecretKeyRef is the reference of a SecretKeySelector at field.
func SecretKeyRef(field string, sel v1alpha1.SecretKeySelector) ObjectRef {
	return ObjectRef{Kind: KindSecret, Field: field, Namespace: sel.Namespace, Name: sel.Name}
}

// ServiceAccountRef is the reference of a ServiceAccountSelector at field.
func ServiceAccountRef(field string, sel v1alpha1.ServiceAccountSelector) ObjectRef {
	return ObjectRef{Kind: KindServiceAccount, Field: field, Namespace: sel.Namespace, Name: sel.Name}
}

// CAProviderRef is the reference of a CAProvider at field: a Secret or a
// ConfigMap.
func CAProviderRef(field string, ca v1alpha1.CAProvider) ObjectRef {
	kind := KindSecret
	if ca.Type == "ConfigMap" {
		kind = KindConfigMap
	}
	return ObjectRef{Kind: kind, Field: field, Namespace: ca.Namespace, Name: ca.Name}
}

// Refs are the objects a store references, by kind, with namespaces
// resolved; each list is sorted and holds no duplicates.
type Refs struct {
	Secrets         []NamespacedName
	ConfigMaps      []NamespacedName
	ServiceAccounts []NamespacedName
}

// Has reports whether the refs hold the object.
func (r Refs) Has(kind Kind, n NamespacedName) bool {
	_, found := slices.BinarySearchFunc(*r.list(kind), n, NamespacedName.compare)
	return found
}

func (r *Refs) list(kind Kind) *[]NamespacedName {
	switch kind {
	case KindConfigMap:
		return &r.ConfigMaps
	case KindServiceAccount:
		return &r.ServiceAccounts
	default:
		return &r.Secrets
	}
}

// Registry maps provider block names (as spelled in the API) to factories.
// It is built explicitly in main.
type Registry map[string]Factory

// Lookup returns the name of the provider block set in spec and its factory.
// A block known to the API but absent from the registry yields
// engine.ErrNotImplemented.
func (r Registry) Lookup(spec *v1alpha1.SecretStoreProvider) (string, Factory, error) {
	names := SetBlocks(spec)
	if len(names) != 1 {
		return "", nil, fmt.Errorf("%w: exactly one provider block must be set, found %d", engine.ErrInvalidConfig, len(names))
	}
	f, ok := r[names[0]]
	if !ok {
		return names[0], nil, fmt.Errorf("%w: the %q provider is part of the API but not implemented in this version of Watchword", engine.ErrNotImplemented, names[0])
	}
	return names[0], f, nil
}

// Refs returns the objects that the store's provider declares, with their
// namespaces resolved, after checking the namespace rules: a SecretStore
// may reference only its own namespace, and a ClusterSecretStore must give
// the namespace of every object. Controllers watch the Secrets among them,
// so that a changed credential reaches its stores.
func (r Registry) Refs(store Store) (Refs, error) {
	_, f, err := r.Lookup(store.Spec)
	if err != nil {
		return Refs{}, err
	}
	return resolve(store, f.Refs(store))
}

// Ops builds the operations of a client for the store as its provider
// does, after the checks every caller needs: one block set and
// implemented, its configuration valid, and the namespace rules of the
// objects it names. It returns the provider's name too (for
// engine.NewClient). The controllers and the file agent build their
// clients through it; deps says where credentials come from.
func (r Registry) Ops(ctx context.Context, store Store, deps Deps) (string, engine.Ops, error) {
	name, f, err := r.Lookup(store.Spec)
	if err != nil {
		return "", engine.Ops{}, err
	}
	if err = f.Validate(store); err != nil {
		return "", engine.Ops{}, err
	}
	if _, err = resolve(store, f.Refs(store)); err != nil {
		return "", engine.Ops{}, err
	}
	ops, err := f.New(ctx, store, deps)
	return name, ops, err
}

// resolve checks the namespace rules for refs of store and resolves their
// namespaces.
func resolve(store Store, refs []ObjectRef) (Refs, error) {
	var out Refs
	for _, ref := range refs {
		switch {
		case !store.Cluster() && ref.Namespace != "" && ref.Namespace != store.Namespace:
			return Refs{}, fmt.Errorf("%w: %s names %s %q in namespace %q, but a SecretStore may only reference %ss in its own namespace %q; use a ClusterSecretStore",
				engine.ErrInvalidConfig, ref.Field, ref.Kind, ref.Name, ref.Namespace, ref.Kind, store.Namespace)
		case store.Cluster() && ref.Namespace == "":
			return Refs{}, fmt.Errorf("%w: %s names %s %q without a namespace; a ClusterSecretStore must give the namespace of every object it references",
				engine.ErrInvalidConfig, ref.Field, ref.Kind, ref.Name)
		}
		l := out.list(ref.Kind)
		*l = append(*l, NamespacedName{Namespace: store.NamespaceOf(ref.Namespace), Name: ref.Name})
	}
	for _, l := range []*[]NamespacedName{&out.Secrets, &out.ConfigMaps, &out.ServiceAccounts} {
		slices.SortFunc(*l, NamespacedName.compare)
		*l = slices.Compact(*l)
	}
	return out, nil
}

// SetBlocks lists the JSON names of the provider blocks set in spec. It
// looks at the shape of the provider union only, never inside a block.
func SetBlocks(spec *v1alpha1.SecretStoreProvider) []string {
	var out []string
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			out = append(out, jsonName(t.Field(i)))
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// NamespacedName names an object in a namespace.
type NamespacedName struct{ Namespace, Name string }

func (n NamespacedName) String() string { return n.Namespace + "/" + n.Name }

func (n NamespacedName) compare(o NamespacedName) int {
	if c := strings.Compare(n.Namespace, o.Namespace); c != 0 {
		return c
	}
	return strings.Compare(n.Name, o.Name)
}

// CABundle is the PEM CA bundle of a store: the one its spec holds, or
// the ConfigMap or Secret key its caProvider names, read through deps.
func CABundle(ctx context.Context, deps Deps, bundle []byte, p *v1alpha1.CAProvider) ([]byte, error) {
	if p == nil {
		return bundle, nil
	}
	if p.Type == "ConfigMap" {
		return deps.ConfigMapValue(ctx, p.Namespace, p.Name, p.Key)
	}
	return deps.SecretValue(ctx, v1alpha1.SecretKeySelector{Name: p.Name, Key: p.Key, Namespace: p.Namespace})
}
