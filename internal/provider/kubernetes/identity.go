package kubernetes

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedauthv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// identity is who a store acts as, for messages: never a credential.
type identity struct {
	// known describes the identity when the configuration tells it (a
	// service account, the subject of a client certificate).
	known string
	// source describes the credential when only the API server can tell
	// whose it is (a bearer token).
	source string

	mu sync.Mutex
	// reviewed is set once the API server was asked (once per client: a
	// client lives as long as its credentials).
	reviewed bool
	// user is the user name the SelfSubjectReview returned.
	user string
}

// certIdentity is the user a client certificate authenticates as: the API
// server takes the subject's common name as the user name.
func certIdentity(certPEM []byte) *identity {
	source := "the client certificate of kubernetes.auth.cert"
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return &identity{source: source}
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName == "" {
		return &identity{source: source}
	}
	return &identity{known: fmt.Sprintf("user %q (%s)", cert.Subject.CommonName, source)}
}

// describe names the identity. When the configuration does not tell it
// and reviews is not nil, it asks the API server once who the credential
// is (a SelfSubjectReview, which every authenticated user may create).
func (i *identity) describe(ctx context.Context, reviews typedauthv1.SelfSubjectReviewInterface) string {
	if i.known != "" {
		return i.known
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.reviewed && reviews != nil {
		i.reviewed = true
		if r, err := reviews.Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
			i.user = r.Status.UserInfo.Username
		}
	}
	if i.user != "" {
		return fmt.Sprintf("user %q (%s)", i.user, i.source)
	}
	return i.source
}

// refuseOwnIdentity refuses a store that would act on this cluster as the
// service account Watchword itself runs as: it would lend Watchword's own
// permissions (every Secret it may read and write) to whoever may use the
// store. serviceAccount auth only reaches this cluster (Validate), so the
// account is compared with the user the API server says Watchword is.
// Deps that cannot tell (a one-off run outside the controller) skip it.
func refuseOwnIdentity(ctx context.Context, deps provider.Deps, namespace, name string) error {
	self, ok := deps.(provider.Self)
	if !ok {
		return nil
	}
	user, err := self.SelfUser(ctx)
	if err != nil {
		return err
	}
	// The API server's user name of a service account (a documented
	// format; k8s.io/apiserver's helper is not worth its module here).
	if user != "system:serviceaccount:"+namespace+":"+name {
		return nil
	}
	return fmt.Errorf("%w: kubernetes.auth.serviceAccount %q is the service account Watchword itself runs as; a store may not act on this cluster with Watchword's own identity, which would lend its permissions to every user of the store: create a service account for the store, grant it only the Secrets it needs, and name it here",
		engine.ErrInvalidConfig, namespace+"/"+name)
}

// refuseOwnCredentials refuses a store of this cluster whose credentials
// (a token Secret, a client certificate) turn out to be Watchword's own:
// the API server the store targets is asked who they are, with a
// SelfSubjectReview made with those credentials (one call per client
// build; the credentials go nowhere but to the store's own server). A
// review that fails tells nothing and lets the build go on: the store's
// calls report a bad credential themselves.
func refuseOwnCredentials(ctx context.Context, deps provider.Deps, reviews typedauthv1.SelfSubjectReviewInterface) error {
	self, ok := deps.(provider.Self)
	if !ok {
		return nil
	}
	r, err := reviews.Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return nil
	}
	user, err := self.SelfUser(ctx)
	if err != nil {
		return err
	}
	if r.Status.UserInfo.Username != user {
		return nil
	}
	return fmt.Errorf("%w: the credentials of kubernetes.auth authenticate as %q, the user Watchword itself runs as; a store may not act on this cluster with Watchword's own identity, which would lend its permissions to every user of the store: give the store a token or certificate of its own account, granted only the Secrets it needs",
		engine.ErrInvalidConfig, user)
}
