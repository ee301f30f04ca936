package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterPushSecretSpec stamps a PushSecret into every selected namespace.
type ClusterPushSecretSpec struct {
	// pushSecretSpec is the spec of every stamped PushSecret; each
	// publishes the Secret of its own namespace.
	// +required
	PushSecretSpec PushSecretSpec `json:"pushSecretSpec"`

	// pushSecretName is the name of the stamped PushSecrets. Defaults to
	// the ClusterPushSecret's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	PushSecretName string `json:"pushSecretName,omitempty"`

	// pushSecretMetadata are labels and annotations of the stamped
	// PushSecrets.
	// +optional
	PushSecretMetadata StampedMetadata `json:"pushSecretMetadata,omitempty"`

	NamespaceTargets `json:",inline"`

	// refreshTime is how often the selected namespaces are listed again,
	// besides the watch of namespaces that picks up a new or relabelled
	// one at once. Defaults to 1h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$')",message="refreshTime must be a Go duration such as 30s, 15m or 1h (up to four parts of at most 5 digits)"
	RefreshTime *metav1.Duration `json:"refreshTime,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cps,categories=watchword
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.pushSecretSpec.secretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterPushSecret stamps one PushSecret, which it owns, into each
// namespace it selects, and removes it from a namespace that stops
// matching.
type ClusterPushSecret struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to stamp and where.
	// +required
	Spec ClusterPushSecretSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status FanOutStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterPushSecretList is a list of ClusterPushSecrets.
type ClusterPushSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPushSecret `json:"items"`
}

func init() {
	register(&ClusterPushSecret{}, &ClusterPushSecretList{})
}
