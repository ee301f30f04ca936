package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
)

// NewKeyedDigest starts a digest keyed with key: an HMAC-SHA256, which no
// one can recompute, and so test guesses of a low-entropy value against,
// without the key.
func NewKeyedDigest(key []byte) *Digest { return &Digest{h: hmac.New(sha256.New, key)} }

// DigestKey is a key of the installation's digests.
type DigestKey struct {
	// ID names the key in the digests made with it; it is derived from
	// the key by a hash, so it tells nothing of it.
	ID     string
	Secret []byte
}

// NewDigestKey returns the key with secret.
func NewDigestKey(secret []byte) DigestKey {
	sum := sha256.Sum256(append([]byte("watchword-digest-key-id:"), secret...))
	return DigestKey{ID: hex.EncodeToString(sum[:6]), Secret: secret}
}

// Forms of the digests that DigestKeys makes and matches.
const (
	keyedPrefix  = "hmac-sha256:"
	legacyPrefix = "sha256:"
)

// DigestKeys are the installation's digest keys: the current one, which
// every new digest is made with, and the previous one, which still
// matches the digests made before a rotation of the key. Digests that
// are recorded where others can read them (a PushSecret's
// status.dataHash, a workload's reload digests) are made with them, so
// that a reader cannot test guesses of a value against its digest.
// Without a current key, digests are plain SHA-256 ("sha256:…"), as before
// keys existed; those still match after a key is set, so that neither the
// first key nor a rotation makes anything be written again. The zero
// value has no key and is ready to use.
type DigestKeys struct {
	mu       sync.RWMutex
	current  *DigestKey
	previous *DigestKey
}

// Set sets the current key and the previous one (nil: none).
func (k *DigestKeys) Set(current DigestKey, previous *DigestKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.current, k.previous = &current, previous
}

// CurrentID is the current key's ID; empty without one.
func (k *DigestKeys) CurrentID() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.current == nil {
		return ""
	}
	return k.current.ID
}

// Seal digests what fill writes with the current key:
// "hmac-sha256:ID:HEX", or "sha256:HEX" without a key.
func (k *DigestKeys) Seal(fill func(*Digest)) string {
	var cur *DigestKey
	if k != nil {
		k.mu.RLock()
		cur = k.current
		k.mu.RUnlock()
	}
	if cur == nil {
		d := NewDigest()
		fill(d)
		sum := d.Sum()
		return legacyPrefix + hex.EncodeToString(sum[:])
	}
	return seal(*cur, fill)
}

func seal(key DigestKey, fill func(*Digest)) string {
	d := NewKeyedDigest(key.Secret)
	fill(d)
	sum := d.Sum()
	return keyedPrefix + key.ID + ":" + hex.EncodeToString(sum[:])
}

// Match tells whether stored is the digest of what fill writes, made
// with the current key, the previous one, or none (a plain SHA-256 of
// before keys); current tells whether stored is in the form Seal makes
// now, so that a caller can record that form in its place.
func (k *DigestKeys) Match(stored string, fill func(*Digest)) (match, current bool) {
	var cur, prev *DigestKey
	if k != nil {
		k.mu.RLock()
		cur, prev = k.current, k.previous
		k.mu.RUnlock()
	}
	if rest, ok := strings.CutPrefix(stored, keyedPrefix); ok {
		id, _, _ := strings.Cut(rest, ":")
		for _, key := range []*DigestKey{cur, prev} {
			if key != nil && key.ID == id {
				return hmac.Equal([]byte(seal(*key, fill)), []byte(stored)), key == cur
			}
		}
		return false, false
	}
	if strings.HasPrefix(stored, legacyPrefix) {
		d := NewDigest()
		fill(d)
		sum := d.Sum()
		return hmac.Equal([]byte(legacyPrefix+hex.EncodeToString(sum[:])), []byte(stored)), cur == nil
	}
	return false, false
}

// Forms are the digests of what fill writes that Match accepts, the form
// Seal makes first: the current key's (or plain SHA-256 without a key),
// then the previous key's and the plain one. A caller that must drop the
// data right after (a workload's reload digests) keeps these and tells a
// recorded digest by MatchesAny.
func (k *DigestKeys) Forms(fill func(*Digest)) []string {
	var cur, prev *DigestKey
	if k != nil {
		k.mu.RLock()
		cur, prev = k.current, k.previous
		k.mu.RUnlock()
	}
	d := NewDigest()
	fill(d)
	sum := d.Sum()
	plain := legacyPrefix + hex.EncodeToString(sum[:])
	if cur == nil {
		return []string{plain}
	}
	out := []string{seal(*cur, fill)}
	if prev != nil {
		out = append(out, seal(*prev, fill))
	}
	return append(out, plain)
}
