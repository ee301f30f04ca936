// Package kubernetes is a provider that reads Secrets from a namespace of
// this cluster or of another one, and publishes Secrets there. remoteRef.key
// is a Secret's name, remoteRef.property a key of its data, and the version
// is the Secret's resourceVersion.
package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	typedauthv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
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

// Refs names the CA Secret and every credential of the block.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	spec := store.Spec.Kubernetes
	var out []provider.ObjectRef
	if spec.Server != nil && spec.Server.CASecretRef != nil {
		out = append(out, provider.SecretKeyRef("kubernetes.server.caSecretRef", *spec.Server.CASecretRef))
	}
	a := spec.Auth
	if a.Token != nil {
		out = append(out, provider.SecretKeyRef("kubernetes.auth.token.bearerToken", a.Token.BearerToken))
	}
	if a.Cert != nil {
		out = append(out,
			provider.SecretKeyRef("kubernetes.auth.cert.clientCert", a.Cert.ClientCert),
			provider.SecretKeyRef("kubernetes.auth.cert.clientKey", a.Cert.ClientKey))
	}
	if a.ServiceAccount != nil {
		out = append(out, provider.ServiceAccountRef("kubernetes.auth.serviceAccount", *a.ServiceAccount))
	}
	return out
}

// New builds a client that authenticates as the store says. It reads and
// checks its credentials; it tells no versions apart from reading. It
// writes and deletes the Secrets it publishes (write.go), as far as the
// store's identity may, and watches the metadata of the namespace's
// Secrets for changes (watch.go), as far as the identity may list and
// watch them. It lists the names of the namespace's Secrets by prefix and
// labels (list.go), as far as the identity may list them.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.Kubernetes
	cfg, who, err := restConfig(ctx, store, deps)
	if err != nil {
		return engine.Ops{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("%w: building a client: %v", engine.ErrInvalidConfig, err)
	}
	// serviceAccount auth was checked by name before its token was asked;
	// other credentials are checked by identity, wherever the server is.
	if spec.Auth.ServiceAccount == nil {
		sameServer := spec.Server == nil || spec.Server.URL == ""
		if refused := refuseOwnCredentials(ctx, deps, cs.AuthenticationV1().SelfSubjectReviews(), sameServer); refused != nil {
			return engine.Ops{}, refused
		}
	}
	ns := spec.RemoteNamespace
	if ns == "" {
		ns = store.Namespace
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("%w: building a client: %v", engine.ErrInvalidConfig, err)
	}
	c := newClient(cs, ns, who)
	// The watch of the namespace's Secrets (watch.go) tells the names of
	// those that change, from their metadata only.
	ops := engine.Ops{Reader: c, Metadata: c, Checker: c, Writer: c, Watcher: newWatcher(mc, ns, who), Lister: newLister(mc, ns, who, cs.AuthenticationV1().SelfSubjectReviews())}
	// A scope is a namespace of the store's cluster: the secrets of
	// publishers of namespace "team-a" live in namespace team-a there.
	ops.Scope = func(scope string) (engine.Ops, error) {
		sc := newClient(cs, scope, who)
		return engine.Ops{Reader: sc, Checker: sc, Writer: sc}, nil
	}
	return ops, nil
}

// restConfig builds the client configuration and the identity it acts as.
func restConfig(ctx context.Context, store provider.Store, deps provider.Deps) (*rest.Config, *identity, error) {
	spec := store.Spec.Kubernetes
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
				return nil, nil, err
			}
			cfg.CAData, cfg.CAFile = ca, ""
		}
	}
	auth := spec.Auth
	switch {
	case auth.Token != nil:
		tok, err := deps.SecretValue(ctx, auth.Token.BearerToken)
		if err != nil {
			return nil, nil, err
		}
		cfg.BearerToken = string(tok)
		return cfg, &identity{source: "the bearer token of kubernetes.auth.token"}, nil
	case auth.Cert != nil:
		crt, err := deps.SecretValue(ctx, auth.Cert.ClientCert)
		if err != nil {
			return nil, nil, err
		}
		key, err := deps.SecretValue(ctx, auth.Cert.ClientKey)
		if err != nil {
			return nil, nil, err
		}
		cfg.CertData, cfg.KeyData = crt, key
		return cfg, certIdentity(crt), nil
	case auth.ServiceAccount != nil:
		sa := *auth.ServiceAccount
		if err := refuseOwnIdentity(ctx, deps, store.NamespaceOf(sa.Namespace), sa.Name); err != nil {
			return nil, nil, err
		}
		tok, _, err := deps.ServiceAccountToken(ctx, sa)
		if err != nil {
			return nil, nil, err
		}
		cfg.BearerToken = tok
		return cfg, &identity{known: fmt.Sprintf("service account %q", store.NamespaceOf(sa.Namespace)+"/"+sa.Name)}, nil
	default:
		return nil, nil, fmt.Errorf("%w: kubernetes.auth must set one of token, cert or serviceAccount", engine.ErrInvalidConfig)
	}
}

