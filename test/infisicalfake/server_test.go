package infisicalfake

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"

	sdk "github.com/infisical/go-sdk"
)

// client is Infisical's SDK pointed at the fake.
func client(s *Server) sdk.InfisicalClientInterface {
	return sdk.NewInfisicalClient(context.Background(), sdk.Config{
		SiteUrl: s.URL(), CaCertificate: string(s.CAPEM()), AutoTokenRefresh: sdk.BoolPtr(false), SilentMode: true,
	})
}

func TestTheSDKReadsAndListsThroughTheFake(t *testing.T) {
	s := Start()
	defer s.Close()
	s.AddIdentity("id-1", "secret-1")
	projectID := s.AddProject("shop", "dev")
	s.Put("shop", "dev", "/", "ROOT", "r")
	s.Put("shop", "dev", "/api", "KEY", "v1")
	s.Put("shop", "dev", "/api", "KEY", "v2")
	s.Put("shop", "dev", "/api/db", "KEY", "deep")
	c := client(s)
	if _, err := c.Auth().UniversalAuthLogin("id-1", "wrong"); statusOf(err) != 401 {
		t.Fatalf("a wrong client secret: %v, want HTTP 401", err)
	}
	if _, err := c.Secrets().Retrieve(sdk.RetrieveSecretOptions{SecretKey: "KEY", ProjectSlug: "shop", Environment: "dev", SecretPath: "/api"}); statusOf(err) != 401 {
		t.Fatalf("a read without a login: %v, want HTTP 401", err)
	}
	cred, err := c.Auth().UniversalAuthLogin("id-1", "secret-1")
	if err != nil || cred.ExpiresIn != 3600 || cred.TokenType != "Bearer" {
		t.Fatalf("login: %+v, %v", cred.ExpiresIn, err)
	}
	sec, err := c.Secrets().Retrieve(sdk.RetrieveSecretOptions{SecretKey: "KEY", ProjectSlug: "shop", Environment: "dev", SecretPath: "/api"})
	if err != nil || sec.SecretValue != "v2" || sec.Version != 2 || sec.Workspace != projectID || sec.SecretKey != "KEY" {
		t.Fatalf("current: %+v, %v", sec, err)
	}
	sec, err = c.Secrets().Retrieve(sdk.RetrieveSecretOptions{SecretKey: "KEY", ProjectID: projectID, Environment: "dev", SecretPath: "/api", Version: 1})
	if err != nil || sec.SecretValue != "v1" || sec.Version != 1 {
		t.Fatalf("version 1 by project ID: %+v, %v", sec, err)
	}
	if _, err = c.Secrets().Retrieve(sdk.RetrieveSecretOptions{SecretKey: "KEY", ProjectSlug: "shop", Environment: "dev", SecretPath: "/api", Version: 3}); statusOf(err) != 404 {
		t.Fatalf("version 3: %v, want 404", err)
	}
	for _, o := range []sdk.RetrieveSecretOptions{
		{SecretKey: "NONE", ProjectSlug: "shop", Environment: "dev"},
		{SecretKey: "KEY", ProjectSlug: "shop", Environment: "dev", SecretPath: "/nofolder"},
		{SecretKey: "KEY", ProjectSlug: "shop", Environment: "prod"},
		{SecretKey: "KEY", ProjectSlug: "other", Environment: "dev"},
	} {
		if _, err = c.Secrets().Retrieve(o); statusOf(err) != 404 {
			t.Errorf("%+v: %v, want 404", o, err)
		}
	}
	res, err := c.Secrets().ListSecrets(sdk.ListSecretsOptions{ProjectSlug: "shop", Environment: "dev", SecretPath: "/api"})
	if err != nil || len(res.Secrets) != 1 || res.Secrets[0].SecretPath != "/api" || res.ETag == "" {
		t.Fatalf("list /api: %d secrets, %v", len(res.Secrets), err)
	}
	res, err = c.Secrets().ListSecrets(sdk.ListSecretsOptions{ProjectSlug: "shop", Environment: "dev", Recursive: true, SkipUniqueValidation: true})
	if err != nil || len(res.Secrets) != 3 {
		t.Fatalf("list / recursively: %d secrets, %v", len(res.Secrets), err)
	}
	s.Deny("id-1", "shop")
	if _, err = c.Secrets().ListSecrets(sdk.ListSecretsOptions{ProjectSlug: "shop", Environment: "dev"}); statusOf(err) != 403 {
		t.Fatalf("a denied project: %v, want 403", err)
	}
	s.RevokeTokens()
	if _, err = c.Secrets().ListSecrets(sdk.ListSecretsOptions{ProjectSlug: "shop", Environment: "dev"}); statusOf(err) != 401 {
		t.Fatalf("a revoked token: %v, want 401", err)
	}
}

