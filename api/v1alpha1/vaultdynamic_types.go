package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// VaultLeaseDeletionPolicy says what becomes of a Vault lease when the
// ExternalSecret that holds it is deleted.
// +kubebuilder:validation:Enum=Revoke;Retain
type VaultLeaseDeletionPolicy string

const (
	// VaultLeaseRevoke revokes the lease: Vault deletes the credentials.
	VaultLeaseRevoke VaultLeaseDeletionPolicy = "Revoke"
	// VaultLeaseRetain leaves the lease to expire at the end of its TTL.
	VaultLeaseRetain VaultLeaseDeletionPolicy = "Retain"
)

// VaultDynamicSecret asks a Vault secrets engine for credentials, such as
// database/creds/ROLE or aws/creds/ROLE, and keeps the lease Vault grants
// with them: Watchword renews it, issues new credentials before its
// maximum TTL (a rotation), and revokes it when the ExternalSecret goes.
// A certificate from a PKI role (pki/issue/ROLE, method POST, with
// common_name in parameters) is held the same way, by its serial number
// and notAfter: replaced before it expires, revoked on delete.
// A path whose answer carries no lease, such as database/static-creds/ROLE,
// is read again at every refresh like a KV secret, its last rotation time
// as its version.
type VaultDynamicSecret struct {
	// path is the Vault API path to read, relative to /v1/, such as
	// database/creds/app.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..') && !self.contains('?') && !self.contains('#')",message="vaultDynamic.path is a Vault path such as database/creds/app: no leading '/', no '..', no query"
	Path string `json:"path"`

	// method is GET (the default; parameters become the query) or POST
	// (parameters become the JSON body), as the engine's endpoint takes
	// them: POST for aws/sts/ROLE with a ttl, for example.
	// +optional
	// +kubebuilder:default=GET
	// +kubebuilder:validation:Enum=GET;POST
	Method string `json:"method,omitempty"`

	// parameters are sent with the request. They are not secret: put no
	// secret here.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Parameters map[string]string `json:"parameters,omitempty"`

	// renewPercent is how much of a lease's TTL passes before it is
	// renewed: 67 renews a one-hour lease after 40 minutes. When Vault
	// grants less than the lease's TTL (its maximum TTL is near), the same
	// share of what is left passes, and new credentials are issued
	// instead.
	// +optional
	// +kubebuilder:default=67
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=90
	RenewPercent int32 `json:"renewPercent,omitempty"`

	// renewBefore is, when set, how long before the lease's expiry to act,
	// instead of at renewPercent, as a Go duration (such as 720h): for a
	// certificate, how long before its notAfter a new one is issued.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$')",message="vaultDynamic.renewBefore must be a Go duration such as 10m or 720h"
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`

	// deletionPolicy is Revoke (the default: the lease is revoked when the
	// ExternalSecret is deleted, or when its target is deleted and new
	// credentials are issued for the new one) or Retain (the lease is left
	// to expire).
	// +optional
	// +kubebuilder:default=Revoke
	DeletionPolicy VaultLeaseDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// VaultLeaseStatus is the Vault lease that holds the credentials of an
// ExternalSecret's target. Lease IDs are not secret values: they grant
// nothing without a token allowed to renew or revoke them.
type VaultLeaseStatus struct {
	// id is Vault's lease ID; for a PKI certificate, pki:MOUNT:SERIAL.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	ID string `json:"id"`

	// path is the path the credentials were read from.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`

	// issueTime is when the credentials were issued.
	// +required
	IssueTime metav1.Time `json:"issueTime"`

	// renewTime is when the lease was last renewed; unset before its first
	// renewal.
	// +optional
	RenewTime *metav1.Time `json:"renewTime,omitempty"`

	// ttl is the TTL Vault granted at issue, asked for again at every
	// renewal.
	// +required
	TTL metav1.Duration `json:"ttl"`

	// duration is what Vault granted last (at issue or at the last
	// renewal); less than ttl when the maximum TTL is near.
	// +required
	Duration metav1.Duration `json:"duration"`

	// expiryTime is when the lease ends unless it is renewed.
	// +required
	ExpiryTime metav1.Time `json:"expiryTime"`

	// renewable tells whether Vault lets the lease be renewed.
	// +optional
	Renewable bool `json:"renewable,omitempty"`
}
