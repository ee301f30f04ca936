package engine

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	gopkcs12 "software.sslmate.com/src/go-pkcs12"
)

// renderOne renders one template over data with the functions and limits
// of a target's template.
func renderOne(t *testing.T, tmpl string, data map[string]string) (string, error) {
	t.Helper()
	in := make(map[string][]byte, len(data))
	for k, v := range data {
		in[k] = []byte(v)
	}
	out, err := RenderData(map[string]string{"out": tmpl}, false, in)
	if err != nil {
		return "", err
	}
	return string(out["out"]), nil
}

func mustRender(t *testing.T, tmpl string, data map[string]string) string {
	t.Helper()
	out, err := renderOne(t, tmpl, data)
	if err != nil {
		t.Fatalf("%s: %v", tmpl, err)
	}
	return out
}

func firstKey(t *testing.T, s string) crypto.PrivateKey {
	t.Helper()
	k, err := parseKey("test", s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type equaler interface{ Equal(crypto.PublicKey) bool }

func TestPKCS12RoundTrips(t *testing.T) {
	rootPEM, leafPEM, keyPEM := testChain(t)
	data := map[string]string{"root": rootPEM, "leaf": leafPEM, "key": keyPEM, "bundle": leafPEM + rootPEM, "pass": "p@ss"}
	for _, tc := range []struct {
		name, build, read string
		wantCerts         string
	}{
		{"pemToPkcs12", `{{ pemToPkcs12 .leaf .key }}`, `pkcs12%s ""`, leafPEM},
		{"pemToPkcs12Pass", `{{ pemToPkcs12Pass .leaf .key .pass }}`, `pkcs12%sPass .pass`, leafPEM},
		{"fullPemToPkcs12 keeps the chain", `{{ fullPemToPkcs12 .bundle .key }}`, `pkcs12%s ""`, leafPEM + rootPEM},
		{"fullPemToPkcs12Pass keeps the chain", `{{ fullPemToPkcs12Pass .bundle .key .pass }}`, `pkcs12%sPass .pass`, leafPEM + rootPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b64 := mustRender(t, tc.build, data)
			pfx, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatalf("the archive is not base64: %v", err)
			}
			d := map[string]string{"pfx": string(pfx), "pass": data["pass"]}
			// pkcs12key and pkcs12cert take the password-less form with
			// one argument.
			readKey := strings.Replace(strings.Replace(tc.read, "%s", "key", 1), ` ""`, "", 1)
			readCert := strings.Replace(strings.Replace(tc.read, "%s", "cert", 1), ` ""`, "", 1)
			gotKey := mustRender(t, "{{ "+readKey+" .pfx }}", d)
			if !strings.HasPrefix(gotKey, "-----BEGIN PRIVATE KEY-----") {
				t.Errorf("key is not a PKCS#8 PEM block: %.30q", gotKey)
			}
			want := firstKey(t, keyPEM).(*ecdsa.PrivateKey)
			if !want.Equal(firstKey(t, gotKey)) {
				t.Error("the key read back differs from the key given")
			}
			if got := mustRender(t, "{{ "+readCert+" .pfx }}", d); got != tc.wantCerts {
				t.Errorf("certificates read back:\n%s\nwant:\n%s", got, tc.wantCerts)
			}
			// The same inputs give the same archive: an unchanged Secret
			// is not rewritten at each refresh.
			if again := mustRender(t, tc.build, data); again != b64 {
				t.Error("two renderings of the same inputs differ")
			}
		})
	}
}

func TestPKCS12ReadsAnArchiveMadeElsewhere(t *testing.T) {
	rootPEM, leafPEM, keyPEM := testChain(t)
	certs, _ := parseCerts("test", rootPEM+leafPEM)
	// The archive lists the root before the leaf's issuer order; the
	// leaf goes with the key.
	pfx, err := gopkcs12.Modern.Encode(firstKey(t, keyPEM), certs[1], certs[:1], "pw")
	if err != nil {
		t.Fatal(err)
	}
	d := map[string]string{"pfx": string(pfx), "b64": base64.StdEncoding.EncodeToString(pfx)}
	if got := mustRender(t, `{{ .b64 | b64dec | pkcs12certPass "pw" }}`, d); got != leafPEM+rootPEM {
		t.Errorf("chain not in leaf-to-root order:\n%s", got)
	}
	if _, err := renderOne(t, `{{ pkcs12key .pfx }}`, d); err == nil || !strings.Contains(err.Error(), "password is wrong") {
		t.Errorf("a wrong password: want an error that says so, got %v", err)
	}
}

