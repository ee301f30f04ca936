package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// selfDeps are Deps that tell who Watchword is; only SelfUser is used.
type selfDeps struct {
	provider.Deps
	user string
	err  error
}

func (d selfDeps) SelfUser(context.Context) (string, error) { return d.user, d.err }

func TestRefuseOwnIdentity(t *testing.T) {
	ctx := context.Background()
	own := selfDeps{user: "system:serviceaccount:watchword-system:watchword"}
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
	if err := refuseOwnIdentity(ctx, selfDeps{user: "kubernetes-admin"}, "default", "default"); err != nil {
		t.Errorf("as a user: %v", err)
	}
	// Not knowing who Watchword is must not let the store through silently.
	if err := refuseOwnIdentity(ctx, selfDeps{err: errors.New("connection refused")}, "a", "b"); err == nil {
		t.Error("an unanswered SelfSubjectReview let the store through")
	}
}
