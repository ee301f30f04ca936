package azurefake

import (
	"crypto/sha1" //nolint:gosec // x5t is a SHA-1 thumbprint by definition (RFC 7515 section 4.1.7); it names a certificate, it protects nothing.
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// AddClientCertificate registers a certificate credential on an
// application added by AddApp: the application may then sign in with a
// client assertion signed by the certificate's private key.
func (s *Server) AddClientCertificate(tenant, clientID string, cert *x509.Certificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[tenant+"/"+clientID]
	a.certs = append(a.certs, cert)
}

// assertionHeader is the part of a client assertion's JOSE header that
// names a certificate.
type assertionHeader struct {
	X5t     string `json:"x5t"`
	X5tS256 string `json:"x5t#S256"`
}

// certificateAssertion reports whether a client assertion names a
// certificate in its header (x5t or x5t#S256), which is how Entra ID tells
// a certificate credential from a federated one.
func certificateAssertion(assertion string) (assertionHeader, bool) {
	head, _, ok := strings.Cut(assertion, ".")
	if !ok {
		return assertionHeader{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return assertionHeader{}, false
	}
	var h assertionHeader
	if json.Unmarshal(raw, &h) != nil {
		return assertionHeader{}, false
	}
	return h, h.X5t != "" || h.X5tS256 != ""
}

// thumbprintMatches compares a header thumbprint (standard or URL-safe
// base64, as clients differ) with a digest.
func thumbprintMatches(header string, digest []byte) bool {
	if header == "" {
		return false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(header); err == nil && string(b) == string(digest) {
			return true
		}
	}
	return false
}

// verifyCertificateAssertion checks a client assertion against the
// application's registered certificates, as Entra ID does: the header's
// thumbprint names a registered certificate, the signature verifies with
// its public key, iss and sub are the client ID, aud is the token
// endpoint, and the assertion is within its lifetime. It returns the
// AADSTS code and description of the first check that fails, or "".
func verifyCertificateAssertion(a *app, h assertionHeader, assertion, tokenEndpoint string, now time.Time) (code, description string) {
	var cert *x509.Certificate
	for _, c := range a.certs {
		s1 := sha1.Sum(c.Raw) //nolint:gosec // see the import
		s256 := sha256.Sum256(c.Raw)
		if (h.X5tS256 != "" && thumbprintMatches(h.X5tS256, s256[:])) || (h.X5tS256 == "" && thumbprintMatches(h.X5t, s1[:])) {
			cert = c
			break
		}
	}
	if cert == nil {
		return "AADSTS700027", "The certificate with identifier used to sign the client assertion is not registered on application."
	}
	tok, err := jwt.ParseSigned(assertion, []jose.SignatureAlgorithm{jose.PS256, jose.RS256, jose.ES256, jose.ES384})
	if err != nil {
		return "AADSTS50027", "JWT token is invalid or malformed."
	}
	var claims jwt.Claims
	if err := tok.Claims(cert.PublicKey, &claims); err != nil {
		return "AADSTS700027", "Client assertion failed signature validation."
	}
	if claims.Issuer != a.clientID || claims.Subject != a.clientID {
		return "AADSTS700021", "Client assertion application identifier doesn't match 'client_id' parameter."
	}
	if !slices.Contains([]string(claims.Audience), tokenEndpoint) {
		return "AADSTS700027", "Client assertion failed validation: the audience of the client assertion must be the token endpoint."
	}
	if claims.Expiry == nil {
		return "AADSTS50027", "JWT token is invalid or malformed: exp is missing."
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: now}, time.Minute); err != nil {
		return "AADSTS700024", "Client assertion is not within its valid time range."
	}
	if !now.Before(cert.NotAfter) || now.Before(cert.NotBefore) {
		return "AADSTS700027", "The certificate used to sign the client assertion has expired."
	}
	return "", ""
}
