package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Callers authenticates the webhook's callers by their TLS client
// certificate: only a caller whose certificate a CA of the bundle in
// CAFile signed for client authentication, and, when Names is set, whose
// subject common name or a DNS name is one of them, completes the
// handshake. The API server presents such a certificate when its
// admission configuration gives it one for the webhook (docs/operations.md,
// "Admission webhook"). TLS alone only proves the server to the caller.
//
// The bundle is read again when the file changes (a mounted ConfigMap is
// replaced atomically), at most once every reloadEvery, so a rotation of
// the API server's client CA needs no restart of the controller.
type Callers struct {
	CAFile string
	Names  []string

	mu       sync.Mutex
	pool     *x509.CertPool
	pem      []byte
	loadedAt time.Time
	now      func() time.Time
}

// reloadEvery is how often, at most, the CA bundle is read again.
const reloadEvery = 10 * time.Second

// NewCallers reads the CA bundle once, so that a missing or invalid file
// stops the controller at its start with a message that says which.
func NewCallers(caFile string, names []string) (*Callers, error) {
	c := &Callers{CAFile: caFile, Names: names, now: time.Now}
	if _, err := c.load(true); err != nil {
		return nil, err
	}
	return c, nil
}

// load returns the current pool, reading the file again when force or
// when reloadEvery passed; a file that became unreadable or invalid keeps
// the pool read before (never none: that would admit no caller, or any).
func (c *Callers) load(force bool) (*x509.CertPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !force && c.pool != nil && c.now().Sub(c.loadedAt) < reloadEvery {
		return c.pool, nil
	}
	c.loadedAt = c.now()
	raw, err := os.ReadFile(c.CAFile)
	if err != nil {
		if c.pool != nil {
			return c.pool, nil
		}
		return nil, fmt.Errorf("webhook client CA bundle: %w", err)
	}
	if c.pool != nil && bytes.Equal(raw, c.pem) {
		return c.pool, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		if c.pool != nil {
			return c.pool, nil
		}
		return nil, fmt.Errorf("webhook client CA bundle %s holds no PEM certificate: give the CA that signs the API server's webhook client certificate", c.CAFile)
	}
	c.pool, c.pem = pool, raw
	return pool, nil
}

// Configure makes a TLS server configuration ask every caller for a
// certificate and refuse the handshake of one that Verify refuses. The
// check is VerifyConnection's, which runs on resumed sessions too.
func (c *Callers) Configure(cfg *tls.Config) {
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		raw := make([][]byte, 0, len(cs.PeerCertificates))
		for _, cert := range cs.PeerCertificates {
			raw = append(raw, cert.Raw)
		}
		return c.Verify(raw)
	}
}

// Verify checks a caller's certificate chain (leaf first, as sent).
func (c *Callers) Verify(raw [][]byte) error {
	if len(raw) == 0 {
		return errors.New("the webhook requires a client certificate")
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		cert, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("client certificate: %w", err)
		}
		certs = append(certs, cert)
	}
	pool, err := c.load(false)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, cert := range certs[1:] {
		inter.AddCert(cert)
	}
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: c.now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("client certificate of %q: %w", leaf.Subject.CommonName, err)
	}
	if len(c.Names) == 0 || slices.Contains(c.Names, leaf.Subject.CommonName) {
		return nil
	}
	for _, name := range leaf.DNSNames {
		if slices.Contains(c.Names, name) {
			return nil
		}
	}
	return fmt.Errorf("client certificate of %q names no allowed caller", leaf.Subject.CommonName)
}
