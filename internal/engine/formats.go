package engine

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"strings"

	"github.com/go-jose/go-jose/v4"
	gopkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Format helpers: PKCS#12 to PEM and back, JWK to PEM, PEM filtering and
// the names in a certificate. Templates written for External Secrets
// Operator use these names and argument orders, so they are kept.
//
// The parsing and encoding is done by go-pkcs12 and go-jose and the
// standard library; nothing here is cryptography written by hand. Every
// error is a fixed sentence that names the function: the libraries'
// messages are not passed on, as they may quote the input.

// pkcs12keyPass returns the private key of a PKCS#12 archive (its raw
// bytes, as a string) as a PKCS#8 PEM block.
func pkcs12keyPass(pass, input string) (string, error) {
	key, _, _, err := gopkcs12.DecodeChain([]byte(input), pass)
	if err != nil {
		return "", errors.New("pkcs12key: input is not a PKCS#12 archive with one key and certificate, or the password is wrong")
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", errors.New("pkcs12key: the private key cannot be written as PKCS#8")
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

func pkcs12key(input string) (string, error) { return pkcs12keyPass("", input) }

// pkcs12certPass returns the certificates of a PKCS#12 archive as PEM: the
// certificate that goes with the key first, then the others, each followed
// by its issuer where the archive holds it.
func pkcs12certPass(pass, input string) (string, error) {
	_, leaf, cas, err := gopkcs12.DecodeChain([]byte(input), pass)
	if err != nil {
		return "", errors.New("pkcs12cert: input is not a PKCS#12 archive with one key and certificate, or the password is wrong")
	}
	return encodeCerts(orderChain(leaf, cas)), nil
}

func pkcs12cert(input string) (string, error) { return pkcs12certPass("", input) }

// orderChain returns leaf followed by its issuers among cas, nearest first,
// then the certificates of cas that are in no such chain, in their order.
func orderChain(leaf *x509.Certificate, cas []*x509.Certificate) []*x509.Certificate {
	out := []*x509.Certificate{leaf}
	used := make([]bool, len(cas))
	for cur := leaf; ; {
		next := -1
		for i, c := range cas {
			if !used[i] && !bytes.Equal(cur.RawSubject, cur.RawIssuer) && bytes.Equal(c.RawSubject, cur.RawIssuer) {
				next = i
				break
			}
		}
		if next < 0 {
			break
		}
		used[next] = true
		cur = cas[next]
		out = append(out, cur)
	}
	for i, c := range cas {
		if !used[i] {
			out = append(out, c)
		}
	}
	return out
}

func encodeCerts(certs []*x509.Certificate) string {
	var b strings.Builder
	for _, c := range certs {
		b.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	return b.String()
}

// parseCerts parses every CERTIFICATE block of a PEM bundle.
func parseCerts(fn, s string) ([]*x509.Certificate, error) {
	blocks, err := certBlocks(fn, s)
	if err != nil {
		return nil, err
	}
	certs := make([]*x509.Certificate, 0, len(blocks))
	for _, b := range blocks {
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, errors.New(fn + ": a certificate does not parse")
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// parseKey parses the first private key block of a PEM bundle, in any of
// the forms PKCS#8, PKCS#1 (RSA) and SEC 1 (EC).
func parseKey(fn, s string) (any, error) {
	ks := decodePEM(s, isKey)
	if len(ks) == 0 {
		return nil, errors.New(fn + ": no PRIVATE KEY block in the key argument")
	}
	der := ks[0].Bytes
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New(fn + ": the private key does not parse (PKCS#8, PKCS#1 or SEC 1 expected)")
}

// pkcs12Encoder returns the encoder for an archive of the given inputs.
// PKCS#12 encoding draws salts and IVs at random, which would make every
// rendering of an unchanged Secret differ, rewrite it at each refresh and
// count as a rotation. So the random stream is HKDF-SHA256 of the inputs:
// the same inputs give the same archive, and the salts and IVs still differ
// whenever a key, a certificate or the password differs. What this reveals
// is only that two archives were made from the same inputs.
func pkcs12Encoder(parts ...string) (*gopkcs12.Encoder, error) {
	var secret []byte
	for _, p := range parts {
		// Length-prefixed, so that distinct argument lists never collide.
		secret = binary.BigEndian.AppendUint64(secret, uint64(len(p)))
		secret = append(secret, p...)
	}
	// 8160 bytes is the most HKDF-SHA256 gives; an archive uses a few
	// dozen.
	stream, err := hkdf.Key(sha256.New, secret, nil, "watchword template pkcs12", 255*sha256.Size)
	if err != nil {
		return nil, err
	}
	return gopkcs12.Modern.WithRand(bytes.NewReader(stream)), nil
}

// toPkcs12 builds a PKCS#12 archive, returned in base64, from
// a PEM certificate bundle (the first certificate goes with the key, the
// others are added as its chain when full is set) and a PEM private key.
func toPkcs12(fn, cert, key, pass string, full bool) (string, error) {
	certs, err := parseCerts(fn, cert)
	if err != nil {
		return "", err
	}
	k, err := parseKey(fn, key)
	if err != nil {
		return "", err
	}
	var cas []*x509.Certificate
	if full {
		cas = certs[1:]
	}
	enc, err := pkcs12Encoder(fn, cert, key, pass)
	if err != nil {
		return "", errors.New(fn + ": cannot encode the archive")
	}
	pfx, err := enc.Encode(k, certs[0], cas, pass)
	if err != nil {
		return "", errors.New(fn + ": cannot encode the archive (the key may not match a supported type)")
	}
	return base64.StdEncoding.EncodeToString(pfx), nil
}

func pemToPkcs12(cert, key string) (string, error) {
	return toPkcs12("pemToPkcs12", cert, key, "", false)
}
func pemToPkcs12Pass(cert, key, pass string) (string, error) {
	return toPkcs12("pemToPkcs12Pass", cert, key, pass, false)
}
func fullPemToPkcs12(cert, key string) (string, error) {
	return toPkcs12("fullPemToPkcs12", cert, key, "", true)
}
func fullPemToPkcs12Pass(cert, key, pass string) (string, error) {
	return toPkcs12("fullPemToPkcs12Pass", cert, key, pass, true)
}

// pemTruststoreToPKCS12Pass builds a PKCS#12 trust store, in base64, of
// every certificate of a PEM bundle.
func pemTruststoreToPKCS12Pass(cert, pass string) (string, error) {
	const fn = "pemTruststoreToPKCS12"
	certs, err := parseCerts(fn, cert)
	if err != nil {
		return "", err
	}
	enc, err := pkcs12Encoder(fn, cert, pass)
	if err != nil {
		return "", errors.New(fn + ": cannot encode the trust store")
	}
	pfx, err := enc.EncodeTrustStore(certs, pass)
	if err != nil {
		return "", errors.New(fn + ": cannot encode the trust store")
	}
	return base64.StdEncoding.EncodeToString(pfx), nil
}

func pemTruststoreToPKCS12(cert string) (string, error) { return pemTruststoreToPKCS12Pass(cert, "") }

// filterPEM keeps the blocks of a PEM bundle of one type (compared without
// regard to case), in order. Input with no PEM block at all is an error;
// a bundle without a block of that type gives an empty string.
func filterPEM(pemType, input string) (string, error) {
	all := decodePEM(input, nil)
	if len(all) == 0 && strings.TrimSpace(input) != "" {
		return "", errors.New("filterPEM: input holds no PEM block")
	}
	var keep []*pem.Block
	for _, b := range all {
		if strings.EqualFold(b.Type, pemType) {
			keep = append(keep, b)
		}
	}
	return encodeBlocks(keep), nil
}

// certSANs lists the subject alternative names of the first certificate:
// DNS names, IP addresses, email addresses and URIs, in that order.
func certSANs(input string) ([]string, error) {
	c, err := firstCert("certSANs", input)
	if err != nil {
		return nil, err
	}
	out := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out, nil
}

// parseJWK parses one JSON Web Key (RSA, EC or OKP/Ed25519).
func parseJWK(fn, s string) (*jose.JSONWebKey, error) {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON([]byte(s)); err != nil {
		return nil, errors.New(fn + ": input is not a JSON Web Key of a supported type (RSA, EC, OKP)")
	}
	return &k, nil
}

// jwkPublicKeyPem returns the public key of a JWK (a public or a private
// one) as a PKIX "PUBLIC KEY" PEM block.
func jwkPublicKeyPem(s string) (string, error) {
	const fn = "jwkPublicKeyPem"
	k, err := parseJWK(fn, s)
	if err != nil {
		return "", err
	}
	pub := k.Public()
	if !pub.Valid() {
		return "", errors.New(fn + ": the key has no public part (a symmetric key?)")
	}
	der, err := x509.MarshalPKIXPublicKey(pub.Key)
	if err != nil {
		return "", errors.New(fn + ": the public key cannot be written as PKIX")
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// jwkPrivateKeyPem returns the private key of a JWK as a PKCS#8 "PRIVATE
// KEY" PEM block.
func jwkPrivateKeyPem(s string) (string, error) {
	const fn = "jwkPrivateKeyPem"
	k, err := parseJWK(fn, s)
	if err != nil {
		return "", err
	}
	if k.IsPublic() {
		return "", errors.New(fn + ": the key is a public key, with no private part")
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.Key)
	if err != nil {
		return "", errors.New(fn + ": the private key cannot be written as PKCS#8 (a symmetric key?)")
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}
