package plugin

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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	sdk "github.com/watchword-dev/watchword/pkg/plugin"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key signed by the CA, for a server
// (with the names) or a client.
func (ca *testCA) issue(t *testing.T, server bool, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, b, 0o600))
	return p
}

// secretDeps serves the values of Secret keys from memory, by name/key.
type secretDeps struct {
	provider.Deps
	values map[string][]byte
}

func (d secretDeps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	v, ok := d.values[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, errors.New("no such secret key")
	}
	return v, nil
}

// TestMutualTLSOverTCP: a plugin built with the SDK serves on TCP with
// mutual TLS from files; a store whose plugin.tls names the CA and a
// client certificate from Secrets reads through it, and each wrong piece
// of TLS is a PluginUnavailable condition that says which.
func TestMutualTLSOverTCP(t *testing.T) {
	ca, otherCA := newCA(t, "plugin-ca"), newCA(t, "other-ca")
	serverCert, serverKey := ca.issue(t, true, "127.0.0.1", "plugin.test")
	clientCert, clientKey := ca.issue(t, false)
	strangerCert, strangerKey := otherCA.issue(t, false)
	dir := t.TempDir()
	files := sdk.TLSFiles{CAFile: writeFile(t, dir, "ca.crt", ca.certPEM), CertFile: writeFile(t, dir, "tls.crt", serverCert), KeyFile: writeFile(t, dir, "tls.key", serverKey)}

	lis, err := sdk.Listen("tcp://127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sdk.ServeListener(ctx, lis, sdk.Store{Name: "tls", Reader: readerFunc(func(_ context.Context, _ sdk.Config, ref sdk.Ref) (sdk.Secret, error) {
			return sdk.Secret{Version: "1", Fields: map[string][]byte{"user": []byte("app-" + ref.Key)}}, nil
		})}, sdk.WithTLS(files))
	}()
	t.Cleanup(func() { cancel(); must(t, <-done) })
	endpoint := "tcp://" + lis.Addr().String()

	deps := secretDeps{values: map[string][]byte{
		"ca/ca.crt": ca.certPEM, "other-ca/ca.crt": otherCA.certPEM,
		"client/tls.crt": clientCert, "client/tls.key": clientKey,
		"stranger/tls.crt": strangerCert, "stranger/tls.key": strangerKey,
	}}
	tlsSpec := func(caName, clientName, serverName string) *v1alpha1.PluginTLS {
		return &v1alpha1.PluginTLS{
			CASecretRef:   v1alpha1.SecretKeySelector{Name: caName, Key: "ca.crt"},
			CertSecretRef: v1alpha1.SecretKeySelector{Name: clientName, Key: "tls.crt"},
			KeySecretRef:  v1alpha1.SecretKeySelector{Name: clientName, Key: "tls.key"},
			ServerName:    serverName,
		}
	}
	for name, tc := range map[string]struct {
		tls  *v1alpha1.PluginTLS
		want string // "" reads; otherwise the problem the PluginUnavailable message names
	}{
		"the CA and a client certificate it signed":       {tls: tlsSpec("ca", "client", "")},
		"a server name override the certificate holds":    {tls: tlsSpec("ca", "client", "plugin.test")},
		"a CA that did not sign the plugin's certificate": {tls: tlsSpec("other-ca", "client", ""), want: "not signed by the CA of plugin.tls.caSecretRef"},
		"a client certificate of another CA":              {tls: tlsSpec("ca", "stranger", ""), want: "client certificate of plugin.tls.certSecretRef"},
		"a server name the certificate does not hold":     {tls: tlsSpec("ca", "client", "elsewhere.test"), want: "plugin.tls.serverName"},
	} {
		t.Run(name, func(t *testing.T) {
			s := store(endpoint)
			s.Spec.Plugin.TLS = tc.tls
			ops, err := Factory{}.New(context.Background(), s, deps)
			if tc.want != "" {
				if class := failure.Classify(err); class.Reason != failure.PluginUnavailable || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, engine.ErrUnavailable) {
					t.Fatalf("got %v (reason %s); want PluginUnavailable naming %q", err, class.Reason, tc.want)
				}
				return
			}
			must(t, err)
			defer func() { _ = ops.Closer.Close() }()
			obj, err := ops.Reader.GetSecret(context.Background(), engine.Ref{Key: "db"})
			if err != nil || string(obj.Fields["user"]) != "app-db" {
				t.Fatalf("read over mutual TLS: %v", err)
			}
		})
	}

	t.Run("a client without a certificate", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca.certPEM)
		_, err := DialTLS(context.Background(), endpoint, nil, &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "127.0.0.1"})
		if class := failure.Classify(err); class.Reason != failure.PluginUnavailable {
			t.Fatalf("got %v (reason %s); want PluginUnavailable", err, class.Reason)
		}
	})
}

