// Package gcpfake is a strict loopback stand-in for Google Cloud Secret
// Manager: the real gRPC service, google.cloud.secretmanager.v1
// SecretManagerService, implemented on the official generated server
// interface (secretmanagerpb), so the wire protocol is exact; over TLS
// with a test CA. It checks each call's bearer token (a self-signed JWT of
// a service-account key it issued, verified with the key's public half,
// or an access token its Security Token Service or IAM Credentials
// endpoints issued), the permission the call needs, the routing header,
// and that a regional secret is asked of its location's own endpoint.
// It also answers what a verifier of service-account JWTs asks of Google
// (iam.go: the JWT-bearer token grant, the keys' public certificates and
// the IAM API's serviceAccounts.get), for Vault's gcp auth method.
// It exists because no Secret Manager emulator can run here; tests drive
// it only through Google's official Go client (and Vault's).
package gcpfake

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/resolver"
)

// Locations are the regional endpoints the fake's certificate covers.
var Locations = []string{"europe-west1", "us-central1"}

// Server is the fake; safe for concurrent use.
type Server struct {
	secretmanagerpb.UnimplementedSecretManagerServiceServer

	grpc    *grpc.Server
	lis     net.Listener
	web     *httptest.Server
	pool    *x509.CertPool
	caPEM   []byte
	cert    tls.Certificate
	now     func() time.Time
	project string

	mu       sync.Mutex
	secrets  map[string]*secret  // by resource name, projects/P[/locations/L]/secrets/S
	accounts map[string]*account // service accounts by email
	perms    map[string]map[string]bool
	tokens   map[string]accessToken
	// lifetimes are the token lifetimes SetTokenLifetime set, by principal.
	lifetimes map[string]time.Duration
	pools     map[string]bool            // workload identity pool provider audiences
	imperson  map[string]map[string]bool // principal -> emails it may impersonate
	throttle  int
	// throttleDelay is the RetryInfo delay of a throttled answer.
	throttleDelay time.Duration
	calls         map[string]int
	authorities   []string
	// VerifySubjectToken checks the subject token of a token exchange (a
	// Kubernetes service-account token) and returns its subject and
	// audiences. Set it before the first request.
	VerifySubjectToken func(ctx context.Context, token string) (subject string, audiences []string, err error)
}

type secret struct {
	labels      map[string]string
	annotations map[string]string
	created     time.Time
	versions    []*version // version n is versions[n-1]
	aliases     map[string]int64
	etag        int
}

type version struct {
	data    []byte
	state   secretmanagerpb.SecretVersion_State
	created time.Time
}

type account struct {
	email    string
	keyID    string
	key      *rsa.PrivateKey
	uniqueID string // 21 digits, as IAM numbers accounts
	certOnce sync.Once
	cert     []byte // PEM, made on first use
}

type accessToken struct {
	principal string
	expires   time.Time
}

// New starts the fake on loopback for project; it stops when the test ends.
func New(t testing.TB, project string) *Server {
	t.Helper()
	s, err := Start(project)
	if err != nil {
		t.Fatalf("gcpfake: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts the fake for a whole test package; Close stops it.
func Start(project string) (*Server, error) {
	s := &Server{now: time.Now, project: project, secrets: map[string]*secret{}, accounts: map[string]*account{},
		perms: map[string]map[string]bool{}, tokens: map[string]accessToken{}, lifetimes: map[string]time.Duration{}, pools: map[string]bool{},
		imperson: map[string]map[string]bool{}, calls: map[string]int{}}
	cert, pool, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s.cert, s.pool, s.caPEM = cert, pool, caPEM
	s.lis, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.grpc = grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})),
		grpc.UnaryInterceptor(s.authorize))
	secretmanagerpb.RegisterSecretManagerServiceServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(s.lis) }()
	s.web = httptest.NewUnstartedServer(http.HandlerFunc(s.serveWeb))
	s.web.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.web.StartTLS()
	return s, nil
}

// Close stops the fake.
func (s *Server) Close() {
	s.grpc.Stop()
	s.web.Close()
}

// GRPCOptions are the dial options that bring a gRPC client to the fake:
// a resolver that keeps every target's host name (so TLS checks the real
// name, and the fake sees which endpoint was asked), a dialer that sends
// every connection to the fake, and TLS that trusts only the fake's CA.
func (s *Server) GRPCOptions() []grpc.DialOption {
	addr := s.lis.Addr().String()
	var d net.Dialer
	return []grpc.DialOption{
		grpc.WithResolvers(keepHost{}),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12})),
	}
}

// HTTPClient is a client that sends every https request (to the Security
// Token Service and IAM Credentials) to the fake, trusting only its CA.
func (s *Server) HTTPClient() *http.Client {
	addr := s.web.Listener.Addr().String()
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12},
	}}
}

// keepHost resolves every target of the dns scheme to its own host name:
// the dialer above sends it to the fake.
type keepHost struct{}

func (keepHost) Scheme() string { return "dns" }

