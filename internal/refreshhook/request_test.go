package refreshhook

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := `{"store": {"kind": "SecretStore", "namespace": "team", "name": "vault"}, "keys": ["db/creds", "api/token", "db/creds"]}`
	n, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if n.Store != (StoreRef{Kind: "SecretStore", Namespace: "team", Name: "vault"}) || strings.Join(n.Keys, ",") != "db/creds,api/token" {
		t.Fatalf("parsed %+v, want the store and each key once", n)
	}
	if _, err := Parse([]byte(`{"store": {"kind": "ClusterSecretStore", "name": "shared"}, "keys": ["k"]}`)); err != nil {
		t.Fatalf("a ClusterSecretStore without namespace: %v", err)
	}
	cases := []struct {
		name, body string
		want       error
	}{
		{"not JSON", `store=vault`, ErrMalformed},
		{"empty", ``, ErrMalformed},
		{"two documents", good + good, ErrMalformed},
		{"unknown field", `{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": ["k"], "secret": "x"}`, ErrMalformed},
		{"keys not a list", `{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": "k"}`, ErrMalformed},
		{"unknown kind", `{"store": {"kind": "Vault", "name": "s"}, "keys": ["k"]}`, ErrNoStore},
		{"no name", `{"store": {"kind": "SecretStore", "namespace": "n"}, "keys": ["k"]}`, ErrNoStore},
		{"SecretStore without namespace", `{"store": {"kind": "SecretStore", "name": "s"}, "keys": ["k"]}`, ErrNoStore},
		{"ClusterSecretStore with namespace", `{"store": {"kind": "ClusterSecretStore", "namespace": "n", "name": "s"}, "keys": ["k"]}`, ErrNoStore},
		{"no keys", `{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": []}`, ErrNoKeys},
		{"empty key", `{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": ["k", ""]}`, ErrNoKeys},
		{"key too long", `{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": ["` + strings.Repeat("k", 1025) + `"]}`, ErrNoKeys},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseErrorsNeverEchoTheBody(t *testing.T) {
	const marker = "s3cr3t-marker"
	for _, body := range []string{
		marker,
		`{"` + marker + `": 1}`,
		`{"store": {"kind": "` + marker + `", "name": "s"}, "keys": ["k"]}`,
		`{"store": {"kind": "SecretStore", "namespace": "n", "name": "s"}, "keys": [1], "x": "` + marker + `"}`,
	} {
		if _, err := Parse([]byte(body)); err == nil || strings.Contains(err.Error(), marker) {
			t.Fatalf("body %q: error %v must refuse it without echoing it", body, err)
		}
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"store": {"kind": "ClusterSecretStore", "name": "s"}, "keys": ["k"]}`)
	secret := []byte("shared")
	sig := Sign(body, secret)
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("signature %q, want sha256= and 64 hex digits", sig)
	}
	if err := Verify(body, sig, secret); err != nil {
		t.Fatalf("a correct signature: %v", err)
	}
	cases := []struct {
		name   string
		body   []byte
		header string
		secret []byte
		want   error
	}{
		{"unsigned", body, "", secret, ErrUnsigned},
		{"another secret", body, Sign(body, []byte("other")), secret, ErrBadSignature},
		{"another body", append([]byte(" "), body...), sig, secret, ErrBadSignature},
		{"no algorithm", body, strings.TrimPrefix(sig, "sha256="), secret, ErrBadSignature},
		{"another algorithm", body, "sha1=" + strings.TrimPrefix(sig, "sha256="), secret, ErrBadSignature},
		{"not hex", body, "sha256=zz", secret, ErrBadSignature},
		{"truncated", body, sig[:len(sig)-2], secret, ErrBadSignature},
		{"empty secret", body, Sign(body, nil), nil, ErrBadSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.body, tc.header, tc.secret); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSignKnownAnswer(t *testing.T) {
	// RFC 4231, test case 2.
	got := Sign([]byte("what do ya want for nothing?"), []byte("Jefe"))
	if want := "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
