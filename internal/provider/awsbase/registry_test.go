package awsbase_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/awsps"
	"github.com/watchword-dev/watchword/internal/provider/awssm"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// TestRegistryTokenThroughWebIdentityAndRole: an awssm store's web
// identity and chained role ask ECR for a token (the role is the caller
// ECR sees), returned as a .dockerconfigjson of the proxy endpoint and
// External Secrets Operator's keys, with its expiry as version and in a
// lease that cannot be renewed; a refusal names the role and the action,
// never the token.
func TestRegistryTokenThroughWebIdentityAndRole(t *testing.T) {
	fake := fakeWithWebIdentity()
	defer fake.Close()
	fake.SetECRTokenLifetime(3 * time.Hour)
	fake.AddRole(awsfake.Role{ARN: chainRole, Principals: []string{webRole}})
	store := webStore(fake)
	store.Spec.AWSSM.Role = chainRole
	deps := &awsfake.Deps{Token: (&tokens{token: "valid-token"}).get}
	ops, err := awssm.Factory{}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	if !ops.Capabilities().Has(engine.CanLease) {
		t.Fatal("an awssm store does not declare the lease capability that registry tokens take")
	}
	obj, lease, err := ops.Leaser.Issue(context.Background(), engine.LeaseRequest{Registry: v1alpha1.RegistryECR})
	if err != nil {
		t.Fatalf("issuing: %v", err)
	}
	pw := fake.ECRPasswords()
	host := fake.ECRHost(awsfake.Account)
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	if err = json.Unmarshal(obj.Fields[engine.DockerConfigJSONKey], &cfg); err != nil {
		t.Fatalf("the .dockerconfigjson does not parse: %v", err)
	}
	a, ok := cfg.Auths[host]
	if len(pw) != 1 || len(cfg.Auths) != 1 || !ok || a.Username != "AWS" || a.Password != pw[0] ||
		a.Auth != base64.StdEncoding.EncodeToString([]byte("AWS:"+pw[0])) {
		t.Fatalf("the .dockerconfigjson does not hold the issued token for %s", host)
	}
	if string(obj.Fields["username"]) != "AWS" || string(obj.Fields["password"]) != pw[0] || string(obj.Fields["proxy_endpoint"]) != "https://"+host {
		t.Errorf("template keys username, password, proxy_endpoint are not the token's")
	}
	exp, err := time.Parse(time.RFC3339, obj.Version)
	if err != nil || string(obj.Fields["expires_at"]) != strconv.FormatInt(exp.Unix(), 10) {
		t.Errorf("version %q and expires_at %q are not the token's expiry", obj.Version, obj.Fields["expires_at"])
	}
	if lease.ID != "ecr:"+host+"@"+obj.Version || lease.Renewable || lease.Duration > 3*time.Hour || lease.Duration < 3*time.Hour-time.Minute {
		t.Errorf("lease = %+v, want ecr:%s@%s lasting 3h, not renewable", lease, host, obj.Version)
	}
	s := fake.Sessions()
	if len(s) != 2 || s[1].Role != chainRole {
		t.Errorf("sessions = %+v, want the web identity then the chained role", s)
	}

	fake.Deny(chainRole, "ecr:GetAuthorizationToken")
	_, _, err = ops.Leaser.Issue(context.Background(), engine.LeaseRequest{Registry: v1alpha1.RegistryECR, RegistryID: "444455556666"})
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), ":assumed-role/chained/") ||
		!strings.Contains(err.Error(), "ecr:GetAuthorizationToken") {
		t.Errorf("refusal: %v", err)
	}
	for _, p := range fake.ECRPasswords() {
		if strings.Contains(err.Error(), p) {
			t.Fatal("the error holds a token")
		}
	}
}

// TestRegistryTokensAreNotVaultLeases: an AWS store refuses a Vault path
// (dataFrom vaultDynamic) as not supported; a token is never renewed (the
// lease says so) and revoking it is no error (it expires).
func TestRegistryTokensAreNotVaultLeases(t *testing.T) {
	fake := awsfake.New(region)
	defer fake.Close()
	id, secret := fake.AddUser("puller")
	deps := &awsfake.Deps{}
	deps.SetSecret("aws", "id", []byte(id))
	deps.SetSecret("aws", "secret", []byte(secret))
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "a", Name: "s", Spec: &v1alpha1.SecretStoreProvider{AWSPS: &v1alpha1.AWSProvider{
		Region: region, Endpoint: fake.URL, Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID: v1alpha1.SecretKeySelector{Name: "aws", Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws", Key: "secret"}}}}}}
	ops, err := awsps.Factory{}.New(context.Background(), store, deps)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ops.Leaser.Issue(context.Background(), engine.LeaseRequest{Path: "database/creds/app"})
	if failure.Classify(err).Reason != failure.NotSupported || !strings.Contains(err.Error(), "vaultDynamic needs a Vault store") {
		t.Errorf("a Vault path: %v", err)
	}
	if fake.Calls("ecr:GetAuthorizationToken") != 0 {
		t.Error("a Vault path reached ECR")
	}
	if _, err := ops.Leaser.Renew(context.Background(), "ecr:x@y", time.Hour); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("renewing: %v, want not found (a new token instead)", err)
	}
	if err := ops.Leaser.Revoke(context.Background(), "ecr:x@y"); err != nil {
		t.Errorf("revoking: %v", err)
	}
}

// TestDockerConfigJSON: one registry, with auth the base64 of
// user:password as docker writes it.
func TestDockerConfigJSON(t *testing.T) {
	b, err := engine.DockerConfigJSON("r.example", "AWS", "p:w")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"auths":{"r.example":{"username":"AWS","password":"p:w","auth":"` + base64.StdEncoding.EncodeToString([]byte("AWS:p:w")) + `"}}}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
