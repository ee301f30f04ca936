package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider/alibaba"
	"github.com/watchword-dev/watchword/test/alibabafake"
)

// The Alibaba Cloud tests run against test/alibabafake, a loopback KMS
// endpoint that speaks the RPC API and verifies the SDK's request
// signatures (no KMS emulator can run here). The store reaches it through
// its endpoint field, as a VPC endpoint would be set.

func alibabaStore(t *testing.T, ns, name, endpoint, credentials string) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Alibaba: &v1alpha1.AlibabaProvider{
			RegionID: "cn-hangzhou", Endpoint: endpoint,
			Auth: v1alpha1.AlibabaAuth{SecretRef: &v1alpha1.AlibabaAuthSecretRef{
				AccessKeyID:     v1alpha1.SecretKeySelector{Name: credentials, Key: "id"},
				AccessKeySecret: v1alpha1.SecretKeySelector{Name: credentials, Key: "secret"}}}}}}}))
}

func TestAlibabaReadsPropertiesFollowsVersionsAndNamesRefusedKeys(t *testing.T) {
	parallel(t)
	fake := alibabafake.New(t)
	ns := newNamespace(t, nil)
	fake.AddKey("LTAI5tReader", "reader-access-key-secret", "kms:GetSecretValue", "kms:ListSecretVersionIds")
	createSecret(t, ns, "ali", map[string]string{"id": "LTAI5tReader", "secret": "reader-access-key-secret"})
	alibabaStore(t, ns, "ali", fake.Endpoint(), "ali")
	first := fake.PutValue("app/db", []byte(`{"user":"app","password":"`+sentinel+`"}`))
	newES(t, ns, "es", "ali", withData("user", "app/db", "user"), withDataFrom("app/db", ""))
	waitSecretData(t, ns, "es", map[string]string{"user": "app", "password": sentinel})
	if got := versionOf(waitReady(t, ns, "es"), "app/db"); got != first {
		t.Errorf("status version %q; want %q", got, first)
	}

	// A new version (PutSecretValue moves ACSCurrent) reaches the target
	// and the status.
	second := fake.PutValue("app/db", []byte(`{"user":"app2","password":"`+sentinel+`"}`))
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"user": "app2", "password": sentinel})
	eventually(t, wait, func() (bool, string) {
		got := versionOf(getES(t, ns, "es"), "app/db")
		return got == second, "status version " + got
	})

	// A pinned stage reads the version that holds it.
	newES(t, ns, "previous", "ali", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "user",
			RemoteRef: v1alpha1.RemoteReference{Key: "app/db", Version: "ACSPrevious", Property: "user"}})
	})
	waitSecretData(t, ns, "previous", map[string]string{"user": "app"})

	// A wrong AccessKey secret: the signature does not verify, and the
	// condition says so without any value.
	createSecret(t, ns, "ali-wrong", map[string]string{"id": "LTAI5tReader", "secret": "not-the-secret"})
	alibabaStore(t, ns, "ali-wrong", fake.Endpoint(), "ali-wrong")
	newES(t, ns, "es2", "ali-wrong", withData("user", "app/db", "user"))
	es2 := waitCondition(t, ns, "es2", "PermissionDenied", "SignatureDoesNotMatch", `"LTAI5tReader"`, `"app/db"`)
	for _, secret := range []string{sentinel, "not-the-secret", "reader-access-key-secret"} {
		if strings.Contains(readyCond(es2).Message, secret) {
			t.Error("the condition holds a secret")
		}
	}
	// The first ExternalSecret is untouched.
	waitSecretData(t, ns, "es", map[string]string{"user": "app2", "password": sentinel})
}

func TestAlibabaRRSAExchangesAReviewedServiceAccountToken(t *testing.T) {
	parallel(t)
	fake := alibabafake.New(t)
	// STS checks the token by a TokenReview of the test API server, as
	// RAM checks it with the cluster issuer's keys.
	fake.VerifyOIDCToken = tokenReview(alibabafake.Audience)
	ns := newNamespace(t, nil)
	const role, oidc = "acs:ram::1234567890123456:role/watchword-reader", "acs:ram::1234567890123456:oidc-provider/ack-rrsa-it"
	fake.AddOIDCRole(role, oidc, "system:serviceaccount:"+ns+":reader", "kms:GetSecretValue", "kms:ListSecretVersionIds")
	for _, sa := range []string{"reader", "intruder"} {
		must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))
	}
	rrsaStore := func(name, sa string) {
		must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Alibaba: &v1alpha1.AlibabaProvider{
				RegionID: "eu-central-1", Endpoint: fake.Endpoint(), STSEndpoint: fake.Endpoint(),
				Auth: v1alpha1.AlibabaAuth{RRSA: &v1alpha1.AlibabaRRSA{ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: sa},
					RoleARN: role, OIDCProviderARN: oidc}}}}}}))
	}
	fake.PutValue("app/api", []byte(`{"token":"`+sentinel+`"}`))
	rrsaStore("ali", "reader")
	newES(t, ns, "es", "ali", withData("token", "app/api", "token"))
	waitSecretData(t, ns, "es", map[string]string{"token": sentinel})
	if fake.Calls("AssumeRoleWithOIDC") == 0 {
		t.Error("no token exchange reached STS")
	}

	// A service account the role's trust policy does not name.
	rrsaStore("ali-intruder", "intruder")
	newES(t, ns, "es2", "ali-intruder", withData("token", "app/api", "token"))
	es2 := waitCondition(t, ns, "es2", "PermissionDenied", "AuthenticationFail.NoPermission", `"`+ns+`/intruder"`, role)
	if strings.Contains(readyCond(es2).Message, sentinel) {
		t.Error("the condition holds a value")
	}
}

func TestAlibabaPublishesWithTheOwnershipTag(t *testing.T) {
	parallel(t)
	fake := alibabafake.New(t)
	ns := newNamespace(t, nil)
	fake.AddKey("LTAI5tPusher", "pusher-access-key-secret", "kms:GetSecretValue", "kms:ListSecretVersionIds",
		"kms:DescribeSecret", "kms:CreateSecret", "kms:PutSecretValue", "kms:TagResource", "kms:DeleteSecret")
	createSecret(t, ns, "ali", map[string]string{"id": "LTAI5tPusher", "secret": "pusher-access-key-secret"})
	alibabaStore(t, ns, "ali", fake.Endpoint(), "ali")
	fake.PutValue("foreign", []byte("theirs"))
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushKey("password", "db-password"), pushTo("published", viaStore("SecretStore", "ali")))
	ps := waitPushReady(t, ns, "p")
	owner := "PushSecret/" + ns + "/p/" + string(ps.UID)
	eventually(t, wait, func() (bool, string) {
		data, _ := fake.Value("published")
		tags, found := fake.Tags("published")
		return found && string(data) == `{"db-password":"`+sentinel+`"}` && tags[alibaba.OwnerTag] == owner, "tags " + tags[alibaba.OwnerTag]
	})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations, v1alpha1.PushSecretDestination{Name: "foreign", ConfigRef: &v1alpha1.StoreRef{Name: "ali"}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", "foreign", alibaba.OwnerTag, "1 of 2 destinations published")
	if data, _ := fake.Value("foreign"); string(data) != "theirs" {
		t.Error("an untagged KMS secret was written over")
	}
	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, found := fake.Tags("published"); found {
		t.Error("the published KMS secret is still there")
	}
	if data, _ := fake.Value("foreign"); string(data) != "theirs" {
		t.Error("an untagged KMS secret was deleted")
	}
}
