// Package provider holds what every provider shares: the registry that main
// builds, the view of a store a provider gets, and the dependencies it may
// use to resolve credentials.
package provider

import (
	"context"
	"fmt"
	"reflect"
	"sort"

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

// Deps are what a provider may use while it builds a client. They enforce
// the namespace rules: a SecretStore reads only from its own namespace.
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

// Factory builds clients for one provider block.
type Factory interface {
	// Validate checks the store's configuration without any I/O.
	Validate(store Store) error
	// New builds a client for the store.
	New(ctx context.Context, store Store, deps Deps) (engine.Reader, error)
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

// SetBlocks lists the JSON names of the provider blocks set in spec.
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
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}

// SecretRefs lists every Secret a provider block names, wherever it sits in
// the block, with the namespace resolved for the given store. Controllers
// index stores by these so that a change of a credential reaches them.
func SecretRefs(store Store) []NamespacedName {
	seen := map[NamespacedName]bool{}
	walk(reflect.ValueOf(store.Spec), func(sel v1alpha1.SecretKeySelector) {
		ns := sel.Namespace
		if !store.Cluster() {
			ns = store.Namespace
		}
		seen[NamespacedName{Namespace: ns, Name: sel.Name}] = true
	})
	out := make([]NamespacedName, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// CheckNamespaces refuses a SecretStore that names a Secret of another
// namespace, and a ClusterSecretStore that leaves a namespace out.
func CheckNamespaces(store Store) error {
	var err error
	walk(reflect.ValueOf(store.Spec), func(sel v1alpha1.SecretKeySelector) {
		switch {
		case err != nil:
		case !store.Cluster() && sel.Namespace != "" && sel.Namespace != store.Namespace:
			err = fmt.Errorf("%w: a SecretStore may only reference Secrets in its own namespace %q, but names Secret %q in %q; use a ClusterSecretStore",
				engine.ErrInvalidConfig, store.Namespace, sel.Name, sel.Namespace)
		case store.Cluster() && sel.Namespace == "":
			err = fmt.Errorf("%w: a ClusterSecretStore must give the namespace of every Secret it references (Secret %q has none)",
				engine.ErrInvalidConfig, sel.Name)
		}
	})
	return err
}

// NamespacedName names an object in a namespace.
type NamespacedName struct{ Namespace, Name string }

func (n NamespacedName) String() string { return n.Namespace + "/" + n.Name }

var (
	selectorType = reflect.TypeOf(v1alpha1.SecretKeySelector{})
	caType       = reflect.TypeOf(v1alpha1.CAProvider{})
)

func walk(v reflect.Value, fn func(v1alpha1.SecretKeySelector)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), fn)
		}
	case reflect.Struct:
		if v.Type() == selectorType {
			fn(v.Interface().(v1alpha1.SecretKeySelector))
			return
		}
		if v.Type() == caType {
			if ca := v.Interface().(v1alpha1.CAProvider); ca.Type == "Secret" {
				fn(v1alpha1.SecretKeySelector{Name: ca.Name, Key: ca.Key, Namespace: ca.Namespace})
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			walk(v.Field(i), fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), fn)
		}
	}
}
