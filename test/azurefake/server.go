// Package azurefake is a strict loopback stand-in for Azure Key Vault
// (secrets, REST over TLS with the bearer challenge) and Microsoft Entra ID
// (the token endpoint of the client credentials flow with a client secret
// or a federated client assertion, the tenant's OpenID configuration, and
// the instance metadata endpoint of a managed identity). It exists because
// no Azure emulator can run here; tests drive it only through Microsoft's
// official SDK (azsecrets, azidentity), over a client whose transport
// dials the fake whatever host a URL names, and trusts the fake's own CA.
//
// It is strict where the real services are: an unknown api-version, a
// request without a bearer token (answered with the 401 challenge the SDK
// expects first), a token issued for another resource or tenant, an
// expired token, a bad secret name, an unknown JSON field and a write over
// a soft-deleted secret are all refused the way Key Vault refuses them.
package azurefake

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// APIVersions are the Key Vault api-versions the fake accepts: those of
// the secrets data plane that the SDK in go.mod may send.
var APIVersions = map[string]bool{"7.4": true, "7.5": true, "7.6": true, "2025-07-01": true, "2026-04-01": true}

// Cloud is one Azure cloud: its Entra host and its Key Vault domain.
type Cloud struct {
	LoginHost   string // login.microsoftonline.com
	VaultSuffix string // vault.azure.net
}

// The clouds the fake serves.
var (
	Public     = Cloud{LoginHost: "login.microsoftonline.com", VaultSuffix: "vault.azure.net"}
	Government = Cloud{LoginHost: "login.microsoftonline.us", VaultSuffix: "vault.usgovcloudapi.net"}
)

// Server is the fake. Configure it with its methods; it is safe for
// concurrent use.
type Server struct {
	tls  *httptest.Server
	imds *httptest.Server
	pool *x509.CertPool
	now  func() time.Time

	mu         sync.Mutex
	vaults     map[string]*vault // by host
	apps       map[string]*app   // by tenant + "/" + client ID
	msi        map[string]string // managed identity client ID ("" system) -> principal
	tokens     map[string]token
	throttle   int
	retryAfter int
	calls      map[string]int
	// VerifyAssertion checks a federated client assertion (a Kubernetes
	// service-account token) and returns its subject and audiences. Nil
	// refuses every assertion. Set it before the first request.
	VerifyAssertion func(ctx context.Context, assertion string) (subject string, audiences []string, err error)
}

type vault struct {
	host, tenant string
	cloud        Cloud
	secrets      map[string]*secret
}

type secret struct {
	versions []*version // oldest first; the last is current
	deleted  bool
}

type version struct {
	id          string
	value       string
	contentType string
	tags        map[string]string
	created     int64
	enabled     bool
	// managed: the secret backs a certificate (Key Vault manages it).
	managed bool
}

type app struct {
	tenant, clientID, clientSecret string
	// subject of the federated credential, "" for none.
	subject string
	// certs are the registered certificate credentials.
	certs []*x509.Certificate
	// perms on every vault: get, list, set, delete.
	perms map[string]bool
}

type token struct {
	principal, tenant, resource string
	perms                       map[string]bool
	expires                     time.Time
}

// New starts the fake on loopback; it stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatalf("azurefake: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts the fake on loopback, for a whole test package; Close
// stops it.
func Start() (*Server, error) {
	s := &Server{now: time.Now, vaults: map[string]*vault{}, apps: map[string]*app{}, msi: map[string]string{},
		tokens: map[string]token{}, calls: map[string]int{}}
	cert, pool, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	s.pool = pool
	s.tls = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.tls.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.tls.StartTLS()
	s.imds = httptest.NewServer(http.HandlerFunc(s.serveIMDS))
	return s, nil
}

// Close stops the fake.
func (s *Server) Close() {
	s.tls.Close()
	s.imds.Close()
}

// CertPool is the pool that trusts the fake's certificate.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// Client is an HTTP client (an azcore policy.Transporter) that sends every
// https request to the fake, whatever its host, trusting only the fake's
// CA, and the instance metadata address (169.254.169.254:80) to the fake's
// managed identity endpoint. Nothing leaves the machine.
func (s *Server) Client() *http.Client {
	tlsAddr, imdsAddr := s.tls.Listener.Addr().String(), s.imds.Listener.Addr().String()
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == "169.254.169.254:80" {
				return d.DialContext(ctx, network, imdsAddr)
			}
			if _, port, _ := net.SplitHostPort(addr); port != "443" {
				return nil, fmt.Errorf("azurefake: no service at %s", addr)
			}
			return d.DialContext(ctx, network, tlsAddr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
	}}
}

