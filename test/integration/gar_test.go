package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/gcpfake"
)

// These tests ask the Google fake (test/gcpfake) for Artifact Registry pull
// tokens (dataFrom registryToken, registry GAR): access tokens of the
// store's credentials, issued by the fake's token endpoints through
// Google's own auth library.

// TestGARRegistryTokenFromWorkloadIdentityRenewedBeforeExpiry: a gcpsm
// store with workload identity federation gets an access token of the
// service account it impersonates, written as a dockerconfigjson Secret
// for the host the entry names (user oauth2accesstoken), its expiry in
// status; plain refreshes ask for no new token while it is fresh; one new
// token replaces it renewBefore its expiry; no token reaches events or
// conditions.
func TestGARRegistryTokenFromWorkloadIdentityRenewedBeforeExpiry(t *testing.T) {
	parallel(t)
	fake := gcpServer()
	ns := newNamespace(t, nil)
	prefix := strings.Split(ns, "-")[0]
	puller, _ := fake.NewServiceAccount(prefix+"-puller", "artifactregistry.repositories.downloadArtifacts")
	// The fake's tokens of this account last 2 minutes (Google's last an
	// hour), so that the renewal, a minute before the expiry, comes soon.
	fake.SetTokenLifetime("serviceAccount:"+puller, 2*time.Minute)
	fake.AllowImpersonation(gcpfake.FederatedPrincipal(gcpPool, "system:serviceaccount:"+ns+":puller"), puller)
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "puller"}}))
	gcpStore(t, ns, "gcp", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Auth: v1alpha1.GCPSMAuth{
		WorkloadIdentityFederation: &v1alpha1.GCPWorkloadIdentityFederation{Audience: gcpPool,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "puller"}, ServiceAccountEmail: puller}}})
	const host = "europe-docker.pkg.dev"
	registryTokenES(t, ns, "pull", "gcp", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryGAR, Host: host,
		RenewBefore: &metav1.Duration{Duration: time.Minute}})

	first := waitTokenHeld(t, ns, "pull")
	gotHost, user, pass, auth := dockerAuth(t, ns, "pull")
	if gotHost != host || user != "oauth2accesstoken" || auth != base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) {
		t.Fatalf("the .dockerconfigjson holds registry %q user %q; want %s and oauth2accesstoken", gotHost, user, host)
	}
	if who, ok := fake.TokenPrincipal(pass); !ok || who != "serviceAccount:"+puller {
		t.Fatalf("the password is not a live token of %s (it is one of %q, live %v)", puller, who, ok)
	}
	if !strings.HasPrefix(first.ID, "gar:"+host+"@") || first.Renewable || first.ExpiryTime.Sub(first.IssueTime.Time) > 2*time.Minute {
		t.Fatalf("status.lease %+v does not record the token's registry and its 2-minute expiry", first)
	}
	issued := fake.Calls("generateAccessToken")

	// Refreshes every 2 s ask for nothing while the token is fresh (it is
	// due a minute before its expiry). A force-sync would ask for a new one
	// (docs/providers.md), so none is sent here.
	consistently(t, 10*time.Second, func() (bool, string) {
		n := fake.Calls("generateAccessToken")
		l := getES(t, ns, "pull").Status.Lease
		return l != nil && l.ID == first.ID, fmt.Sprintf("lease %+v replaced while fresh (%d more impersonations)", l, n-issued)
	})

	// Renewal: once, renewBefore the expiry, as a new token in the target.
	renewed := waitTokenReplaced(t, ns, "pull", first)
	eventually(t, wait, func() (bool, string) {
		_, _, pw, _ := dockerAuth(t, ns, "pull")
		who, ok := fake.TokenPrincipal(pw)
		return pw != pass && ok && who == "serviceAccount:"+puller, "the target does not hold a new live token"
	})
	consistently(t, 3*time.Second, func() (bool, string) {
		l := getES(t, ns, "pull").Status.Lease
		return l != nil && l.ID == renewed.ID, fmt.Sprintf("lease %+v replaced again", l)
	})

	// No token in events or conditions.
	evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	_, _, now, _ := dockerAuth(t, ns, "pull")
	for _, e := range evs.Items {
		if strings.Contains(e.Message, pass) || strings.Contains(e.Message, now) {
			t.Errorf("event %s holds a token", e.Reason)
		}
	}
	for _, c := range getES(t, ns, "pull").Status.Conditions {
		if strings.Contains(c.Message, pass) || strings.Contains(c.Message, now) {
			t.Errorf("condition %s holds a token", c.Type)
		}
	}
}

