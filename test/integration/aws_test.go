package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider/awsbase"
	"github.com/watchword-dev/watchword/test/awsfake"
)

// These tests run the awssm and awsps providers, on the official AWS SDK,
// against test/awsfake: a strict loopback AWS that verifies SigV4 and
// checks web identity tokens by a TokenReview against the test API server.

const awsRegion = "eu-central-1"

// newAWSFake starts a fake AWS for one test. Its STS reviews web identity
// tokens with the API server, for the audience sts.amazonaws.com.
func newAWSFake(t *testing.T) *awsfake.Server {
	t.Helper()
	fake := awsfake.New(awsRegion)
	fake.ReviewToken = func(ctx context.Context, token string) (string, []string, error) {
		tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{awsbase.STSAudience}}}, metav1.CreateOptions{})
		if err != nil {
			return "", nil, err
		}
		if !tr.Status.Authenticated {
			return "", nil, fmt.Errorf("the API server did not authenticate the token")
		}
		return tr.Status.User.Username, tr.Status.Audiences, nil
	}
	t.Cleanup(fake.Close)
	return fake
}

// awsBlock is a provider block of the fake with static keys from Secret
// "aws-keys".
func awsBlock(fake *awsfake.Server) *v1alpha1.AWSProvider {
	return &v1alpha1.AWSProvider{Region: awsRegion, Endpoint: fake.URL, STSEndpoint: fake.URL,
		Auth: &v1alpha1.AWSAuth{SecretRef: &v1alpha1.AWSAuthSecretRef{
			AccessKeyID:     v1alpha1.SecretKeySelector{Name: "aws-keys", Key: "access-key"},
			SecretAccessKey: v1alpha1.SecretKeySelector{Name: "aws-keys", Key: "secret-key"},
		}}}
}

// awsKeyStore makes user's access key, the Secret "aws-keys" holding it,
// and a SecretStore of block "awssm" or "awsps".
func awsKeyStore(t *testing.T, fake *awsfake.Server, ns, name, block, user string) *v1alpha1.AWSProvider {
	t.Helper()
	id, secret := fake.AddUser(user)
	createSecret(t, ns, "aws-keys", map[string]string{"access-key": id, "secret-key": secret})
	b := awsBlock(fake)
	awsStore(t, ns, name, block, b)
	return b
}

func awsStore(t *testing.T, ns, name, block string, b *v1alpha1.AWSProvider) {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if block == "awsps" {
		s.Spec.AWSPS = b
	} else {
		s.Spec.AWSSM = b
	}
	must(t, k8s.Create(context.Background(), s))
}

// TestAWSSecretsManagerReadsAndFollowsRotation: a property, a JSON dataFrom
// and a pinned stage reach the target; the version ID is recorded in
// status; a new version reaches the target at the refresh.
func TestAWSSecretsManagerReadsAndFollowsRotation(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "reader")
	text := `{"password":"first","conn":{"host":"db.internal","port":5432}}`
	first := fake.PutSecretString("app/db", text)
	newES(t, ns, "db", "sm", withRefresh(2*time.Second),
		withData("password", "app/db", "password"),
		withData("whole", "app/db", ""),
		withDataFrom("app/db", "conn"))
	waitSecretData(t, ns, "db", map[string]string{"password": "first", "whole": text, "host": "db.internal", "port": "5432"})
	es := waitReady(t, ns, "db")
	if len(es.Status.Versions) != 1 || es.Status.Versions[0].Version != first {
		t.Fatalf("versions = %v, want version ID %s", es.Status.Versions, first)
	}

	text = `{"password":"second","conn":{"host":"db.internal","port":5432}}`
	second := fake.PutSecretString("app/db", text)
	waitSecretData(t, ns, "db", map[string]string{"password": "second", "whole": text, "host": "db.internal", "port": "5432"})
	eventually(t, wait, func() (bool, string) {
		es := getES(t, ns, "db")
		return len(es.Status.Versions) == 1 && es.Status.Versions[0].Version == second, fmt.Sprint(es.Status.Versions)
	})
	// The previous version, by its staging label.
	updateES(t, ns, "db", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = []v1alpha1.ExternalSecretData{{SecretKey: "password", RemoteRef: v1alpha1.RemoteReference{Key: "app/db", Property: "password", Version: "AWSPREVIOUS"}}}
		es.Spec.DataFrom = nil
	})
	waitSecretData(t, ns, "db", map[string]string{"password": "first"})
}

