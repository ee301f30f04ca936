package conjurfake

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cyberark/conjur-api-go/conjurapi"
	"github.com/cyberark/conjur-api-go/conjurapi/authn"
	"github.com/cyberark/conjur-api-go/conjurapi/response"
)

func config(t *testing.T, s *Server, authnType, service string) conjurapi.Config {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, s.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	return conjurapi.Config{ApplianceURL: s.URL, Account: s.Account, SSLCertPath: ca, Environment: conjurapi.EnvironmentOSS,
		CredentialStorage: conjurapi.CredentialStorageNone, AuthnType: authnType, ServiceID: service}
}

func status(err error) int {
	var e *response.ConjurError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestSDKDrivesTheFake drives the fake with Conjur's own SDK: login,
// API-key and JWT authentication, reads of the current and a pinned
// version with an ID that needs escaping, batch reads, resources and the
// refusals.
func TestSDKDrivesTheFake(t *testing.T) {
	s := Start("myorg")
	defer s.Close()
	s.AddAPIKey("host/apps/app", "api-key-1", "pass-1")
	s.AddJWT("k8s", "header.claims.sig", "host/apps/app")
	s.Set("prod/db/pass word", []byte("v1"))
	s.Set("prod/db/pass word", []byte("v2"))
	s.Set("other", []byte("o1"))

	// Login exchanges the password for the API key.
	plain, err := conjurapi.NewClient(config(t, s, "authn", ""))
	if err != nil {
		t.Fatal(err)
	}
	key, err := plain.Login("host/apps/app", "pass-1")
	if err != nil || string(key) != "api-key-1" {
		t.Fatalf("login: %q, %v", key, err)
	}
	if _, err = plain.Login("host/apps/app", "wrong"); status(err) != 401 {
		t.Fatalf("login with a wrong password: %v", err)
	}

	c, err := conjurapi.NewClientFromKey(config(t, s, "authn", ""), authn.LoginPair{Login: "host/apps/app", APIKey: "api-key-1"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.RetrieveSecret("prod/db/pass word")
	if err != nil || string(v) != "v2" {
		t.Fatalf("current value: %q, %v", v, err)
	}
	v, err = c.RetrieveSecretWithVersion("prod/db/pass word", 1)
	if err != nil || string(v) != "v1" {
		t.Fatalf("version 1: %q, %v", v, err)
	}
	if _, err = c.RetrieveSecretWithVersion("prod/db/pass word", 3); status(err) != 404 {
		t.Fatalf("a version that does not exist: %v", err)
	}
	batch, err := c.RetrieveBatchSecrets([]string{"prod/db/pass word", "other"})
	if err != nil || string(batch["myorg:variable:prod/db/pass word"]) != "v2" || string(batch["myorg:variable:other"]) != "o1" {
		t.Fatalf("batch: %v", err)
	}
	if _, err = c.RetrieveBatchSecrets([]string{"other", "missing"}); status(err) != 404 {
		t.Fatalf("a batch with a missing variable fails whole: %v", err)
	}
	rs, err := c.Resources(&conjurapi.ResourceFilter{Kind: "variable", Limit: 1, Offset: 1})
	if err != nil || len(rs) != 1 || rs[0]["id"] != "myorg:variable:prod/db/pass word" {
		t.Fatalf("resources, second page of one: %v, %v", rs, err)
	}
	if ok, xerr := c.ResourceExists("myorg:variable:other"); xerr != nil || !ok {
		t.Fatalf("resource exists: %v, %v", ok, xerr)
	}

	// Refusals: a variable the role may see but not fetch, one hidden.
	s.Deny("host/apps/app", "other")
	if _, err = c.RetrieveSecret("other"); status(err) != 403 {
		t.Fatalf("denied: %v", err)
	}
	s.Hide("host/apps/app", "other")
	if _, err = c.RetrieveSecret("other"); status(err) != 404 {
		t.Fatalf("hidden: %v", err)
	}
	// The SDK keeps its token: an expired one is refused.
	s.ExpireTokens()
	if _, err = c.RetrieveSecret("prod/db/pass word"); status(err) != 401 {
		t.Fatalf("expired token: %v", err)
	}
	bad, err := conjurapi.NewClientFromKey(config(t, s, "authn", ""), authn.LoginPair{Login: "host/apps/app", APIKey: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = bad.RetrieveSecret("prod/db/pass word"); status(err) != 401 {
		t.Fatalf("a wrong API key: %v", err)
	}

	// authn-jwt, with and without the host in the path.
	for _, host := range []string{"", "host/apps/app"} {
		cfg := config(t, s, "jwt", "k8s")
		cfg.JWTContent, cfg.JWTHostID = "header.claims.sig", host
		j, jerr := conjurapi.NewClientFromJwt(cfg)
		if jerr != nil {
			t.Fatal(jerr)
		}
		if v, err = j.RetrieveSecret("prod/db/pass word"); err != nil || string(v) != "v2" {
			t.Fatalf("jwt (host %q): %v", host, err)
		}
	}
	cfg := config(t, s, "jwt", "k8s")
	cfg.JWTContent, cfg.JWTHostID = "header.claims.sig", "host/apps/other"
	j, err := conjurapi.NewClientFromJwt(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = j.RetrieveSecret("prod/db/pass word"); status(err) != 401 {
		t.Fatalf("jwt for another host: %v", err)
	}

	s.Throttle(1)
	if _, err = c.Resources(&conjurapi.ResourceFilter{Kind: "variable"}); status(err) != 429 {
		t.Fatalf("throttled: %v", err)
	}
}
