package gcpfake

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"
)

// TestIAMForAVerifier: Google's own clients obtain a token with a key file
// (the JWT-bearer grant at its token_uri) and look service accounts up by
// email or unique ID with the IAM API, which needs
// iam.serviceAccounts.get; a service account's key certificate is public.
func TestIAMForAVerifier(t *testing.T) {
	s := New(t, "p1")
	_, verifierKey := s.NewServiceAccount("verifier", "iam.serviceAccounts.get")
	_, plainKey := s.NewServiceAccount("plain")
	email, _ := s.NewServiceAccount("app")
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.HTTPClient())
	service := func(key []byte) *iam.Service {
		var kf map[string]any
		if err := json.Unmarshal(key, &kf); err != nil {
			t.Fatal(err)
		}
		kf["token_uri"] = s.TokenURL()
		key, _ = json.Marshal(kf)
		creds, err := google.CredentialsFromJSONWithType(ctx, key, google.ServiceAccount, iam.CloudPlatformScope)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := iam.NewService(ctx, option.WithHTTPClient(oauth2.NewClient(ctx, creds.TokenSource)), option.WithEndpoint(s.URL()+"/"))
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	acct, err := service(verifierKey).Projects.ServiceAccounts.Get("projects/-/serviceAccounts/" + email).Do()
	if err != nil || acct.Email != email || acct.ProjectId != "p1" || len(acct.UniqueId) != 21 {
		t.Fatalf("get by email: %+v %v", acct, err)
	}
	byID, err := service(verifierKey).Projects.ServiceAccounts.Get("projects/p1/serviceAccounts/" + acct.UniqueId).Do()
	if err != nil || byID.Email != email {
		t.Fatalf("get by unique ID: %+v %v", byID, err)
	}
	if _, gerr := service(plainKey).Projects.ServiceAccounts.Get("projects/-/serviceAccounts/" + email).Do(); gerr == nil || !strings.Contains(gerr.Error(), "iam.serviceAccounts.get") {
		t.Fatalf("without the permission: %v", gerr)
	}
	if s.Calls("token") != 3 {
		t.Fatalf("%d token grants, want one per client (3)", s.Calls("token"))
	}
	resp, err := s.HTTPClient().Get(s.URL() + "/service_accounts/v1/metadata/x509/" + email + "?alt=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var certs map[string]string
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &certs) != nil || len(certs) != 1 {
		t.Fatalf("key certificates: HTTP %d %s", resp.StatusCode, body)
	}
	for _, c := range certs {
		if b, _ := pem.Decode([]byte(c)); b == nil || b.Type != "CERTIFICATE" {
			t.Fatalf("not a PEM certificate: %q", c)
		}
	}
}
