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

// selfUser is the user name Watchword acts as, once known: its
// credentials do not change while it runs.
type selfUser struct {
	mu   sync.Mutex
	name string
}

// SelfUser asks the API server who Watchword is (a SelfSubjectReview,
// which every authenticated user may create), once per Clients. The API
// server's answer is the one to trust: it covers a pod's service account,
// a kubeconfig user and impersonation alike, where the pod's files or a
// flag could be out of step with the credentials in use. An error is not
// cached, so a later build asks again.
func (d *deps) SelfUser(ctx context.Context) (string, error) {
	if d.self != nil {
		d.self.mu.Lock()
		defer d.self.mu.Unlock()
		if d.self.name != "" {
			return d.self.name, nil
		}
	}
	r, err := d.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who Watchword is (SelfSubjectReview): %w", err)
	}
	name := r.Status.UserInfo.Username
	if d.self != nil {
		d.self.name = name
	}
	return name, nil
}
