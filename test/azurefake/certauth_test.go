package azurefake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func testCert(t *testing.T) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "app"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// assertion signs a client assertion as MSAL does (PS256, x5t#S256 in
// standard base64), with the claims given.
func assertion(t *testing.T, key *rsa.PrivateKey, thumbOf *x509.Certificate, claims jwt.Claims) string {
	t.Helper()
	sum := sha256.Sum256(thumbOf.Raw)
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("x5t#S256", base64.StdEncoding.EncodeToString(sum[:]))
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.PS256, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFakeVerifiesCertificateAssertions(t *testing.T) {
	s := New(t)
	s.AddApp(tenant, "app", "", "", "get")
	key, cert := testCert(t)
	otherKey, _ := testCert(t)
	s.AddClientCertificate(tenant, "app", cert)
	endpoint := "https://" + Public.LoginHost + "/" + tenant + "/oauth2/v2.0/token"
	good := func() jwt.Claims {
		return jwt.Claims{Issuer: "app", Subject: "app", Audience: jwt.Audience{endpoint}, ID: "j1",
			NotBefore: jwt.NewNumericDate(time.Now()), Expiry: jwt.NewNumericDate(time.Now().Add(10 * time.Minute))}
	}
	post := func(a string) (int, string) {
		resp, err := s.Client().PostForm(endpoint, url.Values{"grant_type": {"client_credentials"}, "client_id": {"app"},
			"scope": {"https://vault.azure.net/.default"}, "client_assertion": {a},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			AccessToken string `json:"access_token"`
			Description string `json:"error_description"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode == http.StatusOK && out.AccessToken == "" {
			t.Fatal("200 without a token")
		}
		return resp.StatusCode, out.Description
	}
	if code, d := post(assertion(t, key, cert, good())); code != http.StatusOK {
		t.Fatalf("a well-signed assertion: %d %s", code, d)
	}
	c := good()
	c.Audience = jwt.Audience{"https://login.microsoftonline.com/other/oauth2/v2.0/token"}
	wrongAud := c
	c = good()
	c.Issuer = "someone-else"
	wrongIss := c
	c = good()
	c.Expiry = jwt.NewNumericDate(time.Now().Add(-10 * time.Minute))
	c.NotBefore = jwt.NewNumericDate(time.Now().Add(-20 * time.Minute))
	expired := c
	c = good()
	c.Expiry = nil
	noExp := c
	_, unknownCert := testCert(t)
	for name, tc := range map[string]struct {
		assertion, code string
	}{
		"signed with another key (forged)":   {assertion(t, otherKey, cert, good()), "AADSTS700027"},
		"thumbprint of an unregistered cert": {assertion(t, key, unknownCert, good()), "AADSTS700027"},
		"audience not the token endpoint":    {assertion(t, key, cert, wrongAud), "AADSTS700027"},
		"issuer not the client ID":           {assertion(t, key, cert, wrongIss), "AADSTS700021"},
		"expired":                            {assertion(t, key, cert, expired), "AADSTS700024"},
		"without exp":                        {assertion(t, key, cert, noExp), "AADSTS50027"},
		"signature stripped":                 {strings.Join(strings.Split(assertion(t, key, cert, good()), ".")[:2], ".") + ".", "AADSTS700027"},
	} {
		t.Run(name, func(t *testing.T) {
			code, d := post(tc.assertion)
			if code != http.StatusUnauthorized || !strings.HasPrefix(d, tc.code) {
				t.Fatalf("got %d %q; want 401 %s", code, d, tc.code)
			}
		})
	}
}
