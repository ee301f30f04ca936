package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider/azurekv"
	"github.com/watchword-dev/watchword/test/azurefake"
)

// The Key Vault tests run against test/azurefake, a strict loopback Key
// Vault and Entra ID (no Azure emulator can run here), reached by the
// operator's azurekv provider through azureTransport. Entra ID's token
// endpoint checks a workload identity's assertion with a TokenReview of
// the test API server, as a federated credential's issuer check would.

const azureTenant = "5f0c3c4e-1b2a-4c3d-8e9f-0a1b2c3d4e5f"

var (
	azureOnce      sync.Once
	azureFake      *azurefake.Server
	azureHTTP      *http.Client
	azureErr       error
	azureTransport = &lazyAzureTransport{}
)

// lazyAzureTransport sends the provider's requests to the fake once a test
// has started it.
type lazyAzureTransport struct{}

func (lazyAzureTransport) Do(r *http.Request) (*http.Response, error) {
	if azureHTTP == nil {
		return nil, fmt.Errorf("the Azure fake is not started")
	}
	return azureHTTP.Do(r)
}

// needAzure starts the fake once for the package.
func needAzure(t *testing.T) *azurefake.Server {
	t.Helper()
	azureOnce.Do(func() {
		f, err := azurefake.Start()
		if err != nil {
			azureErr = err
			return
		}
		f.VerifyAssertion = tokenReview(azurefake.AssertionAudience)
		azureFake, azureHTTP = f, f.Client()
	})
	if azureErr != nil {
		t.Fatalf("starting the Azure fake: %v", azureErr)
	}
	return azureFake
}

// tokenReview verifies a service-account token with the test API server,
// for an audience (the one Entra ID requires, or a GCP pool provider's).
func tokenReview(audience string) func(ctx context.Context, token string) (string, []string, error) {
	return func(ctx context.Context, token string) (string, []string, error) {
		tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
			Token: token, Audiences: []string{audience}}}, metav1.CreateOptions{})
		if err != nil {
			return "", nil, err
		}
		if !tr.Status.Authenticated {
			return "", nil, fmt.Errorf("token not authenticated")
		}
		return tr.Status.User.Username, tr.Status.Audiences, nil
	}
}

// azureVault makes a vault of the namespace in the fake and returns its host.
func azureVault(ns string) string {
	host := ns + "." + azurefake.Public.VaultSuffix
	azureFake.AddVault(host, azureTenant, azurefake.Public)
	return host
}

func azureStore(t *testing.T, ns, name, host string, auth v1alpha1.AzureKVAuth) {
	t.Helper()
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{AzureKV: &v1alpha1.AzureKVProvider{
			VaultURL: "https://" + host, TenantID: azureTenant, Auth: auth}}}}))
}

func versionOf(es *v1alpha1.ExternalSecret, key string) string {
	for _, v := range es.Status.Versions {
		if v.Key == key {
			return v.Version
		}
	}
	return ""
}

func TestAzureKeyVaultWorkloadIdentityReadsPropertiesAndFollowsVersions(t *testing.T) {
	parallel(t)
	fake := needAzure(t)
	ns := newNamespace(t, nil)
	host := azureVault(ns)
	clientID := strings.Split(ns, "-")[0] + "-app"
	fake.AddApp(azureTenant, clientID, "", "system:serviceaccount:"+ns+":reader", "get", "list")
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}))
	v1 := fake.SetSecret(host, "db", `{"user":"app","password":"`+sentinel+`"}`, nil)
	fake.SetSecret(host, "api-key", "plain-key-1", nil)
	azureStore(t, ns, "azure", host, v1alpha1.AzureKVAuth{WorkloadIdentity: &v1alpha1.AzureWorkloadIdentityAuth{
		ClientID: clientID, ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "reader"}}})
	tokensBefore := fake.Calls("token")
	newES(t, ns, "es", "azure", withData("user", "db", "user"), withData("key", "api-key", ""), withDataFrom("db", ""))
	waitSecretData(t, ns, "es", map[string]string{"user": "app", "key": "plain-key-1", "password": sentinel})
	es := waitReady(t, ns, "es")
	if got := versionOf(es, "db"); got != v1 {
		t.Errorf("status version of db %q; want %q", got, v1)
	}
	// The token exchange happened on the wire: the service account's token,
	// requested with the api://AzureADTokenExchange audience, passed the
	// API server's TokenReview at Entra ID's token endpoint.
	if fake.Calls("token") <= tokensBefore {
		t.Error("no token request reached Entra ID")
	}

	// A new version in the vault reaches the target, and its version the
	// status.
	v2 := fake.SetSecret(host, "db", `{"user":"app2","password":"`+sentinel+`"}`, nil)
	forceSync(t, ns, "es")
	waitSecretData(t, ns, "es", map[string]string{"user": "app2", "key": "plain-key-1", "password": sentinel})
	eventually(t, wait, func() (bool, string) {
		got := versionOf(getES(t, ns, "es"), "db")
		return got == v2, "status version " + got
	})

	// A service account without a federated credential is refused, and
	// the condition says why without any value.
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"}}))
	azureStore(t, ns, "azure-intruder", host, v1alpha1.AzureKVAuth{WorkloadIdentity: &v1alpha1.AzureWorkloadIdentityAuth{
		ClientID: clientID, ServiceAccountRef: v1alpha1.ServiceAccountSelector{Name: "intruder"}}})
	newES(t, ns, "es2", "azure-intruder", withData("user", "db", "user"))
	es2 := waitCondition(t, ns, "es2", "PermissionDenied", `service account "`+ns+`/intruder"`, "AADSTS700213")
	if c := readyCond(es2); strings.Contains(c.Message, sentinel) {
		t.Error("the condition holds a value")
	}
}

