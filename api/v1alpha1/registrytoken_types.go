package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RegistryKind names a container registry whose cloud issues short-lived
// pull tokens.
// +kubebuilder:validation:Enum=ECR
type RegistryKind string

// RegistryECR is Amazon Elastic Container Registry: the token of
// ecr:GetAuthorizationToken, valid for 12 hours.
const RegistryECR RegistryKind = "ECR"

// RegistryToken asks the store's cloud for a registry pull token and
// writes it as a kubernetes.io/dockerconfigjson Secret (the key
// .dockerconfigjson). The token is issued by the cloud with an expiry,
// like a Vault lease: the status records that expiry (status.lease), and
// a new token is asked for renewBefore it, never at a plain refresh or a
// controller restart while the one held is fresh. A new token is a
// rotation of the target. ECR takes an awssm or awsps store: the token is
// asked for with the store's AWS credentials (static keys, web identity,
// an assumed role), which need ecr:GetAuthorizationToken.
type RegistryToken struct {
	// registry is the registry kind; ECR is the only one so far.
	// +required
	Registry RegistryKind `json:"registry"`

	// registryID is, for ECR, the account ID of the registry (12 digits)
	// the .dockerconfigjson names, in the store's region; unset, the
	// registry of the store's own account. The token is the same (ECR's
	// token is good for every registry the caller may pull from).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +kubebuilder:validation:MaxLength=12
	RegistryID string `json:"registryID,omitempty"`

	// renewBefore is how long before the token's expiry a new one is
	// asked for, as a Go duration from 1m to 11h (ECR's tokens last 12h).
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$') && duration(self) >= duration('1m') && duration(self) <= duration('11h')",message="registryToken.renewBefore must be a Go duration from 1m to 11h, such as 1h"
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}
