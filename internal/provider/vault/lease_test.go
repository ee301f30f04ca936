package vault

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TestLeasesIssueRenewRevoke drives the lease capability against the real
// Vault with an engine that needs no outside server: a PKI role with
// generate_lease issues a certificate with a lease (not renewable), taking
// its parameters in a POST body. (The database engine over PostgreSQL,
// renewable leases included, is tested end to end in test/integration.)
func TestLeasesIssueRenewRevoke(t *testing.T) {
	needVault(t)
	ctx := context.Background()
	must(t, srv.Do(http.MethodPost, "sys/mounts/pki-lease", map[string]any{"type": "pki", "config": map[string]any{"max_lease_ttl": "2h"}}, nil))
	must(t, srv.Do(http.MethodPost, "pki-lease/root/generate/internal", map[string]any{"common_name": "test root", "ttl": "2h"}, nil))
	must(t, srv.Do(http.MethodPost, "pki-lease/roles/web", map[string]any{"allow_any_name": true, "generate_lease": true, "ttl": "1h"}, nil))
	c := rootClient(t, "secret", "v2")

	obj, l, err := c.Issue(ctx, engine.LeaseRequest{Path: "pki-lease/issue/web", Method: http.MethodPost, Parameters: map[string]string{"common_name": "web.example"}})
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	if !strings.HasPrefix(l.ID, "pki-lease/issue/web/") || l.Duration <= 0 || l.Duration > time.Hour || obj.Version != l.ID {
		t.Fatalf("lease %+v, version %q: want a lease of pki-lease/issue/web of at most 1h, as the version", l, obj.Version)
	}
	if !strings.Contains(string(obj.Fields["certificate"]), "BEGIN CERTIFICATE") || len(obj.Fields["private_key"]) == 0 {
		t.Fatalf("fields %v: want the certificate and its key", keys(obj.Fields))
	}
	var found struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	must(t, srv.Do("LIST", "sys/leases/lookup/pki-lease/issue/web/", nil, &found))
	if len(found.Data.Keys) != 1 {
		t.Fatalf("Vault holds %d leases, want 1", len(found.Data.Keys))
	}

	// Revoking ends it; revoking it again, or renewing it, tells it is gone.
	must(t, c.Revoke(ctx, l.ID))
	found.Data.Keys = nil
	if lerr := srv.Do("LIST", "sys/leases/lookup/pki-lease/issue/web/", nil, &found); lerr == nil && len(found.Data.Keys) != 0 {
		t.Fatalf("after revocation Vault still holds %v", found.Data.Keys)
	}
	must(t, c.Revoke(ctx, l.ID))
	if _, rerr := c.Renew(ctx, l.ID, time.Hour); !errors.Is(rerr, engine.ErrNotFound) {
		t.Fatalf("renewing a revoked lease: %v, want ErrNotFound", rerr)
	}
	// A GET passes its parameters in the query; a path without a lease
	// reads like a secret, without one.
	must(t, srv.Do(http.MethodPost, "sys/mounts/kv1-lease", map[string]any{"type": "kv", "options": map[string]string{"version": "1"}}, nil))
	must(t, srv.Do(http.MethodPost, "kv1-lease/static", map[string]any{"username": "u", "ttl": "5m"}, nil))
	obj, l, err = c.Issue(ctx, engine.LeaseRequest{Path: "kv1-lease/static", Parameters: map[string]string{"unused": "1"}})
	if err != nil || l.ID != "" || string(obj.Fields["username"]) != "u" || string(obj.Fields["ttl"]) != "5m" {
		t.Fatalf("reading a path without a lease: %+v %+v %v", obj.Fields, l, err)
	}
	// Without generate_lease, a certificate is held by its serial number
	// until its notAfter, and revoked by it.
	must(t, srv.Do(http.MethodPost, "pki-lease/roles/plain", map[string]any{"allow_any_name": true, "ttl": "1h"}, nil))
	obj, l, err = c.Issue(ctx, engine.LeaseRequest{Path: "pki-lease/issue/plain", Method: http.MethodPost, Parameters: map[string]string{"common_name": "api.example"}})
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	serial := string(obj.Fields["serial_number"])
	if l.ID != "pki:pki-lease:"+serial || l.Renewable || l.Duration < 59*time.Minute || l.Duration > time.Hour || obj.Version != serial {
		t.Fatalf("lease %+v, version %q: want pki:pki-lease:%s ending in an hour", l, obj.Version, serial)
	}
	if chain := string(obj.Fields["ca_chain"]); !strings.HasPrefix(chain, "-----BEGIN CERTIFICATE-----") || strings.Contains(chain, "[") {
		t.Fatalf("ca_chain is not PEM text: %.40q", chain)
	}
	must(t, c.Revoke(ctx, l.ID))
	var info struct {
		Data struct {
			RevocationTime int64 `json:"revocation_time"`
		} `json:"data"`
	}
	must(t, srv.Do(http.MethodGet, "pki-lease/cert/"+serial, nil, &info))
	if info.Data.RevocationTime == 0 {
		t.Fatal("the certificate was not revoked")
	}
	if _, _, err := c.Issue(ctx, engine.LeaseRequest{Path: "pki-lease/issue/nobody", Method: http.MethodPost}); err == nil {
		t.Fatal("issuing from a role that does not exist must fail")
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
