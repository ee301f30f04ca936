package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

func testCerts(now *time.Time) *Certs {
	return NewCerts(nil, nil, CertOptions{Namespace: "ns", SecretName: "s", ConfigName: "c",
		DNSNames: []string{"watchword-webhook.ns.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")},
		Validity: 3 * time.Hour, Now: func() time.Time { return *now }})
}

func caCerts(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestIssuedCertificateServesItsNamesAndIsRenewedWithAThirdLeft: a new
// certificate verifies against its CA for every name, is fresh until a
// third of its validity is left, and a renewal bundles the new CA first
// and the previous one while it is valid.
func TestIssuedCertificateServesItsNamesAndIsRenewedWithAThirdLeft(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testCerts(&now)
	data, err := c.issue(nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(data[certKey], data[keyKey])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	cas := caCerts(t, data[caKey])
	if len(cas) != 1 || !cas[0].IsCA {
		t.Fatalf("bundle of a first certificate: %d certificates, want its CA only", len(cas))
	}
	pool := x509.NewCertPool()
	pool.AddCert(cas[0])
	for _, name := range []string{"watchword-webhook.ns.svc", "127.0.0.1"} {
		if _, verr := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); verr != nil {
			t.Errorf("certificate for %s: %v", name, verr)
		}
	}
	for _, tc := range []struct {
		after time.Duration
		fresh bool
	}{{0, true}, {time.Hour + 59*time.Minute, true}, {2*time.Hour + time.Minute, false}, {4 * time.Hour, false}} {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(tc.after)
		if got := c.fresh(data); got != tc.fresh {
			t.Errorf("after %s: fresh %v, want %v", tc.after, got, tc.fresh)
		}
	}
	now = time.Date(2026, 1, 1, 2, 30, 0, 0, time.UTC)
	renewed, err := c.issue(data[caKey])
	if err != nil {
		t.Fatal(err)
	}
	got := caCerts(t, renewed[caKey])
	if len(got) != 2 || !got[1].Equal(cas[0]) || got[0].Equal(cas[0]) {
		t.Errorf("renewed bundle: %d certificates; want the new CA, then the previous one", len(got))
	}
	if !c.fresh(renewed) {
		t.Error("a renewed certificate is not fresh")
	}
	// Once the previous CA has expired it is dropped from the bundle.
	now = now.Add(4 * time.Hour)
	again, err := c.issue(renewed[caKey])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(caCerts(t, again[caKey])); n != 1 {
		t.Errorf("bundle after the previous CA expired: %d certificates, want 1", n)
	}
}

// TestCertificateForOtherNamesIsNotFresh: a certificate that lacks a name
// now asked for (the Service was renamed) is renewed.
func TestCertificateForOtherNamesIsNotFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	data, err := testCerts(&now).issue(nil)
	if err != nil {
		t.Fatal(err)
	}
	renamed := testCerts(&now)
	renamed.opts.DNSNames = []string{"other.ns.svc"}
	if renamed.fresh(data) {
		t.Error("a certificate for another Service name counts as fresh")
	}
	if testCerts(&now).fresh(map[string][]byte{certKey: data[certKey], keyKey: data[keyKey]}) {
		t.Error("a certificate without its CA bundle counts as fresh")
	}
}