func TestAzureKeyVaultClientSecretRefusalThenRotation(t *testing.T) {
	parallel(t)
	fake := needAzure(t)
	ns := newNamespace(t, nil)
	host := azureVault(ns)
	clientID := strings.Split(ns, "-")[0] + "-app"
	fake.AddApp(azureTenant, clientID, "right-client-secret", "", "get", "list")
	fake.SetSecret(host, "db", "v1-value", nil)
	createSecret(t, ns, "azure-app", map[string]string{"secret": "wrong-client-secret"})
	azureStore(t, ns, "azure", host, v1alpha1.AzureKVAuth{ClientSecret: &v1alpha1.AzureClientSecretAuth{ClientID: clientID,
		ClientSecretRef: v1alpha1.SecretKeySelector{Name: "azure-app", Key: "secret"}}})
	newES(t, ns, "es", "azure", withData("v", "db", ""))
	es := waitCondition(t, ns, "es", "PermissionDenied", "AADSTS7000215", "client secret is wrong or expired", clientID)
	if strings.Contains(readyCond(es).Message, "wrong-client-secret") {
		t.Error("the condition holds the client secret")
	}
	// Fixing the Secret rebuilds the client without a restart.
	updateSecret(t, ns, "azure-app", func(s *corev1.Secret) { s.Data["secret"] = []byte("right-client-secret") })
	waitSecretData(t, ns, "es", map[string]string{"v": "v1-value"})
}

// azureCertificate makes a self-signed certificate and its key as PEM.
func azureCertificate(t *testing.T, cn string) (*x509.Certificate, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	k, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}))
}

// TestAzureKeyVaultClientCertificateRefusalThenFix signs in with a
// certificate credential from a Secret: the fake's Entra ID verifies the
// client assertion's signature with the registered certificate.
func TestAzureKeyVaultClientCertificateRefusalThenFix(t *testing.T) {
	parallel(t)
	fake := needAzure(t)
	ns := newNamespace(t, nil)
	host := azureVault(ns)
	clientID := strings.Split(ns, "-")[0] + "-cert-app"
	fake.AddApp(azureTenant, clientID, "", "", "get", "list")
	registered, registeredPEM := azureCertificate(t, "registered")
	fake.AddClientCertificate(azureTenant, clientID, registered)
	fake.SetSecret(host, "db", "via-certificate", nil)
	_, otherPEM := azureCertificate(t, "not-registered")
	createSecret(t, ns, "azure-cert", map[string]string{"tls.pem": otherPEM})
	azureStore(t, ns, "azure", host, v1alpha1.AzureKVAuth{ClientCertificate: &v1alpha1.AzureClientCertificateAuth{ClientID: clientID,
		CertificateRef: v1alpha1.SecretKeySelector{Name: "azure-cert", Key: "tls.pem"}}})
	newES(t, ns, "es", "azure", withData("v", "db", ""))
	es := waitCondition(t, ns, "es", "PermissionDenied", "AADSTS700027", "not registered", clientID)
	if strings.Contains(readyCond(es).Message, "PRIVATE KEY") {
		t.Error("the condition holds the key")
	}
	// Putting the registered certificate in the Secret rebuilds the client.
	updateSecret(t, ns, "azure-cert", func(s *corev1.Secret) { s.Data["tls.pem"] = []byte(registeredPEM) })
	waitSecretData(t, ns, "es", map[string]string{"v": "via-certificate"})
}

