package webhook

// The webhook's certificates are issued here with the standard library's
// crypto/x509: a CA and one serving certificate are all that is needed,
// and a certificate library (cert-manager's, for instance) would bring a
// dependency and an API larger than the fifty lines it would replace.
// cert-manager itself can still be used: see Options.CertDir.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
)

// Keys of the certificate Secret.
const (
	certKey = corev1.TLSCertKey       // tls.crt: the serving certificate
	keyKey  = corev1.TLSPrivateKeyKey // tls.key: its private key
	// caKey holds the CA bundle the API server trusts: the CA that
	// signed tls.crt first, then the one before it while it is valid, so
	// that a replica still serving the previous certificate is trusted
	// during a renewal. The CA's private key is never kept: each renewal
	// issues a new CA and serving certificate together.
	caKey = "ca.crt"
)

// CertOptions say what to issue and where to keep it.
type CertOptions struct {
	// Namespace and SecretName name the Secret that holds the certificate.
	Namespace, SecretName string
	// ConfigName is the ValidatingWebhookConfiguration whose caBundle is
	// kept equal to the CA bundle.
	ConfigName string
	// DNSNames and IPs the serving certificate is valid for.
	DNSNames []string
	IPs      []net.IP
	// Validity of a new certificate; it is renewed when less than a third
	// of it is left. Zero means one year.
	Validity time.Duration
	// CheckPeriod is how often the Secret and the caBundle are checked.
	// Zero means one minute.
	CheckPeriod time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Certs issues, renews and serves the webhook's certificate. Every
// replica runs it (it needs no leader): the Secret is the one copy they
// share, written with optimistic locking, so two replicas renewing at once
// end with one certificate.
type Certs struct {
	opts    CertOptions
	reader  client.Reader // uncached: Secrets are not in the cache
	writer  client.Client
	current atomic.Pointer[tls.Certificate]
}

// NewCerts builds the issuer; reader should read from the API server.
func NewCerts(reader client.Reader, writer client.Client, opts CertOptions) *Certs {
	if opts.Validity <= 0 {
		opts.Validity = 365 * 24 * time.Hour
	}
	if opts.CheckPeriod <= 0 {
		opts.CheckPeriod = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Certs{opts: opts, reader: reader, writer: writer}
}

// GetCertificate serves the current certificate (tls.Config).
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.current.Load(); cert != nil {
		return cert, nil
	}
	return nil, errors.New("the webhook's certificate is not issued yet")
}

// NeedLeaderElection is false: every replica serves the webhook.
func (c *Certs) NeedLeaderElection() bool { return false }

// Start keeps the certificate and the caBundle current until ctx ends.
func (c *Certs) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-certs")
	t := time.NewTicker(c.opts.CheckPeriod)
	defer t.Stop()
	for {
		if err := c.Ensure(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "keeping the webhook's certificate current; retrying", "secret", c.opts.Namespace+"/"+c.opts.SecretName)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Ensure issues or renews the certificate when needed, serves it, and
// patches the CA bundle into the webhook configuration.
func (c *Certs) Ensure(ctx context.Context) error {
	bundle, err := c.ensureSecret(ctx)
	if err != nil {
		return err
	}
	return c.patchCABundle(ctx, bundle)
}

// ensureSecret returns the CA bundle of the certificate now served.
func (c *Certs) ensureSecret(ctx context.Context) ([]byte, error) {
	key := client.ObjectKey{Namespace: c.opts.Namespace, Name: c.opts.SecretName}
	var s corev1.Secret
	err := c.reader.Get(ctx, key, &s)
	switch {
	case apierrors.IsNotFound(err):
		data, ierr := c.issue(nil)
		if ierr != nil {
			return nil, ierr
		}
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			// The label lets the shipped admission policy allow the write.
			Labels: map[string]string{conditions.ManagedByLabel: conditions.ManagedByValue}},
			Type: corev1.SecretTypeTLS, Data: data}
		if cerr := c.writer.Create(ctx, &s); cerr != nil {
			// Another replica may have been quicker: the next check reads
			// what it wrote.
			return nil, fmt.Errorf("creating Secret %s: %w", key, failure.Redacted(cerr))
		}
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	case !c.fresh(s.Data):
		data, ierr := c.issue(s.Data[caKey])
		if ierr != nil {
			return nil, ierr
		}
		s.Data = data
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[conditions.ManagedByLabel] = conditions.ManagedByValue
		// The API server's refusal of a Secret could quote what it refused
		// (the key), so only its reason and field paths are kept.
		// resourceVersion is kept: a replica renewing at the same time
		// gets a conflict and reads the winner's certificate next time.
		if uerr := c.writer.Update(ctx, &s); uerr != nil {
			return nil, fmt.Errorf("renewing the certificate in Secret %s: %w", key, failure.Redacted(uerr))
		}
		ctrl.LoggerFrom(ctx).Info("renewed the webhook's certificate", "secret", key.String())
	}
	cert, err := tls.X509KeyPair(s.Data[certKey], s.Data[keyKey])
	if err != nil {
		return nil, fmt.Errorf("loading the certificate of Secret %s: %w", key, err)
	}
	c.current.Store(&cert)
	return s.Data[caKey], nil
}

