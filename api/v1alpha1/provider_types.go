package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretStoreProvider is the union of provider blocks. Exactly one is set.
// Both store specs embed it inline, so this one rule validates the spec of
// either kind.
// +kubebuilder:validation:XValidation:rule="[has(self.alibaba), has(self.awsps), has(self.awssm), has(self.azurekv), has(self.barbican), has(self.fake), has(self.gcpsm), has(self.kubernetes), has(self.plugin), has(self.vault), has(self.webhook), has(self.gitlab), has(self.onepassword), has(self.conjur), has(self.infisical)].exists_one(x, x)",message="set exactly one provider block in spec (one of: alibaba, awsps, awssm, azurekv, barbican, fake, gcpsm, kubernetes, plugin, vault, webhook, gitlab, onepassword, conjur, infisical)"
type SecretStoreProvider struct {
	// alibaba reads and writes secrets of Alibaba Cloud KMS Secrets Manager.
	// +optional
	Alibaba *AlibabaProvider `json:"alibaba,omitempty"`

	// awsps configures AWS Systems Manager Parameter Store.
	// +optional
	AWSPS *AWSProvider `json:"awsps,omitempty"`

	// awssm configures AWS Secrets Manager.
	// +optional
	AWSSM *AWSProvider `json:"awssm,omitempty"`

	// barbican reads and writes secrets of OpenStack Barbican.
	// +optional
	Barbican *BarbicanProvider `json:"barbican,omitempty"`

	// azurekv reads and writes secrets of Azure Key Vault.
	// +optional
	AzureKV *AzureKVProvider `json:"azurekv,omitempty"`

	// fake is a store whose data lives in this spec: static values with
	// versions, an optional simulated latency and an optional injected
	// error. For demos and tests.
	// +optional
	Fake *FakeProvider `json:"fake,omitempty"`

	// gcpsm reads and writes secrets of Google Cloud Secret Manager.
	// +optional
	GCPSM *GCPSMProvider `json:"gcpsm,omitempty"`

	// kubernetes reads Secrets from a namespace of this cluster or of
	// another cluster.
	// +optional
	Kubernetes *KubernetesProvider `json:"kubernetes,omitempty"`

	// plugin talks to an out-of-tree store plugin over gRPC on a unix
	// socket (docs/plugins.md).
	// +optional
	Plugin *PluginProvider `json:"plugin,omitempty"`

	// vault reads from a KV engine of HashiCorp Vault or OpenBao.
	// +optional
	Vault *VaultProvider `json:"vault,omitempty"`

	// webhook reads from, and with push publishes to, any HTTP API, with
	// requests made of templates.
	// +optional
	Webhook *WebhookProvider `json:"webhook,omitempty"`

	// gitlab reads, and publishes to, GitLab CI/CD variables of a project
	// and of groups.
	// +optional
	GitLab *GitLabProvider `json:"gitlab,omitempty"`
	// onepassword reads and writes items of 1Password through a 1Password
	// Connect server.
	// +optional
	OnePassword *OnePasswordProvider `json:"onepassword,omitempty"`
	// conjur reads the variables of CyberArk Conjur.
	// +optional
	Conjur *ConjurProvider `json:"conjur,omitempty"`

	// infisical reads the secrets of an Infisical project.
	// +optional
	Infisical *InfisicalProvider `json:"infisical,omitempty"`
}

