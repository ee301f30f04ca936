package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider/gcpsm"
	"github.com/watchword-dev/watchword/test/gcpfake"
)

// The Secret Manager tests run against test/gcpfake, the real gRPC service
// of Secret Manager implemented on its generated server interface, with
// STS and IAM Credentials (no Secret Manager emulator can run here). Its
// token exchange checks a service account's token with a TokenReview of
// the test API server.

const (
	gcpProject = "watchword-it"
	gcpPool    = "//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/it/providers/cluster"
)

var (
	gcpOnce sync.Once
	gcpFake *gcpfake.Server
)

// gcpServer starts the fake once for the package; the registry holds the
// options that reach it.
func gcpServer() *gcpfake.Server {
	gcpOnce.Do(func() {
		f, err := gcpfake.Start(gcpProject)
		if err != nil {
			panic(fmt.Sprintf("starting the Secret Manager fake: %v", err))
		}
		f.VerifySubjectToken = tokenReview("https:" + gcpPool)
		f.AddPool(gcpPool)
		gcpFake = f
	})
	return gcpFake
}

func gcpStore(t *testing.T, ns, name string, spec *v1alpha1.GCPSMProvider) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{GCPSM: spec}}}))
}

func TestGCPSecretManagerWorkloadIdentityFederationRegionalVersions(t *testing.T) {
	parallel(t)
	fake := gcpServer()
	ns := newNamespace(t, nil)
	prefix := strings.Split(ns, "-")[0]
	reader, _ := fake.NewServiceAccount(prefix+"-reader", "secretmanager.versions.access", "secretmanager.versions.get")
	fake.AllowImpersonation(gcpfake.FederatedPrincipal(gcpPool, "system:serviceaccount:"+ns+":reader"), reader)
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}))
	secret := "projects/" + gcpProject + "/locations/europe-west1/secrets/" + prefix + "-db"
	fake.AddVersion(secret, []byte(`{"user":"app","password":"`+sentinel+`"}`))
	exchanges := fake.Calls("sts")
	gcpStore(t, ns, "gcp", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Location: "europe-west1", Auth: v1alpha1.GCPSMAuth{
		WorkloadIdentityFederation: &v1alpha1.GCPWorkloadIdentityFederation{Audience: gcpPool,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "reader"}, ServiceAccountEmail: reader}}})
	newES(t, ns, "es", "gcp", withData("user", prefix+"-db", "user"), withDataFrom(prefix+"-db", ""))
	waitSecretData(t, ns, "es", map[string]string{"user": "app", "password": sentinel})
	if got := versionOf(waitReady(t, ns, "es"), prefix+"-db"); got != "1" {
		t.Errorf("status version %q; want 1", got)
	}
	// The exchange happened on the wire, with a token the API server
	// reviewed, and the impersonation after it.
	if fake.Calls("sts") <= exchanges || fake.Calls("generateAccessToken") == 0 {
		t.Error("no token exchange or impersonation reached Google")
	}

	// A new version reaches the target and the status.
	fake.AddVersion(secret, []byte(`{"user":"app2","password":"`+sentinel+`"}`))
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"user": "app2", "password": sentinel})
	eventually(t, wait, func() (bool, string) {
		got := versionOf(getES(t, ns, "es"), prefix+"-db")
		return got == "2", "status version " + got
	})

	// A service account the pool lets in but that may not impersonate.
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	gcpStore(t, ns, "gcp-intruder", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Location: "europe-west1", Auth: v1alpha1.GCPSMAuth{
		WorkloadIdentityFederation: &v1alpha1.GCPWorkloadIdentityFederation{Audience: gcpPool,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "intruder"}, ServiceAccountEmail: reader}}})
	newES(t, ns, "es2", "gcp-intruder", withData("user", prefix+"-db", "user"))
	es2 := waitCondition(t, ns, "es2", "PermissionDenied", `"`+ns+`/intruder"`, "PERMISSION_DENIED")
	if strings.Contains(readyCond(es2).Message, sentinel) {
		t.Error("the condition holds a value")
	}
}

func TestGCPSecretManagerKeyAuthPublishesWithTheOwnershipLabel(t *testing.T) {
	parallel(t)
	fake := gcpServer()
	ns := newNamespace(t, nil)
	prefix := strings.Split(ns, "-")[0]
	_, key := fake.NewServiceAccount(prefix+"-pusher", "secretmanager.versions.access", "secretmanager.versions.get",
		"secretmanager.secrets.get", "secretmanager.secrets.create", "secretmanager.secrets.update",
		"secretmanager.versions.add", "secretmanager.secrets.delete")
	createSecret(t, ns, "gcp-key", map[string]string{"key.json": string(key)})
	gcpStore(t, ns, "gcp", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Auth: v1alpha1.GCPSMAuth{SecretRef: &v1alpha1.GCPSMSecretRef{
		SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp-key", Key: "key.json"}}}})
	base := "projects/" + gcpProject + "/secrets/"
	fake.AddVersion(base+prefix+"-foreign", []byte("theirs"))
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	newPush(t, ns, "p", "src", pushKey("password", "db-password"), pushTo(prefix+"-published", viaStore("SecretStore", "gcp")))
	ps := waitPushReady(t, ns, "p")
	owner := "PushSecret/" + ns + "/p/" + string(ps.UID)
	eventually(t, wait, func() (bool, string) {
		data, labels, found := fake.Secret(base + prefix + "-published")
		return found && string(data) == `{"db-password":"`+sentinel+`"}` && labels[gcpsm.OwnerLabel] == gcpsm.OwnerLabelValue(owner),
			fmt.Sprintf("found %v, labels %v", found, labels)
	})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations, v1alpha1.PushSecretDestination{Name: prefix + "-foreign", ConfigRef: &v1alpha1.StoreRef{Name: "gcp"}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", prefix+"-foreign", gcpsm.OwnerLabel, "1 of 2 destinations published")
	if data, _, _ := fake.Secret(base + prefix + "-foreign"); string(data) != "theirs" {
		t.Error("an unlabelled Secret Manager secret was written over")
	}
	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, _, found := fake.Secret(base + prefix + "-published"); found {
		t.Error("the published Secret Manager secret is still there")
	}
	if data, _, _ := fake.Secret(base + prefix + "-foreign"); string(data) != "theirs" {
		t.Error("an unlabelled Secret Manager secret was deleted")
	}
}
