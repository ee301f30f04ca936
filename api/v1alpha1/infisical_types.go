package v1alpha1

// InfisicalProvider reads the secrets of an Infisical project, in one of
// its environments and under one folder path. A remote key is a secret's
// name, or a path to it below the folder (path/to/KEY). It has the shape
// of External Secrets Operator's infisical provider.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="infisical: set caBundle or caProvider, not both",fieldPath=".caProvider"
type InfisicalProvider struct {
	// hostAPI is the address of the Infisical API, such as
	// https://app.infisical.com/api (the default) or a self-hosted
	// instance's https://infisical.example.com/api.
	// +optional
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#@]+(/[^?#]*)?$`
	HostAPI string `json:"hostAPI,omitempty"`

	// auth says how Watchword logs in to Infisical: as a machine identity.
	// +required
	Auth InfisicalAuth `json:"auth"`

	// secretsScope is the project, environment and folder the secrets are
	// read from.
	// +required
	SecretsScope InfisicalSecretsScope `json:"secretsScope"`

	// caBundle is a PEM bundle of the certificate authorities the
	// instance's certificate chains to, added to the system's. Set it or
	// caProvider, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`
}

// InfisicalAuth is the machine identity Watchword logs in as, and how.
// Exactly one login is set.
// +kubebuilder:validation:XValidation:rule="[has(self.universalAuthCredentials), has(self.kubernetesAuth)].exists_one(x, x)",message="infisical.auth: set exactly one of universalAuthCredentials and kubernetesAuth"
type InfisicalAuth struct {
	// universalAuthCredentials are the client ID and client secret of a
	// machine identity's Universal Auth.
	// +optional
	UniversalAuthCredentials *InfisicalUniversalAuthCredentials `json:"universalAuthCredentials,omitempty"`

	// kubernetesAuth logs in with a token Watchword requests for a
	// service account, which Infisical reviews with the cluster
	// (a machine identity's Kubernetes Auth).
	// +optional
	KubernetesAuth *InfisicalKubernetesAuth `json:"kubernetesAuth,omitempty"`
}

// InfisicalKubernetesAuth is a machine identity's Kubernetes Auth.
type InfisicalKubernetesAuth struct {
	// identityId is the ID of the machine identity.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9-]+$`
	IdentityID string `json:"identityId"`

	// serviceAccountRef is the service account whose token is sent. In a
	// SecretStore it is of the store's namespace; a ClusterSecretStore
	// gives its namespace. audiences are those the identity allows, if it
	// names any.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`
}

// InfisicalUniversalAuthCredentials names the Secret keys of a machine
// identity's Universal Auth credentials.
type InfisicalUniversalAuthCredentials struct {
	// clientId is the Secret key that holds the machine identity's client ID.
	// +required
	ClientID SecretKeySelector `json:"clientId"`

	// clientSecret is the Secret key that holds its client secret.
	// +required
	ClientSecret SecretKeySelector `json:"clientSecret"`
}

// InfisicalSecretsScope is where the secrets are read.
type InfisicalSecretsScope struct {
	// projectSlug is the slug of the Infisical project.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9-]*$`
	ProjectSlug string `json:"projectSlug"`

	// environmentSlug is the slug of the environment, such as dev or prod.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	EnvironmentSlug string `json:"environmentSlug"`

	// secretsPath is the folder the keys are read from and listed under;
	// "/" (the default) is the environment's root.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?)?$`
	SecretsPath string `json:"secretsPath,omitempty"`

	// recursive lists the secrets of the folders below secretsPath too
	// (dataFrom.find), each by its path below secretsPath.
	// +optional
	Recursive bool `json:"recursive,omitempty"`
}
