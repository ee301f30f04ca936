package v1alpha1

// VaultKVVersion is the version of a KV secrets engine.
// +kubebuilder:validation:Enum=v1;v2
type VaultKVVersion string

const (
	// VaultKVv1 is the unversioned KV engine.
	VaultKVv1 VaultKVVersion = "v1"
	// VaultKVv2 is the versioned KV engine.
	VaultKVv2 VaultKVVersion = "v2"
)

// VaultProvider reads from (and writes to) a KV secrets engine of a
// HashiCorp Vault or OpenBao server.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="vault: set caBundle or caProvider, not both",fieldPath=".caProvider"
// +kubebuilder:validation:XValidation:rule="!(has(self.tls) && has(self.auth.cert))",message="vault: auth.cert presents its own client certificate on every connection: drop vault.tls",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.auth.cert) || self.server.startsWith('https://')",message="vault: auth.cert needs an https:// server: the certificate is presented in the TLS handshake",fieldPath=".server"
type VaultProvider struct {
	// server is the address of the Vault server, such as
	// https://vault.example.com:8200.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="vault.server must be a URL starting with https:// (or http:// for a local test server)"
	Server string `json:"server"`

	// path is the mount path of the KV engine. Defaults to secret.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// version of the KV engine, v1 or v2. Empty means detect it from the
	// mount (which needs read access to sys/internal/ui/mounts, granted by
	// Vault's default policy).
	// +optional
	Version VaultKVVersion `json:"version,omitempty"`

	// namespace is the Vault Enterprise namespace (X-Vault-Namespace).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Namespace string `json:"namespace,omitempty"`

	// caBundle is a PEM bundle of certificate authorities for the server.
	// Set it or caProvider, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap. Set it
	// or caBundle, not both.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`

	// tls is a client certificate for mutual TLS.
	// +optional
	TLS *VaultClientTLS `json:"tls,omitempty"`

	// auth says how to log in. Exactly one method is set.
	// +required
	Auth VaultAuth `json:"auth"`
}

