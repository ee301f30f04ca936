package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NodeNetwork makes the control plane one that a real node can join: the
// API server listens on and advertises Address, which pods reach through
// the `kubernetes` Service, its serving certificate names that Service
// (its first address of ServiceCIDR and its DNS names), the ServiceAccount
// admission plugin mounts service-account tokens into pods, and
// kube-controller-manager runs the controllers a node's pods need.
type NodeNetwork struct {
	// Address is an address of this host, other than loopback's 127/8, that
	// pods can reach (a pod's loopback is its own).
	Address string
	// ServiceCIDR is the range of Service cluster IPs.
	ServiceCIDR string
}

// nodeControllers are kube-controller-manager's controllers for a real
// node: besides those of controllers, the service accounts and the
// kube-root-ca.crt ConfigMap that every pod's token volume needs, the
// endpoints that kube-proxy routes Services to, the node lifecycle (which
// lifts the not-ready taint of a Ready node), Jobs and CronJobs.
var nodeControllers = []string{
	"serviceaccount", "root-ca-certificate-publisher-controller", "endpoint", "endpointslice",
	"nodelifecycle", "job", "cronjob", "disruption",
}

// configureNodeNetwork prepares the API server of env for nn: its address,
// Service range, admission plugins, and certificates written into certDir
// (which must be the API server's certificate folder).
func configureNodeNetwork(api *envtest.APIServer, nn *NodeNetwork, certDir string) error {
	if net.ParseIP(nn.Address) == nil || net.ParseIP(nn.Address).IsLoopback() {
		return fmt.Errorf("NodeNetwork.Address %q: use an IP address of this host other than loopback", nn.Address)
	}
	_, svcNet, err := net.ParseCIDR(nn.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("NodeNetwork.ServiceCIDR: %w", err)
	}
	// The first address of the range is the `kubernetes` Service's.
	svcIP, err := netutils.GetIndexedIP(svcNet, 1)
	if err != nil {
		return fmt.Errorf("NodeNetwork.ServiceCIDR: %w", err)
	}
	// envtest picks 127.0.0.1 and a port itself unless given both.
	l, err := net.Listen("tcp", net.JoinHostPort(nn.Address, "0"))
	if err != nil {
		return fmt.Errorf("NodeNetwork.Address %q: %w", nn.Address, err)
	}
	api.Port = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	api.Address = nn.Address
	api.CertDir = certDir
	// envtest would issue a serving certificate for localhost and the
	// listening address only; a pod dials the Service's address and
	// checks it. The certificate and its CA are written here, where envtest
	// takes them as they are, and clients trust the CA given to envtest.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(nn.Address,
		[]net.IP{net.ParseIP(nn.Address), svcIP, net.ParseIP("127.0.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	// The service-account token signer: a key and its public key.
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	saPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})
	for name, data := range map[string][]byte{
		"apiserver.crt": certPEM, "apiserver.key": keyPEM, "sa-signer.crt": saPubPEM, "sa-signer.key": saKeyPEM,
	} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return err
		}
	}
	api.CA = certPEM
	args := api.Configure()
	args.Set("advertise-address", nn.Address)
	args.Set("service-cluster-ip-range", nn.ServiceCIDR)
	// envtest turns the ServiceAccount admission plugin off, since its
	// control plane creates no service accounts; here the controller
	// manager does, and pods need their token volume.
	args.Disable("disable-admission-plugins")
	return nil
}
