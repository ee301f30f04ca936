package publishing

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

func TestHashTellsPublicationsApart(t *testing.T) {
	base := engine.Publication{Fields: map[string][]byte{"a": []byte("1"), "b": []byte("2")}}
	h := HashOf(nil, "uid", "store/1", base)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("hash %q", h)
	}
	same := engine.Publication{Fields: map[string][]byte{"b": []byte("2"), "a": []byte("1")}}
	if HashOf(nil, "uid", "store/1", same) != h {
		t.Error("the same publication hashes differently")
	}
	labelled := base
	labelled.Labels = map[string]string{"team": "a"}
	// A split that moves bytes between a key and its value must not
	// collide.
	shifted := engine.Publication{Fields: map[string][]byte{"a1": []byte(""), "b": []byte("2")}}
	for name, other := range map[string]string{
		"another owner":      HashOf(nil, "uid2", "store/1", base),
		"another store":      HashOf(nil, "uid", "store/2", base),
		"a changed value":    HashOf(nil, "uid", "store/1", engine.Publication{Fields: map[string][]byte{"a": []byte("1"), "b": []byte("3")}}),
		"labels":             HashOf(nil, "uid", "store/1", labelled),
		"a shifted boundary": HashOf(nil, "uid", "store/1", shifted),
	} {
		if other == h {
			t.Errorf("%s does not change the hash", name)
		}
	}
}

func TestStoreRefDefaults(t *testing.T) {
	if got := StoreRef(v1alpha1.PushSecretDestination{Name: "x"}); got != (v1alpha1.StoreRef{Name: "default", Kind: "SecretStore"}) {
		t.Errorf("no configRef: %+v", got)
	}
	if got := StoreRef(v1alpha1.PushSecretDestination{ConfigRef: &v1alpha1.StoreRef{Name: "v"}}); got.Kind != "SecretStore" || got.Name != "v" {
		t.Errorf("configRef without kind: %+v", got)
	}
}

func TestRemovedDestinations(t *testing.T) {
	dests := []v1alpha1.PushSecretDestination{{Name: "kept"}, {Name: "moved", ConfigRef: &v1alpha1.StoreRef{Name: "vault"}}}
	entries := []v1alpha1.PushSecretDestinationStatus{
		{Name: "kept", StoreKind: "SecretStore", StoreName: "default"},
		{Name: "moved", StoreKind: "SecretStore", StoreName: "default"},
		{Name: "renamed", StoreKind: "SecretStore", StoreName: "default"},
	}
	got := Removed(entries, dests)
	if len(got) != 2 || got[0].Name != "moved" || got[1].Name != "renamed" {
		t.Errorf("removed = %+v", got)
	}
	if p := Previous(entries, dests[0]); p == nil || p.Name != "kept" {
		t.Errorf("previous = %+v", p)
	}
}

func TestOwnerNamesKindNamespaceNameAndUID(t *testing.T) {
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: types.UID("u-1")}
	if got := Owner("ExternalSecret", obj, true); got.ID != "ExternalSecret/ns/db/u-1" || !got.Adopt {
		t.Errorf("owner %+v", got)
	}
}

func TestAFormerScopeThatAnotherDestinationMayHoldIsLeft(t *testing.T) {
	scope := func(s string) *string { return &s }
	moved := v1alpha1.PushSecretDestinationStatus{Name: "creds", StoreKind: v1alpha1.SecretStoreKind, StoreName: "scoped", Scope: scope("b")}
	for _, tc := range []struct {
		name   string
		others []v1alpha1.PushSecretDestinationStatus
		held   bool
	}{
		{"no other destination", nil, false},
		{"its own entry only", []v1alpha1.PushSecretDestinationStatus{moved}, false},
		{"another name", []v1alpha1.PushSecretDestinationStatus{{Name: "other", StoreKind: v1alpha1.ClusterSecretStoreKind, StoreName: "shared", Scope: scope("a")}}, false},
		{"same name, another scope", []v1alpha1.PushSecretDestinationStatus{{Name: "creds", StoreKind: v1alpha1.ClusterSecretStoreKind, StoreName: "shared", Scope: scope("c")}}, false},
		{"same name in the former scope", []v1alpha1.PushSecretDestinationStatus{{Name: "creds", StoreKind: v1alpha1.ClusterSecretStoreKind, StoreName: "shared", Scope: scope("a")}}, true},
		{"same name, scope not recorded", []v1alpha1.PushSecretDestinationStatus{{Name: "creds", StoreKind: v1alpha1.ClusterSecretStoreKind, StoreName: "shared"}}, true},
	} {
		if got := heldElsewhere(tc.others, moved, "a"); got != tc.held {
			t.Errorf("%s: heldElsewhere = %v, want %v", tc.name, got, tc.held)
		}
	}
}
