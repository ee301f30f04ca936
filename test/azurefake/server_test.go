package azurefake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// These tests speak to the fake without the SDK, to check that it refuses
// what Key Vault and Entra ID refuse.

const tenant = "11111111-2222-3333-4444-555555555555"

func signIn(t *testing.T, c *http.Client, host, scope string) string {
	t.Helper()
	resp, err := c.PostForm("https://"+host+"/"+tenant+"/oauth2/v2.0/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"app"}, "client_secret": {"pw"}, "scope": {scope}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out.AccessToken
}

func do(t *testing.T, c *http.Client, method, u, tok, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestFakeRefusesWhatKeyVaultRefuses(t *testing.T) {
	s := New(t)
	s.AddVault("v.vault.azure.net", tenant, Public)
	s.AddApp(tenant, "app", "pw", "", "get", "set")
	c := s.Client()
	base := "https://v.vault.azure.net/secrets/db"
	ok := "?api-version=2026-04-01"

	resp, _ := do(t, c, http.MethodGet, base+ok, "", "")
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource="https://vault.azure.net"`) ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), "login.microsoftonline.com/"+tenant) {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ = do(t, c, http.MethodGet, base+ok, "made-up", ""); resp.StatusCode != 401 {
		t.Fatalf("unknown token: %d", resp.StatusCode)
	}
	if tok := signIn(t, c, "login.microsoftonline.com", "https://vault.usgovcloudapi.net/.default"); tok != "" {
		t.Fatal("the public cloud issued a token for the Government vault resource")
	}
	if tok := signIn(t, c, "login.microsoftonline.com", "https://vault.azure.net/.default openid profile other"); tok != "" {
		t.Fatal("two resource scopes were accepted")
	}
	tok := signIn(t, c, "login.microsoftonline.com", "https://vault.azure.net/.default openid offline_access profile")
	if tok == "" {
		t.Fatal("no token for the client credentials")
	}
	if resp, body := do(t, c, http.MethodGet, base+"?api-version=1.0", tok, ""); resp.StatusCode != 400 || !strings.Contains(body, "BadParameter") {
		t.Fatalf("unknown api-version: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, c, http.MethodPut, base+ok, tok, `{"value":"v","owner":"x"}`); resp.StatusCode != 400 {
		t.Fatalf("unknown field: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, c, http.MethodPut, "https://v.vault.azure.net/secrets/a_b"+ok, tok, `{"value":"v"}`); resp.StatusCode != 400 {
		t.Fatalf("bad name: %d", resp.StatusCode)
	}
	tags := `{`
	for i := range 16 {
		if i > 0 {
			tags += ","
		}
		tags += `"t` + string(rune('a'+i)) + `":"v"`
	}
	if resp, body := do(t, c, http.MethodPut, base+ok, tok, `{"value":"v","tags":`+tags+`}}`); resp.StatusCode != 400 || !strings.Contains(body, "15 tags") {
		t.Fatalf("16 tags: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, c, http.MethodGet, base+"/versions"+ok, tok, ""); resp.StatusCode != 403 || !strings.Contains(body, "readMetadata") {
		t.Fatalf("listing without the permission: %d %s", resp.StatusCode, body)
	}
	s.ExpireTokens()
	if resp, body := do(t, c, http.MethodGet, base+ok, tok, ""); resp.StatusCode != 401 || !strings.Contains(body, "expired") {
		t.Fatalf("expired token: %d %s", resp.StatusCode, body)
	}
}
