package onepasswordfake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// do sends a request with token and returns the status and Connect's
// error message, if any.
func do(t *testing.T, method, u, token, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if resp.StatusCode >= 400 {
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Status != resp.StatusCode {
			t.Fatalf("%s %s: answer %d is not Connect's error JSON", method, u, resp.StatusCode)
		}
	}
	return resp.StatusCode, e.Message
}

func TestTheFakeRefusesWhatConnectRefuses(t *testing.T) {
	s := Start("tok")
	defer s.Close()
	v := s.AddVault("prod")
	other := s.AddVault("other")
	items := s.URL + "/v1/vaults/" + v + "/items"
	good := func(vault string) []byte {
		return []byte(`{"id":"","title":"db","vault":{"id":"` + vault + `"},"category":"API_CREDENTIAL","fields":[{"id":"","type":"CONCEALED","label":"password","value":"x"}],"createdAt":"0001-01-01T00:00:00Z","updatedAt":"0001-01-01T00:00:00Z"}`)
	}
	for _, tc := range []struct {
		name, method, url, token, contentType string
		body                                  []byte
		want                                  int
	}{
		{"no token", "GET", s.URL + "/v1/vaults", "", "", nil, 401},
		{"wrong token", "GET", s.URL + "/v1/vaults", "nope", "", nil, 401},
		{"another filter", "GET", items + "?filter=" + url.QueryEscape(`tag eq "x"`), "tok", "", nil, 400},
		{"unknown vault", "GET", s.URL + "/v1/vaults/" + NewID() + "/items", "tok", "", nil, 404},
		{"unknown item", "GET", items + "/" + NewID(), "tok", "", nil, 404},
		{"not JSON", "POST", items, "tok", "text/plain", good(v), 400},
		{"another vault in the body", "POST", items, "tok", "application/json", good(other), 400},
		{"unknown member", "POST", items, "tok", "application/json", []byte(`{"title":"db","vault":{"id":"` + v + `"},"category":"LOGIN","color":"red"}`), 400},
		{"unknown category", "POST", items, "tok", "application/json", []byte(`{"title":"db","vault":{"id":"` + v + `"},"category":"CUSTOM"}`), 400},
		{"field without a type", "POST", items, "tok", "application/json", []byte(`{"title":"db","vault":{"id":"` + v + `"},"category":"LOGIN","fields":[{"label":"a","value":"b"}]}`), 400},
		{"a good item", "POST", items, "tok", "application/json", good(v), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := do(t, tc.method, tc.url, tc.token, tc.contentType, tc.body); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
	s.Deny(other)
	if got, _ := do(t, "GET", s.URL+"/v1/vaults/"+other+"/items", "tok", "", nil); got != 403 {
		t.Fatalf("a denied vault: status %d, want 403", got)
	}
	s.Throttle(1, 3)
	req, _ := http.NewRequestWithContext(context.Background(), "GET", s.URL+"/v1/vaults", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("throttled: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