// PluginProvider configures a store served by an out-of-tree plugin.
type PluginProvider struct {
	// endpoint is where the plugin listens: a unix socket, such as
	// unix:///run/watchword/plugins/mystore.sock (the default way: the
	// plugin runs next to Watchword, a sidecar sharing the socket's
	// volume), or a TCP address, such as tcp://mystore-plugin.ns.svc:7443,
	// which needs tls.
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(unix:///|tcp://).+$`
	Endpoint string `json:"endpoint"`

	// tls is the mutual TLS of a tcp:// endpoint: the CA that signed the
	// plugin's certificate, and the client certificate and key Watchword
	// presents. Required for tcp://; a unix socket takes none.
	// +optional
	TLS *PluginTLS `json:"tls,omitempty"`

	// config is handed to the plugin, unread by Watchword, with every
	// call: the plugin's own settings for this store (a base path, a
	// region). It holds no credentials: it is stored in plain text.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Config map[string]string `json:"config,omitempty"`
}

// PluginTLS is the mutual TLS between Watchword and a plugin on a
// tcp:// endpoint, from Secret keys (PEM).
type PluginTLS struct {
	// caSecretRef is the Secret key holding the PEM CA bundle that the
	// plugin's server certificate must chain to.
	// +required
	CASecretRef SecretKeySelector `json:"caSecretRef"`

	// certSecretRef is the Secret key holding the PEM client certificate
	// Watchword presents to the plugin.
	// +required
	CertSecretRef SecretKeySelector `json:"certSecretRef"`

	// keySecretRef is the Secret key holding the PEM private key of the
	// client certificate.
	// +required
	KeySecretRef SecretKeySelector `json:"keySecretRef"`

	// serverName is the name the plugin's certificate must hold, when it
	// differs from the endpoint's host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServerName string `json:"serverName,omitempty"`
}

// AWSProvider configures AWS Secrets Manager (the awssm block) or AWS
// Systems Manager Parameter Store (the awsps block): the region, how
// Watchword obtains credentials, and an optional role to assume with them.
// +kubebuilder:validation:XValidation:rule="!has(self.externalID) || has(self.role)",message="externalID needs role: it is passed when the role is assumed"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionTags) || size(self.sessionTags) == 0 || has(self.role)",message="sessionTags need role: they are passed when the role is assumed"
type AWSProvider struct {
	// auth says where the credentials come from: static keys from a
	// Secret, a web identity token of a service account, or (on a
	// ClusterSecretStore only) the controller's own credentials.
	// +optional
	Auth *AWSAuth `json:"auth,omitempty"`

	// role is the ARN of a role to assume with the credentials of auth
	// (role chaining), such as arn:aws:iam::111122223333:role/reader.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Role string `json:"role,omitempty"`

	// externalID is passed when role is assumed, for a role whose trust
	// policy requires one.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1224
	ExternalID string `json:"externalID,omitempty"`

	// sessionTags are passed as session tags when role is assumed.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=key
	SessionTags []AWSTag `json:"sessionTags,omitempty"`

	// region is the AWS region, such as eu-central-1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region"`

	// endpoint overrides the service's endpoint URL, for a VPC endpoint
	// (https://vpce-….secretsmanager.eu-central-1.vpce.amazonaws.com). STS
	// keeps its regional endpoint unless stsEndpoint is set.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	Endpoint string `json:"endpoint,omitempty"`

	// stsEndpoint overrides the endpoint of STS, used for web identity
	// and to assume role.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	STSEndpoint string `json:"stsEndpoint,omitempty"`

	// fips uses the FIPS endpoints of the region.
	// +optional
	FIPS bool `json:"fips,omitempty"`

	// dualStack uses the dual-stack (IPv4 and IPv6) endpoints.
	// +optional
	DualStack bool `json:"dualStack,omitempty"`

	// kmsKeyID is the KMS key (ID, ARN or alias) that encrypts the
	// secrets and SecureString parameters Watchword creates when it
	// publishes. Empty: the account's default key for the service.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// AWSTag is a key and value, of a session tag.
type AWSTag struct {
	// key of the tag.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Key string `json:"key"`

	// value of the tag.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value,omitempty"`
}

// AWSAuth holds the ways to obtain AWS credentials. Set one of them.
// +kubebuilder:validation:XValidation:rule="[has(self.secretRef), has(self.jwt), has(self.controllerCredentials) && self.controllerCredentials].filter(x, x).size() <= 1",message="set at most one of auth.secretRef, auth.jwt and auth.controllerCredentials"
type AWSAuth struct {
	// secretRef reads a static access key from a Secret.
	// +optional
	SecretRef *AWSAuthSecretRef `json:"secretRef,omitempty"`

	// jwt exchanges a token of a service account, which Watchword
	// requests with the audience sts.amazonaws.com, for the credentials
	// of a role (AssumeRoleWithWebIdentity). No token file and no
	// mutating webhook are needed.
	// +optional
	JWT *AWSJWTAuth `json:"jwt,omitempty"`

	// controllerCredentials uses the credentials of the Watchword
	// controller itself (its environment, its pod identity, the
	// instance's role). Only a ClusterSecretStore may set it: it lends
	// the controller's identity to every namespace the store serves.
	// +optional
	ControllerCredentials bool `json:"controllerCredentials,omitempty"`
}

// AWSAuthSecretRef names the Secret keys that hold an AWS access key.
type AWSAuthSecretRef struct {
	// accessKeyID is the Secret key that holds the access key ID.
	// +required
	AccessKeyID SecretKeySelector `json:"accessKeyID"`

	// secretAccessKey is the Secret key that holds the secret access key.
	// +required
	SecretAccessKey SecretKeySelector `json:"secretAccessKey"`

	// sessionToken is the Secret key that holds a session token, for
	// temporary keys.
	// +optional
	SessionToken *SecretKeySelector `json:"sessionToken,omitempty"`
}

// AWSJWTAuth is the web identity of a service account.
type AWSJWTAuth struct {
	// serviceAccountRef is the service account whose token is exchanged.
	// Its audiences default to sts.amazonaws.com.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`

	// roleARN is the role that the token is exchanged for, whose trust
	// policy names the cluster's OIDC provider and the service account.
	// +required
	// +kubebuilder:validation:MinLength=20
	// +kubebuilder:validation:MaxLength=2048
	RoleARN string `json:"roleARN"`
}

// FakeProvider is a store that keeps its data in its own spec.
type FakeProvider struct {
	// data lists the remote objects of the store. Several entries may share
	// a key with different versions; the last entry of a key is its
	// current version.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +listType=atomic
	Data []FakeProviderData `json:"data,omitempty"`

	// latency is a simulated delay added to every provider call, such as
	// 5ms.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$')",message="latency must be a duration such as 5ms or 1s"
	Latency *metav1.Duration `json:"latency,omitempty"`

	// error makes every read fail with this error: for tests
	// and demos of failure handling.
	// +optional
	Error *FakeProviderError `json:"error,omitempty"`
}

// FakeProviderData is one version of one remote object of a fake store.
// +kubebuilder:validation:XValidation:rule="!has(self.value) || size(self.value) == 0 || !has(self.valueMap) || size(self.valueMap) == 0",message="fake data entry: set value or valueMap, not both"
type FakeProviderData struct {
	// key is the remote key of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key"`

	// version of the object. Defaults to the entry's position among the
	// entries of the same key, counting from 1.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// value is the object's value. A JSON object value can be read field
	// by field with remoteRef.property and expanded with dataFrom.
	// +optional
	// +kubebuilder:validation:MaxLength=262144
	Value string `json:"value,omitempty"`

	// valueMap is an object made of named fields, like a Vault secret or
	// a Kubernetes Secret. Set value or valueMap, not both.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	ValueMap map[string]string `json:"valueMap,omitempty"`

	// metadata is what the object carries besides its value, like the
	// tags of a cloud store: metadataPolicy Fetch reads it. A fake store
	// none of whose entries sets metadata has no metadata to read, and
	// refuses metadataPolicy Fetch.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FakeProviderError is an error that a fake store returns on every read.
type FakeProviderError struct {
	// reason is the class of the error.
	// +required
	// +kubebuilder:validation:Enum=NotFound;PermissionDenied;Unauthenticated;Unavailable;Throttled;InvalidConfig
	Reason string `json:"reason"`

	// retryAfter is how long the store asks to wait before the next call,
	// as a Retry-After header would, with reason Throttled.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$')",message="retryAfter must be a duration such as 5s"
	RetryAfter *metav1.Duration `json:"retryAfter,omitempty"`

	// message is the text of the error.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// keys limits the error to these remote keys. Empty means every key.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	Keys []string `json:"keys,omitempty"`
}

// KubernetesProvider reads Secrets from a namespace of this cluster or of
// another cluster. remoteRef.key is the name of a Secret and
// remoteRef.property a key of its data.
// +kubebuilder:validation:XValidation:rule="!has(self.auth.serviceAccount) || !has(self.server) || !has(self.server.url) || size(self.server.url) == 0",message="kubernetes.auth.serviceAccount works only for this cluster: remove server.url or use token or cert auth",fieldPath=".auth.serviceAccount"
type KubernetesProvider struct {
	// remoteNamespace is the namespace the Secrets are read from. Defaults
	// to the namespace of a SecretStore; a ClusterSecretStore must set it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RemoteNamespace string `json:"remoteNamespace,omitempty"`

	// server says where the cluster is. Empty means this cluster.
	// +optional
	Server *KubernetesServer `json:"server,omitempty"`

	// auth says how to authenticate. Exactly one method is set.
	// +required
	Auth KubernetesAuth `json:"auth"`
}

// KubernetesServer describes how to reach a Kubernetes API server.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caSecretRef))",message="server: set caBundle or caSecretRef, not both",fieldPath=".caSecretRef"
type KubernetesServer struct {
	// url of the API server, such as https://10.0.0.1:6443.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="server.url must start with https:// (or http:// for a local test server)"
	URL string `json:"url,omitempty"`

	// caBundle is the PEM certificate authority bundle of the server. Set
	// it or caSecretRef, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caSecretRef names a Secret key that holds the PEM CA bundle.
	// +optional
	CASecretRef *SecretKeySelector `json:"caSecretRef,omitempty"`
}

// KubernetesAuth is the union of the ways to authenticate against a
// Kubernetes API server.
// +kubebuilder:validation:XValidation:rule="[has(self.token), has(self.cert), has(self.serviceAccount)].exists_one(x, x)",message="auth must set exactly one of token, cert or serviceAccount"
type KubernetesAuth struct {
	// token reads a bearer token from a Secret.
	// +optional
	Token *KubernetesTokenAuth `json:"token,omitempty"`

	// cert reads a client certificate and key from Secrets.
	// +optional
	Cert *KubernetesCertAuth `json:"cert,omitempty"`

	// serviceAccount requests a short-lived token for a service account
	// of this cluster. Only when server is unset (this cluster).
	// +optional
	ServiceAccount *ServiceAccountSelector `json:"serviceAccount,omitempty"`
}

// KubernetesTokenAuth reads a bearer token from a Secret.
type KubernetesTokenAuth struct {
	// bearerToken is the Secret key that holds the token.
	// +required
	BearerToken SecretKeySelector `json:"bearerToken"`
}

// KubernetesCertAuth reads a client certificate and key from Secrets.
type KubernetesCertAuth struct {
	// clientCert is the Secret key that holds the PEM certificate.
	// +required
	ClientCert SecretKeySelector `json:"clientCert"`

	// clientKey is the Secret key that holds the PEM private key.
	// +required
	ClientKey SecretKeySelector `json:"clientKey"`
}
