package v1alpha1

// OnePasswordProvider reads and writes the items of 1Password vaults
// through a 1Password Connect server. A remote key is an item's title (or
// its ID), a property one of its fields by label (or a file by name); the
// vaults are searched in their priority order, and the first that holds
// the item answers. It has the shape of External Secrets Operator's
// onepassword provider.
type OnePasswordProvider struct {
	// connectHost is the address of the Connect server, such as
	// http://onepassword-connect.op.svc:8080.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#]+/?$`
	ConnectHost string `json:"connectHost"`

	// vaults are the vaults to search, by name (or ID), each with its
	// priority: 1 is searched first. A new item is written to the vault
	// searched first.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 1)",message="onepassword.vaults: each priority is 1 or more (1 is searched first)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.all(j, j == k || self[j] != self[k]))",message="onepassword.vaults: two vaults cannot share a priority"
	Vaults map[string]int32 `json:"vaults"`

	// auth says how Watchword authenticates to the Connect server.
	// +required
	Auth OnePasswordAuth `json:"auth"`
}

// OnePasswordAuth is the credential of a Connect server.
type OnePasswordAuth struct {
	// secretRef names the Secret key that holds the Connect token.
	// +required
	SecretRef OnePasswordAuthSecretRef `json:"secretRef"`
}

// OnePasswordAuthSecretRef names the Connect token.
type OnePasswordAuthSecretRef struct {
	// connectTokenSecretRef is the Secret key that holds the access token
	// of the Connect server (sent as a bearer token).
	// +required
	ConnectToken SecretKeySelector `json:"connectTokenSecretRef"`
}
