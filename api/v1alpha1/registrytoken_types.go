package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RegistryKind names a container registry whose cloud issues short-lived
// pull tokens.
// +kubebuilder:validation:Enum=ECR;GAR
type RegistryKind string

const (
	// RegistryECR is Amazon Elastic Container Registry: the token of
	// ecr:GetAuthorizationToken, valid for 12 hours.
	RegistryECR RegistryKind = "ECR"
	// RegistryGAR is Google Artifact Registry (and Container Registry): an
	// OAuth access token of the store's Google credentials, with the user
	// name oauth2accesstoken, valid for an hour.
	RegistryGAR RegistryKind = "GAR"
)

// RegistryToken asks the store's cloud for a registry pull token and
// writes it as a kubernetes.io/dockerconfigjson Secret (the key
// .dockerconfigjson). The token is issued by the cloud with an expiry,
// like a Vault lease: the status records that expiry (status.lease), and
// a new token is asked for renewBefore it, never at a plain refresh or a
// controller restart while the one held is fresh. A new token is a
// rotation of the target. ECR takes an awssm or awsps store: the token is
// asked for with the store's AWS credentials (static keys, web identity,
// an assumed role), which need ecr:GetAuthorizationToken. GAR takes a
// gcpsm store: the token is a fresh access token of the store's Google
// credentials (a service-account key, or workload identity federation
// and the service account it impersonates), whose service account needs
// roles/artifactregistry.reader on the repositories.
// +kubebuilder:validation:XValidation:rule="self.registry != 'GAR' || has(self.host)",message="registryToken.host is required for GAR: the registry host, such as europe-docker.pkg.dev",fieldPath=".host"
// +kubebuilder:validation:XValidation:rule="self.registry != 'GAR' || !has(self.registryID)",message="registryToken.registryID is for ECR: for GAR, name the registry in host",fieldPath=".registryID"
// +kubebuilder:validation:XValidation:rule="self.registry != 'ECR' || !has(self.host)",message="registryToken.host is for GAR: for ECR, name another account's registry in registryID",fieldPath=".host"
// +kubebuilder:validation:XValidation:rule="self.registry != 'GAR' || !has(self.renewBefore) || duration(self.renewBefore) <= duration('50m')",message="registryToken.renewBefore must be at most 50m for GAR (its tokens last an hour)",fieldPath=".renewBefore"
type RegistryToken struct {
	// registry is the registry kind: ECR or GAR.
	// +required
	Registry RegistryKind `json:"registry"`

	// host is, for GAR, the registry host the .dockerconfigjson names:
	// LOCATION-docker.pkg.dev for Artifact Registry, or gcr.io and its
	// regional hosts. Required for GAR, unset for ECR.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`
	Host string `json:"host,omitempty"`

	// registryID is, for ECR, the account ID of the registry (12 digits)
	// the .dockerconfigjson names, in the store's region; unset, the
	// registry of the store's own account. The token is the same (ECR's
	// token is good for every registry the caller may pull from).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +kubebuilder:validation:MaxLength=12
	RegistryID string `json:"registryID,omitempty"`

	// renewBefore is how long before the token's expiry a new one is
	// asked for, as a Go duration from 1m to 11h (ECR's tokens last 12h;
	// at most 50m for GAR, whose tokens last an hour). Unset: 1h for ECR,
	// 10m for GAR.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$') && duration(self) >= duration('1m') && duration(self) <= duration('11h')",message="registryToken.renewBefore must be a Go duration from 1m to 11h, such as 1h"
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}
