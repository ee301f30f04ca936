package vault

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/test/vaultserver"
)

type pki struct {
	caPEM           []byte
	serverCert      []byte
	serverKey       []byte
	clientCert      []byte
	clientKey       []byte
	otherClientCert []byte
	otherClientKey  []byte
	// otherCA is the PEM certificate of the CA of otherClientCert.
	otherCA []byte
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	parent, signer := ca, caKey
	if ca == nil {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	must(t, err)
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	mk := func(serial int64, cn string) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	}
	caTmpl := mk(1, "test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid, caTmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	caPEM, caKeyPEM := issue(t, nil, nil, caTmpl)
	caBlock, _ := pem.Decode(caPEM)
	ca, _ := x509.ParseCertificate(caBlock.Bytes)
	kb, _ := pem.Decode(caKeyPEM)
	caKey, _ := x509.ParseECPrivateKey(kb.Bytes)
	p := &pki{caPEM: caPEM}
	srv := mk(2, "vault")
	srv.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	srv.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	p.serverCert, p.serverKey = issue(t, ca, caKey, srv)
	cli := mk(3, "watchword")
	cli.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	p.clientCert, p.clientKey = issue(t, ca, caKey, cli)
	// A client certificate from another CA, which the server must refuse.
	otherTmpl := mk(4, "other CA")
	otherTmpl.IsCA, otherTmpl.BasicConstraintsValid, otherTmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	otherPEM, otherKeyPEM := issue(t, nil, nil, otherTmpl)
	ob, _ := pem.Decode(otherPEM)
	other, _ := x509.ParseCertificate(ob.Bytes)
	okb, _ := pem.Decode(otherKeyPEM)
	otherKey, _ := x509.ParseECPrivateKey(okb.Bytes)
	p.otherClientCert, p.otherClientKey = issue(t, other, otherKey, cli)
	p.otherCA = otherPEM
	return p
}

// tlsDeps serves Secrets and ConfigMaps from memory.
type tlsDeps struct {
	deps
	configMaps map[string][]byte
}

func (d tlsDeps) ConfigMapValue(_ context.Context, _, name, key string) ([]byte, error) {
	v, ok := d.configMaps[name+"/"+key]
	if !ok {
		return nil, errors.New("no such ConfigMap key")
	}
	return v, nil
}

// startTLSVault starts a Vault server whose listener presents p's server
// certificate and requires a client certificate of p's CA.
func startTLSVault(t *testing.T, p *pki) *vaultserver.Server {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		must(t, os.WriteFile(path, b, 0o600))
		return path
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	pair, err := tls.X509KeyPair(p.clientCert, p.clientKey)
	must(t, err)
	files := &vaultserver.TLSFiles{CertFile: write("server.crt", p.serverCert), KeyFile: write("server.key", p.serverKey),
		ClientCAFile: write("ca.crt", p.caPEM),
		Client:       &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}}
	bin, err := vaultserver.Find()
	must(t, err)
	tlsSrv, err := vaultserver.StartTLS(bin, files)
	must(t, err)
	t.Cleanup(tlsSrv.Close)
	return tlsSrv
}

func TestTLSWithCABundlesAndClientCertificate(t *testing.T) {
	needVault(t)
	p := newPKI(t)
	tlsSrv := startTLSVault(t, p)
	must(t, tlsSrv.PutKV2("secret", "tls/x", map[string]any{"v": "over-mtls"}))

	secrets := map[string][]byte{
		"vault/token": []byte(tlsSrv.RootToken), "ca/ca.crt": p.caPEM,
		"client/tls.crt": p.clientCert, "client/tls.key": p.clientKey,
		"other/tls.crt": p.otherClientCert, "other/tls.key": p.otherClientKey,
	}
	d := tlsDeps{deps: deps{secrets: secrets}, configMaps: map[string][]byte{"ca/ca.crt": p.caPEM}}
	clientTLS := &v1alpha1.VaultClientTLS{CertSecretRef: v1alpha1.SecretKeySelector{Name: "client", Key: "tls.crt"},
		KeySecretRef: v1alpha1.SecretKeySelector{Name: "client", Key: "tls.key"}}
	build := func(spec v1alpha1.VaultProvider) (engine.Reader, error) {
		spec.Server, spec.Version = tlsSrv.Addr(), "v2"
		spec.Auth = v1alpha1.VaultAuth{TokenSecretRef: &v1alpha1.SecretKeySelector{Name: "vault", Key: "token"}}
		ops, err := Factory{}.New(context.Background(), provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "v",
			Spec: &v1alpha1.SecretStoreProvider{Vault: &spec}}, d)
		return ops.Reader, err
	}
	cases := map[string]v1alpha1.VaultProvider{
		"CA in the spec":    {CABundle: p.caPEM, TLS: clientTLS},
		"CA in a Secret":    {CAProvider: &v1alpha1.CAProvider{Type: "Secret", Name: "ca", Key: "ca.crt"}, TLS: clientTLS},
		"CA in a ConfigMap": {CAProvider: &v1alpha1.CAProvider{Type: "ConfigMap", Name: "ca", Key: "ca.crt"}, TLS: clientTLS},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := build(spec)
			must(t, err)
			obj, err := r.GetSecret(context.Background(), engine.Ref{Key: "tls/x"})
			if err != nil || string(obj.Fields["v"]) != "over-mtls" {
				t.Fatalf("read over mTLS: %v %v", obj, err)
			}
		})
	}
	failures := map[string]struct {
		spec v1alpha1.VaultProvider
		want string
	}{
		"no CA":                 {v1alpha1.VaultProvider{TLS: clientTLS}, "certificate"},
		"no client certificate": {v1alpha1.VaultProvider{CABundle: p.caPEM}, "cannot reach Vault"},
		"client cert of another CA": {v1alpha1.VaultProvider{CABundle: p.caPEM, TLS: &v1alpha1.VaultClientTLS{
			CertSecretRef: v1alpha1.SecretKeySelector{Name: "other", Key: "tls.crt"}, KeySecretRef: v1alpha1.SecretKeySelector{Name: "other", Key: "tls.key"}}},
			"cannot reach Vault"},
	}
	for name, tc := range failures {
		t.Run(name, func(t *testing.T) {
			r, err := build(tc.spec)
			if err == nil {
				_, err = r.GetSecret(context.Background(), engine.Ref{Key: "tls/x"})
			}
			if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an unavailable error mentioning %q", err, tc.want)
			}
			if strings.Contains(fmt.Sprint(err), "over-mtls") {
				t.Fatal("the error leaks a value")
			}
		})
	}
	if _, err := build(v1alpha1.VaultProvider{CABundle: []byte("not a PEM")}); !errors.Is(err, engine.ErrInvalidConfig) {
		t.Fatalf("a CA bundle without certificates: %v", err)
	}
}
