// Package providertest holds checks that every provider's tests run.
package providertest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
)

var (
	secretKeyType      = reflect.TypeOf(v1alpha1.SecretKeySelector{})
	serviceAccountType = reflect.TypeOf(v1alpha1.ServiceAccountSelector{})
	caProviderType     = reflect.TypeOf(v1alpha1.CAProvider{})
	configMapKeyType   = reflect.TypeOf(v1alpha1.ConfigMapKeySelector{})
)

// RefsAreComplete fills every credential field of the provider block named
// block (every SecretKeySelector, ServiceAccountSelector, CAProvider and
// ConfigMapKeySelector, at any depth, in every branch of every union) with
// a distinct object, and fails t unless the factory's Refs names each of
// them. It finds the fields by reflection over the API type, so that a
// field added to the API but forgotten by the factory (which would lose
// its rollover watch) fails the provider's tests. CAProviders are filled
// once as Secrets and once as ConfigMaps.
func RefsAreComplete(t testing.TB, f provider.Factory, block string) {
	t.Helper()
	for _, caType := range []string{"Secret", "ConfigMap"} {
		spec := &v1alpha1.SecretStoreProvider{}
		field, ok := blockField(spec, block)
		if !ok {
			t.Fatalf("the API has no provider block %q", block)
		}
		fill := &filler{caType: caType}
		field.Set(reflect.New(field.Type().Elem()))
		fill.walk(field.Elem(), block)
		store := provider.Store{Kind: v1alpha1.ClusterSecretStoreKind, Name: "store", Spec: spec}
		got := f.Refs(store)
		for _, want := range fill.want {
			if !slices.ContainsFunc(got, func(r provider.ObjectRef) bool {
				return r.Kind == want.Kind && r.Namespace == want.Namespace && r.Name == want.Name
			}) {
				t.Errorf("%s (caProvider type %s): Refs does not name %s %s/%s at %s", block, caType, want.Kind, want.Namespace, want.Name, want.Field)
			}
		}
		for _, r := range got {
			if r.Field == "" {
				t.Errorf("%s: Refs names %s %s/%s without its field", block, r.Kind, r.Namespace, r.Name)
			}
		}
	}
}

func blockField(spec *v1alpha1.SecretStoreProvider, block string) (reflect.Value, bool) {
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i < v.NumField(); i++ {
		if jsonName(v.Type().Field(i)) == block {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

type filler struct {
	caType string
	n      int
	want   []provider.ObjectRef
}

// next is a distinct object in a distinct namespace.
func (f *filler) next(kind provider.Kind, path string) (ns, name string) {
	f.n++
	ns, name = fmt.Sprintf("ns-%d", f.n), fmt.Sprintf("obj-%d", f.n)
	f.want = append(f.want, provider.ObjectRef{Kind: kind, Field: path, Namespace: ns, Name: name})
	return ns, name
}

func (f *filler) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		f.walk(v.Elem(), path)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.Pointer {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			f.walk(v.Index(0), path+"[0]")
		}
	case reflect.Struct:
		switch v.Type() {
		case secretKeyType:
			ns, name := f.next(provider.KindSecret, path)
			v.Set(reflect.ValueOf(v1alpha1.SecretKeySelector{Namespace: ns, Name: name, Key: "key"}))
		case serviceAccountType:
			ns, name := f.next(provider.KindServiceAccount, path)
			v.Set(reflect.ValueOf(v1alpha1.ServiceAccountSelector{Namespace: ns, Name: name}))
		case configMapKeyType:
			ns, name := f.next(provider.KindConfigMap, path)
			v.Set(reflect.ValueOf(v1alpha1.ConfigMapKeySelector{Namespace: ns, Name: name, Key: "key"}))
		case caProviderType:
			kind := provider.KindSecret
			if f.caType == "ConfigMap" {
				kind = provider.KindConfigMap
			}
			ns, name := f.next(kind, path)
			v.Set(reflect.ValueOf(v1alpha1.CAProvider{Type: f.caType, Namespace: ns, Name: name, Key: "key"}))
		default:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					f.walk(v.Field(i), path+"."+jsonName(v.Type().Field(i)))
				}
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
