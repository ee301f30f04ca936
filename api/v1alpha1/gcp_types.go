package v1alpha1

// GCPSMProvider configures Google Cloud Secret Manager. remoteRef.key is
// the ID of a secret of the project (and location), remoteRef.version a
// version number or alias (empty: latest), and remoteRef.property a member
// of a JSON object value.
type GCPSMProvider struct {
	// projectID is the project that holds the secrets.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]*$`
	ProjectID string `json:"projectID"`

	// location makes the store read regional secrets of this location,
	// such as europe-west1, through the location's own endpoint
	// (secretmanager.LOCATION.rep.googleapis.com). Empty: global secrets.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]*$`
	Location string `json:"location,omitempty"`

	// auth says how to authenticate. Exactly one method is set.
	// +required
	Auth GCPSMAuth `json:"auth"`
}

// GCPSMAuth is the union of the ways to authenticate against Google Cloud.
// +kubebuilder:validation:XValidation:rule="[has(self.secretRef), has(self.workloadIdentityFederation)].exists_one(x, x)",message="gcpsm.auth must set exactly one of secretRef or workloadIdentityFederation"
type GCPSMAuth struct {
	// secretRef reads a service-account key (the JSON key file) from a
	// Secret.
	// +optional
	SecretRef *GCPSMSecretRef `json:"secretRef,omitempty"`

	// workloadIdentityFederation exchanges a token of a Kubernetes service
	// account, requested by Watchword, for a Google access token at the
	// Security Token Service, and optionally impersonates a Google service
	// account with it. Nothing long-lived is stored.
	// +optional
	WorkloadIdentityFederation *GCPWorkloadIdentityFederation `json:"workloadIdentityFederation,omitempty"`
}

// GCPSMSecretRef names the Secret key holding a service-account key.
type GCPSMSecretRef struct {
	// secretAccessKeySecretRef is the Secret key that holds the JSON key
	// of the service account.
	// +required
	SecretAccessKeySecretRef SecretKeySelector `json:"secretAccessKeySecretRef"`
}

// GCPWorkloadIdentityFederation signs in with a Kubernetes service
// account's token through a workload identity pool.
type GCPWorkloadIdentityFederation struct {
	// audience is the workload identity pool provider, such as
	// //iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/POOL/providers/PROVIDER.
	// It is also the audience of the requested token unless the service
	// account selector names others.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('//iam.googleapis.com/')",message="workloadIdentityFederation.audience must be the pool provider's name, starting with //iam.googleapis.com/"
	Audience string `json:"audience"`

	// serviceAccountRef is the Kubernetes service account whose token
	// Watchword requests.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`

	// serviceAccountEmail is a Google service account to impersonate with
	// the federated token. Empty: the federated identity is granted access
	// directly.
	// +optional
	// +kubebuilder:validation:MaxLength=254
	ServiceAccountEmail string `json:"serviceAccountEmail,omitempty"`
}