// TestGARRegistryTokenFromAKeyAndRefusals: a service-account key gets an
// OAuth access token (not the self-signed JWT Secret Manager takes) for
// the registry; an ECR entry on a gcpsm store is refused with
// NotSupported naming what to use, and so is a GAR entry on a
// ClusterSecretStore; a principal that may not impersonate the service
// account is PermissionDenied. None of them writes a target.
func TestGARRegistryTokenFromAKeyAndRefusals(t *testing.T) {
	parallel(t)
	fake := gcpServer()
	ns := newNamespace(t, nil)
	prefix := strings.Split(ns, "-")[0]
	email, key := fake.NewServiceAccount(prefix+"-keyed", "artifactregistry.repositories.downloadArtifacts")
	createSecret(t, ns, "gcp-key", map[string]string{"key.json": string(key)})
	gcpStore(t, ns, "gcp", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Auth: v1alpha1.GCPSMAuth{SecretRef: &v1alpha1.GCPSMSecretRef{
		SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp-key", Key: "key.json"}}}})
	registryTokenES(t, ns, "pull", "gcp", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryGAR, Host: "gcr.io"})
	held := waitTokenHeld(t, ns, "pull")
	host, user, pass, _ := dockerAuth(t, ns, "pull")
	if host != "gcr.io" || user != "oauth2accesstoken" || strings.Count(pass, ".") == 2 {
		t.Fatalf("registry %q user %q, password a JWT %v; want gcr.io, oauth2accesstoken and an access token", host, user, strings.Count(pass, ".") == 2)
	}
	if who, ok := fake.TokenPrincipal(pass); !ok || who != "serviceAccount:"+email {
		t.Fatalf("the password is not a live access token of %s", email)
	}
	// The default renewBefore for GAR is ten minutes of the hour.
	if held.ExpiryTime.Sub(held.IssueTime.Time) < 50*time.Minute {
		t.Errorf("lease %+v: want a token of about an hour", held)
	}

	registryTokenES(t, ns, "ecr", "gcp", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR})
	waitCondition(t, ns, "ecr", "NotSupported", "registry GAR")
	if _, err := getSecret(ns, "ecr"); err == nil {
		t.Error("a target was written for a refused entry")
	}

	// A ClusterSecretStore with the same key issues none: the token would
	// carry its whole identity to every namespace that may use it.
	css := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: "gar-" + ns},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{GCPSM: &v1alpha1.GCPSMProvider{ProjectID: gcpProject,
			Auth: v1alpha1.GCPSMAuth{SecretRef: &v1alpha1.GCPSMSecretRef{SecretAccessKeySecretRef: v1alpha1.SecretKeySelector{Name: "gcp-key", Key: "key.json", Namespace: ns}}}}}}}
	must(t, k8s.Create(context.Background(), css))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), css) })
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: css.Name, Kind: v1alpha1.ClusterSecretStoreKind},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{RegistryToken: &v1alpha1.RegistryToken{Registry: v1alpha1.RegistryGAR, Host: "gcr.io"}}}}}
	must(t, k8s.Create(context.Background(), es))
	waitCondition(t, ns, "shared", "NotSupported", "ClusterSecretStore issues no Artifact Registry tokens")
	if _, err := getSecret(ns, "shared"); err == nil {
		t.Error("a ClusterSecretStore's token was written")
	}

	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	gcpStore(t, ns, "gcp-intruder", &v1alpha1.GCPSMProvider{ProjectID: gcpProject, Auth: v1alpha1.GCPSMAuth{
		WorkloadIdentityFederation: &v1alpha1.GCPWorkloadIdentityFederation{Audience: gcpPool,
			ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "intruder"}, ServiceAccountEmail: email}}})
	registryTokenES(t, ns, "denied", "gcp-intruder", v1alpha1.RegistryToken{Registry: v1alpha1.RegistryGAR, Host: "gcr.io"})
	waitCondition(t, ns, "denied", "PermissionDenied", "impersonate")
	if _, err := getSecret(ns, "denied"); err == nil {
		t.Error("a target was written for a refused token")
	}
}