func (keepHost) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	err := cc.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: target.Endpoint()}}})
	return nopResolver{}, err
}

type nopResolver struct{}

func (nopResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (nopResolver) Close()                                {}

// NewServiceAccount creates a service account of the project with a key,
// and grants it permissions (such as "secretmanager.versions.access");
// it returns the JSON key file.
func (s *Server) NewServiceAccount(name string, perms ...string) (email string, keyJSON []byte) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	email = name + "@" + s.project + ".iam.gserviceaccount.com"
	kid := newID()
	s.mu.Lock()
	uid, _ := rand.Int(rand.Reader, new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil))
	s.accounts[email] = &account{email: email, keyID: kid, key: key, uniqueID: "1" + fmt.Sprintf("%020d", uid)}
	s.mu.Unlock()
	s.Grant("serviceAccount:"+email, perms...)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyJSON, _ = json.Marshal(map[string]string{
		"type": "service_account", "project_id": s.project, "private_key_id": kid,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1" + kid[:10], "auth_uri": "https://accounts.google.com/o/oauth2/auth",
		"token_uri": "https://oauth2.googleapis.com/token", "universe_domain": "googleapis.com",
	})
	return email, keyJSON
}

// Grant gives a principal (serviceAccount:EMAIL, or a federated
// principal://… subject) permissions on every secret of the project.
func (s *Server) Grant(principal string, perms ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perms[principal] == nil {
		s.perms[principal] = map[string]bool{}
	}
	for _, p := range perms {
		s.perms[principal][p] = true
	}
}

// AddPool registers a workload identity pool provider (its audience, such
// as //iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/k).
func (s *Server) AddPool(audience string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pools[audience] = true
}

// AllowImpersonation lets principal obtain tokens of the service account.
func (s *Server) AllowImpersonation(principal, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.imperson[principal] == nil {
		s.imperson[principal] = map[string]bool{}
	}
	s.imperson[principal][email] = true
}

// FederatedPrincipal is the principal of a subject of a pool provider.
func FederatedPrincipal(audience, subject string) string {
	pool := strings.TrimPrefix(audience, "//iam.googleapis.com/")
	if i := strings.Index(pool, "/providers/"); i >= 0 {
		pool = pool[:i]
	}
	return "principal://iam.googleapis.com/" + pool + "/subject/" + subject
}

// AddVersion adds a version to a secret out of band (creating the secret
// without labels when needed), as the console would; name is the
// secret's resource name. It returns the version number.
func (s *Server) AddVersion(name string, data []byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		sec = &secret{created: s.now(), aliases: map[string]int64{}}
		s.secrets[name] = sec
	}
	sec.versions = append(sec.versions, &version{data: data, state: secretmanagerpb.SecretVersion_ENABLED, created: s.now()})
	return int64(len(sec.versions))
}

// SetAlias points a version alias of a secret at version n.
func (s *Server) SetAlias(name, alias string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[name].aliases[alias] = n
}

// SetState changes the state of version n of a secret.
func (s *Server) SetState(name string, n int64, st secretmanagerpb.SecretVersion_State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[name].versions[n-1].state = st
}

// Secret returns the data of a secret's latest enabled version, its
// labels, and whether it exists.
func (s *Server) Secret(name string) ([]byte, map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.secrets[name]
	if sec == nil {
		return nil, nil, false
	}
	for i := len(sec.versions) - 1; i >= 0; i-- {
		if sec.versions[i].state == secretmanagerpb.SecretVersion_ENABLED {
			return sec.versions[i].data, sec.labels, true
		}
	}
	return nil, sec.labels, true
}

// Throttle makes the next n calls fail with RESOURCE_EXHAUSTED and a
// RetryInfo detail asking to wait one second.
func (s *Server) Throttle(n int) { s.ThrottleFor(n, time.Second) }

// ThrottleFor makes the next n calls fail with RESOURCE_EXHAUSTED and a
// google.rpc.RetryInfo detail asking to wait delay (none when delay is 0,
// as for a quota that names no retry time).
func (s *Server) ThrottleFor(n int, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
	s.throttleDelay = delay
}

// Calls returns how many calls of a method (such as
// "AccessSecretVersion", "GetSecretVersion", "sts", "generateAccessToken",
// "throttled") the fake answered.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Authorities lists the endpoints (:authority) the calls were made to.
func (s *Server) Authorities() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.authorities...)
}

func newID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func selfSigned() (tls.Certificate, *x509.CertPool, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcpfake test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	names := []string{"secretmanager.googleapis.com", "sts.googleapis.com", "iamcredentials.googleapis.com", "oauth2.googleapis.com"}
	for _, l := range Locations {
		names = append(names, "secretmanager."+l+".rep.googleapis.com")
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "gcpfake"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: names,
		// Loopback too, for a server that is given the fake's address as
		// a custom endpoint (Vault's gcp auth method).
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func (s *Server) String() string { return fmt.Sprintf("gcpfake(%s)", s.lis.Addr()) }