// AddVault creates an empty vault at host (such as
// "watchword.vault.azure.net") in tenant, in cloud.
func (s *Server) AddVault(host, tenant string, cloud Cloud) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vaults[host] = &vault{host: host, tenant: tenant, cloud: cloud, secrets: map[string]*secret{}}
}

// AddApp registers an application of tenant with a client secret (may be
// empty: none), a federated credential for subject (may be empty: none)
// and its permissions on every vault ("get", "list", "set", "delete").
func (s *Server) AddApp(tenant, clientID, clientSecret, subject string, perms ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := map[string]bool{}
	for _, x := range perms {
		p[x] = true
	}
	s.apps[tenant+"/"+clientID] = &app{tenant: tenant, clientID: clientID, clientSecret: clientSecret, subject: subject, perms: p}
}

// SetClientSecret changes an application's client secret (a rotation).
func (s *Server) SetClientSecret(tenant, clientID, clientSecret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[tenant+"/"+clientID].clientSecret = clientSecret
}

// AddManagedIdentity makes the machine's managed identity with clientID
// ("" for the system-assigned one) available, acting as the app clientID
// of tenant registered with AddApp (for its permissions).
func (s *Server) AddManagedIdentity(clientID, tenant, appClientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msi[clientID] = tenant + "/" + appClientID
}

// SetSecret writes a new version of a secret out of band, as the portal
// would, and returns the version's ID.
func (s *Server) SetSecret(host, name, value string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vaults[host]
	sec := v.secrets[name]
	if sec == nil || sec.deleted {
		sec = &secret{}
		v.secrets[name] = sec
	}
	ver := &version{id: newID(), value: value, tags: tags, created: s.now().Unix(), enabled: true}
	sec.versions = append(sec.versions, ver)
	return ver.id
}

// SetCertificateSecret writes a new version of the secret that backs a
// certificate, as Key Vault does when a certificate is created or
// imported: value is the PFX in base64 (contentType
// application/x-pkcs12) or the PEM (application/x-pem-file).
func (s *Server) SetCertificateSecret(host, name, value, contentType string) string {
	id := s.SetSecret(host, name, value, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.vaults[host].secrets[name].versions
	vs[len(vs)-1].contentType = contentType
	vs[len(vs)-1].managed = true
	return id
}

// DisableVersion disables one version of a secret.
func (s *Server) DisableVersion(host, name, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ver := range s.vaults[host].secrets[name].versions {
		if ver.id == id {
			ver.enabled = false
		}
	}
}

// Secret returns the current value and tags of a secret, and whether it
// exists (and is not deleted).
func (s *Server) Secret(host, name string) (string, map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.vaults[host].secrets[name]
	if sec == nil || sec.deleted || len(sec.versions) == 0 {
		return "", nil, false
	}
	cur := sec.versions[len(sec.versions)-1]
	return cur.value, cur.tags, true
}

// Throttle makes the next n Key Vault requests fail with 429 and a
// Retry-After of retryAfter seconds.
func (s *Server) Throttle(n, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle, s.retryAfter = n, retryAfter
}

// Calls returns how many requests of an operation the fake answered (the
// operations: "getSecret", "listVersions", "setSecret", "deleteSecret",
// "token", "imds", "challenge", "throttled").
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// ExpireTokens makes every access token issued so far expired.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, tok := range s.tokens {
		tok.expires = s.now().Add(-time.Minute)
		s.tokens[k] = tok
	}
}

func (s *Server) count(op string) {
	s.mu.Lock()
	s.calls[op]++
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == Public.LoginHost || host == Government.LoginHost {
		s.serveLogin(w, r, host)
		return
	}
	s.mu.Lock()
	v := s.vaults[host]
	s.mu.Unlock()
	if v == nil {
		// The real service's DNS would not resolve it.
		http.Error(w, "no such host", http.StatusBadGateway)
		return
	}
	s.serveVault(w, r, v)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// selfSigned makes a test CA and a server certificate for the hosts the
// fake answers as.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "azurefake test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "azurefake"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames:    []string{Public.LoginHost, Government.LoginHost, "*." + Public.VaultSuffix, "*." + Government.VaultSuffix},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, nil
}

// kvError writes Key Vault's error shape.
func kvError(w http.ResponseWriter, status int, code, inner, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	body := map[string]any{"code": code, "message": message}
	if inner != "" {
		body["innererror"] = map[string]any{"code": inner}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict decodes a JSON body, refusing unknown fields.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var secretName = regexp.MustCompile(`^[0-9a-zA-Z-]{1,127}$`)

func validName(name string) bool {
	return secretName.MatchString(name) && !strings.HasPrefix(name, "-")
}