// Client reads, and publishes, Secrets of one namespace.
type Client struct {
	secrets   typedcorev1.SecretInterface
	namespace string
	who       *identity
	reviews   typedauthv1.SelfSubjectReviewInterface
}

func newClient(cs kubernetes.Interface, namespace string, who *identity) *Client {
	return &Client{secrets: cs.CoreV1().Secrets(namespace), namespace: namespace, who: who, reviews: cs.AuthenticationV1().SelfSubjectReviews()}
}

// GetSecret reads one Secret. A pinned version must equal the Secret's
// current resourceVersion: Kubernetes keeps no older versions.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	if err := c.checkName(ref.Key); err != nil {
		return engine.Object{}, err
	}
	s, err := c.secrets.Get(ctx, ref.Key, metav1.GetOptions{})
	if err != nil {
		return engine.Object{}, c.classify(ctx, ref.Key, err)
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
	return c.classify(ctx, "", err)
}

func objectOf(s *corev1.Secret) engine.Object {
	fields := make(map[string][]byte, len(s.Data))
	for k, v := range s.Data {
		fields[k] = v
	}
	return engine.Object{Version: s.ResourceVersion, Fields: fields}
}

// checkName refuses, before any call, a remote key that cannot name a
// Secret (a '/', upper case, more than 253 characters…): the client would
// refuse some such names itself, and no Secret can have any of them. It
// is the input of the object that names the key, never the store's fault
// nor its outage: RemoteNameInvalid, terminal, which holds no store.
func (c *Client) checkName(key string) error {
	if len(validation.IsDNS1123Subdomain(key)) == 0 {
		return nil
	}
	return failure.Terminalf(failure.RemoteNameInvalid,
		"remote key %q cannot name a Secret in namespace %q: a Secret's name has at most 253 lower-case letters, digits, '-' and '.', and starts and ends with a letter or digit; change the remote key", key, c.namespace)
}

// classify turns an error of a get of Secret name (or of the probe, for an
// empty name) into an engine error class. A refusal names the identity the
// store acts as and the request refused, rebuilt from the request itself:
// the API server's own message is not repeated, since it can echo input.
func (c *Client) classify(ctx context.Context, name string, err error) error {
	what := fmt.Sprintf("Secret %s/%s", c.namespace, name)
	request := fmt.Sprintf(`get Secret %q in namespace %q (verb "get", resource "secrets", API group "")`, name, c.namespace)
	if name == "" {
		what = "Secrets in namespace " + c.namespace
		request = fmt.Sprintf(`get Secrets in namespace %q (verb "get", resource "secrets", API group "")`, c.namespace)
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s does not exist: %w", what, engine.ErrNotFound)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server does not let %s %s; a Role bound to it must allow that: %w",
			c.who.describe(ctx, c.reviews), request, engine.ErrPermissionDenied)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the store's credentials were rejected by the API server (%s): %w", c.who.describe(ctx, nil), engine.ErrPermissionDenied)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("reading %s: %w", what, engine.ErrThrottled)
	case name != "" && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)):
		// The API server refused the request for what it asked (the
		// name): the caller's input, not an outage of the store.
		return failure.Terminalf(failure.RemoteNameInvalid, "the API server refused to read %s as an invalid request (%s); change the remote key", what, apiReason(err))
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
