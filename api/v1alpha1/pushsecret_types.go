package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PushSecretData selects one key of the source Secret and names it in the
// remote secret.
type PushSecretData struct {
	// secretKey is the key in the source Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	SecretKey string `json:"secretKey"`

	// remoteKey is the name of the field in the remote secret. Defaults to
	// secretKey.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	RemoteKey string `json:"remoteKey,omitempty"`
}

// PushSecretTemplate renders the published fields.
type PushSecretTemplate struct {
	// data maps a remote field to a Go text/template rendered over the
	// selected keys (.data.KEY, or index .data "key-with-dashes").
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=256
	Data map[string]string `json:"data"`

	// mergePolicy is Replace (the default: only the templated fields are
	// published) or Merge (the selected keys too, templated fields
	// winning).
	// +optional
	// +kubebuilder:default=Replace
	MergePolicy TemplateMergePolicy `json:"mergePolicy,omitempty"`
}

// PushSecretMetadata is metadata of a published secret, for stores that
// have it (labels, annotations and type of a Kubernetes Secret; tags of a
// store that tags its secrets). A store without such metadata refuses a
// destination that sets it.
type PushSecretMetadata struct {
	// labels to set on the remote secret.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// annotations to set on the remote secret.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// type of the remote Secret, such as kubernetes.io/tls. Defaults to
	// Opaque. The token types (kubernetes.io/service-account-token,
	// bootstrap.kubernetes.io/token), which grant access to a cluster, are
	// refused.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!(self in ['kubernetes.io/service-account-token', 'bootstrap.kubernetes.io/token'])",message="metadata.type kubernetes.io/service-account-token or bootstrap.kubernetes.io/token is not allowed: Watchword never writes tokens that grant access to a cluster"
	Type string `json:"type,omitempty"`

	// tags to set on the remote secret, for stores that tag their secrets
	// (Vault: custom metadata). A Kubernetes destination refuses them: use
	// labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Tags map[string]string `json:"tags,omitempty"`
}

// PushSecretDestination is one remote secret to publish to, in the shape
// of Crossplane's publishConnectionDetailsTo: a name, metadata, and the
// store. A PushSecret and an ExternalSecret's publishConnectionDetailsTo
// both use it.
type PushSecretDestination struct {
	// name of the remote secret in the store: a Secret name for a
	// kubernetes store, a path under the mount for a Vault store.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name"`

	// metadata of the remote secret, where the store has it.
	// +optional
	Metadata PushSecretMetadata `json:"metadata,omitempty"`

	// configRef names the store to publish to: a SecretStore of the
	// publisher's namespace (the PushSecret's or the ExternalSecret's), or
	// a ClusterSecretStore that allows that namespace, through which the
	// publisher writes only within its namespace's scope (see
	// docs/publishing.md). Defaults to the SecretStore named default.
	// +optional
	ConfigRef *StoreRef `json:"configRef,omitempty"`

	// adopt lets the publisher take over a remote secret that exists and
	// carries no Watchword ownership marker. Without it such a secret is
	// left untouched and the publisher reports it.
	// +optional
	Adopt bool `json:"adopt,omitempty"`
}

// SecretNamePlaceholder is what a destination name of a PushSecret with
// secretSelector holds in place of the name of each selected Secret.
const SecretNamePlaceholder = "{{ .secretName }}"

// PushSecretSpec says which Secret to publish, which of its keys, and where.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.secretSelector)",message="set exactly one of secretName (one Secret) and secretSelector (the Secrets whose labels match)"
// +kubebuilder:validation:XValidation:rule="!has(self.secretSelector) || self.destinations.all(d, d.name.matches('[{][{] *[.]secretName *[}][}]'))",message="with secretSelector every destination name must hold {{ .secretName }}, which each selected Secret's name replaces, so that no two Secrets are published to one remote secret",fieldPath=".destinations"
// +kubebuilder:validation:XValidation:rule="has(self.secretSelector) || self.destinations.all(d, !d.name.contains('{{'))",message="{{ .secretName }} in a destination name needs secretSelector; with secretName the name is used as it is",fieldPath=".destinations"
// +kubebuilder:validation:XValidation:rule="self.destinations.all(d, self.destinations.exists_one(e, e.name == d.name && (has(e.configRef) ? e.configRef.name : 'default') == (has(d.configRef) ? d.configRef.name : 'default') && (has(e.configRef) && has(e.configRef.kind) ? e.configRef.kind : 'SecretStore') == (has(d.configRef) && has(d.configRef.kind) ? d.configRef.kind : 'SecretStore')))",message="destinations must be unique: each store may appear with each name once",fieldPath=".destinations"
type PushSecretSpec struct {
	// secretName is the Secret of the PushSecret's namespace to publish.
	// Set it or secretSelector.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	SecretName string `json:"secretName,omitempty"`

	// secretSelector publishes every Secret of the PushSecret's namespace
	// whose labels match, each to its own remote secret: every
	// destination name holds {{ .secretName }}, which the Secret's name
	// replaces. A Secret that starts matching is published; one that
	// stops matching is unpublished like a removed destination (under
	// deletionPolicy, and only where the remote secret carries this
	// PushSecret's ownership marker). Only the Secrets that match are
	// read. Set it or secretName.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="secretSelector must have matchLabels or matchExpressions: an empty selector would publish every Secret of the namespace"
	SecretSelector *metav1.LabelSelector `json:"secretSelector,omitempty"`

	// data selects the keys to publish and names them remotely. Empty
	// publishes every key of the Secret under its own name.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Data []PushSecretData `json:"data,omitempty"`

	// template renders what is published from the selected keys (.data.KEY
	// under their remote names), with the functions of an ExternalSecret's
	// templates.
	// +optional
	Template *PushSecretTemplate `json:"template,omitempty"`

	// destinations are the remote secrets to publish to.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Destinations []PushSecretDestination `json:"destinations"`

	// deletionPolicy is Delete (the default: when the PushSecret is
	// deleted, or a destination is removed or renamed, the remote secrets
	// it owns are deleted) or Retain (they are left in place).
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// updatePolicy is Replace (the default: every destination is kept
	// holding the selected data) or IfNotExists (a destination whose
	// remote secret exists, the publisher's or not, is left as it is and
	// reported in state Exists; a missing one is created, with the
	// ownership marker). With IfNotExists the store is the source of
	// truth: what it holds may differ from the source Secret.
	// +optional
	// +kubebuilder:default=Replace
	UpdatePolicy PushUpdatePolicy `json:"updatePolicy,omitempty"`

	// refreshInterval is how often every destination is read back and
	// repaired if someone changed it, as a Go duration (30s, 15m, 1h). 0
	// never reads back. A change of the source Secret is published at
	// once, whatever the interval.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$')",message="refreshInterval must be a Go duration such as 30s, 15m or 1h (up to four parts of at most 5 digits), or 0 to never read back"
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
}

