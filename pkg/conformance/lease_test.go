package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// memLeaser issues credentials with leases from memory, correctly unless
// one of its flaws is set.
type memLeaser struct {
	renewable bool
	// idHoldsPassword puts the password in the lease ID.
	idHoldsPassword bool
	// renewsAnything renews a lease it does not know (or issued as not
	// renewable) instead of refusing with ErrNotFound.
	renewsAnything bool
	// secondRevokeFails refuses to revoke a lease that is gone.
	secondRevokeFails bool

	mu   sync.Mutex
	n    int
	live map[string]bool
}

func (l *memLeaser) Issue(_ context.Context, _ engine.LeaseRequest) (engine.Object, engine.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	pass := fmt.Sprintf("pw-leased-%d", l.n)
	id := fmt.Sprintf("lease/%d", l.n)
	if l.idHoldsPassword {
		id += "/" + pass
	}
	if l.live == nil {
		l.live = map[string]bool{}
	}
	l.live[id] = true
	return engine.Object{Version: id, Fields: map[string][]byte{"username": []byte(fmt.Sprintf("user-%d", l.n)), "password": []byte(pass)}},
		engine.Lease{ID: id, Duration: time.Hour, Renewable: l.renewable}, nil
}

func (l *memLeaser) Renew(_ context.Context, id string, d time.Duration) (engine.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.renewsAnything && (!l.renewable || !l.live[id]) {
		return engine.Lease{}, fmt.Errorf("lease %q: %w", id, engine.ErrNotFound)
	}
	return engine.Lease{ID: id, Duration: d, Renewable: true}, nil
}

func (l *memLeaser) Revoke(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live[id] && l.secondRevokeFails {
		return fmt.Errorf("lease %q is not known", id)
	}
	delete(l.live, id)
	return nil
}

func leaseHarness(l *memLeaser) Harness {
	h := newMemStore(flaws{}).harness()
	h.Ops.Leaser = l
	h.Lease = &engine.LeaseRequest{Path: "database/creds/app"}
	return h
}

// TestConformingLeasersPass: a renewable and a non-renewable leaser pass
// the lease checks, which run; without a request they skip.
func TestConformingLeasersPass(t *testing.T) {
	for _, renewable := range []bool{true, false} {
		h := leaseHarness(&memLeaser{renewable: renewable})
		Run(t, h)
		rec := runRecorded(t, h)
		for _, name := range []string{"LeaseIssues", "LeaseRenews", "LeaseRevokesOnce"} {
			if rec.skipped[name] {
				t.Errorf("renewable %v: check %s skipped", renewable, name)
			}
		}
		h.Lease = nil
		if rec := runRecorded(t, h); !rec.skipped["LeaseIssues"] {
			t.Error("the lease checks ran without a lease request")
		}
	}
}

// TestFlawedLeasersFail: each flaw is failed with a message that names
// it, and no message shows a credential.
func TestFlawedLeasersFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *memLeaser
		want string
	}{
		{"a lease ID that holds the password", &memLeaser{renewable: true, idHoldsPassword: true},
			`LeaseIssues: store "memory": the lease of path "database/creds/app": the lease ID or the version repeats the value of field "password"`},
		{"renews what it issued as not renewable", &memLeaser{renewsAnything: true},
			`LeaseRenews: store "memory": renewing the lease of path "database/creds/app", which the store issued as not renewable: expected an error wrapping ErrNotFound, the store returned no error`},
		{"renews a revoked lease", &memLeaser{renewable: true, renewsAnything: true},
			`LeaseRevokesOnce: store "memory": renewing the lease of path "database/creds/app" after revoking it: expected an error wrapping ErrNotFound`},
		{"refuses a second revoke", &memLeaser{renewable: true, secondRevokeFails: true},
			`LeaseRevokesOnce: store "memory": revoking the lease of path "database/creds/app" (time 2): expected no error`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := runRecorded(t, leaseHarness(tc.l))
			if !containsPrefix(rec.failures, tc.want) {
				t.Errorf("no failure says %q; the failures:\n%s", tc.want, strings.Join(rec.failures, "\n"))
			}
			for _, f := range rec.failures {
				if strings.Contains(f, "pw-leased") {
					t.Errorf("a failure message shows a credential: %s", f)
				}
			}
		})
	}
}
