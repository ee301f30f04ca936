package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// webhookClientCA is the PEM file of the CA that signed the client
// certificate the suite's API server presents to admission webhooks
// (webhookClientArgs).
var webhookClientCA string

// webhookClientArgs makes a CA and a client certificate of it in dir, and
// the admission configuration that has the API server present that
// certificate to every admission webhook it calls, as a cluster's
// administrator sets it up for an authenticated webhook
// (docs/operations.md). It returns the API server's flags and the CA's
// file.
func webhookClientArgs(dir string) (map[string][]string, string, error) {
	caPEM, caCert, caKey, err := newPEMCA("webhook client CA")
	if err != nil {
		return nil, "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-webhook-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	files := map[string][]byte{
		"ca.crt":     caPEM,
		"client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"kubeconfig": fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: %s
    client-key: %s
`, filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")),
		"admission.yaml": fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "kubeconfig")),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, "", err
		}
	}
	return map[string][]string{"admission-control-config-file": {filepath.Join(dir, "admission.yaml")}}, filepath.Join(dir, "ca.crt"), nil
}

func newPEMCA(name string) ([]byte, *x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert, key, err
}

// TestWebhookAuthenticatesTheAPIServer: a webhook started with
// --webhook-client-ca lets in the API server, which presents the client
// certificate its admission configuration gives it, and refuses at the
// TLS handshake a caller without a certificate. The same webhook trusting
// another CA refuses the API server's calls, which then fail open.
func TestWebhookAuthenticatesTheAPIServer(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	w := startWebhookWith(t, ns, 0, 0, "", nil, webhookClientCA)
	fakeStore(t, ns, "store", fakeEntry{key: "a", value: "from-first"}, fakeEntry{key: "b", value: "from-second"})
	newES(t, ns, "first", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns, "first")
	// The API server's call got in: the webhook's refusal reached the user.
	refusedWith(t, esObject(ns, "second", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", "")),
		"ExternalSecret "+ns+"/first")

	// A caller without a client certificate, or with one of another CA,
	// does not complete the handshake.
	url := fmt.Sprintf("127.0.0.1:%d", w.port)
	plain := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // the test checks the server's check of its callers
	if conn, err := tls.Dial("tcp", url, plain); err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, rerr := conn.Read(make([]byte, 1)); rerr == nil {
			t.Error("a caller without a client certificate was let in")
		}
		_ = conn.Close()
	}

	// Trusting another CA, the webhook turns the API server away; it fails
	// open, so the second writer is admitted here (the controller then
	// refuses it at reconcile).
	w.stop()
	other := t.TempDir()
	otherPEM, _, _, err := newPEMCA("another CA")
	must(t, err)
	otherCA := filepath.Join(other, "ca.crt")
	must(t, os.WriteFile(otherCA, otherPEM, 0o600))
	ns2 := newNamespace(t, nil)
	startWebhookWith(t, ns2, 0, 0, "", nil, otherCA)
	fakeStore(t, ns2, "store", fakeEntry{key: "a", value: "from-first"}, fakeEntry{key: "b", value: "from-second"})
	newES(t, ns2, "first", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "a", ""))
	waitReady(t, ns2, "first")
	// Once the webhook's cache knows the holder, a webhook that let the API
	// server in would refuse; this one never sees the call.
	time.Sleep(2 * time.Second)
	newES(t, ns2, "second", "store", withTarget("shared", v1alpha1.CreationPolicyOwner), withData("v", "b", ""))
}
