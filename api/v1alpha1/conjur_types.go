package v1alpha1

// ConjurProvider reads the variables of CyberArk Conjur (Conjur Open
// Source, or Secrets Manager Self-Hosted, which speaks the same REST API).
// remoteRef.key is a variable's ID, such as prod/db/password; its version
// is the variable's version. It has the fields of External Secrets
// Operator's conjur provider.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="conjur: set caBundle or caProvider, not both",fieldPath=".caProvider"
type ConjurProvider struct {
	// url is the address of the Conjur server, such as
	// https://conjur.example.com.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#]+(/[^?#]*)?$`
	URL string `json:"url"`

	// caBundle is a PEM bundle of the certificate authorities the
	// server's certificate chains to, instead of the system's. Set it or
	// caProvider, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`

	// auth says how Watchword authenticates to Conjur: set exactly one of
	// apikey and jwt.
	// +required
	Auth ConjurAuth `json:"auth"`
}

// ConjurAuth is one way of authenticating to Conjur.
// +kubebuilder:validation:XValidation:rule="[has(self.apikey), has(self.jwt)].exists_one(x, x)",message="conjur.auth: set exactly one of apikey and jwt"
type ConjurAuth struct {
	// apikey authenticates a host or user with its API key (Conjur's
	// authn authenticator).
	// +optional
	APIKey *ConjurAPIKeyAuth `json:"apikey,omitempty"`

	// jwt authenticates with a JSON Web Token through an authn-jwt
	// authenticator: a token requested for a service account, or one
	// kept in a Secret.
	// +optional
	JWT *ConjurJWTAuth `json:"jwt,omitempty"`
}

// ConjurAPIKeyAuth is a login and its API key, kept in Secrets.
type ConjurAPIKeyAuth struct {
	// account is the Conjur account (organization), such as myorg.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Account string `json:"account"`

	// userRef is the Secret key that holds the login, such as
	// host/apps/myapp.
	// +required
	UserRef SecretKeySelector `json:"userRef"`

	// apiKeyRef is the Secret key that holds the login's API key.
	// +required
	APIKeyRef SecretKeySelector `json:"apiKeyRef"`
}

// ConjurJWTAuth authenticates through an authn-jwt authenticator.
// +kubebuilder:validation:XValidation:rule="[has(self.serviceAccountRef), has(self.secretRef)].exists_one(x, x)",message="conjur.auth.jwt: set exactly one of serviceAccountRef and secretRef"
type ConjurJWTAuth struct {
	// account is the Conjur account (organization), such as myorg.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Account string `json:"account"`

	// serviceID is the ID of the authn-jwt authenticator
	// (authn-jwt/<serviceID>).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServiceID string `json:"serviceID"`

	// hostId is the Conjur host to authenticate as, such as
	// host/apps/myapp, for an authenticator that does not take the host
	// from the token's claims.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	HostID string `json:"hostId,omitempty"`

	// serviceAccountRef requests a token for this service account (with
	// the audiences the authenticator expects) and presents it.
	// +optional
	ServiceAccountRef *ServiceAccountSelector `json:"serviceAccountRef,omitempty"`

	// secretRef is a Secret key that holds a token to present.
	// +optional
	SecretRef *SecretKeySelector `json:"secretRef,omitempty"`
}