// fresh tells whether data holds a serving certificate with its key that
// is valid for long enough and for every name.
func (c *Certs) fresh(data map[string][]byte) bool {
	pair, err := tls.X509KeyPair(data[certKey], data[keyKey])
	if err != nil || len(data[caKey]) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data[caKey]) {
		return false
	}
	now := c.opts.Now()
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now}); err != nil {
		return false
	}
	if leaf.NotAfter.Sub(now) < c.opts.Validity/3 {
		return false
	}
	for _, n := range c.opts.DNSNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	for _, ip := range c.opts.IPs {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// issue makes a new CA and a serving certificate signed by it. The
// bundle is the new CA, then the previous one (the first certificate of
// previous) while it is still valid.
func (c *Certs) issue(previous []byte) (map[string][]byte, error) {
	now := c.opts.Now()
	notBefore, notAfter := now.Add(-time.Minute), now.Add(c.opts.Validity)
	caKeyPair, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "watchword-webhook-ca"},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKeyPair.PublicKey, caKeyPair)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cn := "watchword-webhook"
	if len(c.opts.DNSNames) > 0 {
		cn = c.opts.DNSNames[0]
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: c.opts.DNSNames, IPAddresses: c.opts.IPs,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKeyPair)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return nil, err
	}
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if block, _ := pem.Decode(previous); block != nil && block.Type == "CERTIFICATE" {
		if old, err := x509.ParseCertificate(block.Bytes); err == nil && now.Before(old.NotAfter) {
			bundle = append(bundle, pem.EncodeToMemory(block)...)
		}
	}
	return map[string][]byte{
		certKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		keyKey:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		caKey:   bundle,
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// patchCABundle sets bundle as the caBundle of every webhook of the
// configuration. A missing configuration is not an error: it may be
// installed later, and the next check patches it.
func (c *Certs) patchCABundle(ctx context.Context, bundle []byte) error {
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.reader.Get(ctx, client.ObjectKey{Name: c.opts.ConfigName}, &cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.opts.ConfigName, err)
	}
	patched := cfg.DeepCopy()
	for i := range patched.Webhooks {
		patched.Webhooks[i].ClientConfig.CABundle = bundle
	}
	same := true
	for i := range cfg.Webhooks {
		same = same && bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle)
	}
	if same {
		return nil
	}
	if err := c.writer.Patch(ctx, patched, client.MergeFromWithOptions(&cfg, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the caBundle of ValidatingWebhookConfiguration %s: %w", c.opts.ConfigName, err)
	}
	ctrl.LoggerFrom(ctx).Info("patched the webhook's CA bundle", "configuration", c.opts.ConfigName)
	return nil
}