// CAProvider names a Secret or ConfigMap key holding a PEM CA bundle.
type CAProvider struct {
	// type is Secret or ConfigMap.
	// +required
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Type string `json:"type"`

	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key of the object's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`

	// namespace of the object: only a ClusterSecretStore sets it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// VaultClientTLS is a client certificate and key kept in Secrets.
type VaultClientTLS struct {
	// certSecretRef is the Secret key holding the PEM certificate.
	// +required
	CertSecretRef SecretKeySelector `json:"certSecretRef"`

	// keySecretRef is the Secret key holding the PEM private key.
	// +required
	KeySecretRef SecretKeySelector `json:"keySecretRef"`
}

// VaultAuth is the union of the ways to log in to Vault.
// +kubebuilder:validation:XValidation:rule="[has(self.tokenSecretRef), has(self.appRole), has(self.kubernetes), has(self.jwt), has(self.userPass), has(self.ldap), has(self.cert), has(self.iam), has(self.gcp)].exists_one(x, x)",message="vault.auth must set exactly one of tokenSecretRef, appRole, kubernetes, jwt, userPass, ldap, cert, iam or gcp"
type VaultAuth struct {
	// tokenSecretRef is a Secret key holding a Vault token.
	// +optional
	TokenSecretRef *SecretKeySelector `json:"tokenSecretRef,omitempty"`

	// appRole logs in with a role ID and a secret ID.
	// +optional
	AppRole *VaultAppRoleAuth `json:"appRole,omitempty"`

	// kubernetes logs in with a short-lived service-account token that
	// Watchword requests (TokenRequest); Vault checks it with a TokenReview.
	// +optional
	Kubernetes *VaultKubernetesAuth `json:"kubernetes,omitempty"`

	// jwt logs in with a short-lived service-account token through Vault's
	// JWT/OIDC auth method.
	// +optional
	JWT *VaultJWTAuth `json:"jwt,omitempty"`

	// userPass logs in with a user name and a password kept in a Secret,
	// through Vault's userpass auth method.
	// +optional
	UserPass *VaultPasswordAuth `json:"userPass,omitempty"`

	// ldap logs in with a directory user name and a password kept in a
	// Secret, through Vault's LDAP auth method.
	// +optional
	LDAP *VaultPasswordAuth `json:"ldap,omitempty"`

	// cert logs in with a TLS client certificate kept in a Secret, through
	// Vault's TLS certificate auth method. The certificate is presented on
	// every connection to Vault, so vault.tls is not set with it.
	// +optional
	Cert *VaultCertAuth `json:"cert,omitempty"`

	// iam logs in with an AWS identity, through the IAM flavour of
	// Vault's aws auth method: Watchword signs an sts:GetCallerIdentity
	// request, which Vault sends to STS to learn who signed it.
	// +optional
	IAM *VaultIAMAuth `json:"iam,omitempty"`

	// gcp logs in as a Google Cloud service account whose key is kept in a
	// Secret, through the iam type of Vault's gcp auth method: Watchword
	// signs a short-lived JWT with the key, and Vault checks it against
	// the account's public keys.
	// +optional
	GCP *VaultGCPAuth `json:"gcp,omitempty"`
}

// VaultGCPAuth logs in with Vault's gcp auth method (iam type).
type VaultGCPAuth struct {
	// path is the mount path of the auth method. Defaults to gcp.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// role is the Vault role to log in as (auth/<path>/role/<role>, of
	// type iam).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Role string `json:"role"`

	// secretRef names the Secret key that holds the service account's
	// JSON key file.
	// +required
	SecretRef GCPSMSecretRef `json:"secretRef"`
}

// VaultPasswordAuth logs in with a user name and a password (the userpass
// and LDAP auth methods).
type VaultPasswordAuth struct {
	// path is the mount path of the auth method. Defaults to userpass for
	// userPass and ldap for ldap.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// username is the user to log in as (not a secret: it is named in
	// messages).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="username may not contain a slash: it is a segment of the login path"
	Username string `json:"username"`

	// secretRef is the Secret key holding the password.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// VaultCertAuth logs in with Vault's TLS certificate auth method.
type VaultCertAuth struct {
	// path is the mount path of the auth method. Defaults to cert.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// name is the certificate role (auth/<path>/certs/<name>) to log in
	// as. Empty: Vault tries every role whose trusted certificates match.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// clientCert is the Secret key holding the PEM client certificate
	// (with its intermediates, if any).
	// +required
	ClientCert SecretKeySelector `json:"clientCert"`

	// clientKey is the Secret key holding the PEM private key of the
	// certificate.
	// +required
	ClientKey SecretKeySelector `json:"clientKey"`
}

// VaultIAMAuth logs in with Vault's aws auth method, IAM flavour. The AWS
// credentials come from auth, like those of the awssm block; role, when
// set, is assumed with them first.
// +kubebuilder:validation:XValidation:rule="!has(self.externalID) || has(self.role)",message="iam.externalID needs iam.role: it is passed when the role is assumed"
type VaultIAMAuth struct {
	// path is the mount path of the aws auth method. Defaults to aws.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// vaultRole is the role of Vault's aws auth method to log in as
	// (auth/<path>/role/<vaultRole>, with auth_type iam).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	VaultRole string `json:"vaultRole"`

	// region is the region the request is signed for (and of the STS
	// that auth.jwt and role use). Defaults to us-east-1.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// stsEndpoint is the STS address that the signed request names.
	// Defaults to the global https://sts.amazonaws.com, where Vault sends
	// the request unless the sts_endpoint of its
	// auth/<path>/config/client names a regional STS, such as
	// https://sts.eu-central-1.amazonaws.com: then set the same here, and
	// region to its region. It is also the STS that auth.jwt and role use.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	STSEndpoint string `json:"stsEndpoint,omitempty"`

	// iamServerID is the value of the X-Vault-AWS-IAM-Server-ID header
	// that Watchword signs into the request, when Vault's
	// auth/<path>/config/client sets iam_server_id_header_value (which
	// keeps a request signed for one Vault from being replayed to
	// another).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	IAMServerID string `json:"iamServerID,omitempty"`

	// auth says where the AWS credentials come from: static keys from a
	// Secret, a web identity token of a service account, or (on a
	// ClusterSecretStore only) the controller's own credentials.
	// +required
	Auth *AWSAuth `json:"auth"`

	// role is the ARN of an IAM role to assume with the credentials of
	// auth before signing, such as arn:aws:iam::111122223333:role/vault.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Role string `json:"role,omitempty"`

	// externalID is passed when role is assumed.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1224
	ExternalID string `json:"externalID,omitempty"`
}

// VaultAppRoleAuth logs in with AppRole.
// +kubebuilder:validation:XValidation:rule="has(self.roleId) != has(self.roleRef)",message="appRole must set exactly one of roleId or roleRef"
type VaultAppRoleAuth struct {
	// path is the mount path of the AppRole auth method. Defaults to
	// approle.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// roleId is the role ID (not a secret).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	RoleID string `json:"roleId,omitempty"`

	// roleRef is a Secret key holding the role ID.
	// +optional
	RoleRef *SecretKeySelector `json:"roleRef,omitempty"`

	// secretRef is the Secret key holding the secret ID.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// VaultKubernetesAuth logs in with Vault's Kubernetes auth method.
type VaultKubernetesAuth struct {
	// mountPath of the auth method. Defaults to kubernetes.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MountPath string `json:"mountPath,omitempty"`

	// role is the Vault role to log in as.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Role string `json:"role"`

	// serviceAccountRef is the service account whose token is requested.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`
}

// VaultJWTAuth logs in with Vault's JWT/OIDC auth method.
type VaultJWTAuth struct {
	// path is the mount path of the auth method. Defaults to jwt.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// role is the Vault role to log in as.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Role string `json:"role,omitempty"`

	// serviceAccountRef is the service account whose token is requested.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`
}
