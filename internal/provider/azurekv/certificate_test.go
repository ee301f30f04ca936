package azurekv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// selfSigned makes an RSA key and a self-signed certificate, as an app
// registration's certificate credential usually is.
func selfSigned(t *testing.T, cn string) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func pemOf(t *testing.T, key *rsa.PrivateKey, cert *x509.Certificate) []byte {
	t.Helper()
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
}

func certificateSpec(password bool) *v1alpha1.AzureKVProvider {
	c := &v1alpha1.AzureClientCertificateAuth{ClientID: appID, CertificateRef: v1alpha1.SecretKeySelector{Name: "azure", Key: "cert"}}
	if password {
		c.PasswordRef = &v1alpha1.SecretKeySelector{Name: "azure", Key: "password"}
	}
	return &v1alpha1.AzureKVProvider{VaultURL: "https://" + vaultHost, TenantID: tenant, Auth: v1alpha1.AzureKVAuth{ClientCertificate: c}}
}

// TestClientCertificateSignsInWithPEMOrPFX signs in with a certificate
// credential: the fake's token endpoint verifies the client assertion's
// signature with the registered certificate's public key.
func TestClientCertificateSignsInWithPEMOrPFX(t *testing.T) {
	ctx := context.Background()
	key, cert := selfSigned(t, "watchword-test")
	pfx, err := pkcs12.Modern.Encode(key, cert, nil, "pfx-password")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := pkcs12.LegacyDES.Encode(key, cert, nil, "pfx-password")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		password bool
	}{{"PEM", pemOf(t, key, cert), false}, {"PFX with a password (AES, as OpenSSL 3 exports)", pfx, true}, {"PFX with a password (3DES)", legacy, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.fake.AddClientCertificate(tenant, appID, cert)
			e.fake.SetSecret(vaultHost, "db", "plain", nil)
			e.deps.SetSecret("azure", "cert", tc.data)
			e.deps.SetSecret("azure", "password", []byte("pfx-password"))
			obj, err := e.ops(t, secretStore(certificateSpec(tc.password))).Reader.GetSecret(ctx, engine.Ref{Key: "db"})
			if err != nil || string(obj.Value) != "plain" {
				t.Fatalf("read %d bytes, %v", len(obj.Value), err)
			}
			if e.fake.Calls("token") != 1 {
				t.Fatalf("token requests %d; want 1", e.fake.Calls("token"))
			}
		})
	}
}

func TestClientCertificateRefusals(t *testing.T) {
	ctx := context.Background()
	_, cert := selfSigned(t, "registered")
	otherKey, otherCert := selfSigned(t, "not-registered")

	// A certificate the app does not know is refused by Entra ID, named.
	e := newEnv(t)
	e.fake.AddClientCertificate(tenant, appID, cert)
	e.deps.SetSecret("azure", "cert", pemOf(t, otherKey, otherCert))
	_, err := e.ops(t, secretStore(certificateSpec(false))).Reader.GetSecret(ctx, engine.Ref{Key: "db"})
	mustClass(t, err, engine.ErrPermissionDenied, "AADSTS700027", "not registered", appID)

	// A key that is not the certificate's is refused before any request
	// (the SDK checks); a forged assertion is the fake's own test.
	e = newEnv(t)
	k, err := x509.MarshalPKCS8PrivateKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	e.deps.SetSecret("azure", "cert", append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...))
	_, err = Factory{Transport: e.fake.Client()}.New(ctx, secretStore(certificateSpec(false)), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "azurekv.auth.clientCertificate", "match")

	// What is not a certificate and key is a configuration error that
	// names the Secret and what it must hold, never its content.
	e = newEnv(t)
	e.deps.SetSecret("azure", "cert", []byte("not-a-certificate-s3cr3t-value"))
	_, err = Factory{Transport: e.fake.Client()}.New(ctx, secretStore(certificateSpec(false)), e.deps)
	mustClass(t, err, engine.ErrInvalidConfig, "certificateRef", `"azure"`, `"cert"`, "PEM", "passwordRef")
	if strings.Contains(err.Error(), "not-a-certificate") {
		t.Fatalf("the error echoes the Secret: %v", err)
	}
}
