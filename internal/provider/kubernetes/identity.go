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
	if user.Name != "system:serviceaccount:"+namespace+":"+name {
		return nil
	}
	return fmt.Errorf("%w: kubernetes.auth.serviceAccount %q is the service account Watchword itself runs as; a store may not act on this cluster with Watchword's own identity, which would lend its permissions to every user of the store: create a service account for the store, grant it only the Secrets it needs, and name it here",
		engine.ErrInvalidConfig, namespace+"/"+name)
}

// refuseOwnCredentials refuses a store whose credentials (a token Secret,
// a client certificate) turn out to be Watchword's own, whatever address
// its server.url gives: the store's server is asked who they are, with a
// SelfSubjectReview made with those credentials (one call per client
// build; the credentials go nowhere but to the store's own server), and
// its answer is compared with who this cluster says Watchword is. The
// comparison is of identities, not addresses, so that this cluster under
// another name (a host name, an IP address, an IPv4-mapped IPv6 address,
// another port of the same API server) is recognised too:
//
//   - the same user name and the same UID are the same identity wherever
//     the server is (the UID of a service account is its own: another
//     cluster's account of the same name has another one);
//   - the same user name without a UID (Watchword running as a user, not
//     a service account) is the same identity only on this cluster's own
//     address (sameServer): another cluster may have a user of that name.
//
// A review that fails tells nothing and lets the build go on: the store's
// calls report a bad credential themselves. A server that answered reads
// but refused the review would have to be one the tenant controls, which
// is then handed the credentials by every call anyway.
func refuseOwnCredentials(ctx context.Context, deps provider.Deps, reviews typedauthv1.SelfSubjectReviewInterface, sameServer bool) error {
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
	if !sameIdentity(provider.User{Name: r.Status.UserInfo.Username, UID: r.Status.UserInfo.UID}, user, sameServer) {
		return nil
	}
	return fmt.Errorf("%w: the credentials of kubernetes.auth authenticate as %q, the user Watchword itself runs as (the store's server says so, whatever its address); a store may not act on this cluster with Watchword's own identity, which would lend its permissions to every user of the store: give the store a token or certificate of its own account, granted only the Secrets it needs",
		engine.ErrInvalidConfig, user.Name)
}

// sameIdentity tells whether the user a store's server reports is
// Watchword's own (see refuseOwnCredentials).
func sameIdentity(store, self provider.User, sameServer bool) bool {
	if store.Name != self.Name {
		return false
	}
	if self.UID != "" && store.UID == self.UID {
		return true
	}
	return sameServer
}