// TestAWSKeyRotationWithoutRestart: the access key in the credentials
// Secret is replaced and the old one revoked; the store's next client uses
// the new key without a restart.
func TestAWSKeyRotationWithoutRestart(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "rotator")
	fake.PutSecretString("k", "one")
	newES(t, ns, "es", "sm", withRefresh(time.Second), withData("v", "k", ""))
	waitSecretData(t, ns, "es", map[string]string{"v": "one"})

	old, err := getSecret(ns, "aws-keys")
	must(t, err)
	id, secret := fake.AddUser("rotator")
	updateSecret(t, ns, "aws-keys", func(s *corev1.Secret) {
		s.Data = map[string][]byte{"access-key": []byte(id), "secret-key": []byte(secret)}
	})
	fake.RevokeKey(string(old.Data["access-key"]))
	fake.PutSecretString("k", "two")
	waitSecretData(t, ns, "es", map[string]string{"v": "two"})
	waitReady(t, ns, "es")
}

// TestAWSWebIdentityAndChainedRole: the store's service account's token,
// requested by Watchword with the audience sts.amazonaws.com, is reviewed
// by the API server in the fake's STS and exchanged for a role, and a
// second role is assumed with it (external ID and session tags). A service
// account the role does not trust is refused with a named condition.
func TestAWSWebIdentityAndChainedRole(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	ctx := context.Background()
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	webRole := "arn:aws:iam::" + awsfake.Account + ":role/" + ns + "-web"
	chained := "arn:aws:iam::" + awsfake.Account + ":role/" + ns + "-reader"
	subject := "system:serviceaccount:" + ns + ":app"
	fake.AddRole(awsfake.Role{ARN: webRole, WebIdentitySubjects: []string{subject}})
	fake.AddRole(awsfake.Role{ARN: chained, Principals: []string{webRole}, ExternalID: "ext-" + ns})
	fake.PutSecretString("app/web", `{"v":"via-web-identity"}`)

	b := &v1alpha1.AWSProvider{Region: awsRegion, Endpoint: fake.URL, STSEndpoint: fake.URL,
		Auth: &v1alpha1.AWSAuth{JWT: &v1alpha1.AWSJWTAuth{RoleARN: webRole, ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "app"}}}}
	awsStore(t, ns, "web", "awssm", b)
	newES(t, ns, "web", "web", withData("v", "app/web", "v"))
	waitSecretData(t, ns, "web", map[string]string{"v": "via-web-identity"})

	chain := b.DeepCopy()
	chain.Role, chain.ExternalID, chain.SessionTags = chained, "ext-"+ns, []v1alpha1.AWSTag{{Key: "namespace", Value: ns}}
	awsStore(t, ns, "chained", "awssm", chain)
	newES(t, ns, "chained", "chained", withData("v", "app/web", "v"))
	waitSecretData(t, ns, "chained", map[string]string{"v": "via-web-identity"})

	var web, assumed bool
	for _, s := range fake.Sessions() {
		switch {
		case s.Action == "AssumeRoleWithWebIdentity" && s.Role == webRole && s.Caller == subject:
			web = true
		case s.Action == "AssumeRole" && s.Role == chained && s.ExternalID == "ext-"+ns && s.Tags["namespace"] == ns &&
			strings.Contains(s.Caller, ":assumed-role/"+ns+"-web/"):
			assumed = true
		}
	}
	if !web || !assumed {
		t.Errorf("STS sessions %+v: want the web identity exchange for %s and the chained AssumeRole with external ID and tags", fake.Sessions(), subject)
	}

	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	intruder := b.DeepCopy()
	intruder.Auth.JWT.ServiceAccountRef.Name = "intruder"
	awsStore(t, ns, "intruder", "awssm", intruder)
	newES(t, ns, "intruder", "intruder", withData("v", "app/web", "v"))
	waitCondition(t, ns, "intruder", "PermissionDenied", `service account "`+ns+`/intruder"`, webRole)
}

// TestAWSPermissionRefusalNamesCallerActionResource: an IAM refusal shows
// in the condition with the caller, the action and the secret, never the
// value, and the target keeps its data.
func TestAWSPermissionRefusalNamesCallerActionResource(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	user := ns + "-reader"
	awsKeyStore(t, fake, ns, "sm", "awssm", user)
	fake.PutSecretString("app/db", `{"password":"`+sentinel+`"}`)
	newES(t, ns, "es", "sm", withRefresh(time.Second), withData("password", "app/db", "password"))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})

	for _, action := range []string{"secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "secretsmanager:DescribeSecret"} {
		fake.Deny(awsfake.UserARN(user), action)
	}
	fake.PutSecretString("app/db", `{"password":"changed"}`)
	es := waitCondition(t, ns, "es", "PermissionDenied", awsfake.UserARN(user), "secretsmanager:")
	if c := readyCond(es); strings.Contains(c.Message, sentinel) || strings.Contains(c.Message, "changed") {
		t.Errorf("the condition carries a value: %q", c.Message)
	}
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel})
	assertNoLeak(t, ns)
}

