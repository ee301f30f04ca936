package v1alpha1

// BarbicanProvider configures OpenStack Barbican, the key manager service:
// where it is, and how Watchword authenticates (Keystone v3, or token-less
// for a deployment without Keystone).
// +kubebuilder:validation:XValidation:rule="has(self.auth.noAuth) || (has(self.authURL) && size(self.authURL) > 0)",message="barbican.authURL is required: it is Keystone's v3 URL (only auth.noAuth goes without it)",fieldPath=".authURL"
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="barbican: set caBundle or caProvider, not both",fieldPath=".caProvider"
// +kubebuilder:validation:XValidation:rule="!has(self.auth.noAuth) || (has(self.endpoint) && size(self.endpoint) > 0)",message="barbican.endpoint is required with auth.noAuth: without Keystone there is no catalog to find Barbican in",fieldPath=".endpoint"
type BarbicanProvider struct {
	// authURL is Keystone's v3 identity URL, such as
	// https://keystone.example.com:5000/v3. Required unless auth.noAuth.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	AuthURL string `json:"authURL,omitempty"`

	// endpoint is Barbican's URL, such as https://barbican.example.com:9311
	// (without /v1). Defaults to the key-manager endpoint of Keystone's
	// catalog; required with auth.noAuth.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	Endpoint string `json:"endpoint,omitempty"`

	// region picks the catalog's key-manager endpoint of this region.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Region string `json:"region,omitempty"`

	// interface picks the catalog's endpoint of this interface: public
	// (the default), internal or admin.
	// +optional
	// +kubebuilder:validation:Enum=public;internal;admin
	Interface string `json:"interface,omitempty"`

	// caBundle is a PEM bundle of the certificate authorities that
	// Keystone's and Barbican's certificates chain to, instead of the
	// system's. Set it or caProvider, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap. Set it
	// or caBundle, not both.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`

	// auth says how to authenticate. Exactly one method is set.
	// +required
	Auth BarbicanAuth `json:"auth"`
}

// BarbicanAuth is the union of the ways to authenticate against Barbican.
// +kubebuilder:validation:XValidation:rule="[has(self.applicationCredential), has(self.password), has(self.noAuth)].exists_one(x, x)",message="barbican.auth must set exactly one of applicationCredential, password or noAuth"
type BarbicanAuth struct {
	// applicationCredential logs in to Keystone with an application
	// credential, which is bound to one project: the preferred way.
	// +optional
	ApplicationCredential *BarbicanApplicationCredential `json:"applicationCredential,omitempty"`

	// password logs in to Keystone as a user with a password, scoped to a
	// project.
	// +optional
	Password *BarbicanPasswordAuth `json:"password,omitempty"`

	// noAuth sends no token, for a Barbican deployed without Keystone
	// (its token-less pipeline): every request names the project itself.
	// Anyone who reaches such a Barbican can act as any project.
	// +optional
	NoAuth *BarbicanNoAuth `json:"noAuth,omitempty"`
}

// BarbicanApplicationCredential is a Keystone application credential.
type BarbicanApplicationCredential struct {
	// id is the application credential's ID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`

	// secretRef is the Secret key that holds the application credential's
	// secret.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// BarbicanPasswordAuth logs in as a Keystone user with a password.
// +kubebuilder:validation:XValidation:rule="[has(self.userID), has(self.username)].exists_one(x, x)",message="barbican.auth.password must set exactly one of userID or username"
// +kubebuilder:validation:XValidation:rule="[has(self.projectID), has(self.projectName)].exists_one(x, x)",message="barbican.auth.password must set exactly one of projectID or projectName"
type BarbicanPasswordAuth struct {
	// userID is the user's ID. Set it or username.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UserID string `json:"userID,omitempty"`

	// username is the user's name, in userDomainName. Set it or userID.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Username string `json:"username,omitempty"`

	// userDomainName is the domain of username. Defaults to Default.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UserDomainName string `json:"userDomainName,omitempty"`

	// passwordSecretRef is the Secret key that holds the password.
	// +required
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef"`

	// projectID is the ID of the project to scope to, whose secrets are
	// read. Set it or projectName.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProjectID string `json:"projectID,omitempty"`

	// projectName is the name of the project to scope to, in
	// projectDomainName. Set it or projectID.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProjectName string `json:"projectName,omitempty"`

	// projectDomainName is the domain of projectName. Defaults to Default.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProjectDomainName string `json:"projectDomainName,omitempty"`
}

// BarbicanNoAuth is the project a token-less Barbican acts for.
type BarbicanNoAuth struct {
	// projectID is sent as X-Project-Id with every request.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ProjectID string `json:"projectID"`
}
