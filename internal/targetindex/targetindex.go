// Package targetindex finds the ExternalSecrets that write a Secret (or a
// ConfigMap: spec.target.kind).
//
// Most ExternalSecrets write a Secret of their own name (spec.target.name
// unset, or the same). Those are found by a get by name, and only the
// others enter a field index. An index entry for every ExternalSecret
// would be a set of one per target, held twice (per namespace and across
// namespaces): about 650 bytes each, 65 MB at 100,000 ExternalSecrets,
// for lookups a get answers.
//
// Tuning: the cache's indexes went from 66 MB to 27 MB at 100,000
// (FINDINGS.md, "Memory"); if controller-runtime held an index value once,
// or memory at that scale stopped mattering, every target could be indexed.
package targetindex

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Field is the cache's index field the ExternalSecret controller
// registers (Register) and other readers of the same cache look up
// (Writers, Keys): the target's name of every ExternalSecret whose target
// is named otherwise than itself.
const Field = "watchword.target"

// Name is the name of the Secret an ExternalSecret writes.
func Name(es *v1alpha1.ExternalSecret) string {
	if es.Spec.Target.Name != "" {
		return es.Spec.Target.Name
	}
	return es.Name
}

// Register adds the index field to the cache: it holds the target's name
// of every ExternalSecret whose target is named otherwise than itself and
// for which keep (nil: all) is true.
func Register(ctx context.Context, idx client.FieldIndexer, field string, keep func(*v1alpha1.ExternalSecret) bool) error {
	return idx.IndexField(ctx, &v1alpha1.ExternalSecret{}, field, func(o client.Object) []string {
		es := o.(*v1alpha1.ExternalSecret)
		if name := Name(es); name != es.Name && (keep == nil || keep(es)) {
			return []string{name}
		}
		return nil
	})
}

// Kind is the kind of object an ExternalSecret writes: "Secret" or
// "ConfigMap".
func Kind(es *v1alpha1.ExternalSecret) string {
	if es.Spec.Target.Kind == v1alpha1.TargetConfigMap {
		return "ConfigMap"
	}
	return "Secret"
}

// Writers are the ExternalSecrets of namespace ns that write Secret
// name: the one of that name, if its target is named after it, and those
// in the index field; not those that write a ConfigMap of that name. They
// are copies, which the caller may change.
func Writers(ctx context.Context, c client.Reader, field, ns, name string) ([]v1alpha1.ExternalSecret, error) {
	return WritersOf(ctx, c, field, ns, "Secret", name)
}

// WritersOf are the ExternalSecrets of namespace ns that write the object
// of kind ("Secret" or "ConfigMap", as Kind tells) and name.
func WritersOf(ctx context.Context, c client.Reader, field, ns, kind, name string) ([]v1alpha1.ExternalSecret, error) {
	list, err := writers(ctx, c, field, ns, name)
	out := list[:0]
	for i := range list {
		if Kind(&list[i]) == kind {
			out = append(out, list[i])
		}
	}
	return out, err
}

// Keys are the keys of the ExternalSecrets that write a Secret or a
// ConfigMap of that name (the index does not tell the kinds apart). The
// cache's objects are read without copies.
func Keys(ctx context.Context, c client.Reader, field, ns, name string) ([]types.NamespacedName, error) {
	list, err := writers(ctx, c, field, ns, name, client.UnsafeDisableDeepCopy)
	out := make([]types.NamespacedName, len(list))
	for i := range list {
		out[i] = client.ObjectKeyFromObject(&list[i])
	}
	return out, err
}

func writers(ctx context.Context, c client.Reader, field, ns, name string, unsafe ...client.UnsafeDisableDeepCopyOption) ([]v1alpha1.ExternalSecret, error) {
	var list v1alpha1.ExternalSecretList
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{field: name}}
	var get []client.GetOption
	for _, u := range unsafe {
		opts, get = append(opts, u), append(get, u)
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	var own v1alpha1.ExternalSecret
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &own, get...)
	switch {
	case err == nil && Name(&own) == name:
		list.Items = append(list.Items, own)
	case err != nil && client.IgnoreNotFound(err) != nil:
		return list.Items, err
	}
	return list.Items, nil
}
