package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// vaultCerts counts the certificates a PKI mount has issued (its CA's
// included), as an operator would: LIST MOUNT/certs.
func vaultCerts(t *testing.T, mount string) int {
	t.Helper()
	var out struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	must(t, vaultSrv.Do("LIST", mount+"/certs", nil, &out))
	return len(out.Data.Keys)
}

// TestVaultPKICertificateRenewsOnceAndSurvivesRestart: a certificate from a
// real Vault PKI role lands in a kubernetes.io/tls Secret whose chain
// verifies against the CA and whose key matches; a controller killed and
// started again issues nothing; the certificate is replaced once,
// renewBefore its expiry; the private key is in no status or event; the
// certificate is revoked when the ExternalSecret is deleted.
//
// Serial: the 30 s certificate leaves 15 s for the controller's restart
// and a 5 s check that it issues nothing before it is renewed, a bound
// that the load of other tests could break.
func TestVaultPKICertificateRenewsOnceAndSurvivesRestart(t *testing.T) {
	needVault(t)
	ns := newNamespace(t, nil)
	mount := "pki-" + ns
	must(t, vaultSrv.Do(http.MethodPost, "sys/mounts/"+mount, map[string]any{"type": "pki", "config": map[string]any{"max_lease_ttl": "2h"}}, nil))
	t.Cleanup(func() { _ = vaultSrv.Do(http.MethodDelete, "sys/mounts/"+mount, nil, nil) })
	must(t, vaultSrv.Do(http.MethodPost, mount+"/root/generate/internal", map[string]any{"common_name": "watchword test root", "ttl": "2h"}, nil))
	must(t, vaultSrv.Do(http.MethodPost, mount+"/roles/web", map[string]any{"allow_any_name": true, "max_ttl": "1h"}, nil))

	class := "pki-" + ns
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Path: "secret", Version: "v2", Auth: tokenAuth("vault-token")}}}}))
	p := startController(t, class)
	certs0 := vaultCerts(t, mount)
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls"},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "vault"},
			Target: v1alpha1.ExternalSecretTarget{Template: &v1alpha1.ExternalSecretTemplate{Type: string(corev1.SecretTypeTLS), Data: map[string]string{
				"tls.crt": "{{ .certificate }}\n{{ .ca_chain }}", "tls.key": "{{ .private_key }}", "ca.crt": "{{ .issuing_ca }}"}}},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{VaultDynamic: &v1alpha1.VaultDynamicSecret{
				Path: mount + "/issue/web", Method: http.MethodPost, Parameters: map[string]string{"common_name": "web.example", "ttl": "30s"},
				RenewBefore: &metav1.Duration{Duration: 15 * time.Second}}}}}}
	must(t, k8s.Create(context.Background(), es))

	eventually(t, wait, func() (bool, string) {
		s, err := getSecret(ns, "web-tls")
		return err == nil && len(s.Data["tls.crt"]) > 0, "no certificate in the target yet"
	})
	s, err := getSecret(ns, "web-tls")
	must(t, err)
	first := checkCertificate(t, s)
	lease := waitReady(t, ns, "web-tls").Status.Lease
	if lease == nil || !strings.HasPrefix(lease.ID, "pki:"+mount+":") || lease.Renewable {
		t.Fatalf("status.lease = %+v, want the certificate held by its serial", lease)
	}
	if n := vaultCerts(t, mount); n != certs0+1 {
		t.Fatalf("Vault issued %d certificates, want 1", n-certs0)
	}

	// A controller killed and started again issues nothing new.
	p.kill(t)
	startController(t, class)
	consistently(t, 5*time.Second, func() (bool, string) {
		return vaultCerts(t, mount) == certs0+1, "the restarted controller issued a certificate"
	})
	if got := getES(t, ns, "web-tls").Status.Lease; got == nil || got.ID != lease.ID {
		t.Fatalf("after the restart the status holds %+v, want %q", got, lease.ID)
	}

	// renewBefore (15s) ahead of its expiry, one new certificate, once.
	eventually(t, 30*time.Second, func() (bool, string) {
		renewed, gerr := getSecret(ns, "web-tls")
		return gerr == nil && certSerial(t, renewed) != first, "the certificate was not renewed before its expiry"
	})
	if now := time.Now(); !now.Before(lease.ExpiryTime.Time) {
		t.Fatalf("renewed at %s, after the expiry %s", now, lease.ExpiryTime)
	}
	s, err = getSecret(ns, "web-tls")
	must(t, err)
	checkCertificate(t, s)
	consistently(t, 5*time.Second, func() (bool, string) {
		n := vaultCerts(t, mount)
		return n == certs0+2, fmt.Sprintf("Vault issued %d certificates, want 2 (one renewal)", n-certs0)
	})
	waitEvent(t, ns, "web-tls", "Rotated", "tls.crt")

	// The private key is in no status and no event.
	key := string(s.Data["tls.key"])
	raw, err := json.Marshal(getES(t, ns, "web-tls").Status)
	must(t, err)
	var evs corev1.EventList
	must(t, k8s.List(context.Background(), &evs, client.InNamespace(ns)))
	for _, e := range evs.Items {
		raw = append(raw, e.Message...)
	}
	if strings.Contains(string(raw), "PRIVATE KEY") || strings.Contains(string(raw), strings.TrimSpace(key)[40:80]) {
		t.Fatal("a private key shows in the status or an event")
	}

	// Deleting the ExternalSecret revokes the certificate it holds
	// (deletionPolicy Revoke, the default).
	cur := getES(t, ns, "web-tls")
	serial := strings.TrimPrefix(cur.Status.Lease.ID, "pki:"+mount+":")
	must(t, k8s.Delete(context.Background(), cur))
	waitGone(t, cur)
	var info struct {
		Data struct {
			RevocationTime int64 `json:"revocation_time"`
		} `json:"data"`
	}
	must(t, vaultSrv.Do(http.MethodGet, mount+"/cert/"+serial, nil, &info))
	if info.Data.RevocationTime == 0 {
		t.Fatalf("certificate %s was not revoked", serial)
	}
}

// checkCertificate verifies the target's chain against its CA for the
// name asked for, and that its key is the certificate's; it returns the
// serial number.
func checkCertificate(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	if s.Type != corev1.SecretTypeTLS {
		t.Fatalf("target type %q, want %q", s.Type, corev1.SecretTypeTLS)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		t.Fatalf("tls.crt and tls.key do not match: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	leaf := leafOf(t, s)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "web.example"}); err != nil {
		t.Fatalf("the chain does not verify against the CA: %v", err)
	}
	return leaf.SerialNumber.String()
}

func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(s.Data["tls.crt"])
	if b == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	must(t, err)
	return c
}

func certSerial(t *testing.T, s *corev1.Secret) string { return leafOf(t, s).SerialNumber.String() }
