package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// These tests ask test/awsfake's ECR for pull tokens (dataFrom
// registryToken) with the AWS SDK's GetAuthorizationToken.

const ecrCall = "ecr:GetAuthorizationToken"

func registryTokenES(t *testing.T, ns, name, store string, tok v1alpha1.RegistryToken) {
	t.Helper()
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: store},
			RefreshInterval: &metav1.Duration{Duration: 2 * time.Second},
			DataFrom:        []v1alpha1.ExternalSecretDataFrom{{RegistryToken: &tok}}}}
	must(t, k8s.Create(context.Background(), es))
}

// dockerAuth is the one registry of a target's .dockerconfigjson, and its
// entry.
func dockerAuth(t *testing.T, ns, name string) (host, user, pass, auth string) {
	t.Helper()
	s, err := getSecret(ns, name)
	must(t, err)
	if s.Type != corev1.SecretTypeDockerConfigJson {
		t.Fatalf("target type %s, want %s", s.Type, corev1.SecretTypeDockerConfigJson)
	}
	if len(s.Data) != 1 {
		t.Fatalf("target has %d keys, want only .dockerconfigjson", len(s.Data))
	}
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	must(t, json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg))
	if len(cfg.Auths) != 1 {
		t.Fatalf("the .dockerconfigjson names %d registries, want 1", len(cfg.Auths))
	}
	for h, a := range cfg.Auths {
		return h, a.Username, a.Password, a.Auth
	}
	return "", "", "", ""
}

// waitTokenHeld waits until the ExternalSecret is Ready with its token's
// lease in status, and returns that lease.
func waitTokenHeld(t *testing.T, ns, name string) *v1alpha1.VaultLeaseStatus {
	t.Helper()
	var l *v1alpha1.VaultLeaseStatus
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, name)
		l = es.Status.Lease
		c := readyCond(es)
		return l != nil && c != nil && c.Status == metav1.ConditionTrue, describeES(es)
	})
	return l
}

// waitTokenReplaced waits (up to 2 minutes) for a lease other than first in
// the status, and fails unless it replaced first before first's expiry
// with one that ends later; it returns the new lease.
func waitTokenReplaced(t *testing.T, ns, name string, first *v1alpha1.VaultLeaseStatus) *v1alpha1.VaultLeaseStatus {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		l := getES(t, ns, name).Status.Lease
		return l != nil && l.ID != first.ID, fmt.Sprintf("lease %+v not replaced", l)
	})
	renewed := getES(t, ns, name).Status.Lease
	if renewed.IssueTime.After(first.ExpiryTime.Time) || !renewed.ExpiryTime.After(first.ExpiryTime.Time) {
		t.Fatalf("the token expiring at %v was replaced at %v by one expiring at %v: not before its expiry", first.ExpiryTime, renewed.IssueTime, renewed.ExpiryTime)
	}
	return renewed
}

// TestECRRegistryTokenRenewedBeforeExpiryAndKeptThroughRestart: an
// awssm store's keys get an ECR token written as a dockerconfigjson
// Secret, its expiry in status; plain refreshes and a killed and
// restarted controller ask for no new token while it is fresh; one new
// token replaces it renewBefore its expiry (a rotation: the target's
// password changes); no token reaches events, conditions or logs.
func TestECRRegistryTokenRenewedBeforeExpiryAndKeptThroughRestart(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	fake.SetECRTokenLifetime(2 * time.Minute)
	ns := newNamespace(t, nil)
	class := "ecr-registry-token"
	id, secret := fake.AddUser("puller")
	createSecret(t, ns, "aws-keys", map[string]string{"access-key": id, "secret-key": secret})
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sm"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{AWSSM: awsBlock(fake)}}}
	must(t, k8s.Create(context.Background(), s))
	p := startController(t, class)
	registryTokenES(t, ns, "pull", "sm", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR,
		RenewBefore: &metav1.Duration{Duration: time.Minute}})

	first := waitTokenHeld(t, ns, "pull")
	host, user, pass, auth := dockerAuth(t, ns, "pull")
	issued := fake.ECRPasswords()
	if len(issued) != 1 || fake.Calls(ecrCall) != 1 {
		t.Fatalf("%d tokens issued in %d calls, want 1", len(issued), fake.Calls(ecrCall))
	}
	if host != fake.ECRHost(awsfake.Account) || user != "AWS" || pass != issued[0] ||
		auth != base64.StdEncoding.EncodeToString([]byte("AWS:"+issued[0])) {
		t.Fatalf("the .dockerconfigjson holds registry %q user %q, not the issued token for %s", host, user, fake.ECRHost(awsfake.Account))
	}
	if !strings.HasPrefix(first.ID, "ecr:"+host+"@") || first.Renewable || first.ExpiryTime.Sub(first.IssueTime.Time) > 2*time.Minute {
		t.Fatalf("status.lease %+v does not record the token's registry and its 2-minute expiry", first)
	}
	if v := getES(t, ns, "pull").Status.Versions; len(v) != 1 || !strings.HasPrefix(first.ID, "ecr:"+host+"@"+v[0].Version) {
		t.Fatalf("versions %v do not carry the token's expiry %s", v, first.ID)
	}

	// Refreshes every 2s and a restart ask for nothing while the token
	// is fresh (it is due a minute before its expiry).
	p.kill(t)
	p2 := startController(t, class)
	eventually(t, wait, func() (bool, string) {
		m, ok := p2.scrape("watchword_store_leases")
		return ok && m["watchword_store_leases"] == 1, fmt.Sprintf("lease metrics %v", m)
	})
	if n := fake.Calls(ecrCall); n != 1 || getES(t, ns, "pull").Status.Lease.ID != first.ID {
		t.Fatalf("the restarted controller asked ECR %d times (want no new call) or holds another token", n-1)
	}

	// Renewal: once, renewBefore the expiry, as a new token in the target.
	waitTokenReplaced(t, ns, "pull", first)
	issued = fake.ECRPasswords()
	if len(issued) != 2 {
		t.Fatalf("%d tokens issued, want 2", len(issued))
	}
	eventually(t, wait, func() (bool, string) {
		_, _, pw, _ := dockerAuth(t, ns, "pull")
		return pw == issued[1], "the target does not hold the new token"
	})
	if n := fake.Calls(ecrCall); n != 2 {
		t.Fatalf("ECR was asked %d times, want 2", n)
	}

	// No token in events, conditions or the controllers' logs.
	evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	var texts []string
	for _, e := range evs.Items {
		texts = append(texts, e.Message, e.Reason)
	}
	for _, c := range getES(t, ns, "pull").Status.Conditions {
		texts = append(texts, c.Message)
	}
	texts = append(texts, p.output(), p2.output())
	all := strings.Join(texts, "\n")
	for _, pw := range issued {
		if strings.Contains(all, pw) || strings.Contains(all, base64.StdEncoding.EncodeToString([]byte("AWS:"+pw))) {
			t.Fatal("an ECR token reached an event, a condition or a log")
		}
	}
}

