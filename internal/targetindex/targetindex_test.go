package targetindex

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// indexer hands the index Register defines to the fake client's builder.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, obj client.Object, field string, f client.IndexerFunc) error {
	i.b.WithIndex(obj, field, f)
	return nil
}

func es(ns, name, target string, p v1alpha1.CreationPolicy) *v1alpha1.ExternalSecret {
	e := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	e.Spec.Target.Name, e.Spec.Target.CreationPolicy = target, p
	return e
}

func names(list []v1alpha1.ExternalSecret) []string {
	var out []string
	for _, e := range list {
		out = append(out, e.Namespace+"/"+e.Name)
	}
	slices.Sort(out)
	return out
}

func TestWritersFindsTargetsNamedAfterTheirExternalSecretWithoutAnIndexEntry(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		es("ns", "a", "", ""),                                 // writes "a", by its own name
		es("ns", "d", "d", ""),                                // writes "d", named so explicitly
		es("ns", "b", "shared", ""),                           // writes "shared"
		es("ns", "c", "shared", v1alpha1.CreationPolicyMerge), // writes "shared"
		es("ns", "shared", "other", ""),                       // named "shared", writes "other"
		es("ns", "e", "a", ""),                                // also writes "a"
		es("ns", "n", "a", v1alpha1.CreationPolicyNone),       // left out of the index by keep
		es("other", "a", "", ""),                              // another namespace's "a"
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	keep := func(e *v1alpha1.ExternalSecret) bool {
		return e.Spec.Target.CreationPolicy != v1alpha1.CreationPolicyNone
	}
	if err := Register(context.Background(), indexer{b}, "test.target", keep); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	// The index holds only targets named otherwise than their
	// ExternalSecret, and only those keep keeps.
	for secret, want := range map[string][]string{
		"a": {"ns/e"}, "d": nil, "shared": {"ns/b", "ns/c"}, "other": {"ns/shared"},
	} {
		var list v1alpha1.ExternalSecretList
		if err := c.List(context.Background(), &list, client.InNamespace("ns"), client.MatchingFields{"test.target": secret}); err != nil {
			t.Fatal(err)
		}
		if got := names(list.Items); !slices.Equal(got, want) {
			t.Errorf("index entries for Secret %q: %v, want %v", secret, got, want)
		}
	}

	for _, tc := range []struct {
		secret string
		want   []string
	}{
		{"a", []string{"ns/a", "ns/e"}},
		{"d", []string{"ns/d"}},
		{"shared", []string{"ns/b", "ns/c"}},
		{"other", []string{"ns/shared"}},
		{"nobody", nil},
	} {
		got, err := Writers(context.Background(), c, "test.target", "ns", tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("writers of Secret %q: %v, want %v", tc.secret, names(got), tc.want)
		}
		keys, err := Keys(context.Background(), c, "test.target", "ns", tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		var keyNames []string
		for _, k := range keys {
			keyNames = append(keyNames, k.String())
		}
		slices.Sort(keyNames)
		if !slices.Equal(keyNames, tc.want) {
			t.Errorf("keys of the writers of Secret %q: %v, want %v", tc.secret, keyNames, tc.want)
		}
	}
}

// A ConfigMap and a Secret of the same name are two objects: the writers
// of one are not the writers of the other, while Keys (which queues
// reconciles on a change of either) finds both.
func TestWritersTellSecretsFromConfigMapsOfTheSameName(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	configMap := func(e *v1alpha1.ExternalSecret) *v1alpha1.ExternalSecret {
		e.Spec.Target.Kind = v1alpha1.TargetConfigMap
		return e
	}
	objs := []client.Object{
		es("ns", "app", "", ""),                // the Secret "app", by its own name
		configMap(es("ns", "cm", "app", "")),   // the ConfigMap "app"
		configMap(es("ns", "conf", "", "")),    // the ConfigMap "conf", by its own name
		es("ns", "s", "conf", ""),              // the Secret "conf"
		es("ns", "s2", "app", ""),              // the Secret "app" too
		configMap(es("ns", "cm2", "conf", "")), // the ConfigMap "conf" too
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if err := Register(context.Background(), indexer{b}, "test.target", nil); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	for _, tc := range []struct {
		kind, name string
		want       []string
	}{
		{"Secret", "app", []string{"ns/app", "ns/s2"}},
		{"ConfigMap", "app", []string{"ns/cm"}},
		{"Secret", "conf", []string{"ns/s"}},
		{"ConfigMap", "conf", []string{"ns/cm2", "ns/conf"}},
	} {
		got, err := WritersOf(context.Background(), c, "test.target", "ns", tc.kind, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("writers of %s %q: %v, want %v", tc.kind, tc.name, names(got), tc.want)
		}
		if tc.kind == "Secret" {
			if plain, _ := Writers(context.Background(), c, "test.target", "ns", tc.name); !slices.Equal(names(plain), tc.want) {
				t.Errorf("Writers of Secret %q: %v, want %v", tc.name, names(plain), tc.want)
			}
		}
	}
	keys, err := Keys(context.Background(), c, "test.target", "ns", "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 {
		t.Errorf("Keys of %q: %v, want the three writers of the Secret and the ConfigMap", "app", keys)
	}
}
