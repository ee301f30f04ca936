package v1alpha1

// AzureKVProvider configures Azure Key Vault (secrets). remoteRef.key is
// the name of a secret of the vault, remoteRef.version one of its versions
// (empty: the current one), and remoteRef.property a member of a JSON
// value.
type AzureKVProvider struct {
	// vaultURL is the vault's address, such as
	// https://myvault.vault.azure.net (or the vault domain of a sovereign
	// cloud, such as https://myvault.vault.usgovcloudapi.net).
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="azurekv.vaultURL must start with https://, such as https://myvault.vault.azure.net"
	VaultURL string `json:"vaultURL"`

	// tenantID is the Microsoft Entra tenant (directory) ID the identity
	// belongs to. Required by workloadIdentity, clientSecret and
	// clientCertificate.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[-a-zA-Z0-9.]*$`
	TenantID string `json:"tenantID,omitempty"`

	// authorityHost is the Microsoft Entra host that issues tokens, for a
	// sovereign cloud: https://login.microsoftonline.us/ (Azure
	// Government) or https://login.chinacloudapi.cn/ (Azure China).
	// Defaults to https://login.microsoftonline.com/ (the public cloud).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="azurekv.authorityHost must start with https://, such as https://login.microsoftonline.us/"
	AuthorityHost string `json:"authorityHost,omitempty"`

	// auth says how to authenticate. Exactly one method is set.
	// +required
	Auth AzureKVAuth `json:"auth"`
}

// AzureKVAuth is the union of the ways to authenticate against Microsoft
// Entra ID for Key Vault.
// +kubebuilder:validation:XValidation:rule="[has(self.workloadIdentity), has(self.managedIdentity), has(self.clientSecret), has(self.clientCertificate)].exists_one(x, x)",message="azurekv.auth must set exactly one of workloadIdentity, managedIdentity, clientSecret or clientCertificate"
type AzureKVAuth struct {
	// workloadIdentity signs in as an application (or user-assigned
	// managed identity) that trusts a Kubernetes service account: Watchword
	// requests a token of the service account with the audience
	// api://AzureADTokenExchange and presents it as a federated client
	// assertion. Nothing long-lived is stored.
	// +optional
	WorkloadIdentity *AzureWorkloadIdentityAuth `json:"workloadIdentity,omitempty"`

	// managedIdentity uses the managed identity of the machine Watchword
	// runs on (the instance metadata endpoint), shared by everything that
	// runs there. Allowed on a ClusterSecretStore only.
	// +optional
	ManagedIdentity *AzureManagedIdentityAuth `json:"managedIdentity,omitempty"`

	// clientSecret signs in as an application with a client secret read
	// from a Secret.
	// +optional
	ClientSecret *AzureClientSecretAuth `json:"clientSecret,omitempty"`

	// clientCertificate signs in as an application with a certificate
	// credential: Watchword signs a client assertion with the
	// certificate's private key, read from a Secret.
	// +optional
	ClientCertificate *AzureClientCertificateAuth `json:"clientCertificate,omitempty"`
}

// AzureWorkloadIdentityAuth signs in with a federated credential of a
// Kubernetes service account.
type AzureWorkloadIdentityAuth struct {
	// clientID is the application (client) ID of the app registration or
	// managed identity that holds the federated credential.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ClientID string `json:"clientID"`

	// serviceAccountRef is the service account whose token Watchword
	// requests. The audience is api://AzureADTokenExchange unless
	// audiences are given. The federated credential's subject is
	// system:serviceaccount:<namespace>:<name>.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`
}

// AzureManagedIdentityAuth uses the managed identity of the machine.
type AzureManagedIdentityAuth struct {
	// clientID selects a user-assigned managed identity by its client ID.
	// Empty: the system-assigned identity.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ClientID string `json:"clientID,omitempty"`
}

// AzureClientSecretAuth signs in as an application with a client secret.
type AzureClientSecretAuth struct {
	// clientID is the application (client) ID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ClientID string `json:"clientID"`

	// clientSecretRef is the Secret key that holds the client secret.
	// +required
	ClientSecretRef SecretKeySelector `json:"clientSecretRef"`
}

// AzureClientCertificateAuth signs in as an application with a
// certificate credential.
type AzureClientCertificateAuth struct {
	// clientID is the application (client) ID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ClientID string `json:"clientID"`

	// certificateRef is the Secret key that holds the certificate and its
	// private key: PEM (the certificate and an unencrypted private key,
	// in any order) or PKCS#12 (PFX), binary as stored in the Secret.
	// +required
	CertificateRef SecretKeySelector `json:"certificateRef"`

	// passwordRef is the Secret key that holds the password of a PKCS#12
	// certificate. Omit it for PEM or a PKCS#12 file without a password.
	// +optional
	PasswordRef *SecretKeySelector `json:"passwordRef,omitempty"`
}
