// Package kubernetes is a provider that reads Secrets from a namespace of
// this cluster or of another one. remoteRef.key is a Secret's name,
// remoteRef.property a key of its data, and the version is the Secret's
// resourceVersion.
package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds kubernetes clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks the parts of the configuration that need no I/O.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Kubernetes
	if store.Cluster() && spec.RemoteNamespace == "" {
		return fmt.Errorf("%w: kubernetes.remoteNamespace is required in a ClusterSecretStore", engine.ErrInvalidConfig)
	}
	if spec.Auth.ServiceAccount != nil && spec.Server != nil && spec.Server.URL != "" {
		return fmt.Errorf("%w: kubernetes.auth.serviceAccount works only for this cluster; remove server.url or use token or cert auth", engine.ErrInvalidConfig)
	}
	return nil
}

// New builds a client that authenticates as the store says.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Reader, error) {
	if err := f.Validate(store); err != nil {
		return nil, err
	}
	spec := store.Spec.Kubernetes
	cfg, err := restConfig(ctx, spec, deps)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: building a client: %v", engine.ErrInvalidConfig, err)
	}
	ns := spec.RemoteNamespace
	if ns == "" {
		ns = store.Namespace
	}
	return &Client{secrets: cs.CoreV1().Secrets(ns), namespace: ns}, nil
}

func restConfig(ctx context.Context, spec *v1alpha1.KubernetesProvider, deps provider.Deps) (*rest.Config, error) {
	local := deps.LocalConfig()
	cfg := &rest.Config{QPS: 50, Burst: 100, UserAgent: "watchword-kubernetes-provider"}
	if spec.Server != nil && spec.Server.URL != "" {
		cfg.Host = spec.Server.URL
	} else {
		cfg.Host = local.Host
		cfg.CAData = local.CAData
		cfg.CAFile = local.CAFile
		cfg.Insecure = local.Insecure
	}
	if s := spec.Server; s != nil {
		if len(s.CABundle) > 0 {
			cfg.CAData, cfg.CAFile = s.CABundle, ""
		}
		if s.CASecretRef != nil {
			ca, err := deps.SecretValue(ctx, *s.CASecretRef)
			if err != nil {
				return nil, err
			}
			cfg.CAData, cfg.CAFile = ca, ""
		}
	}
	auth := spec.Auth
	switch {
	case auth.Token != nil:
		tok, err := deps.SecretValue(ctx, auth.Token.BearerToken)
		if err != nil {
			return nil, err
		}
		cfg.BearerToken = string(tok)
	case auth.Cert != nil:
		crt, err := deps.SecretValue(ctx, auth.Cert.ClientCert)
		if err != nil {
			return nil, err
		}
		key, err := deps.SecretValue(ctx, auth.Cert.ClientKey)
		if err != nil {
			return nil, err
		}
		cfg.CertData, cfg.KeyData = crt, key
	case auth.ServiceAccount != nil:
		sa := *auth.ServiceAccount
		tok, _, err := deps.ServiceAccountToken(ctx, sa)
		if err != nil {
			return nil, err
		}
		cfg.BearerToken = tok
	default:
		return nil, fmt.Errorf("%w: kubernetes.auth must set one of token, cert or serviceAccount", engine.ErrInvalidConfig)
	}
	return cfg, nil
}

// Client reads Secrets of one namespace.
type Client struct {
	secrets   typedcorev1.SecretInterface
	namespace string
}

// GetSecret reads one Secret. A pinned version must equal the Secret's
// current resourceVersion: Kubernetes keeps no older versions.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	s, err := c.secrets.Get(ctx, ref.Key, metav1.GetOptions{})
	if err != nil {
		return engine.Object{}, c.classify(ref.Key, err)
	}
	if ref.Version != "" && ref.Version != s.ResourceVersion {
		return engine.Object{}, fmt.Errorf("Secret %s/%s is at version %s, not the pinned %s; Kubernetes keeps no older versions: %w",
			c.namespace, ref.Key, s.ResourceVersion, ref.Version, engine.ErrNotFound)
	}
	return objectOf(s), nil
}

// Check reads nothing but tells whether the credentials may read Secrets
// of the namespace, by getting one that cannot exist.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.secrets.Get(ctx, "watchword-probe.invalid-name-", metav1.GetOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return nil
	}
	return c.classify("", err)
}

func objectOf(s *corev1.Secret) engine.Object {
	fields := make(map[string][]byte, len(s.Data))
	for k, v := range s.Data {
		fields[k] = v
	}
	return engine.Object{Version: s.ResourceVersion, Fields: fields}
}

func (c *Client) classify(name string, err error) error {
	what := fmt.Sprintf("Secret %s/%s", c.namespace, name)
	if name == "" {
		what = "Secrets in namespace " + c.namespace
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s does not exist: %w", what, engine.ErrNotFound)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the store's credentials may not read %s: %w", what, engine.ErrPermissionDenied)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the store's credentials were rejected by the API server: %w", engine.ErrPermissionDenied)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("reading %s: %w", what, engine.ErrThrottled)
	default:
		return fmt.Errorf("reading %s: %v: %w", what, apiReason(err), engine.ErrUnavailable)
	}
}

// apiReason describes an API error without its full text, which for some
// transports can echo request details.
func apiReason(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok {
		s := status.Status()
		return fmt.Sprintf("%s (HTTP %d)", s.Reason, s.Code)
	}
	return err.Error()
}