func TestPKCS12PasswordsAndInputsChangeTheArchive(t *testing.T) {
	_, leafPEM, keyPEM := testChain(t)
	d := map[string]string{"leaf": leafPEM, "key": keyPEM}
	a := mustRender(t, `{{ pemToPkcs12Pass .leaf .key "one" }}`, d)
	b := mustRender(t, `{{ pemToPkcs12Pass .leaf .key "two" }}`, d)
	if a == b {
		t.Error("archives with different passwords are equal")
	}
}

func TestPemTruststoreToPKCS12(t *testing.T) {
	rootPEM, leafPEM, _ := testChain(t)
	b64 := mustRender(t, `{{ pemTruststoreToPKCS12Pass .ca "changeit" }}`, map[string]string{"ca": rootPEM + leafPEM})
	pfx, _ := base64.StdEncoding.DecodeString(b64)
	certs, err := gopkcs12.DecodeTrustStore(pfx, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	if encodeCerts(certs) != rootPEM+leafPEM {
		t.Error("the trust store does not hold the certificates given, in order")
	}
}

func TestJWKToPEM(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{{"RSA", rsaKey}, {"EC P-384", ecKey}, {"Ed25519", edKey}} {
		t.Run(tc.name, func(t *testing.T) {
			private, err := jose.JSONWebKey{Key: tc.key, KeyID: "k1"}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			public, err := jose.JSONWebKey{Key: tc.key.Public(), KeyID: "k1"}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			d := map[string]string{"private": string(private), "public": string(public)}

			gotKey := mustRender(t, `{{ jwkPrivateKeyPem .private }}`, d)
			if !tc.key.(interface{ Equal(crypto.PrivateKey) bool }).Equal(firstKey(t, gotKey)) {
				t.Error("jwkPrivateKeyPem: the key differs from the JWK's")
			}
			for _, src := range []string{"public", "private"} {
				got := mustRender(t, `{{ jwkPublicKeyPem .`+src+` }}`, d)
				b, _ := pem.Decode([]byte(got))
				if b == nil || b.Type != "PUBLIC KEY" {
					t.Fatalf("jwkPublicKeyPem of the %s JWK: not a PUBLIC KEY block", src)
				}
				pub, err := x509.ParsePKIXPublicKey(b.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.key.Public().(equaler).Equal(pub) {
					t.Errorf("jwkPublicKeyPem of the %s JWK: the key differs", src)
				}
			}
			if _, err := renderOne(t, `{{ jwkPrivateKeyPem .public }}`, d); err == nil || !strings.Contains(err.Error(), "public key") {
				t.Errorf("jwkPrivateKeyPem of a public JWK: want an error that says so, got %v", err)
			}
		})
	}
}

func TestFilterPEM(t *testing.T) {
	rootPEM, leafPEM, keyPEM := testChain(t)
	bundle := "junk before\n" + leafPEM + keyPEM + rootPEM
	d := map[string]string{"bundle": bundle}
	for _, tc := range []struct{ tmpl, want string }{
		{`{{ filterPEM "CERTIFICATE" .bundle }}`, leafPEM + rootPEM},
		{`{{ .bundle | filterPEM "ec private key" }}`, keyPEM},
		{`{{ filterPEM "PUBLIC KEY" .bundle }}`, ""},
	} {
		if got := mustRender(t, tc.tmpl, d); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.tmpl, got, tc.want)
		}
	}
	if _, err := renderOne(t, `{{ filterPEM "CERTIFICATE" .x }}`, map[string]string{"x": "not pem"}); err == nil {
		t.Error("filterPEM of text without PEM: want an error")
	}
}

