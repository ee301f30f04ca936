package gcpfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// What a verifier of service-account JWTs asks of Google (Vault's gcp auth
// method, for one): the OAuth2 token endpoint for its own key file
// (the JWT-bearer grant), the public certificates of a service account's
// keys, Google's own OAuth2 certificates, and the IAM API's
// projects.serviceAccounts.get. They answer on any host name, so that a
// server given the fake's address as a custom endpoint reaches them too.

// CAPEM is the PEM certificate of the fake's CA, for a process (such as
// Vault) that takes its trusted CAs from a file.
func (s *Server) CAPEM() []byte { return s.caPEM }

// URL is the fake's HTTPS address on loopback, for custom endpoints.
func (s *Server) URL() string { return s.web.URL }

// TokenURL is the fake's OAuth2 token endpoint, for the token_uri of a
// key file that a process outside the test reads.
func (s *Server) TokenURL() string { return s.web.URL + "/token" }

func googleError(w http.ResponseWriter, code int, status, message string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "status": status, "message": message}})
}

func (s *Server) serveIAM(w http.ResponseWriter, r *http.Request) {
	const x509Path = "/service_accounts/v1/metadata/x509/"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		s.count("token")
		s.jwtBearer(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/oauth2/v1/certs":
		// Google's own keys: none of them signs a service account's JWT.
		writeJSON(w, http.StatusOK, map[string]string{})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, x509Path):
		s.count("x509")
		email := strings.TrimPrefix(r.URL.Path, x509Path)
		s.mu.Lock()
		acct := s.accounts[email]
		s.mu.Unlock()
		if acct == nil {
			googleError(w, http.StatusNotFound, "NOT_FOUND", "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{acct.keyID: string(acct.certificate())})
	case r.Method == http.MethodGet && accountPath.MatchString(r.URL.Path):
		s.count("serviceAccounts.get")
		m := accountPath.FindStringSubmatch(r.URL.Path)
		s.getServiceAccount(w, r, m[1], m[2])
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// jwtBearer is the OAuth2 token endpoint's JWT-bearer grant (RFC 7523),
// as Google's client libraries use it with a key file: an assertion signed
// with the account's key, for an access token of the account.
func (s *Server) jwtBearer(w http.ResponseWriter, r *http.Request) {
	oauthError := func(code, description string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError("unsupported_grant_type", "Invalid grant_type.")
		return
	}
	parsed, err := jwt.ParseSigned(r.PostForm.Get("assertion"), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(parsed.Headers) != 1 {
		oauthError("invalid_grant", "Invalid JWT Signature.")
		return
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		oauthError("invalid_grant", "Invalid JWT.")
		return
	}
	s.mu.Lock()
	acct := s.accounts[unverified.Issuer]
	s.mu.Unlock()
	var claims struct {
		jwt.Claims
		Scope string `json:"scope"`
	}
	if acct == nil || parsed.Headers[0].KeyID != acct.keyID || parsed.Claims(acct.key.Public().(*rsa.PublicKey), &claims) != nil {
		oauthError("invalid_grant", "Invalid JWT Signature.")
		return
	}
	if claims.ValidateWithLeeway(jwt.Expected{Issuer: acct.email, Time: s.now()}, time.Minute) != nil ||
		!strings.HasSuffix(strings.Join(claims.Audience, " "), "/token") || claims.Scope == "" {
		oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe, with the token endpoint as audience and a scope.")
		return
	}
	tok, life := s.issue("serviceAccount:" + acct.email)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(life.Seconds())})
}

// accountPath is the resource of projects.serviceAccounts.get:
// projects/{project or -}/serviceAccounts/{email or unique ID}.
var accountPath = regexp.MustCompile(`^/v1/projects/([^/]+)/serviceAccounts/([^/]+)$`)

// getServiceAccount is the IAM API's projects.serviceAccounts.get, which
// needs iam.serviceAccounts.get.
func (s *Server) getServiceAccount(w http.ResponseWriter, r *http.Request, project, id string) {
	principal, err := s.principal(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if err != nil {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
		return
	}
	s.mu.Lock()
	allowed := s.perms[principal]["iam.serviceAccounts.get"]
	var acct *account
	for _, a := range s.accounts {
		if a.email == id || a.uniqueID == id {
			acct = a
		}
	}
	s.mu.Unlock()
	if project != "-" && project != s.project {
		acct = nil
	}
	if !allowed {
		googleError(w, http.StatusForbidden, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.get' denied on resource (or it may not exist).")
		return
	}
	if acct == nil {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "Unknown service account")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"name": "projects/" + s.project + "/serviceAccounts/" + acct.email,
		"projectId": s.project, "uniqueId": acct.uniqueID, "email": acct.email, "oauth2ClientId": acct.uniqueID, "etag": "MDEwMjE5MjA="})
}

// certificate is the self-signed certificate of the account's key, as
// Google publishes one for each key.
func (a *account) certificate() []byte {
	a.certOnce.Do(func() {
		now := time.Now()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: a.email},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, a.key.Public(), a.key)
		if err != nil {
			panic(err)
		}
		a.cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	})
	return a.cert
}
