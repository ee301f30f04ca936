package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a certificate for cn with the extended key usage.
func (ca *testCA) client(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serve runs a TLS server configured by callers and returns its address;
// each connection is answered with one byte once its handshake is done.
func serve(t *testing.T, callers *Callers) string {
	t.Helper()
	ca := newTestCA(t, "server CA")
	srvCert := ca.client(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	cfg := &tls.Config{Certificates: []tls.Certificate{srvCert}, MinVersion: tls.VersionTLS12}
	callers.Configure(cfg)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				if tc, ok := c.(*tls.Conn); ok && tc.Handshake() == nil {
					_, _ = c.Write([]byte{1})
				}
			}(conn)
		}
	}()
	return ln.Addr().String()
}

// call connects with cert (none when nil) and tells whether the server
// answered after the handshake.
func call(addr string, cert *tls.Certificate) bool {
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // the test checks the server's check of its callers, not the client's of the server
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	n, err := conn.Read(b)
	return err == nil && n == 1
}

func writeCA(t *testing.T, path string, cas ...*testCA) {
	t.Helper()
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.pem...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCallersOnlyLetInCertificatesTheClientCASigned(t *testing.T) {
	apiCA, otherCA := newTestCA(t, "api server client CA"), newTestCA(t, "other CA")
	file := filepath.Join(t.TempDir(), "ca.crt")
	writeCA(t, file, apiCA)
	callers, err := NewCallers(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, callers)

	good := apiCA.client(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)
	foreign := otherCA.client(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)
	serverOnly := apiCA.client(t, "kube-apiserver", x509.ExtKeyUsageServerAuth)
	if !call(addr, &good) {
		t.Error("a client certificate the client CA signed was refused")
	}
	if call(addr, nil) {
		t.Error("a caller without a certificate got in")
	}
	if call(addr, &foreign) {
		t.Error("a certificate of another CA got in")
	}
	if call(addr, &serverOnly) {
		t.Error("a certificate not made for client authentication got in")
	}
}

func TestCallersNamesNarrowTheCertificatesLetIn(t *testing.T) {
	apiCA := newTestCA(t, "api server client CA")
	file := filepath.Join(t.TempDir(), "ca.crt")
	writeCA(t, file, apiCA)
	callers, err := NewCallers(file, []string{"kube-apiserver-webhook-client"})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, callers)
	named := apiCA.client(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageClientAuth)
	other := apiCA.client(t, "some-other-client", x509.ExtKeyUsageClientAuth)
	if !call(addr, &named) {
		t.Error("the allowed name was refused")
	}
	if call(addr, &other) {
		t.Error("a certificate of the same CA with a name not allowed got in")
	}
}

func TestCallersFollowARotatedCABundle(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old CA"), newTestCA(t, "new CA")
	file := filepath.Join(t.TempDir(), "ca.crt")
	writeCA(t, file, oldCA)
	callers, err := NewCallers(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	callers.now = func() time.Time { return now }
	addr := serve(t, callers)
	oldCert, newCert := oldCA.client(t, "a", x509.ExtKeyUsageClientAuth), newCA.client(t, "a", x509.ExtKeyUsageClientAuth)
	if call(addr, &newCert) || !call(addr, &oldCert) {
		t.Fatal("before the rotation, only the old CA's certificate gets in")
	}
	writeCA(t, file, newCA)
	now = now.Add(reloadEvery)
	if !call(addr, &newCert) || call(addr, &oldCert) {
		t.Error("after the rotation, only the new CA's certificate gets in")
	}
	// A bundle that becomes invalid keeps the last good one, rather than
	// letting everyone in or no one.
	if err := os.WriteFile(file, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(reloadEvery)
	if !call(addr, &newCert) || call(addr, nil) {
		t.Error("an invalid bundle changed who gets in")
	}
}

func TestCallersRefuseAnUnusableBundleAtStart(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewCallers(filepath.Join(dir, "missing.crt"), nil); err == nil {
		t.Error("a missing CA file was accepted")
	}
	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("-----BEGIN NOTHING-----"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCallers(bad, nil); err == nil {
		t.Error("a file without a certificate was accepted")
	}
}