// TestAWSParameterStorePathAsDataFrom: every parameter under a path,
// SecureStrings decrypted, lands in the target with "/" mapped to "_";
// a parameter added under the path follows.
func TestAWSParameterStorePathAsDataFrom(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "ps", "awsps", "params")
	prefix := "/" + ns + "/prod/"
	fake.PutParameter(prefix+"db/password", "pw", "SecureString")
	fake.PutParameter(prefix+"db/user", "app", "String")
	fake.PutParameter(prefix+"api-key", "k1", "SecureString")
	fake.PutParameter("/"+ns+"/staging/api-key", "not-this", "SecureString")
	newES(t, ns, "app", "ps", withRefresh(2*time.Second), withDataFrom(prefix, ""))
	waitSecretData(t, ns, "app", map[string]string{"db_password": "pw", "db_user": "app", "api-key": "k1"})
	fake.PutParameter(prefix+"cache/url", "redis://cache", "String")
	waitSecretData(t, ns, "app", map[string]string{"db_password": "pw", "db_user": "app", "api-key": "k1", "cache_url": "redis://cache"})

	// Two names that map to one key are a clear error; the target keeps
	// what it had.
	fake.PutParameter(prefix+"db_user", "clash", "String")
	waitCondition(t, ns, "app", "PropertyError", prefix+"db/user", prefix+"db_user")
	waitSecretData(t, ns, "app", map[string]string{"db_password": "pw", "db_user": "app", "api-key": "k1", "cache_url": "redis://cache"})
}

// TestAWSPublishingTagsAndRefusesForeignSecret: a PushSecret creates a
// secret tagged with its owner marker and its tags; a secret that someone
// else created is refused and left as it was.
func TestAWSPublishingTagsAndRefusesForeignSecret(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "publisher")
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", viaStoreOpt("SecretStore", "sm", "pub/"+ns+"/db", map[string]string{"team": "a"}))
	waitPushReady(t, ns, "p")
	tags := fake.SecretTags("pub/" + ns + "/db")
	if !strings.HasPrefix(tags[awsbase.OwnerTag], "PushSecret/"+ns+"/p") || tags["team"] != "a" {
		t.Errorf("tags of the published secret: %v", tags)
	}

	fake.PutSecretString("pub/"+ns+"/foreign", `{"password":"theirs"}`)
	newPush(t, ns, "q", "src", viaStoreOpt("SecretStore", "sm", "pub/"+ns+"/foreign", nil))
	waitPushCondition(t, ns, "q", "NotOwned", "pub/"+ns+"/foreign", awsbase.OwnerTag)
	if got := fake.SecretTags("pub/" + ns + "/foreign"); len(got) != 0 {
		t.Errorf("the foreign secret was tagged: %v", got)
	}
}

// viaStoreOpt publishes to remote key name through a store, with tags.
func viaStoreOpt(kind, store, name string, tags map[string]string) pushOpt {
	return pushTo(name, viaStore(kind, store), func(d *v1alpha1.PushSecretDestination) { d.Metadata.Tags = tags })
}

// TestAWSManyExternalSecretsReadInBatches: 100 ExternalSecrets of one store,
// each reading its own secret, are all synced with BatchGetSecretValue
// calls only (counted by the fake). How many calls depends on how many
// reconciles fall within one batch window, so the figure is printed, and
// the provider's own test asserts the count for 100 reads due together.
func TestAWSManyExternalSecretsReadInBatches(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "many")
	const n = 100
	for i := range n {
		fake.PutSecretString(fmt.Sprintf("many/%03d", i), fmt.Sprintf(`{"v":"%d"}`, i))
	}
	fake.ResetCalls()
	for i := range n {
		newES(t, ns, fmt.Sprintf("es-%03d", i), "sm", withData("v", fmt.Sprintf("many/%03d", i), "v"))
	}
	for i := range n {
		waitSecretData(t, ns, fmt.Sprintf("es-%03d", i), map[string]string{"v": fmt.Sprint(i)})
	}
	batches, singles := fake.Calls("secretsmanager:BatchGetSecretValue"), fake.Calls("secretsmanager:GetSecretValue")
	t.Logf("%d ExternalSecrets created one after another: %d BatchGetSecretValue calls, %d GetSecretValue calls", n, batches, singles)
	if singles != 0 || batches == 0 || batches > n {
		t.Errorf("%d secrets cost %d batch and %d single calls; want only batch calls, at most one per secret", n, batches, singles)
	}
}

