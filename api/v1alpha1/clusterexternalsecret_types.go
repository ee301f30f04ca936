package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceTargets selects the namespaces a cluster-wide object is stamped
// into: a namespace is selected when it matches any one of the label
// selectors, names or regular expressions (they are OR-ed). A namespace
// being deleted is never selected.
// +kubebuilder:validation:XValidation:rule="(has(self.namespaceSelectors) && size(self.namespaceSelectors) > 0) || (has(self.namespaces) && size(self.namespaces) > 0) || (has(self.namespaceRegexes) && size(self.namespaceRegexes) > 0)",message="select namespaces with at least one of namespaceSelectors, namespaces or namespaceRegexes"
type NamespaceTargets struct {
	// namespaceSelectors select namespaces by label; a namespace matching
	// any one of them is selected. An empty selector ({}) selects every
	// namespace. At most 8.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(s, (!has(s.matchLabels) || size(s.matchLabels) <= 64) && (!has(s.matchExpressions) || (size(s.matchExpressions) <= 16 && s.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64))))",message="each of namespaceSelectors may hold at most 64 matchLabels and 16 matchExpressions of at most 64 values each"
	// +listType=atomic
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`

	// namespaces lists namespaces by name.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// namespaceRegexes select the namespaces whose whole name matches one
	// of these regular expressions (RE2 syntax, as Go's regexp; each is
	// anchored at both ends, so "team-.*" selects team-a but not
	// my-team-a).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.all(r, ''.matches(r) == ''.matches(r))",message="every entry of namespaceRegexes must be a valid RE2 regular expression"
	// +listType=atomic
	NamespaceRegexes []string `json:"namespaceRegexes,omitempty"`
}

// StampedMetadata is the metadata a cluster-wide object gives the object it
// stamps into each namespace, besides Watchword's own label.
type StampedMetadata struct {
	// labels of each stamped object.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// annotations of each stamped object.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// FailedNamespace is a namespace a cluster-wide object selects but is not
// served in, and why. The reason names objects and causes, never a value.
type FailedNamespace struct {
	// namespace is the namespace's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// reason is why the namespace is not served: the stamped object could
	// not be written (for instance an object of the same name that this
	// cluster object does not own), or the stamped object is not Ready
	// (its Ready reason, such as NamespaceNotAllowed).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// FanOutStatus is the observed state of a cluster-wide object.
type FanOutStatus struct {
	// conditions are Ready and, while a failure waits for a change,
	// Stalled. Ready is True when every selected namespace has its stamped
	// object and each of them is Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation last stamped into every
	// selected namespace.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// provisionedNamespaces are the namespaces where the stamped object is
	// in place and up to date with the spec, sorted.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	ProvisionedNamespaces []string `json:"provisionedNamespaces,omitempty"`

	// failedNamespaces are the selected namespaces that are not served, and
	// why, sorted by namespace; at most 1,000 (the Ready condition gives
	// the total).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	FailedNamespaces []FailedNamespace `json:"failedNamespaces,omitempty"`
}

// ClusterExternalSecretSpec stamps an ExternalSecret into every selected
// namespace.
type ClusterExternalSecretSpec struct {
	// externalSecretSpec is the spec of every stamped ExternalSecret.
	// +required
	ExternalSecretSpec ExternalSecretSpec `json:"externalSecretSpec"`

	// externalSecretName is the name of the stamped ExternalSecrets.
	// Defaults to the ClusterExternalSecret's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ExternalSecretName string `json:"externalSecretName,omitempty"`

	// externalSecretMetadata are labels and annotations of the stamped
	// ExternalSecrets.
	// +optional
	ExternalSecretMetadata StampedMetadata `json:"externalSecretMetadata,omitempty"`

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
// +kubebuilder:resource:scope=Cluster,shortName=ces,categories=watchword
// +kubebuilder:printcolumn:name="Store",type=string,JSONPath=`.spec.externalSecretSpec.secretStoreRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterExternalSecret stamps one ExternalSecret, which it owns, into each
// namespace it selects, and removes it from a namespace that stops
// matching.
// A stamped ExternalSecret's target name is immutable, so the target the
// stamps write may change only together with the stamps' name (new
// stamps are made, and the old ones removed once the new ones are in
// place).
// +kubebuilder:validation:XValidation:rule="(has(self.spec.externalSecretName) && size(self.spec.externalSecretName) > 0 ? self.spec.externalSecretName : self.metadata.name) != (has(oldSelf.spec.externalSecretName) && size(oldSelf.spec.externalSecretName) > 0 ? oldSelf.spec.externalSecretName : oldSelf.metadata.name) || (has(self.spec.externalSecretSpec.target) && has(self.spec.externalSecretSpec.target.name) && size(self.spec.externalSecretSpec.target.name) > 0 ? self.spec.externalSecretSpec.target.name : (has(self.spec.externalSecretName) && size(self.spec.externalSecretName) > 0 ? self.spec.externalSecretName : self.metadata.name)) == (has(oldSelf.spec.externalSecretSpec.target) && has(oldSelf.spec.externalSecretSpec.target.name) && size(oldSelf.spec.externalSecretSpec.target.name) > 0 ? oldSelf.spec.externalSecretSpec.target.name : (has(oldSelf.spec.externalSecretName) && size(oldSelf.spec.externalSecretName) > 0 ? oldSelf.spec.externalSecretName : oldSelf.metadata.name))",message="the stamped target name is immutable: externalSecretSpec.target.name may change only together with externalSecretName (new ExternalSecrets are then stamped, and the old ones removed once the new ones are in place)",fieldPath=".spec.externalSecretSpec.target.name"
type ClusterExternalSecret struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to stamp and where.
	// +required
	Spec ClusterExternalSecretSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status FanOutStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterExternalSecretList is a list of ClusterExternalSecrets.
type ClusterExternalSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterExternalSecret `json:"items"`
}

func init() {
	register(&ClusterExternalSecret{}, &ClusterExternalSecretList{})
}