// TestECRRegistryTokenOfAnotherRegistryAndRefusal: an awsps store asks
// for the token of the registry registryID names; a template renders the
// token's username, password, proxy_endpoint and expires_at (External
// Secrets Operator's keys) into a pull secret; a caller IAM refuses
// ecr:GetAuthorizationToken gets PermissionDenied naming the action, and
// vaultDynamic on an AWS store is refused as not supported.
func TestECRRegistryTokenOfAnotherRegistryAndRefusal(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "ps", "awsps", "puller")
	registryTokenES(t, ns, "other", "ps", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR, RegistryID: "444455556666"})
	waitReady(t, ns, "other")
	if host, _, pass, _ := dockerAuth(t, ns, "other"); host != fake.ECRHost("444455556666") || pass != fake.ECRPasswords()[0] {
		t.Fatalf("registry %q: not the token of registry 444455556666", host)
	}

	// A template sees External Secrets Operator's keys of the token and
	// renders the data itself; the type stays a pull secret.
	tok := v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR}
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templated"},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "ps"},
			Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{Data: map[string]string{
				".dockerconfigjson": `{"auths":{"{{ .proxy_endpoint }}":{"username":"{{ .username }}","password":"{{ .password }}"}}}`,
				"expires":           "{{ .expires_at }}"}}},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{RegistryToken: &tok}}}}
	must(t, k8s.Create(context.Background(), es))
	waitReady(t, ns, "templated")
	ts, err := getSecret(ns, "templated")
	must(t, err)
	pw := fake.ECRPasswords()
	want := `{"auths":{"https://` + fake.ECRHost(awsfake.Account) + `":{"username":"AWS","password":"` + pw[len(pw)-1] + `"}}}`
	if ts.Type != corev1.SecretTypeDockerConfigJson || string(ts.Data[".dockerconfigjson"]) != want || len(ts.Data) != 2 {
		t.Fatalf("templated target of type %s with %d keys does not hold the token rendered by the template", ts.Type, len(ts.Data))
	}
	exp := getES(t, ns, "templated").Status.Lease.ExpiryTime.Unix()
	if got, perr := strconv.ParseInt(string(ts.Data["expires"]), 10, 64); perr != nil || got < exp || got > exp+5 {
		t.Fatalf("expires_at %q is not the recorded expiry %d", ts.Data["expires"], exp)
	}

	fake.Deny(awsfake.UserARN("puller"), ecrCall)
	registryTokenES(t, ns, "denied", "ps", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR})
	waitCondition(t, ns, "denied", string(failure.PermissionDenied), ecrCall)

	es = &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vd"},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "ps"},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{VaultDynamic: &v1alpha1.VaultDynamicSecret{Path: "database/creds/app"}}}}}
	must(t, k8s.Create(context.Background(), es))
	waitCondition(t, ns, "vd", string(failure.NotSupported), "vaultDynamic needs a Vault store")
}
