package pushsecret

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// selectData picks the fields to publish from the source Secret's data:
// every key under its own name when spec.data is empty, otherwise the
// selected keys under their remote names. It returns the remote names,
// sorted, for events; a missing key is named, never a value.
func selectData(ps *v1alpha1.PushSecret, data map[string][]byte) (map[string][]byte, []string, error) {
	out := map[string][]byte{}
	if len(ps.Spec.Data) == 0 {
		maps.Copy(out, data)
		return out, slices.Sorted(maps.Keys(out)), nil
	}
	var missing []string
	for _, d := range ps.Spec.Data {
		v, ok := data[d.SecretKey]
		if !ok {
			missing = append(missing, d.SecretKey)
			continue
		}
		remote := d.RemoteKey
		if remote == "" {
			remote = d.SecretKey
		}
		out[remote] = v
	}
	if len(missing) > 0 {
		return nil, nil, failure.Terminalf(failure.SourceKeyMissing,
			"Secret %q has no key %s (spec.data selects it; the Secret has keys %s); nothing published was changed",
			ps.Spec.SecretName, strings.Join(quoteAll(missing), ", "), keyList(slices.Sorted(maps.Keys(data))))
	}
	return out, slices.Sorted(maps.Keys(out)), nil
}

// storeRef is the store a destination names: a SecretStore named default
// when configRef is absent.
func storeRef(d v1alpha1.PushSecretDestination) v1alpha1.StoreRef {
	if d.ConfigRef == nil {
		return v1alpha1.StoreRef{Name: "default", Kind: v1alpha1.SecretStoreKind}
	}
	ref := *d.ConfigRef
	if ref.Kind == "" {
		ref.Kind = v1alpha1.SecretStoreKind
	}
	return ref
}

// publicationFor is the publication of one destination: the selected
// fields with the destination's metadata.
func publicationFor(base engine.Publication, d v1alpha1.PushSecretDestination) engine.Publication {
	p := base
	p.Labels, p.Annotations, p.Type = d.Metadata.Labels, d.Metadata.Annotations, d.Metadata.Type
	return p
}

// hashOf identifies what a destination gets: the publication, the owner's
// UID (so that the same value yields unrelated hashes in two
// PushSecrets) and the store's generation (so that a changed store is
// written again). It is a fingerprint, never the data.
func hashOf(uid, store string, p engine.Publication) string {
	h := sha256.New()
	field := func(parts ...string) {
		for _, part := range parts {
			fmt.Fprintf(h, "%d:%s;", len(part), part)
		}
	}
	field("watchword-publication-v1", uid, store, p.Type)
	for _, k := range slices.Sorted(maps.Keys(p.Fields)) {
		field("f", k, string(p.Fields[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		field("l", k, p.Labels[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.Annotations)) {
		field("a", k, p.Annotations[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sameFields tells whether a remote object holds exactly the fields.
func sameFields(obj engine.Object, fields map[string][]byte) bool {
	return maps.EqualFunc(obj.Fields, fields, func(a, b []byte) bool { return string(a) == string(b) })
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%q", k)
	}
	return out
}

func keyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}
