package engine

import "testing"

// TestDigestTellsSequencesApart: parts are length-prefixed, so moving
// bytes between parts, or a separator inside a value, changes the digest.
func TestDigestTellsSequencesApart(t *testing.T) {
	sum := func(parts ...string) [32]byte {
		d := NewDigest()
		d.Add(parts...)
		return d.Sum()
	}
	if sum("ab", "c") == sum("a", "bc") || sum("a\x00b") == sum("a", "b") || sum("1:a;") == sum("a") {
		t.Error("two different sequences gave one digest")
	}
	m1, m2 := NewDigest(), NewDigest()
	AddMap(m1, "f", map[string][]byte{"a": []byte("1"), "b": []byte("2")})
	AddMap(m2, "f", map[string][]byte{"b": []byte("2"), "a": []byte("1")})
	if m1.Sum() != m2.Sum() {
		t.Error("a map's digest depends on its iteration order")
	}
}
