package barbicanserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
)

// tokenless is a key-manager client of a token-less server for its test
// project.
func tokenless(s *Server) *gophercloud.ServiceClient {
	return &gophercloud.ServiceClient{
		ProviderClient: &gophercloud.ProviderClient{},
		Endpoint:       s.URL + "/v1/",
		ResourceBase:   s.URL + "/v1/",
		MoreHeaders:    map[string]string{"X-Project-Id": s.ProjectID},
	}
}

// TestConcurrentWritesAndRestart sends 20 secret creations at once, which
// the single-threaded server must all accept (none may meet a locked
// SQLite database), then stops and restarts Barbican on the same port and
// reads them all back.
func TestConcurrentWritesAndRestart(t *testing.T) {
	s := Start(t, Options{})
	ctx := context.Background()
	c := tokenless(s)
	const n = 20
	refs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sec, err := secrets.Create(ctx, c, secrets.CreateOpts{
				Name: fmt.Sprintf("concurrent-%d", i), Payload: fmt.Sprintf("payload-%d", i),
				PayloadContentType: "text/plain", SecretType: secrets.OpaqueSecret,
			}).Extract()
			if err == nil {
				refs[i] = sec.SecretRef
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("creating secret %d: %v", i, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if log := s.Logs(); strings.Contains(log, "database is locked") || strings.Contains(log, " ERROR ") {
		t.Errorf("the server logged an error during the concurrent writes")
	}

	s.Stop()
	if _, err := secrets.Get(ctx, c, id(refs[0])).Extract(); err == nil {
		t.Fatal("expected a read to fail while Barbican is stopped")
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		got, err := secrets.GetPayload(ctx, c, id(ref), secrets.GetPayloadOpts{PayloadContentType: "text/plain"}).Extract()
		if err != nil {
			t.Fatalf("reading secret %d after the restart: %v", i, err)
		}
		if string(got) != fmt.Sprintf("payload-%d", i) {
			t.Errorf("secret %d holds another payload after the restart", i)
		}
	}
}

// TestKeystone logs in to Keystone with the application credential and
// reaches Barbican through the catalog; a wrong secret is refused.
func TestKeystone(t *testing.T) {
	s := Start(t, Options{Keystone: true})
	ctx := context.Background()
	k := s.Keystone
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: k.AuthURL, ApplicationCredentialID: k.AppCredID, ApplicationCredentialSecret: k.AppCredSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := openstack.NewKeyManagerV1(p, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := secrets.Create(ctx, c, secrets.CreateOpts{Name: "with-keystone", Payload: "x", PayloadContentType: "text/plain"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sec.SecretRef, s.URL+"/v1/secrets/") {
		t.Errorf("secret_ref %q is not under the server's URL", sec.SecretRef)
	}
	_, err = openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: k.AuthURL, ApplicationCredentialID: k.AppCredID, ApplicationCredentialSecret: "wrong",
	})
	if !gophercloud.ResponseCodeIs(err, 401) {
		t.Errorf("a wrong application credential secret: expected 401, got %v", err)
	}
}

func id(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }
