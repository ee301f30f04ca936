package engine

import (
	"strings"
	"testing"
)

func fillWith(v string) func(*Digest) { return func(d *Digest) { d.Add("value", v) } }

// Digests made with a key cannot be recomputed without it, match across
// one rotation, and digests from before keys still match, so that
// neither the first key nor a rotation makes anything be written again.
func TestDigestKeysSealAndMatchAcrossARotation(t *testing.T) {
	var k DigestKeys
	legacy := k.Seal(fillWith("hunter2"))
	if !strings.HasPrefix(legacy, "sha256:") {
		t.Fatalf("without a key: %q, want a plain sha256", legacy)
	}
	first := NewDigestKey([]byte("0123456789abcdef0123456789abcdef"))
	k.Set(first, nil)
	sealed := k.Seal(fillWith("hunter2"))
	if !strings.HasPrefix(sealed, "hmac-sha256:"+first.ID+":") {
		t.Fatalf("with a key: %q, want hmac-sha256:%s:…", sealed, first.ID)
	}
	if strings.Contains(sealed, strings.TrimPrefix(legacy, "sha256:")) {
		t.Fatal("the keyed digest holds the plain one")
	}
	if strings.Contains(first.ID, "0123") || len(first.ID) != 12 {
		t.Fatalf("key ID %q", first.ID)
	}
	for _, c := range []struct {
		name, stored, value string
		match, current      bool
	}{
		{"the current key, same value", sealed, "hunter2", true, true},
		{"the current key, another value", sealed, "hunter3", false, true},
		{"from before keys, same value", legacy, "hunter2", true, false},
		{"from before keys, another value", legacy, "hunter3", false, false},
		{"an unknown key", "hmac-sha256:ffffffffffff:00", "hunter2", false, false},
		{"garbage", "md5:abc", "hunter2", false, false},
	} {
		match, current := k.Match(c.stored, fillWith(c.value))
		if match != c.match || (match && current != c.current) {
			t.Errorf("%s: match=%v current=%v, want %v %v", c.name, match, current, c.match, c.current)
		}
	}

	// A rotation: the previous key still matches, in the old form.
	second := NewDigestKey([]byte("fedcba9876543210fedcba9876543210"))
	k.Set(second, &first)
	if match, current := k.Match(sealed, fillWith("hunter2")); !match || current {
		t.Errorf("a digest of the previous key: match=%v current=%v, want true false", match, current)
	}
	resealed := k.Seal(fillWith("hunter2"))
	if resealed == sealed || !strings.Contains(resealed, second.ID) {
		t.Errorf("after the rotation the digest is %q, want one of the new key", resealed)
	}
	if match, current := k.Match(resealed, fillWith("hunter2")); !match || !current {
		t.Errorf("the new digest: match=%v current=%v", match, current)
	}
	// Two rotations on, the first key is gone: its digests no longer match.
	third := NewDigestKey([]byte("another key of thirty-two bytes!"))
	k.Set(third, &second)
	if match, _ := k.Match(sealed, fillWith("hunter2")); match {
		t.Error("a digest of a key two rotations old still matches")
	}
}