func TestAzureKeyVaultPushWritesWithTheOwnershipTag(t *testing.T) {
	parallel(t)
	fake := needAzure(t)
	ns := newNamespace(t, nil)
	host := azureVault(ns)
	clientID := strings.Split(ns, "-")[0] + "-app"
	fake.AddApp(azureTenant, clientID, "push-client-secret", "", "get", "list", "set", "delete")
	createSecret(t, ns, "azure-app", map[string]string{"secret": "push-client-secret"})
	azureStore(t, ns, "azure", host, v1alpha1.AzureKVAuth{ClientSecret: &v1alpha1.AzureClientSecretAuth{ClientID: clientID,
		ClientSecretRef: v1alpha1.SecretKeySelector{Name: "azure-app", Key: "secret"}}})
	fake.SetSecret(host, "foreign", "theirs", nil)
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	via := viaStore("SecretStore", "azure")
	newPush(t, ns, "p", "src", pushKey("password", "db-password"), pushTo("published", via))
	ps := waitPushReady(t, ns, "p")
	owner := "PushSecret/" + ns + "/p/" + string(ps.UID)
	eventually(t, wait, func() (bool, string) {
		value, tags, found := fake.Secret(host, "published")
		return found && value == `{"db-password":"`+sentinel+`"}` && tags[azurekv.OwnerTag] == owner,
			fmt.Sprintf("found %v, tags %v", found, tags)
	})
	if d := ps.Status.Destinations; len(d) != 1 || d[0].Version == "" {
		t.Errorf("destination status %+v", d)
	}

	// A secret without the tag is refused and left as it is.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations, v1alpha1.PushSecretDestination{Name: "foreign", ConfigRef: &v1alpha1.StoreRef{Name: "azure"}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", `"foreign"`, azurekv.OwnerTag, "1 of 2 destinations published")
	if value, _, _ := fake.Secret(host, "foreign"); value != "theirs" {
		t.Error("an untagged Key Vault secret was written over")
	}

	// Deleting the PushSecret deletes what it owns, and only that.
	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, _, found := fake.Secret(host, "published"); found {
		t.Error("the published Key Vault secret is still there")
	}
	if value, _, _ := fake.Secret(host, "foreign"); value != "theirs" {
		t.Error("an untagged Key Vault secret was deleted")
	}
}

func TestAzureKeyVaultManagedIdentityOnlyOnAClusterSecretStore(t *testing.T) {
	parallel(t)
	fake := needAzure(t)
	ns := newNamespace(t, nil)
	host := azureVault(ns)
	clientID := strings.Split(ns, "-")[0] + "-msi"
	fake.AddApp(azureTenant, clientID, "", "", "get", "list")
	fake.AddManagedIdentity(clientID, azureTenant, clientID)
	fake.SetSecret(host, "db", "via-managed-identity", nil)
	auth := v1alpha1.AzureKVAuth{ManagedIdentity: &v1alpha1.AzureManagedIdentityAuth{ClientID: clientID}}

	// A SecretStore may not act as the machine's identity.
	azureStore(t, ns, "azure", host, auth)
	newES(t, ns, "es", "azure", withData("v", "db", ""))
	waitCondition(t, ns, "es", "InvalidStoreConfig", "managedIdentity", "ClusterSecretStore")

	// A ClusterSecretStore, made by a cluster administrator, may.
	css := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: ns + "-azure"},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{AzureKV: &v1alpha1.AzureKVProvider{
			VaultURL: "https://" + host, Auth: auth}}, Namespaces: []string{ns}}}
	must(t, k8s.Create(context.Background(), css))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), css) })
	imds := fake.Calls("imds")
	newES(t, ns, "es2", css.Name, withClusterStore(css.Name), withData("v", "db", ""))
	waitSecretData(t, ns, "es2", map[string]string{"v": "via-managed-identity"})
	if fake.Calls("imds") <= imds {
		t.Error("no token was asked of the instance metadata endpoint")
	}
}
