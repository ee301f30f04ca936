package publishing

import (
	"encoding/hex"
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

// HashOf identifies what a destination gets: the publication, the owner's
// UID (so that the same value yields unrelated hashes in two publishers)
// and the store's generation (so that a changed store is written again).
// It is a fingerprint, never the data.
func HashOf(uid, store string, p engine.Publication) string {
	d := engine.NewDigest()
	d.Add("watchword-publication-v1", uid, store, p.Type)
	engine.AddMap(d, "f", p.Fields)
	engine.AddMap(d, "l", p.Labels)
	engine.AddMap(d, "a", p.Annotations)
	engine.AddMap(d, "t", p.Tags)
	sum := d.Sum()
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SameFields tells whether a remote object holds exactly the fields.
func SameFields(obj engine.Object, fields map[string][]byte) bool {
	return maps.EqualFunc(obj.Fields, fields, func(a, b []byte) bool { return string(a) == string(b) })
}
