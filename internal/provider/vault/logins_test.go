package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/test/awsfake"
	"github.com/watchword-dev/watchword/test/gcpfake"
	"github.com/watchword-dev/watchword/test/ldapserver"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

// enableAuth enables an auth method at path, once per server.
func enableAuth(t *testing.T, s *vaultserver.Server, path, typ string) {
	t.Helper()
	var mounts map[string]any
	must(t, s.Do(http.MethodGet, "sys/auth", nil, &mounts))
	if _, ok := mounts[path+"/"]; ok {
		return
	}
	must(t, s.Do(http.MethodPost, "sys/auth/"+path, map[string]any{"type": typ}, nil))
}

// readsAcrossRenewalAndRevocation reads key through c past two thirds of
// a 4s token's life (the session renews it), then revokes the token and
// reads again (the session logs in once more).
func readsAcrossRenewalAndRevocation(t *testing.T, s *vaultserver.Server, c *Client, key, want string) {
	t.Helper()
	obj, err := get(t, c, key, "")
	if err != nil || string(obj.Fields["v"]) != want {
		t.Fatalf("first read: %v %v", obj, err)
	}
	first := c.session.token
	for i := 0; i < 6; i++ {
		time.Sleep(time.Second)
		if _, err := get(t, c, key, ""); err != nil {
			t.Fatalf("read %d after login: %v", i, err)
		}
	}
	if c.session.token != first {
		t.Fatal("the session logged in again instead of renewing its token")
	}
	must(t, s.Do(http.MethodPost, "auth/token/revoke", map[string]any{"token": c.session.token}, nil))
	if _, err := get(t, c, key, ""); err != nil {
		t.Fatalf("read after revocation: %v", err)
	}
	if c.session.token == first {
		t.Fatal("the session still holds the revoked token")
	}
}

// refusedLogin checks that err is a rejected login naming each of want
// and none of secrets.
func refusedLogin(t *testing.T, err error, want []string, secrets ...string) {
	t.Helper()
	if !errors.Is(err, engine.ErrPermissionDenied) || !errors.Is(err, engine.ErrUnauthenticated) {
		t.Fatalf("got %v, want a rejected login (permission denied)", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %s", err, w)
		}
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error leaks a credential: %v", err)
		}
	}
}

