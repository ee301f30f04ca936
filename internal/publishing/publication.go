package publishing

import (
	"maps"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// PublicationFor is the publication of one destination: the fields with
// the destination's metadata.
func PublicationFor(base engine.Publication, d v1alpha1.PushSecretDestination) engine.Publication {
	p := base
	p.Labels, p.Annotations, p.Type, p.Tags = d.Metadata.Labels, d.Metadata.Annotations, d.Metadata.Type, d.Metadata.Tags
	return p
}

// publicationDigest writes what identifies what a destination gets: the
// publication, the owner's UID (so that the same value yields unrelated
// digests in two publishers) and the store's generation (so that a
// changed store is written again). The digest, made with the
// installation's key (engine.DigestKeys), is a fingerprint, never the
// data, and cannot be tested against guesses of the data without the key.
func publicationDigest(uid, store string, p engine.Publication) func(*engine.Digest) {
	return func(d *engine.Digest) {
		d.Add("watchword-publication-v1", uid, store, p.Type)
		engine.AddMap(d, "f", p.Fields)
		engine.AddMap(d, "l", p.Labels)
		engine.AddMap(d, "a", p.Annotations)
		engine.AddMap(d, "t", p.Tags)
	}
}

// HashOf is the destination's digest with keys (nil: plain SHA-256).
func HashOf(keys *engine.DigestKeys, uid, store string, p engine.Publication) string {
	return keys.Seal(publicationDigest(uid, store, p))
}

// SameFields tells whether a remote object holds exactly the fields.
func SameFields(obj engine.Object, fields map[string][]byte) bool {
	return maps.EqualFunc(obj.Fields, fields, func(a, b []byte) bool { return string(a) == string(b) })
}