func statusOf(err error) int {
	var e *sdk.APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// do sends a request and returns its answer and body, checking that an
// error is Infisical's JSON.
func do(t *testing.T, s *Server, method, path, token string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12}}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			StatusCode int    `json:"statusCode"`
			Message    string `json:"message"`
			Error      string `json:"error"`
			ReqID      string `json:"reqId"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || e.StatusCode != resp.StatusCode || e.Error == "" || e.ReqID == "" {
			t.Fatalf("%s %s: answer %d is not Infisical's error JSON", method, path, resp.StatusCode)
		}
	}
	return resp, raw
}

func TestTheFakeRefusesWhatInfisicalRefuses(t *testing.T) {
	s := Start()
	defer s.Close()
	s.AddIdentity("id-1", "secret-1")
	s.AddProject("shop", "dev")
	s.Put("shop", "dev", "/", "KEY", "v")
	resp, body := do(t, s, "POST", "/api/v1/auth/universal-auth/login", "", []byte(`{"clientId":"id-1","clientSecret":"secret-1"}`))
	var login struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(body, &login); resp.StatusCode != 200 || err != nil || login.AccessToken == "" {
		t.Fatalf("login: %d, %v", resp.StatusCode, err)
	}
	tok := login.AccessToken
	q := func(v url.Values) string { return "/api/v3/secrets/raw/KEY?" + v.Encode() }
	good := url.Values{"workspaceSlug": {"shop"}, "environment": {"dev"}, "secretPath": {"/"}, "type": {"shared"}}
	with := func(k, v string) url.Values {
		out := url.Values{}
		for a, b := range good {
			out[a] = b
		}
		if v == "" {
			delete(out, k)
		} else {
			out.Set(k, v)
		}
		return out
	}
	for _, tc := range []struct {
		name, method, path, token string
		body                      []byte
		want                      int
	}{
		{"a good read", "GET", q(good), tok, nil, 200},
		{"no token", "GET", q(good), "", nil, 401},
		{"another token", "GET", q(good), "st.nope", nil, 401},
		{"an unknown parameter", "GET", q(with("viewSecretValues", "true")), tok, nil, 400},
		{"a boolean that is not one", "GET", q(with("expandSecretReferences", "yes")), tok, nil, 400},
		{"a personal secret", "GET", q(with("type", "personal")), tok, nil, 400},
		{"a relative path", "GET", q(with("secretPath", "app")), tok, nil, 400},
		{"a path that climbs", "GET", q(with("secretPath", "/a/../b")), tok, nil, 400},
		{"no environment", "GET", q(with("environment", "")), tok, nil, 400},
		{"no project", "GET", q(with("workspaceSlug", "")), tok, nil, 400},
		{"a version of zero", "GET", q(with("version", "0")), tok, nil, 400},
		{"a write", "POST", "/api/v3/secrets/raw/KEY", tok, []byte(`{}`), 404},
		{"a login with an unknown member", "POST", "/api/v1/auth/universal-auth/login", "", []byte(`{"clientId":"id-1","clientSecret":"secret-1","x":1}`), 400},
		{"a login without a secret", "POST", "/api/v1/auth/universal-auth/login", "", []byte(`{"clientId":"id-1"}`), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := do(t, s, tc.method, tc.path, tc.token, tc.body)
			if got.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", got.StatusCode, tc.want)
			}
		})
	}
	s.Throttle(1, 3)
	resp, _ = do(t, s, "GET", q(good), tok, nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("throttled: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
