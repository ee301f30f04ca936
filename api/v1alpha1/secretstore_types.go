package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorePhase is the coarse state of a store.
// +kubebuilder:validation:Enum=Pending;Running
type StorePhase string

const (
	// StorePhasePending means a dependency is missing or invalid, such as a
	// credential Secret.
	StorePhasePending StorePhase = "Pending"
	// StorePhaseRunning means the store is configured and usable.
	StorePhaseRunning StorePhase = "Running"
)

// SecretStoreSpec configures how to reach one backend and how to
// authenticate against it.
type SecretStoreSpec struct {
	// controller selects the Watchword instance that serves this store: an
	// instance started with --controller-class=X serves only stores whose
	// controller is X. Empty means the default instance.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`
	Controller string `json:"controller,omitempty"`

	// defaultScope confines what publishers write through this store to
	// one scope: a parent path under a Vault mount
	// (<mount>/<scope>/), a namespace of a Kubernetes store's cluster, a
	// name prefix (<scope>.) for a store without scopes. Empty: publishers
	// write where the store points. A ClusterSecretStore has no default
	// scope: a publisher that uses one is confined to its own namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	DefaultScope string `json:"defaultScope,omitempty"`

	// refreshHook lets the store's keys be refreshed at once when a change
	// is announced to Watchword's refresh endpoint (/hooks/refresh), which
	// accepts only notifications signed with the shared secret named here.
	// Unset: the endpoint refuses notifications for this store.
	// +optional
	RefreshHook *RefreshHook `json:"refreshHook,omitempty"`

	// limits bound the calls Watchword makes to the store. Unset fields
	// take the controller's defaults (docs/reliability.md).
	// +optional
	Limits *StoreLimits `json:"limits,omitempty"`

	SecretStoreProvider `json:",inline"`
}

// StoreLimits bound the calls Watchword makes to one store: every read,
// version check, batch read, write, delete and credential check counts,
// whatever caused it (a refresh, a retry, a notification, a publication).
// +kubebuilder:validation:XValidation:rule="!has(self.burst) || has(self.callsPerMinute)",message="limits.burst needs limits.callsPerMinute"
type StoreLimits struct {
	// callsPerMinute is the store's call budget: the most calls a minute,
	// on average. Unset: the controller's default (--store-calls-per-minute;
	// none unless set).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	CallsPerMinute *int32 `json:"callsPerMinute,omitempty"`

	// burst is how many calls may be made at once after a quiet spell.
	// Defaults to a tenth of callsPerMinute, at least 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Burst *int32 `json:"burst,omitempty"`

	// maxConcurrentCalls is the most calls in flight to the store at once.
	// Defaults to half of the controller's --workers, at least 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	MaxConcurrentCalls *int32 `json:"maxConcurrentCalls,omitempty"`
}

// RefreshHook configures event-driven refresh of a store: a notification
// to the refresh endpoint names keys of the store, and every ExternalSecret
// that reads one of them is refreshed at once.
type RefreshHook struct {
	// secretRef names the shared secret that notifications are signed
	// with: the header X-Watchword-Signature carries sha256=<hex>, the
	// HMAC-SHA256, keyed with this value, of the X-Watchword-Timestamp
	// header (Unix seconds), a dot and the request body. A SecretStore
	// reads it from its own namespace.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// ClusterSecretStoreSpec is a SecretStoreSpec that any allowed namespace
// may use.
type ClusterSecretStoreSpec struct {
	// controller selects the Watchword instance that serves this store.
	// Empty means the default instance.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`
	Controller string `json:"controller,omitempty"`

	// refreshHook lets the store's keys be refreshed at once when a change
	// is announced to Watchword's refresh endpoint (/hooks/refresh). Its
	// secretRef must give the Secret's namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.secretRef.__namespace__) && size(self.secretRef.__namespace__) > 0",message="refreshHook.secretRef of a ClusterSecretStore must give the namespace of the Secret",fieldPath=".secretRef.namespace"
	RefreshHook *RefreshHook `json:"refreshHook,omitempty"`

	// limits bound the calls Watchword makes to the store, from every
	// namespace together.
	// +optional
	Limits *StoreLimits `json:"limits,omitempty"`

	SecretStoreProvider `json:",inline"`

	// namespaces lists the namespaces whose ExternalSecrets may use this
	// store. When neither namespaces nor namespaceSelector is set, every
	// namespace may; when either is set, a namespace must match one of
	// them.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// namespaceSelector selects by label the namespaces whose
	// ExternalSecrets may use this store. It holds at most 64 matchLabels
	// and 16 matchExpressions of at most 64 values each.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(!has(self.matchLabels) || size(self.matchLabels) <= 64) && (!has(self.matchExpressions) || (size(self.matchExpressions) <= 16 && self.matchExpressions.all(e, !has(e.values) || size(e.values) <= 64)))",message="namespaceSelector may hold at most 64 matchLabels and 16 matchExpressions of at most 64 values each"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// SecretStoreStatus is the observed state of a store.
type SecretStoreStatus struct {
	// phase is Pending while a dependency is missing or invalid and
	// Running when the store is usable.
	// +optional
	Phase StorePhase `json:"phase,omitempty"`

	// conditions hold Ready, which tells whether the configuration and
	// credentials were validated, and if not, why.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation that was last found valid (a
	// failed check leaves it; the Ready condition says which generation it
	// describes).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// provider names the provider block in use.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Provider string `json:"provider,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ss,categories=watchword
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.status.provider`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SecretStore says how to reach one backend, for the ExternalSecrets of its
// own namespace.
type SecretStore struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the store's configuration.
	// +required
	Spec SecretStoreSpec `json:"spec"`

	// status is the store's observed state.
	// +optional
	Status SecretStoreStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecretStoreList is a list of SecretStores.
type SecretStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecretStore `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=css,categories=watchword
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.status.provider`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterSecretStore says how to reach one backend, for the ExternalSecrets
// of every allowed namespace.
type ClusterSecretStore struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the store's configuration.
	// +required
	Spec ClusterSecretStoreSpec `json:"spec"`

	// status is the store's observed state.
	// +optional
	Status SecretStoreStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterSecretStoreList is a list of ClusterSecretStores.
type ClusterSecretStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSecretStore `json:"items"`
}

func init() {
	register(&SecretStore{}, &SecretStoreList{}, &ClusterSecretStore{}, &ClusterSecretStoreList{})
}