// PushUpdatePolicy says whether a remote secret that exists is written.
// +kubebuilder:validation:Enum=Replace;IfNotExists
type PushUpdatePolicy string

// The update policies of a PushSecret.
const (
	// PushUpdateReplace keeps every destination holding the selected data.
	PushUpdateReplace PushUpdatePolicy = "Replace"
	// PushUpdateIfNotExists writes only a remote secret that does not
	// exist.
	PushUpdateIfNotExists PushUpdatePolicy = "IfNotExists"
)

// PushState is the state of one destination.
// +kubebuilder:validation:Enum=Published;Exists;NotOwned;Failing;Failed;Unpublishing
type PushState string

// The states of a destination.
const (
	// PushPublished: the remote secret holds the selected data.
	PushPublished PushState = "Published"
	// PushExists: updatePolicy is IfNotExists and the remote secret
	// exists; it is left as it is.
	PushExists PushState = "Exists"
	// PushNotOwned: the remote secret belongs to someone else; it is left
	// untouched.
	PushNotOwned PushState = "NotOwned"
	// PushFailing: the last publish failed and is retried.
	PushFailing PushState = "Failing"
	// PushFailed: the last publish failed and waits for a change.
	PushFailed PushState = "Failed"
	// PushUnpublishing: the destination was removed from the spec and the
	// remote secret it owns could not be deleted yet.
	PushUnpublishing PushState = "Unpublishing"
)

// PushSecretDestinationStatus is the observed state of one destination.
type PushSecretDestinationStatus struct {
	// name of the remote secret.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name"`

	// secretName is the source Secret this remote secret is published
	// from, for a PushSecret with secretSelector.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`

	// storeKind is SecretStore or ClusterSecretStore.
	// +required
	// +kubebuilder:validation:MaxLength=64
	StoreKind string `json:"storeKind"`

	// storeName is the name of the store.
	// +required
	// +kubebuilder:validation:MaxLength=253
	StoreName string `json:"storeName"`

	// state is Published, Exists, NotOwned, Failing, Failed or
	// Unpublishing.
	// +required
	State PushState `json:"state"`

	// reason is the one-word cause of the state.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// message says what went wrong. It never holds a secret value.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// version is the remote secret's version after the last write, where
	// the store has versions.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// capabilities are what the destination's store can do, as it said
	// when it was last written to: read, versionCheck, write, delete…
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Capabilities string `json:"capabilities,omitempty"`

	// dataHash identifies what was last written (a keyed hash of the
	// data and metadata, never the data): an unchanged hash means no
	// write.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	DataHash string `json:"dataHash,omitempty"`

	// publishedTime is when the remote secret was last written.
	// +optional
	PublishedTime *metav1.Time `json:"publishedTime,omitempty"`

	// checkedTime is when the remote secret was last confirmed to hold the
	// data (written or read back).
	// +optional
	CheckedTime *metav1.Time `json:"checkedTime,omitempty"`

	// scope is where the remote secret was last written: the publisher's
	// namespace through a ClusterSecretStore, the SecretStore's
	// defaultScope, or "" for the store's own place. Absent on entries
	// written before scopes were recorded.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Scope *string `json:"scope,omitempty"`

	// formerScopes are scopes the remote secret was written in before the
	// store's defaultScope changed. The copy in each is deleted, if this
	// publisher's marker is on it, once the copy in the current scope is
	// written; a scope leaves the list when its copy is gone or is not
	// the publisher's.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	FormerScopes []string `json:"formerScopes,omitempty"`
}

// PushSecretStatus is the observed state of a PushSecret.
type PushSecretStatus struct {
	// conditions are Ready and, while a failure waits for a change,
	// Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation last published successfully to
	// every destination.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// destinations has one entry per destination of the spec (with
	// secretSelector, per destination and selected Secret), and one per
	// removed destination whose remote secret could not be deleted yet.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Destinations []PushSecretDestinationStatus `json:"destinations,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ps,categories=watchword
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PushSecret publishes a Kubernetes Secret of its namespace to one or more
// stores.
type PushSecret struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to publish and where.
	// +required
	Spec PushSecretSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status PushSecretStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PushSecretList is a list of PushSecrets.
type PushSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PushSecret `json:"items"`
}

func init() {
	register(&PushSecret{}, &PushSecretList{})
}
