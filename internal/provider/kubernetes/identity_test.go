package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// selfDeps are Deps that tell who Watchword is; only SelfUser is used.
type selfDeps struct {
	provider.Deps
	user provider.User
	err  error
}

func (d selfDeps) SelfUser(context.Context) (provider.User, error) { return d.user, d.err }

func TestRefuseOwnIdentity(t *testing.T) {
	ctx := context.Background()
	own := selfDeps{user: provider.User{Name: "system:serviceaccount:watchword-system:watchword", UID: "u-1"}}
	err := refuseOwnIdentity(ctx, own, "watchword-system", "watchword")
	if !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), `"watchword-system/watchword" is the service account Watchword itself runs as`) {
		t.Fatalf("Watchword's own account: %v", err)
	}
	for _, tc := range []struct{ ns, name string }{{"watchword-system", "reader"}, {"team-a", "watchword"}} {
		if err := refuseOwnIdentity(ctx, own, tc.ns, tc.name); err != nil {
			t.Errorf("%s/%s is not Watchword, yet: %v", tc.ns, tc.name, err)
		}
	}
	// Watchword running as a user, not a service account: nothing matches.
	if err := refuseOwnIdentity(ctx, selfDeps{user: provider.User{Name: "kubernetes-admin"}}, "default", "default"); err != nil {
		t.Errorf("as a user: %v", err)
	}
	// Not knowing who Watchword is must not let the store through silently.
	if err := refuseOwnIdentity(ctx, selfDeps{err: errors.New("connection refused")}, "a", "b"); err == nil {
		t.Error("an unanswered SelfSubjectReview let the store through")
	}
}

// reviewsAnswering is the SelfSubjectReviews of a server that says the
// caller is user (or fails with err).
func reviewsAnswering(user provider.User, err error) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err != nil {
			return true, nil, err
		}
		r := &authenticationv1.SelfSubjectReview{}
		r.Status.UserInfo.Username, r.Status.UserInfo.UID = user.Name, user.UID
		return true, r, nil
	})
	return cs
}

// TestRefuseOwnCredentialsByIdentity: the credentials of a store are
// Watchword's own when its server reports Watchword's user name and UID,
// whatever the store's address; a name alone is Watchword's only on this
// cluster's own address.
func TestRefuseOwnCredentialsByIdentity(t *testing.T) {
	ctx := context.Background()
	const sa = "system:serviceaccount:watchword-system:watchword"
	watchword := selfDeps{user: provider.User{Name: sa, UID: "6d0c"}}
	asUser := selfDeps{user: provider.User{Name: "watchword-admin"}}
	for _, tc := range []struct {
		name       string
		self       selfDeps
		answer     provider.User
		answerErr  error
		sameServer bool
		refused    bool
	}{
		{"own token, this cluster's own address", watchword, provider.User{Name: sa, UID: "6d0c"}, nil, true, true},
		{"own token, server.url of this cluster under any name", watchword, provider.User{Name: sa, UID: "6d0c"}, nil, false, true},
		{"an account of the same name in another cluster", watchword, provider.User{Name: sa, UID: "91fe"}, nil, false, false},
		{"another account of this cluster", watchword, provider.User{Name: "system:serviceaccount:team-a:reader", UID: "77aa"}, nil, true, false},
		{"Watchword as a user, the same user on this cluster's address", asUser, provider.User{Name: "watchword-admin"}, nil, true, true},
		{"Watchword as a user, a user of that name elsewhere", asUser, provider.User{Name: "watchword-admin"}, nil, false, false},
		{"a review that fails", watchword, provider.User{}, errors.New("refused"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := reviewsAnswering(tc.answer, tc.answerErr)
			err := refuseOwnCredentials(ctx, tc.self, cs.AuthenticationV1().SelfSubjectReviews(), tc.sameServer)
			if tc.refused != (err != nil) {
				t.Fatalf("refused = %v, want %v", err, tc.refused)
			}
			if err != nil && (!errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "the user Watchword itself runs as")) {
				t.Errorf("refusal %q", err)
			}
		})
	}
}
