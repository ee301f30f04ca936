package refreshhook

import (
	"errors"
	"strings"
	"testing"
	"time"
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
	at := time.Unix(1_700_000_000, 0)
	ts, sig := Sign(body, secret, at)
	if ts != "1700000000" {
		t.Fatalf("timestamp %q, want the Unix seconds", ts)
	}
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("signature %q, want sha256= and 64 hex digits", sig)
	}
	if err := Verify(body, ts, sig, secret); err != nil {
		t.Fatalf("a correct signature: %v", err)
	}
	legacy := SignLegacy(body, secret)
	if err := Verify(body, "", legacy, secret); err != nil {
		t.Fatalf("a correct legacy signature: %v", err)
	}
	cases := []struct {
		name      string
		body      []byte
		timestamp string
		header    string
		secret    []byte
		want      error
	}{
		{"unsigned", body, ts, "", secret, ErrUnsigned},
		{"another secret", body, ts, func() string { _, s := Sign(body, []byte("other"), at); return s }(), secret, ErrBadSignature},
		{"another body", append([]byte(" "), body...), ts, sig, secret, ErrBadSignature},
		{"another time", body, "1700000001", sig, secret, ErrBadSignature},
		{"the time dropped", body, "", sig, secret, ErrBadSignature},
		{"a legacy signature with a time", body, ts, legacy, secret, ErrBadSignature},
		{"no algorithm", body, ts, strings.TrimPrefix(sig, "sha256="), secret, ErrBadSignature},
		{"another algorithm", body, ts, "sha1=" + strings.TrimPrefix(sig, "sha256="), secret, ErrBadSignature},
		{"not hex", body, ts, "sha256=zz", secret, ErrBadSignature},
		{"truncated", body, ts, sig[:len(sig)-2], secret, ErrBadSignature},
		{"empty secret", body, ts, func() string { _, s := Sign(body, nil, at); return s }(), nil, ErrBadSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.body, tc.timestamp, tc.header, tc.secret); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSignKnownAnswer(t *testing.T) {
	// RFC 4231, test case 2: the legacy form is the HMAC of the body.
	if got, want := SignLegacy([]byte("what do ya want for nothing?"), []byte("Jefe")),
		"sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; got != want {
		t.Fatalf("SignLegacy = %s, want %s", got, want)
	}
	// The timestamped form is the HMAC of the time, a dot and the body,
	// as docs/operations.md tells senders to compute it with openssl:
	// printf '%s.' 1700000000 | cat - body.json | openssl dgst -sha256 -hmac Jefe
	body := `{"store":{"kind":"ClusterSecretStore","name":"shared"},"keys":["db/creds"]}`
	ts, sig := Sign([]byte(body), []byte("Jefe"), time.Unix(1_700_000_000, 0))
	if want := "sha256=04365d2f48f464adfe26fe5c8a4ce92fc9d7c904ac85091bdff892fbc0b53f52"; ts != "1700000000" || sig != want {
		t.Fatalf("Sign = %s, %s; want 1700000000, %s", ts, sig, want)
	}
}

func TestCheckTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	window := 5 * time.Minute
	for _, ok := range []string{"1700000000", "1699999700", "1700000300"} {
		if _, err := CheckTimestamp(ok, now, window); err != nil {
			t.Errorf("%s, within the window of %d: %v", ok, now.Unix(), err)
		}
	}
	cases := []struct {
		v    string
		want error
	}{
		{"", ErrNoTimestamp},
		{"1699999699", ErrStale},
		{"1700000301", ErrStale},
		{"0", ErrStale},
		{"999999999999", ErrStale},
		{"1700000000000", ErrBadTimestamp}, // milliseconds
		{"+1700000000", ErrBadTimestamp},
		{"-1", ErrBadTimestamp},
		{"1700000000.5", ErrBadTimestamp},
		{" 1700000000", ErrBadTimestamp},
		{"0x6553f100", ErrBadTimestamp},
		{"Tue, 14 Nov 2023 22:13:20 GMT", ErrBadTimestamp},
	}
	for _, tc := range cases {
		if _, err := CheckTimestamp(tc.v, now, window); !errors.Is(err, tc.want) {
			t.Errorf("CheckTimestamp(%q) = %v, want %v", tc.v, err, tc.want)
		}
	}
}
