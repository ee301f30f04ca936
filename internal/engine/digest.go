package engine

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"maps"
	"slices"
)

// Digest is a SHA-256 over a sequence of parts, each written with its
// length, so that two different sequences never give the same input
// (values may hold any byte). Maps are written in key order. It
// fingerprints what was written, to tell whether a write is needed.
type Digest struct{ h hash.Hash }

// NewDigest starts a digest.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

// Add writes parts.
func (d *Digest) Add(parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(d.h, "%d:%s;", len(p), p)
	}
}

// AddMap writes each entry of m, in key order, after tag.
func AddMap[V ~string | ~[]byte](d *Digest, tag string, m map[string]V) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		d.Add(tag, k, string(m[k]))
	}
}

// Sum is the digest of what was written.
func (d *Digest) Sum() [32]byte {
	var out [32]byte
	copy(out[:], d.h.Sum(nil))
	return out
}