func TestUserPassLogsInRenewsAndLogsInAgain(t *testing.T) {
	needVault(t)
	enableAuth(t, srv, "userpass", "userpass")
	must(t, srv.Policy("read-all", `path "secret/*" { capabilities = ["read", "create", "update", "delete", "list"] }`))
	must(t, srv.Policy("read-public", `path "secret/data/public/*" { capabilities = ["read"] }`))
	must(t, srv.Do(http.MethodPost, "auth/userpass/users/reader", map[string]any{
		"password": "correct horse", "token_policies": []string{"read-all"}, "token_ttl": "4s", "token_max_ttl": "1h"}, nil))
	must(t, srv.Do(http.MethodPost, "auth/userpass/users/narrow", map[string]any{
		"password": "narrow pw", "token_policies": []string{"read-public"}}, nil))
	must(t, srv.PutKV2("secret", "userpass/x", map[string]any{"v": "ok"}))
	spec := func(user string) v1alpha1.VaultProvider {
		return v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{UserPass: &v1alpha1.VaultPasswordAuth{
			Username: user, SecretRef: v1alpha1.SecretKeySelector{Name: "up", Key: "password"}}}}
	}
	// A trailing newline, as `kubectl create secret --from-file` keeps
	// it, is not part of the password.
	c := newTestClient(t, spec("reader"), map[string][]byte{"up/password": []byte("correct horse\n")})
	readsAcrossRenewalAndRevocation(t, srv, c, "userpass/x", "ok")

	bad := newTestClient(t, spec("reader"), map[string][]byte{"up/password": []byte("wrong-password")})
	_, err := get(t, bad, "userpass/x", "")
	refusedLogin(t, err, []string{`userpass auth at auth/userpass as user "reader"`}, "wrong-password")

	// A login that works but whose policies do not cover the read: the
	// refusal names the user and the method.
	narrow := newTestClient(t, spec("narrow"), map[string][]byte{"up/password": []byte("narrow pw")})
	_, err = get(t, narrow, "userpass/x", "")
	if !errors.Is(err, engine.ErrPermissionDenied) || errors.Is(err, engine.ErrUnauthenticated) {
		t.Fatalf("got %v, want a refused read", err)
	}
	for _, w := range []string{"read-public", `userpass auth at auth/userpass as user "narrow"`, `read "secret/data/userpass/x"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %s", err, w)
		}
	}
	if strings.Contains(err.Error(), "narrow pw") {
		t.Fatal("the error leaks the password")
	}
}

func TestCertLogsInWithTheClientCertificate(t *testing.T) {
	needVault(t)
	p := newPKI(t)
	tlsSrv := startTLSVault(t, p)
	enableAuth(t, tlsSrv, "cert", "cert")
	must(t, tlsSrv.Policy("read-all", `path "secret/*" { capabilities = ["read"] }`))
	must(t, tlsSrv.Do(http.MethodPost, "auth/cert/certs/watchword", map[string]any{
		"certificate": string(p.caPEM), "allowed_common_names": []string{"watchword"},
		"token_policies": []string{"read-all"}, "token_ttl": "4s", "token_max_ttl": "1h"}, nil))
	// A role that trusts another CA: the certificate does not match it.
	must(t, tlsSrv.Do(http.MethodPost, "auth/cert/certs/elsewhere", map[string]any{
		"certificate": string(p.otherCA), "token_policies": []string{"read-all"}}, nil))
	must(t, tlsSrv.PutKV2("secret", "cert/x", map[string]any{"v": "by-cert"}))

	secrets := map[string][]byte{"client/tls.crt": p.clientCert, "client/tls.key": p.clientKey}
	build := func(name string) *Client {
		spec := v1alpha1.VaultProvider{Server: tlsSrv.Addr(), Version: "v2", CABundle: p.caPEM,
			Auth: v1alpha1.VaultAuth{Cert: &v1alpha1.VaultCertAuth{Name: name,
				ClientCert: v1alpha1.SecretKeySelector{Name: "client", Key: "tls.crt"},
				ClientKey:  v1alpha1.SecretKeySelector{Name: "client", Key: "tls.key"}}}}
		return newTestClient(t, spec, secrets)
	}
	readsAcrossRenewalAndRevocation(t, tlsSrv, build("watchword"), "cert/x", "by-cert")

	_, err := get(t, build("elsewhere"), "cert/x", "")
	refusedLogin(t, err, []string{`TLS certificate auth at auth/cert as client certificate "watchword" with role "elsewhere"`},
		string(p.clientKey))
}

func TestCertAndClientTLSAreExclusive(t *testing.T) {
	ref := v1alpha1.SecretKeySelector{Name: "c", Key: "k"}
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v", Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
		Server: "https://vault:8200", TLS: &v1alpha1.VaultClientTLS{CertSecretRef: ref, KeySecretRef: ref},
		Auth: v1alpha1.VaultAuth{Cert: &v1alpha1.VaultCertAuth{ClientCert: ref, ClientKey: ref}}}}}
	if err := (Factory{}).Validate(store); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "drop vault.tls") {
		t.Fatalf("got %v", err)
	}
	if _, err := (Factory{}).New(context.Background(), store, deps{}); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("New: %v", err)
	}
	store.Spec.Vault.TLS, store.Spec.Vault.Server = nil, "http://vault:8200"
	if err := (Factory{}).Validate(store); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "needs an https://") {
		t.Fatalf("cert auth over plain HTTP: %v", err)
	}
}

func TestIAMSignsGetCallerIdentityThatVaultChecksWithSTS(t *testing.T) {
	needVault(t)
	const region = "eu-central-1"
	fake := awsfake.New(region)
	defer fake.Close()
	enableAuth(t, srv, "aws", "aws")
	// Vault sends the signed request to the fake's STS; the header value
	// binds a signed request to this Vault.
	must(t, srv.Do(http.MethodPost, "auth/aws/config/client", map[string]any{
		"sts_endpoint": fake.URL, "sts_region": region, "iam_server_id_header_value": "vault.test"}, nil))
	must(t, srv.Policy("read-all", `path "secret/*" { capabilities = ["read"] }`))
	// resolve_aws_unique_ids would have Vault call IAM (not STS) to
	// resolve the ARN: the fake has no IAM, so roles match on the ARN.
	role := func(name, arn, ttl string) {
		must(t, srv.Do(http.MethodPost, "auth/aws/role/"+name, map[string]any{"auth_type": "iam",
			"bound_iam_principal_arn": []string{arn}, "resolve_aws_unique_ids": false,
			"token_policies": []string{"read-all"}, "token_ttl": ttl, "token_max_ttl": "1h"}, nil))
	}
	role("reader", awsfake.UserARN("watchword"), "4s")
	chainRole := "arn:aws:iam::" + awsfake.Account + ":role/vault-login"
	role("chained", chainRole, "1h")
	fake.AddRole(awsfake.Role{ARN: chainRole, Principals: []string{awsfake.UserARN("chain")}, ExternalID: "ext-1"})
	must(t, srv.PutKV2("secret", "iam/x", map[string]any{"v": "by-iam"}))

	id, secret := fake.AddUser("watchword")
	chainID, chainSecret := fake.AddUser("chain")
	secrets := map[string][]byte{"aws/id": []byte(id), "aws/secret": []byte(secret), "chain/id": []byte(chainID), "chain/secret": []byte(chainSecret)}
	keys := func(name string) *v1alpha1.AWSAuth {
		return &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID: v1alpha1.SecretKeySelector{Name: name, Key: "id"}, SecretAccessKey: v1alpha1.SecretKeySelector{Name: name, Key: "secret"}}}
	}
	build := func(a v1alpha1.VaultIAMAuth) *Client {
		a.Region, a.STSEndpoint = region, fake.URL
		return newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{IAM: &a}}, secrets)
	}

	readsAcrossRenewalAndRevocation(t, srv, build(v1alpha1.VaultIAMAuth{VaultRole: "reader", IAMServerID: "vault.test", Auth: keys("aws")}), "iam/x", "by-iam")
	if n := fake.Calls("sts:GetCallerIdentity"); n < 2 {
		t.Fatalf("the fake's STS answered %d GetCallerIdentity calls, want one per login (2)", n)
	}

	// A role assumed with the keys first: Vault sees the role.
	c := build(v1alpha1.VaultIAMAuth{VaultRole: "chained", IAMServerID: "vault.test", Role: chainRole, ExternalID: "ext-1", Auth: keys("chain")})
	if obj, err := get(t, c, "iam/x", ""); err != nil || string(obj.Fields["v"]) != "by-iam" {
		t.Fatalf("read as an assumed role: %v %v", obj, err)
	}

	// Web identity: a service-account token exchanged for a role's
	// credentials (the fake's STS checks the token with ReviewToken, here
	// a stand-in for the API server's TokenReview), which sign the login.
	webRole := "arn:aws:iam::" + awsfake.Account + ":role/vault-web"
	role("web", webRole, "1h")
	fake.AddRole(awsfake.Role{ARN: webRole, WebIdentitySubjects: []string{"system:serviceaccount:ns:app"}})
	fake.ReviewToken = func(_ context.Context, tok string) (string, []string, error) {
		if tok != "sa-token-of-app" {
			return "", nil, errors.New("not a token of this cluster")
		}
		return "system:serviceaccount:ns:app", []string{"sts.amazonaws.com"}, nil
	}
	web := &v1alpha1.VaultIAMAuth{VaultRole: "web", IAMServerID: "vault.test", Region: region, STSEndpoint: fake.URL,
		Auth: &v1alpha1.AWSAuth{JWT: &v1alpha1.AWSJWTAuth{ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app"}, RoleARN: webRole}}}
	wc, err := Factory{}.client(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "vault",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{IAM: web}}}},
		tokenDeps{token: "sa-token-of-app"})
	must(t, err)
	if obj, gerr := get(t, wc, "iam/x", ""); gerr != nil || string(obj.Fields["v"]) != "by-iam" {
		t.Fatalf("read with web identity: %v %v", obj, gerr)
	}
	if ss := fake.Sessions(); len(ss) == 0 || ss[len(ss)-1].Action != "AssumeRoleWithWebIdentity" || ss[len(ss)-1].Role != webRole {
		t.Fatalf("STS sessions %+v, want the web identity's last", ss)
	}

	// A request signed for another Vault is refused before STS is asked.
	calls := fake.Calls("sts:GetCallerIdentity")
	_, err = get(t, build(v1alpha1.VaultIAMAuth{VaultRole: "reader", IAMServerID: "other-vault", Auth: keys("aws")}), "iam/x", "")
	refusedLogin(t, err, []string{"AWS IAM auth at auth/aws", fmt.Sprintf("access key %q", id), `with role "reader"`}, secret)
	if fake.Calls("sts:GetCallerIdentity") != calls {
		t.Fatal("Vault asked STS about a request signed for another server")
	}

	// A revoked key: STS refuses the signature, Vault the login.
	fake.RevokeKey(id)
	_, err = get(t, build(v1alpha1.VaultIAMAuth{VaultRole: "reader", IAMServerID: "vault.test", Auth: keys("aws")}), "iam/x", "")
	refusedLogin(t, err, []string{"AWS IAM auth at auth/aws", `with role "reader"`}, secret)
}

func TestIAMControllerCredentialsOnlyOnAClusterStore(t *testing.T) {
	store := provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v", Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
		Server: "https://vault:8200", Auth: v1alpha1.VaultAuth{IAM: &v1alpha1.VaultIAMAuth{VaultRole: "r", Auth: &v1alpha1.AWSAuth{ControllerCredentials: true}}}}}}
	if err := (Factory{}).Validate(store); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "vault.auth.iam.auth.controllerCredentials") {
		t.Fatalf("got %v", err)
	}
	store.Kind, store.Namespace = v1alpha1.ClusterSecretStoreKind, ""
	if err := (Factory{}).Validate(store); err != nil {
		t.Fatalf("a ClusterSecretStore may lend the controller's credentials: %v", err)
	}
}

func TestLDAPLogsInAgainstOpenLDAP(t *testing.T) {
	needVault(t)
	root, skip, err := ldapserver.Lookup()
	must(t, err)
	if skip != "" {
		t.Skip(skip)
	}
	dir, err := ldapserver.Start(context.Background(), root, map[string]string{"svc-app": "ldap pass", "svc-other": "other pass"})
	must(t, err)
	defer dir.Stop()
	enableAuth(t, srv, "ldap", "ldap")
	// Vault searches the directory as the administrator for the user's
	// entry, then binds as the user with the password: slapd checks it.
	must(t, srv.Do(http.MethodPost, "auth/ldap/config", map[string]any{"url": dir.URL, "userdn": ldapserver.UsersDN,
		"userattr": "uid", "binddn": ldapserver.BindDN, "bindpass": dir.BindPassword,
		"token_ttl": "4s", "token_max_ttl": "1h"}, nil))
	must(t, srv.Policy("read-all", `path "secret/*" { capabilities = ["read"] }`))
	must(t, srv.Do(http.MethodPost, "auth/ldap/users/svc-app", map[string]any{"policies": "read-all"}, nil))
	must(t, srv.PutKV2("secret", "ldap/x", map[string]any{"v": "by-ldap"}))
	build := func(user, password string) *Client {
		return newTestClient(t, v1alpha1.VaultProvider{Server: srv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{LDAP: &v1alpha1.VaultPasswordAuth{
			Username: user, SecretRef: v1alpha1.SecretKeySelector{Name: "ldap", Key: "password"}}}},
			map[string][]byte{"ldap/password": []byte(password)})
	}
	readsAcrossRenewalAndRevocation(t, srv, build("svc-app", "ldap pass"), "ldap/x", "by-ldap")

	_, err = get(t, build("svc-app", "not the password"), "ldap/x", "")
	refusedLogin(t, err, []string{`LDAP auth at auth/ldap as user "svc-app"`}, "not the password")
	_, err = get(t, build("nobody-here", "x-password"), "ldap/x", "")
	refusedLogin(t, err, []string{`LDAP auth at auth/ldap as user "nobody-here"`}, "x-password")

	// A directory user whom Vault maps to no policy logs in with the
	// default policy only: the read is refused and names the user.
	_, err = get(t, build("svc-other", "other pass"), "ldap/x", "")
	if !errors.Is(err, engine.ErrPermissionDenied) || errors.Is(err, engine.ErrUnauthenticated) || !strings.Contains(err.Error(), `LDAP auth at auth/ldap as user "svc-other"`) {
		t.Fatalf("got %v, want a refused read naming the LDAP user", err)
	}
}

func TestGCPLogsInWithAJWTSignedByTheServiceAccountKey(t *testing.T) {
	needVault(t)
	fake := gcpfake.New(t, "watchword-test")
	// Vault's own service account may look service accounts up
	// (projects.serviceAccounts.get). Vault finds its key file as
	// application default credentials, whose token endpoint is the
	// fake's (a key file in Vault's config loses its token_uri); it
	// reaches the fake as its custom endpoints, trusting the fake's CA.
	_, vaultKey := fake.NewServiceAccount("vault-verifier", "iam.serviceAccounts.get")
	var kf map[string]any
	must(t, json.Unmarshal(vaultKey, &kf))
	kf["token_uri"] = fake.TokenURL()
	vaultKey, _ = json.Marshal(kf)
	dir := t.TempDir()
	caFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "vault-key.json")
	must(t, os.WriteFile(caFile, fake.CAPEM(), 0o600))
	must(t, os.WriteFile(keyFile, vaultKey, 0o600))
	bin, err := vaultserver.Find()
	must(t, err)
	gsrv, err := vaultserver.StartEnv(bin, "SSL_CERT_FILE="+caFile, "GOOGLE_APPLICATION_CREDENTIALS="+keyFile)
	must(t, err)
	defer gsrv.Close()
	enableAuth(t, gsrv, "gcp", "gcp")
	must(t, gsrv.Do(http.MethodPost, "auth/gcp/config", map[string]any{
		"custom_endpoint": map[string]string{"api": fake.URL(), "iam": fake.URL() + "/"}}, nil))
	must(t, gsrv.Policy("read-all", `path "secret/*" { capabilities = ["read"] }`))
	email, key := fake.NewServiceAccount("watchword")
	otherEmail, otherKey := fake.NewServiceAccount("stranger")
	must(t, gsrv.Do(http.MethodPost, "auth/gcp/role/reader", map[string]any{"type": "iam", "bound_service_accounts": []string{email},
		"token_policies": []string{"read-all"}, "token_ttl": "4s", "token_max_ttl": "1h"}, nil))
	must(t, gsrv.PutKV2("secret", "gcp/x", map[string]any{"v": "by-gcp"}))

	build := func(role string, keyFile []byte) *Client {
		return newTestClient(t, v1alpha1.VaultProvider{Server: gsrv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{GCP: &v1alpha1.VaultGCPAuth{
			Role: role, SecretRef: v1alpha1.GCPSMSecretRef{SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp", Key: "key.json"}}}}},
			map[string][]byte{"gcp/key.json": keyFile})
	}
	readsAcrossRenewalAndRevocation(t, gsrv, build("reader", key), "gcp/x", "by-gcp")
	if fake.Calls("x509") < 2 || fake.Calls("serviceAccounts.get") < 2 {
		t.Fatalf("Vault fetched the key's certificate %d times and the account %d times, want once per login (2)", fake.Calls("x509"), fake.Calls("serviceAccounts.get"))
	}

	// A service account that the role does not bind.
	_, err = get(t, build("reader", otherKey), "gcp/x", "")
	refusedLogin(t, err, []string{"GCP auth at auth/gcp", fmt.Sprintf("service account %q with role %q", otherEmail, "reader")}, privateKeyOf(t, otherKey))
	// A key file that is not one is a configuration error naming the ref.
	c, err := Factory{}.client(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v",
		Spec: &v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{Server: gsrv.Addr(), Version: "v2", Auth: v1alpha1.VaultAuth{GCP: &v1alpha1.VaultGCPAuth{
			Role: "reader", SecretRef: v1alpha1.GCPSMSecretRef{SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp", Key: "key.json"}}}}}}},
		deps{secrets: map[string][]byte{"gcp/key.json": []byte(`{"private_key": "not-a-key"}`)}})
	if c != nil || !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "vault.auth.gcp.secretRef") || strings.Contains(err.Error(), "not-a-key") {
		t.Fatalf("got %v", err)
	}
}

func privateKeyOf(t *testing.T, keyFile []byte) string {
	t.Helper()
	var k struct {
		PrivateKey string `json:"private_key"`
	}
	must(t, json.Unmarshal(keyFile, &k))
	return strings.Split(k.PrivateKey, "\n")[1]
}
