package v1alpha1

// GitLabProvider reads, and for publishing writes, GitLab CI/CD variables:
// the variables of a project and those of groups. remoteRef.key is the
// variable's key; a variable has no versions. The block has the fields of
// External Secrets Operator's gitlab provider.
// +kubebuilder:validation:XValidation:rule="has(self.projectID) || (has(self.groupIDs) && size(self.groupIDs) > 0)",message="gitlab: set projectID, groupIDs or both: the variables are read from them"
// +kubebuilder:validation:XValidation:rule="!has(self.inheritFromGroups) || !self.inheritFromGroups || has(self.projectID)",message="gitlab.inheritFromGroups needs projectID: the groups are those the project belongs to",fieldPath=".inheritFromGroups"
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="gitlab: set caBundle or caProvider, not both",fieldPath=".caProvider"
type GitLabProvider struct {
	// url is the address of the GitLab instance, such as
	// https://gitlab.example.com. Defaults to https://gitlab.com/.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	URL string `json:"url,omitempty"`

	// auth holds the access token.
	// +required
	Auth GitLabAuth `json:"auth"`

	// projectID is the project whose variables are read (and written, for
	// publishing): its numeric ID or its full path, such as
	// mygroup/myproject.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProjectID string `json:"projectID,omitempty"`

	// groupIDs are groups (numeric IDs or full paths) whose variables are
	// read when the project has no variable of the key: the last group
	// given first, then the one before it, as External Secrets Operator
	// does (groups are read left to right, each overriding the one before,
	// and the project overrides them all).
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	GroupIDs []string `json:"groupIDs,omitempty"`

	// inheritFromGroups also reads the groups the project belongs to (its
	// group and that group's ancestors), after groupIDs, the nearest
	// first.
	// +optional
	InheritFromGroups bool `json:"inheritFromGroups,omitempty"`

	// environment is the environment scope of the variables read, such as
	// production: a variable of this scope is read, and one of the scope
	// "*" (all environments) when there is none. Empty: the variable of
	// any one scope (GitLab refuses a key held in several scopes; set
	// environment then).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Environment string `json:"environment,omitempty"`

	// caBundle is a PEM bundle of the certificate authorities the
	// instance's certificate chains to, instead of the system's. Set it or
	// caProvider, not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`
}

// GitLabAuth is how Watchword authenticates to GitLab.
type GitLabAuth struct {
	// secretRef names the Secret that holds the token.
	// +required
	SecretRef GitLabSecretRef `json:"secretRef"`
}

// GitLabSecretRef names the access token.
type GitLabSecretRef struct {
	// accessToken is the Secret key holding a personal, group or project
	// access token (scope read_api to read, api to publish), sent as the
	// PRIVATE-TOKEN header.
	// +required
	AccessToken SecretKeySelector `json:"accessToken"`
}
