package refreshhook

import (
	"errors"
	"slices"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// FuzzParseNotification feeds request bodies to the refresh endpoint's
// parser, which reads a store reference (kind, namespace, name) and keys.
// Properties: no panic; a refusal is one of the fixed errors, which tell
// nothing of the body; an accepted notification names a store of a valid
// kind with a namespace exactly when it is a SecretStore, and at least one
// key, each non-empty, bounded and listed once.
func FuzzParseNotification(f *testing.F) {
	for _, s := range []string{
		`{"store":{"kind":"SecretStore","namespace":"ns","name":"vault"},"keys":["db","db"]}`,
		`{"store":{"kind":"ClusterSecretStore","name":"shared"},"keys":["a/b"]}`,
		`{"store":{"kind":"ClusterSecretStore","namespace":"x","name":"shared"},"keys":["a"]}`,
		`{"store":{"kind":"SecretStore","name":"s"},"keys":[""]}`,
		`{"store":{},"keys":[],"extra":1}`,
		`{"store":{"kind":"SecretStore","namespace":"ns","name":"v"},"keys":["k"]} {}`,
	} {
		f.Add([]byte(s))
	}
	fixed := []error{ErrMalformed, ErrNoStore, ErrNoKeys}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := Parse(body)
		if err != nil {
			if !slices.ContainsFunc(fixed, func(e error) bool { return errors.Is(err, e) && err.Error() == e.Error() }) {
				t.Fatalf("refused with an error of its own, which may tell of the body: %v", err)
			}
			return
		}
		s := n.Store
		switch {
		case s.Name == "":
			t.Fatal("accepted a notification without a store name")
		case s.Kind == v1alpha1.SecretStoreKind && s.Namespace == "", s.Kind == v1alpha1.ClusterSecretStoreKind && s.Namespace != "":
			t.Fatalf("accepted store %+v: a namespace goes with a SecretStore only", s)
		case s.Kind != v1alpha1.SecretStoreKind && s.Kind != v1alpha1.ClusterSecretStoreKind:
			t.Fatalf("accepted a store of kind %q", s.Kind)
		}
		if len(n.Keys) == 0 {
			t.Fatal("accepted a notification without keys")
		}
		seen := map[string]bool{}
		for _, k := range n.Keys {
			if k == "" || len(k) > maxKeyLength || seen[k] {
				t.Fatalf("accepted keys %q: each must be non-empty, at most %d bytes, once", n.Keys, maxKeyLength)
			}
			seen[k] = true
		}
	})
}