// canary stands for a secret value given to a function that fails.
func TestFormatAndLibraryErrorsNeverHoldTheInput(t *testing.T) {
	secret := "hunter2-" + canary
	for _, tmpl := range []string{
		`{{ pkcs12key .s }}`, `{{ pkcs12certPass .s .s }}`, `{{ pemToPkcs12 .s .s }}`,
		`{{ fullPemToPkcs12Pass .s .s .s }}`, `{{ pemTruststoreToPKCS12 .s }}`,
		`{{ jwkPublicKeyPem .s }}`, `{{ jwkPrivateKeyPem .s }}`, `{{ filterPEM "X" .s }}`, `{{ certSANs .s }}`,
		// sprig's own messages quote their input; they are withheld
		`{{ mustFromJson .s }}`, `{{ semver .s }}`, `{{ mustRegexMatch (printf "(%s" .s) "x" }}`,
		`{{ semverCompare .s "1.0.0" }}`, `{{ urlParse (printf ":%s" .s) }}`, `{{ decryptAES .s .s }}`, `{{ first .s }}`,
	} {
		_, err := renderOne(t, tmpl, map[string]string{"s": secret})
		if err == nil {
			t.Errorf("%s: want an error", tmpl)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q repeats the input", tmpl, err)
		}
	}
}

func TestSprigFunctionsAreThereAndOursWin(t *testing.T) {
	d := map[string]string{"csv": "a,b,c", "name": "my app", "doc": `{"x": {"y": "z"}}`}
	for _, tc := range []struct{ tmpl, want string }{
		{`{{ .name | title }}`, "My App"},
		{`{{ .name | kebabcase }}`, "my-app"},
		{`{{ .csv | splitList "," | last }}`, "c"},
		{`{{ .csv | split "," | join "-" }}`, "a-b-c"}, // ours: split gives a list
		{`{{ .doc | fromJson | dig "x" "y" "none" }}`, "z"},
		{`{{ .name | sha1sum }}`, sha1Hex("my app")},
		{`{{ "it's" | squote }}`, "'it''s'"}, // ours: YAML-style quoting
		{`{{ .name | b32enc | b32dec }}`, "my app"},
		{`{{ regexReplaceAll "a(p+)" .name "${1}" }}`, "my pp"},
		{`{{ fail "stop here" }}`, ""},
	} {
		got, err := renderOne(t, tc.tmpl, d)
		if tc.tmpl == `{{ fail "stop here" }}` {
			if err == nil || !strings.Contains(err.Error(), "stop here") {
				t.Errorf("fail: want its message in the error, got %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.tmpl, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %q, want %q", tc.tmpl, got, tc.want)
		}
	}
	fm := FuncMap()
	for _, name := range []string{"env", "expandenv", "getHostByName", "now", "date", "randAlphaNum", "uuidv4",
		"randInt", "shuffle", "genPrivateKey", "genCA", "genSelfSignedCert", "genSignedCert", "bcrypt", "htpasswd",
		"encryptAES", "ago", "toDate", "hello", "derivePassword"} {
		if _, ok := fm[name]; ok {
			t.Errorf("%s reads the environment, the network, the clock or randomness, and must not be offered", name)
		}
	}
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSizeBoundedFunctions: a template cannot make a function allocate
// far beyond the output limit.
func TestSizeBoundedFunctions(t *testing.T) {
	for _, tmpl := range []string{
		`{{ repeat 2000000000 "xy" }}`, `{{ len (until 1000000000) }}`, `{{ len (untilStep 0 1000000000 1) }}`,
		`{{ seq 1000000000 }}`, `{{ indent 2000000000 "x" }}`, `{{ nindent 100000 .many }}`,
	} {
		_, err := renderOne(t, tmpl, map[string]string{"many": strings.Repeat("\n", 1000)})
		if err == nil {
			t.Errorf("%s: want an error", tmpl)
		}
	}
	if got := mustRender(t, `{{ repeat 3 "ab" }}|{{ until 3 }}|{{ seq 3 }}|{{ untilStep 0 6 2 }}|{{ "a\nb" | indent 2 }}`, nil); got != "ababab|[0 1 2]|1 2 3|[0 2 4]|  a\n  b" {
		t.Errorf("bounded functions within bounds: %q", got)
	}
}