func TestTCPWithoutTLSIsRefused(t *testing.T) {
	err := Factory{}.Validate(store("tcp://plugin.ns.svc:7443"))
	if !errors.Is(err, engine.ErrInvalidConfig) || failure.Classify(err).Reason != failure.InvalidStoreConf || !strings.Contains(err.Error(), "set plugin.tls (caSecretRef, certSecretRef and keySecretRef)") {
		t.Fatalf("tcp:// without tls: %v", err)
	}
	s := store("unix:///run/p.sock")
	s.Spec.Plugin.TLS = &v1alpha1.PluginTLS{}
	if err := (Factory{}).Validate(s); !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), "remove plugin.tls") {
		t.Fatalf("unix:// with tls: %v", err)
	}
	if err := sdk.Serve(context.Background(), "tcp://127.0.0.1:0", sdk.Store{Name: "n", Reader: readerFunc(nil)}); err == nil || !strings.Contains(err.Error(), "mutual TLS") {
		t.Fatalf("the SDK served tcp:// without TLS: %v", err)
	}
}

func TestAbsentPluginIsPluginUnavailable(t *testing.T) {
	endpoint := "unix://" + filepath.Join(t.TempDir(), "absent.sock")
	_, err := Dial(context.Background(), endpoint, nil)
	if class := failure.Classify(err); class.Reason != failure.PluginUnavailable || class.Terminal || !strings.Contains(err.Error(), "socket does not exist") {
		t.Fatalf("absent plugin: %v (%+v)", err, class)
	}
}

// otherProtocol is a plugin that chooses a protocol version Watchword
// does not speak: a fake, to inject that failure.
type otherProtocol struct {
	pluginv1.UnimplementedSecretStoreServer
}

func (otherProtocol) Handshake(context.Context, *pluginv1.HandshakeRequest) (*pluginv1.HandshakeResponse, error) {
	return &pluginv1.HandshakeResponse{ProtocolVersion: "v9", PluginName: "future"}, nil
}

// onlyV2 is a plugin that refuses every version Watchword offers, as the
// SDK does: a fake, to inject that failure.
type onlyV2 struct {
	pluginv1.UnimplementedSecretStoreServer
}

func (onlyV2) Handshake(context.Context, *pluginv1.HandshakeRequest) (*pluginv1.HandshakeResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "this plugin speaks protocol v2")
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	for name, tc := range map[string]struct {
		srv  pluginv1.SecretStoreServer
		want string
	}{
		"the plugin chooses a version Watchword does not speak": {otherProtocol{}, `chose protocol version "v9"`},
		"the plugin refuses the versions Watchword offers":      {onlyV2{}, "speaks none of the protocol versions Watchword offered"},
	} {
		t.Run(name, func(t *testing.T) {
			endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
			lis, err := sdk.Listen(endpoint)
			must(t, err)
			srv := grpc.NewServer()
			pluginv1.RegisterSecretStoreServer(srv, tc.srv)
			go func() { _ = srv.Serve(lis) }()
			t.Cleanup(srv.Stop)
			_, err = Dial(context.Background(), endpoint, nil)
			if class := failure.Classify(err); class.Reason != failure.PluginProtocolUnsupported || class.Terminal || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (%+v), want PluginProtocolUnsupported saying %q", err, class, tc.want)
			}
		})
	}
}

// TestReconnectsAfterThePluginCameBack: a plugin that stops is
// PluginUnavailable, the change is told on ConnectionChanges, and the same
// client works again once a plugin serves on the socket again.
func TestReconnectsAfterThePluginCameBack(t *testing.T) {
	endpoint := "unix://" + filepath.Join(t.TempDir(), "p.sock")
	reader := readerFunc(func(context.Context, sdk.Config, sdk.Ref) (sdk.Secret, error) {
		return sdk.Secret{Version: "1", Value: []byte("v")}, nil
	})
	start := func() (stop func()) {
		lis, err := sdk.Listen(endpoint)
		must(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sdk.ServeListener(ctx, lis, sdk.Store{Name: "p", Reader: reader}) }()
		return func() { cancel(); must(t, <-done) }
	}
	stop := start()
	ops, err := Dial(context.Background(), endpoint, nil)
	must(t, err)
	defer func() { _ = ops.Closer.Close() }()
	changes := ops.Checker.(provider.ConnectionWatcher).ConnectionChanges()

	stop()
	<-changes // lost
	err = ops.Checker.Check(context.Background())
	if class := failure.Classify(err); class.Reason != failure.PluginUnavailable {
		t.Fatalf("check with the plugin stopped: %v (%+v)", err, class)
	}

	stop = start()
	defer stop()
	<-changes // back
	if err := ops.Checker.Check(context.Background()); err != nil {
		t.Fatalf("check after the plugin came back: %v", err)
	}
}
