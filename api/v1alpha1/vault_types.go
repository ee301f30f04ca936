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
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap.
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
// +kubebuilder:validation:XValidation:rule="[has(self.tokenSecretRef), has(self.appRole), has(self.kubernetes), has(self.jwt)].exists_one(x, x)",message="vault.auth must set exactly one of tokenSecretRef, appRole, kubernetes or jwt"
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
