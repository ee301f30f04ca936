package webhook

import (
	"context"
	"crypto/tls"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Options configure the webhook server.
type Options struct {
	// Host and Port the server listens on (Port 0: 9443).
	Host string
	Port int
	// CertDir, when set, holds tls.crt and tls.key from elsewhere (such
	// as a cert-manager Certificate's Secret, mounted): they are served,
	// reloaded when they change, and the caBundle is left to whoever
	// issued them (cert-manager's CA injector). Otherwise the operator
	// issues its own certificate as Certs says.
	CertDir string
	// Certs configure the self-issued certificate.
	Certs CertOptions
	// ClientCAFile, when set, makes the server authenticate its callers:
	// only a client certificate signed by a CA of this PEM bundle (the
	// API server's webhook client certificate) is let in (Callers).
	ClientCAFile string
	// ClientNames, with ClientCAFile, are the subject common names or DNS
	// names a caller's certificate must have one of; empty: any the CA
	// signed.
	ClientNames []string
}

// Setup registers the indexes, the webhook server and, without CertDir,
// the certificate issuer with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := Index(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// HTTP/2 is off, as controller-runtime advises, against its
	// rapid-reset and stream-exhaustion attacks.
	tlsOpts := []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"}; c.MinVersion = tls.VersionTLS12 }}
	if opts.ClientCAFile != "" {
		callers, err := NewCallers(opts.ClientCAFile, opts.ClientNames)
		if err != nil {
			return err
		}
		tlsOpts = append(tlsOpts, callers.Configure)
	}
	serverOpts := ctrlwebhook.Options{Host: opts.Host, Port: opts.Port}
	if opts.CertDir != "" {
		serverOpts.CertDir = opts.CertDir
	} else {
		if opts.Certs.Namespace == "" || opts.Certs.SecretName == "" || opts.Certs.ConfigName == "" {
			return fmt.Errorf("the webhook's certificate needs a namespace, a Secret name and a ValidatingWebhookConfiguration name")
		}
		certs := NewCerts(mgr.GetAPIReader(), mgr.GetClient(), opts.Certs)
		if err := mgr.Add(certs); err != nil {
			return err
		}
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.GetCertificate = certs.GetCertificate })
	}
	serverOpts.TLSOpts = tlsOpts
	srv := ctrlwebhook.NewServer(serverOpts)
	v := NewValidator(Claims{Reader: mgr.GetCache()}, mgr.GetScheme())
	srv.Register(ExternalSecretPath, &admission.Webhook{Handler: v})
	srv.Register(PushSecretPath, &admission.Webhook{Handler: v})
	return mgr.Add(srv)
}
