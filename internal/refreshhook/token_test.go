package refreshhook

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBearerToken: with a token file, a sender that cannot sign may send
// the token instead, for a store with a refreshHook; a wrong token, an
// unknown store and a store without refreshHook get one answer; without
// a token file (the default) no token is accepted; a rotated file takes
// effect within secretTTL; a token too short is never accepted.
func TestBearerToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-token"
	file := filepath.Join(t.TempDir(), "token")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(file, []byte(token+"\n"), 0o600))
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	b := notification("hooked", "k")

	h, _, n := hooked(t, Options{}, "hooked")
	wantCode(t, send(h, http.MethodPost, b, bearer(token)), http.StatusForbidden, "a token without a token file")
	if n.count() != 0 {
		t.Fatal("a token was accepted without a token file")
	}

	h, clock, n := hooked(t, Options{BearerTokenFile: file}, "hooked")
	wrong := send(h, http.MethodPost, b, bearer(token+"x"))
	wantCode(t, wrong, http.StatusForbidden, "a wrong token")
	for _, other := range []string{notification("missing", "k"), notification("plain", "k")} {
		rec := send(h, http.MethodPost, other, bearer(token))
		if rec.Code != wrong.Code || rec.Body.String() != wrong.Body.String() {
			t.Errorf("%s with the token: %d %q, want the answer of a wrong token", other, rec.Code, rec.Body.String())
		}
	}
	wantCode(t, send(h, http.MethodPost, b, map[string]string{"Authorization": "Basic " + token}), http.StatusUnauthorized, "another scheme")
	wantCode(t, send(h, http.MethodPost, b, bearer(token)), http.StatusAccepted, "the token")
	wantCode(t, send(h, http.MethodPost, b, map[string]string{"Authorization": "bearer " + token}), http.StatusAccepted, "the token, scheme in lower case")
	// A signature, when there is one, is what counts.
	both := signedBy(b, "guess", clock.Now())
	both["Authorization"] = "Bearer " + token
	wantCode(t, send(h, http.MethodPost, b, both), http.StatusForbidden, "a wrong signature with the token")
	if n.count() != 2 {
		t.Fatalf("%d notifications reached the controller, want 2", n.count())
	}

	// A rotation takes effect within secretTTL.
	const rotated = "fedcba9876543210fedcba9876543210-rotated"
	must(os.WriteFile(file, []byte(rotated), 0o600))
	clock.Add(secretTTL)
	wantCode(t, send(h, http.MethodPost, b, bearer(token)), http.StatusForbidden, "the old token after a rotation")
	wantCode(t, send(h, http.MethodPost, b, bearer(rotated)), http.StatusAccepted, "the new token after a rotation")

	// A token too short to be one is never accepted.
	must(os.WriteFile(file, []byte("short"), 0o600))
	clock.Add(secretTTL)
	wantCode(t, send(h, http.MethodPost, b, bearer("short")), http.StatusForbidden, "a short token")
	must(os.Remove(file))
	clock.Add(secretTTL)
	wantCode(t, send(h, http.MethodPost, b, bearer(rotated)), http.StatusForbidden, "a token once its file is gone")
	if strings.Contains(wrong.Body.String(), token) {
		t.Fatalf("an answer holds the token: %q", wrong.Body.String())
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("  "+strings.Repeat("t", MinTokenLength)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadToken(good); err != nil || string(tok) != strings.Repeat("t", MinTokenLength) {
		t.Fatalf("ReadToken = %q, %v; want the token without white space", tok, err)
	}
	short := filepath.Join(dir, "short")
	secret := strings.Repeat("s", MinTokenLength-1)
	if err := os.WriteFile(short, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{short, filepath.Join(dir, "missing"), dir} {
		if _, err := ReadToken(path); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("ReadToken(%s) = %v, want an error that does not hold the content", path, err)
		}
	}
}
