package storeaccess

import (
	"context"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/internal/provider"
)

var _ provider.Self = (*deps)(nil)

// selfUser is the user Watchword acts as, once known: its credentials do
// not change while it runs.
type selfUser struct {
	mu   sync.Mutex
	user provider.User
}

// SelfUser asks the API server who Watchword is (a SelfSubjectReview,
// which every authenticated user may create), once per Clients. The API
// server's answer is the one to trust: it covers a pod's service account,
// a kubeconfig user and impersonation alike, where the pod's files or a
// flag could be out of step with the credentials in use. An error is not
// cached, so a later build asks again.
func (d *deps) SelfUser(ctx context.Context) (provider.User, error) {
	if d.self != nil {
		d.self.mu.Lock()
		defer d.self.mu.Unlock()
		if d.self.user.Name != "" {
			return d.self.user, nil
		}
	}
	r, err := d.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return provider.User{}, fmt.Errorf("asking the API server who Watchword is (SelfSubjectReview): %w", err)
	}
	u := provider.User{Name: r.Status.UserInfo.Username, UID: r.Status.UserInfo.UID}
	if d.self != nil {
		d.self.user = u
	}
	return u, nil
}