// TestAWSManyExternalSecretsAtLatencyReadInFewBatches: 30 ExternalSecrets
// created over a second, each reading its own secret of a store that
// answers in 50-500ms, are synced with a few BatchGetSecretValue calls:
// the reads that come while a call is in flight go out together when it
// ends, rather than one call for each few milliseconds' worth.
//
// Serial: counts batches against the pace of its creations and syncs, which the other tests' load would spread out.
func TestAWSManyExternalSecretsAtLatencyReadInFewBatches(t *testing.T) {
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "latency")
	const n = 30
	for i := range n {
		fake.PutSecretString(fmt.Sprintf("slow/%02d", i), fmt.Sprintf(`{"v":"%d"}`, i))
	}
	fake.SetLatency(50*time.Millisecond, 500*time.Millisecond)
	fake.ResetCalls()
	for i := range n {
		newES(t, ns, fmt.Sprintf("es-%02d", i), "sm", withData("v", fmt.Sprintf("slow/%02d", i), "v"))
		time.Sleep(time.Second / n)
	}
	for i := range n {
		waitSecretData(t, ns, fmt.Sprintf("es-%02d", i), map[string]string{"v": fmt.Sprint(i)})
	}
	batches, singles := fake.Calls("secretsmanager:BatchGetSecretValue"), fake.Calls("secretsmanager:GetSecretValue")
	t.Logf("%d ExternalSecrets created over a second at 50-500ms: %d BatchGetSecretValue calls of %v ids, %d GetSecretValue calls",
		n, batches, fake.BatchSizes("secretsmanager:BatchGetSecretValue"), singles)
	if singles != 0 || batches > 15 {
		t.Errorf("%d secrets at 50-500ms cost %d batch and %d single calls; want only batch calls, at most 15", n, batches, singles)
	}
}

// TestAWSParameterStorePinnedReadsWithoutSelector: an ExternalSecret that
// reads a parameter at its current version, a version number and a label
// gets each, from a store whose GetParameters answers leave out Selector
// (as some emulators do).
func TestAWSParameterStorePinnedReadsWithoutSelector(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "ps", "awsps", "pinned")
	name := "/" + ns + "/db"
	fake.PutParameter(name, "one", "SecureString")
	fake.PutParameter(name, "two", "SecureString")
	fake.LabelParameter(name, 1, "stable")
	fake.OmitSelectors(true)
	pinned := func(secretKey, version string) esOpt {
		return func(es *v1alpha1.ExternalSecret) {
			es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: secretKey, RemoteRef: v1alpha1.RemoteReference{Key: name, Version: version}})
		}
	}
	newES(t, ns, "db", "ps", withData("current", name, ""), pinned("v1", "1"), pinned("stable", "stable"))
	waitSecretData(t, ns, "db", map[string]string{"current": "two", "v1": "one", "stable": "one"})
	waitReady(t, ns, "db")
}

// TestAWSThrottlingKeepsTheTargetAndBacksOff: with every read throttled,
// the condition says so, the target keeps its data, and the calls made
// in the following seconds are printed (the SDK's retryer makes at most
// awsbase.MaxAttempts attempts per read, then the work queue backs off).
func TestAWSThrottlingKeepsTheTargetAndBacksOff(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "sm", "awssm", "busy")
	fake.PutSecretString("k", `{"v":"`+sentinel+`"}`)
	newES(t, ns, "es", "sm", withRefresh(time.Second), withData("v", "k", "v"))
	waitSecretData(t, ns, "es", map[string]string{"v": sentinel})

	actions := []string{"secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "secretsmanager:DescribeSecret"}
	for _, a := range actions {
		fake.Throttle(a, true)
	}
	fake.PutSecretString("k", `{"v":"new"}`)
	waitCondition(t, ns, "es", "Throttled", "ThrottlingException")
	waitSecretData(t, ns, "es", map[string]string{"v": sentinel})
	fake.ResetCalls()
	time.Sleep(10 * time.Second)
	calls := 0
	for _, a := range actions {
		calls += fake.Calls(a)
	}
	t.Logf("throttled store with a 1s refresh: %d calls in 10s, attempts included", calls)

	for _, a := range actions {
		fake.Throttle(a, false)
	}
	waitSecretData(t, ns, "es", map[string]string{"v": "new"})
	waitReady(t, ns, "es")
	assertNoLeak(t, ns)
}
