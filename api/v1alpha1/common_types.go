package v1alpha1

// SecretKeySelector names one key of a Kubernetes Secret. In a SecretStore
// the Secret is always in the store's own namespace; in a ClusterSecretStore
// the namespace must be given.
type SecretKeySelector struct {
	// name is the name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key is the key inside the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// namespace of the Secret. Only a ClusterSecretStore may set it; a
	// SecretStore always reads from its own namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// ServiceAccountSelector names a service account for which Watchword
// requests a short-lived token (TokenRequest), so that no long-lived token is
// stored anywhere.
type ServiceAccountSelector struct {
	// name of the service account.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the service account. Only a ClusterSecretStore may set
	// it; a SecretStore always uses its own namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// audiences requested for the token. Defaults to the API server's
	// own audience.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	Audiences []string `json:"audiences,omitempty"`
}

// ConfigMapKeySelector names one key of a ConfigMap.
type ConfigMapKeySelector struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key inside the ConfigMap's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`

	// namespace of the ConfigMap. Only a ClusterSecretStore may set it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}
