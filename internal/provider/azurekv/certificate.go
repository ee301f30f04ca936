package azurekv

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// certificateCredential reads the certificate (PEM or PKCS#12) and its
// optional password from the Secrets, and builds a credential that signs
// client assertions with its private key. The SDK's parser does the
// decoding; its errors are not echoed, as they may quote the input.
func certificateCredential(ctx context.Context, tenant string, c *v1alpha1.AzureClientCertificateAuth, deps provider.Deps, opts azcore.ClientOptions) (azcore.TokenCredential, string, error) {
	data, err := deps.SecretValue(ctx, c.CertificateRef)
	if err != nil {
		return nil, "", err
	}
	var password []byte
	if c.PasswordRef != nil {
		if password, err = deps.SecretValue(ctx, *c.PasswordRef); err != nil {
			return nil, "", err
		}
	}
	certs, key, err := parseCertificate(data, password)
	if err != nil {
		hint := "a PEM with a CERTIFICATE block and an unencrypted PRIVATE KEY block, or a PKCS#12 (PFX) file"
		if c.PasswordRef != nil {
			hint += " whose password is the value of passwordRef"
		} else {
			hint += " (set passwordRef if the PKCS#12 file has a password)"
		}
		return nil, "", fmt.Errorf("%w: azurekv.auth.clientCertificate.certificateRef (Secret %q key %q) holds no usable certificate and private key: it must be %s",
			engine.ErrInvalidConfig, c.CertificateRef.Name, c.CertificateRef.Key, hint)
	}
	who := fmt.Sprintf("application %q of tenant %q (client certificate %q)", c.ClientID, tenant, certs[0].Subject.String())
	cred, err := azidentity.NewClientCertificateCredential(tenant, c.ClientID, certs, key,
		&azidentity.ClientCertificateCredentialOptions{ClientOptions: opts})
	if err != nil {
		return nil, "", fmt.Errorf("%w: azurekv.auth.clientCertificate.certificateRef (Secret %q key %q): %s", engine.ErrInvalidConfig,
			c.CertificateRef.Name, c.CertificateRef.Key, safeSDKText(err))
	}
	return cred, who, nil
}

// parseCertificate decodes the certificate and key with the SDK's parser.
// That parser reads PKCS#12 files encrypted with the legacy algorithms
// only (3DES, RC2); a file encrypted with AES, as OpenSSL 3 and recent
// Windows export by default, is decoded with go-pkcs12 instead.
func parseCertificate(data, password []byte) ([]*x509.Certificate, crypto.PrivateKey, error) {
	certs, key, err := azidentity.ParseCertificates(data, password)
	if err == nil {
		return certs, key, nil
	}
	if block, _ := pem.Decode(data); block != nil {
		return nil, nil, err
	}
	k, leaf, chain, perr := pkcs12.DecodeChain(data, string(password))
	if perr != nil {
		return nil, nil, err
	}
	return append([]*x509.Certificate{leaf}, chain...), k, nil
}
