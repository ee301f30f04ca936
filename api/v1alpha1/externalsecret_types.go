package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StoreRef names the store an ExternalSecret reads from.
type StoreRef struct {
	// name of the SecretStore (in the ExternalSecret's namespace) or of the
	// ClusterSecretStore.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// kind is SecretStore (the default) or ClusterSecretStore.
	// +optional
	// +kubebuilder:default=SecretStore
	// +kubebuilder:validation:Enum=SecretStore;ClusterSecretStore
	Kind string `json:"kind,omitempty"`
}

// Kinds a StoreRef may name.
const (
	SecretStoreKind        = "SecretStore"
	ClusterSecretStoreKind = "ClusterSecretStore"
)

// CreationPolicy says whether and how the target Secret is created.
// +kubebuilder:validation:Enum=Owner;Merge;None
type CreationPolicy string

const (
	// CreationPolicyOwner creates the target and owns it.
	CreationPolicyOwner CreationPolicy = "Owner"
	// CreationPolicyMerge merges keys into an existing Secret.
	CreationPolicyMerge CreationPolicy = "Merge"
	// CreationPolicyNone writes no Secret.
	CreationPolicyNone CreationPolicy = "None"
)

// DeletionPolicy says what happens to the target when the ExternalSecret
// goes.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete removes an owned target, or the merged keys of a
	// Merge target.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain leaves the target as it is.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// TargetKind is the kind of object an ExternalSecret writes.
// +kubebuilder:validation:Enum=Secret;ConfigMap
type TargetKind string

const (
	// TargetSecret writes a core/v1 Secret (the default).
	TargetSecret TargetKind = "Secret"
	// TargetConfigMap writes a core/v1 ConfigMap: non-secret
	// configuration from the same store.
	TargetConfigMap TargetKind = "ConfigMap"
)

// ExternalSecretTarget describes the Kubernetes Secret (or ConfigMap) that
// is written.
// +kubebuilder:validation:XValidation:rule="!has(self.adopt) || !self.adopt || !has(self.creationPolicy) || self.creationPolicy == 'Owner'",message="adopt: true works only with creationPolicy Owner (a Merge target is never owned, and None writes no Secret): remove adopt or set creationPolicy: Owner",fieldPath=".adopt"
// +kubebuilder:validation:XValidation:rule="!has(self.immutable) || !self.immutable || !has(self.creationPolicy) || self.creationPolicy == 'Owner'",message="immutable: true works only with creationPolicy Owner (Watchword makes immutable only a Secret it creates and owns): remove immutable or set creationPolicy: Owner",fieldPath=".immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'ConfigMap' || !has(self.template) || !has(self.template.type)",message="template.type sets the type of a Secret, and a ConfigMap target has none: remove template.type or set kind: Secret",fieldPath=".template.type"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'ConfigMap' || !has(self.creationPolicy) || self.creationPolicy != 'Merge'",message="creationPolicy Merge is not supported for a ConfigMap target: use creationPolicy Owner (or None), or kind: Secret",fieldPath=".creationPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'ConfigMap' || !has(self.restartWorkloads) || size(self.restartWorkloads) == 0",message="restartWorkloads follows Secret targets only: for a ConfigMap target, opt the workload in with the label watchword.io/restart and name the ConfigMap in its watchword.io/reload-configmaps annotation (docs/rotation.md)",fieldPath=".restartWorkloads"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'ConfigMap' || !has(self.name) || self.name != 'kube-root-ca.crt'",message="the ConfigMap kube-root-ca.crt is the cluster's CA bundle, published in every namespace by Kubernetes, which rewrites it: choose another target.name",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="!has(self.allowSecretValues) || !self.allowSecretValues || (has(self.kind) && self.kind == 'ConfigMap')",message="allowSecretValues is only for kind: ConfigMap (a Secret target may hold any value): remove it or set kind: ConfigMap",fieldPath=".allowSecretValues"
type ExternalSecretTarget struct {
	// name of the Secret. Defaults to the ExternalSecret's name. It is
	// immutable: it may be set to the name already in effect (the
	// ExternalSecret's own name while it is unset) or unset while it is
	// that name, but not changed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// kind of the object written: Secret (the default) or ConfigMap, for
	// non-secret configuration kept in the same store. A ConfigMap target
	// follows the rules of a Secret target (ownership, adoption, drift
	// repair, deletionPolicy, immutable); its values go to data, or to
	// binaryData when they are not UTF-8 text. Values a store does not mark
	// as non-secret are refused unless allowSecretValues is true
	// (docs/api.md). It is immutable.
	// +optional
	// +kubebuilder:default=Secret
	Kind TargetKind `json:"kind,omitempty"`

	// allowSecretValues lets a ConfigMap target hold values that the store
	// does not mark as non-secret (every value of a store without such a
	// mark). A ConfigMap is readable by anyone who may read the
	// namespace's ConfigMaps and is not encrypted at rest like a Secret:
	// set it only for values that are not secret. Only with kind
	// ConfigMap.
	// +optional
	AllowSecretValues bool `json:"allowSecretValues,omitempty"`

	// creationPolicy is Owner (the default: create the Secret and own
	// it), Merge (merge keys into a Secret that must already exist) or
	// None (write no Secret).
	// +optional
	// +kubebuilder:default=Owner
	CreationPolicy CreationPolicy `json:"creationPolicy,omitempty"`

	// adopt lets an Owner ExternalSecret take over an existing Secret that
	// no one owns. Without it such a Secret is left untouched and the
	// ExternalSecret reports the conflict. Only with creationPolicy Owner.
	// +optional
	Adopt bool `json:"adopt,omitempty"`

	// deletionPolicy is Delete (the default: an owned Secret is garbage
	// collected, merged keys are removed) or Retain.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// immutable writes the Secret with immutable: true (Kubernetes then
	// refuses any change of its data, and its readers need not watch it).
	// When the data to write changes later, the Secret keeps the data it
	// has and the ExternalSecret reports TargetImmutable naming the keys
	// that differ: delete the Secret to have it written again with the new
	// data. Labels and annotations are still updated. Only with
	// creationPolicy Owner.
	// +optional
	Immutable bool `json:"immutable,omitempty"`

	// template is a blueprint for the Secret.
	// +optional
	Template *ExternalSecretTemplate `json:"template,omitempty"`

	// restartWorkloads lists workloads of the ExternalSecret's namespace
	// to restart when the Secret rotates (not on a first sync, a drift
	// repair or a spec change), with the rules of restarts on the
	// workload side: debounce, rate limit, rollout gate, maintenance
	// window, and only when a key the workload uses changed. The workload
	// needs no label; its restart annotations apply.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	RestartWorkloads []WorkloadReference `json:"restartWorkloads,omitempty"`
}

// WorkloadKind is a kind of workload that can be restarted.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;Rollout
type WorkloadKind string

const (
	// WorkloadDeployment is an apps/v1 Deployment.
	WorkloadDeployment WorkloadKind = "Deployment"
	// WorkloadStatefulSet is an apps/v1 StatefulSet.
	WorkloadStatefulSet WorkloadKind = "StatefulSet"
	// WorkloadDaemonSet is an apps/v1 DaemonSet.
	WorkloadDaemonSet WorkloadKind = "DaemonSet"
	// WorkloadRollout is an Argo Rollouts argoproj.io/v1alpha1 Rollout.
	WorkloadRollout WorkloadKind = "Rollout"
)

// WorkloadReference names a workload of the same namespace.
type WorkloadReference struct {
	// kind is Deployment, StatefulSet, DaemonSet (apps/v1) or Rollout
	// (argoproj.io/v1alpha1, when Argo Rollouts is installed).
	// +required
	Kind WorkloadKind `json:"kind"`

	// name of the workload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
}

// TemplateMergePolicy says how templated keys combine with fetched keys.
// +kubebuilder:validation:Enum=Replace;Merge
type TemplateMergePolicy string

const (
	// TemplateMergeReplace writes only the templated keys.
	TemplateMergeReplace TemplateMergePolicy = "Replace"
	// TemplateMergeMerge writes the fetched keys and the templated keys,
	// the templated ones winning.
	TemplateMergeMerge TemplateMergePolicy = "Merge"
)

// ExternalSecretTemplate is a blueprint for the target Secret.
type ExternalSecretTemplate struct {
	// type of the Secret, such as kubernetes.io/dockerconfigjson. The
	// token types (kubernetes.io/service-account-token,
	// bootstrap.kubernetes.io/token), which grant access to the cluster,
	// are refused.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!(self in ['kubernetes.io/service-account-token', 'bootstrap.kubernetes.io/token'])",message="template.type kubernetes.io/service-account-token or bootstrap.kubernetes.io/token is not allowed: Watchword never writes tokens that grant access to the cluster"
	Type string `json:"type,omitempty"`

	// metadata sets labels and annotations of the Secret.
	// +optional
	Metadata ExternalSecretTemplateMetadata `json:"metadata,omitempty"`

	// data maps a Secret key to a Go text/template rendered over the
	// fetched data (.data.KEY, or index .data "key-with-dashes").
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Data map[string]string `json:"data,omitempty"`

	// templateFrom renders templates kept in ConfigMaps or Secrets of the
	// ExternalSecret's namespace, or given literally, in order; the keys
	// of data and metadata win over theirs.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	TemplateFrom []TemplateFrom `json:"templateFrom,omitempty"`

	// mergePolicy is Replace (the default: the Secret holds only the
	// templated keys) or Merge (the fetched keys too, templated keys
	// winning). It matters only when data or templateFrom is set.
	// +optional
	// +kubebuilder:default=Replace
	MergePolicy TemplateMergePolicy `json:"mergePolicy,omitempty"`
}

// ExternalSecretTemplateMetadata sets labels and annotations of the target.
type ExternalSecretTemplateMetadata struct {
	// annotations to set on the Secret. Values are rendered as templates.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// labels to set on the Secret. Values are rendered as templates.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`
}

// TemplateFrom names a source of templates: a ConfigMap, a Secret or a
// literal.
// +kubebuilder:validation:ExactlyOneOf=configMap;secret;literal
type TemplateFrom struct {
	// configMap holds templates: each named item is rendered into the
	// Secret key of the same name (templateAs Values), or into the keys
	// its output names (templateAs KeysAndValues).
	// +optional
	ConfigMap *TemplateRef `json:"configMap,omitempty"`

	// secret holds templates, as configMap does, in a Secret of the
	// ExternalSecret's namespace: only the named items are read.
	// +optional
	Secret *TemplateRef `json:"secret,omitempty"`

	// literal is a template whose output is a YAML map of keys to
	// values, each written to the target as a key of its own.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Literal *string `json:"literal,omitempty"`

	// target is where the rendered keys go: Data (the default), the
	// Secret's Annotations or its Labels.
	// +optional
	// +kubebuilder:default=Data
	Target TemplateTarget `json:"target,omitempty"`
}

// TemplateTarget is the part of the Secret a templateFrom entry writes.
// +kubebuilder:validation:Enum=Data;Annotations;Labels
type TemplateTarget string

const (
	// TemplateTargetData writes the Secret's data.
	TemplateTargetData TemplateTarget = "Data"
	// TemplateTargetAnnotations writes the Secret's annotations.
	TemplateTargetAnnotations TemplateTarget = "Annotations"
	// TemplateTargetLabels writes the Secret's labels.
	TemplateTargetLabels TemplateTarget = "Labels"
)

// TemplateScope says how an item of a template source is rendered.
// +kubebuilder:validation:Enum=Values;KeysAndValues
type TemplateScope string

const (
	// TemplateScopeValues renders the item into the key of its name.
	TemplateScopeValues TemplateScope = "Values"
	// TemplateScopeKeysAndValues renders the item into a YAML map of keys
	// to values.
	TemplateScopeKeysAndValues TemplateScope = "KeysAndValues"
)

// TemplateRef names a ConfigMap or a Secret and the items of it to render.
type TemplateRef struct {
	// name of the ConfigMap or Secret, in the ExternalSecret's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// items lists the keys to render.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Items []TemplateRefItem `json:"items"`
}

// TemplateRefItem is one key of a template ConfigMap or Secret.
type TemplateRefItem struct {
	// key in the ConfigMap or Secret; with templateAs Values the rendered
	// result goes into the key of the same name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// templateAs is Values (the default: the rendered item is the value
	// of its key) or KeysAndValues (the rendered item is a YAML map of
	// keys to values).
	// +optional
	// +kubebuilder:default=Values
	TemplateAs TemplateScope `json:"templateAs,omitempty"`
}

// RemoteReference points at one remote object, or a field of it.
type RemoteReference struct {
	// key of the remote object, such as a path or a name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`

	// version pins a version of the object, where the provider has them.
	// Empty means the current version.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// property selects a field of a structured (JSON) value: a field name
	// (tried whole first, so names with dots work), or a dotted path such
	// as db.primary.password; a dot inside a name is written \. and an
	// array element by its index.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Property string `json:"property,omitempty"`

	// decodingStrategy decodes the value (each field's value, in a
	// dataFrom entry) after the property is selected: None (the default)
	// keeps it as the store holds it, Base64 and Base64URL decode it
	// (padded, as RFC 4648 sections 4 and 5 write it) and fail the sync
	// when it is not, Auto tries Base64, then Base64URL, and keeps the
	// value as it is when neither decodes it.
	// +optional
	DecodingStrategy DecodingStrategy `json:"decodingStrategy,omitempty"`

	// metadataPolicy Fetch reads the metadata the store keeps with the
	// object instead of its value, where the store has metadata (see the
	// providers' notes): with property, the value of one metadata entry;
	// without, all of them as a JSON object (in a dataFrom entry, one
	// Secret key per entry). None, the default, reads the value. A store
	// without metadata refuses it with a NotSupported condition.
	// +optional
	MetadataPolicy MetadataPolicy `json:"metadataPolicy,omitempty"`
}

// MetadataPolicy says whether a remote reference reads an object's value
// or its metadata.
// +kubebuilder:validation:Enum=None;Fetch
type MetadataPolicy string

const (
	// MetadataNone reads the object's value.
	MetadataNone MetadataPolicy = "None"
	// MetadataFetch reads the object's metadata.
	MetadataFetch MetadataPolicy = "Fetch"
)

// DecodingStrategy says how a fetched value is decoded before it is
// written.
// +kubebuilder:validation:Enum=None;Base64;Base64URL;Auto
type DecodingStrategy string

const (
	// DecodeNone keeps the value as the store holds it.
	DecodeNone DecodingStrategy = "None"
	// DecodeBase64 decodes standard base64 (RFC 4648 section 4).
	DecodeBase64 DecodingStrategy = "Base64"
	// DecodeBase64URL decodes URL-safe base64 (RFC 4648 section 5).
	DecodeBase64URL DecodingStrategy = "Base64URL"
	// DecodeAuto tries Base64, then Base64URL, else keeps the value.
	DecodeAuto DecodingStrategy = "Auto"
)

// ExternalSecretData maps one remote value to one Secret key.
type ExternalSecretData struct {
	// secretKey is the key in the target Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	SecretKey string `json:"secretKey"`

	// remoteRef is the value to read.
	// +required
	RemoteRef RemoteReference `json:"remoteRef"`
}

// FoundCount is how many remote objects one find matched.
type FoundCount struct {
	// dataFrom is the index of the dataFrom entry.
	// +required
	// +kubebuilder:validation:Minimum=0
	DataFrom int32 `json:"dataFrom"`

	// matched is how many remote objects it matched.
	// +required
	// +kubebuilder:validation:Minimum=0
	Matched int32 `json:"matched"`
}

// ExternalSecretDataFrom copies every field of one remote object
// (remoteRef), or every remote object a find matches, one Secret key each
// (find); rewrite then renames the Secret keys of the entry.
// +kubebuilder:validation:XValidation:rule="(has(self.remoteRef) ? 1 : 0) + (has(self.find) ? 1 : 0) + (has(self.vaultDynamic) ? 1 : 0) + (has(self.registryToken) ? 1 : 0) == 1",message="set exactly one of remoteRef, find, vaultDynamic or registryToken in a dataFrom entry"
type ExternalSecretDataFrom struct {
	// remoteRef is the object whose fields are copied; with property, the
	// fields of that nested object.
	// +optional
	RemoteRef *RemoteReference `json:"remoteRef,omitempty"`

	// find lists the store's objects (the store needs the list
	// capability) and copies each one it matches whole into the Secret
	// key of its name, with '/' replaced by '_': /app/db/password becomes
	// _app_db_password, which a rewrite can shorten. The status tells how
	// many matched, never their values.
	// +optional
	Find *ExternalSecretFind `json:"find,omitempty"`

	// vaultDynamic asks a Vault secrets engine for credentials and keeps
	// their lease (see VaultDynamicSecret); it is the ExternalSecret's
	// only source.
	// +optional
	VaultDynamic *VaultDynamicSecret `json:"vaultDynamic,omitempty"`

	// registryToken asks the store's cloud for a container registry pull
	// token and writes it as a kubernetes.io/dockerconfigjson Secret (see
	// RegistryToken); it is the ExternalSecret's only source.
	// +optional
	RegistryToken *RegistryToken `json:"registryToken,omitempty"`

	// rewrite renames the Secret keys this entry produces, each rule in
	// order on the result of the one before. Two remote objects or fields
	// that end at the same Secret key are refused by name.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Rewrite []ExternalSecretRewrite `json:"rewrite,omitempty"`
}

// ExternalSecretFind selects remote objects by path, name and tags. At
// least one of them is set.
// +kubebuilder:validation:XValidation:rule="has(self.path) || has(self.name) || (has(self.tags) && size(self.tags) > 0)",message="a find needs a path, a name or tags; to match every object the store may list, use name.regexp: \".\""
type ExternalSecretFind struct {
	// path keeps the keys that begin with it, such as app/ or /prod/app/.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// name keeps the keys that a regular expression (RE2 syntax, as Go
	// and CEL take it) matches anywhere in the key; anchor it with ^ and
	// $ to match the whole key.
	// +optional
	Name *FindName `json:"name,omitempty"`

	// tags keeps the objects that carry every one of these tags with these
	// values (labels of a Kubernetes Secret, tags of AWS, Azure and
	// Alibaba secrets, labels of Google secrets, custom metadata of a
	// Vault KV v2 secret). A store without tags refuses a find by tags.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Tags map[string]string `json:"tags,omitempty"`

	// decodingStrategy decodes the value of every object the find
	// matches, as remoteRef.decodingStrategy does: None (the default),
	// Base64, Base64URL or Auto.
	// +optional
	DecodingStrategy DecodingStrategy `json:"decodingStrategy,omitempty"`
}

// FindName is a regular expression over remote keys.
type FindName struct {
	// regexp is the regular expression, in RE2 syntax.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="[''.matches(self)].size() == 1",message="name.regexp must be a valid regular expression (RE2 syntax)"
	RegExp string `json:"regexp"`
}

// ExternalSecretRewrite is one renaming of Secret keys: a regular
// expression or a template.
// +kubebuilder:validation:ExactlyOneOf=regexp;transform
type ExternalSecretRewrite struct {
	// regexp replaces, in every Secret key of the entry, each match of
	// source with target.
	// +optional
	RegExp *RewriteRegExp `json:"regexp,omitempty"`

	// transform renders a Go template for every Secret key of the entry,
	// the key being .value; the output is the new key.
	// +optional
	Transform *RewriteTransform `json:"transform,omitempty"`
}

// RewriteTransform renames keys with a template.
type RewriteTransform struct {
	// template is a Go text/template with Watchword's template functions
	// (docs/templates.md), rendered with the key as .value, such as
	// {{ .value | upper }} or {{ .value | replace "-" "_" }}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Template string `json:"template"`
}

// RewriteRegExp replaces the matches of a regular expression.
type RewriteRegExp struct {
	// source is the regular expression, in RE2 syntax.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="[''.matches(self)].size() == 1",message="rewrite.regexp.source must be a valid regular expression (RE2 syntax)"
	Source string `json:"source"`

	// target replaces each match; $1 or ${name} is a group of source.
	// It may be empty, to remove what source matches.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Target string `json:"target"`
}

// RefreshPolicy says when an ExternalSecret's data is read again.
// +kubebuilder:validation:Enum=Periodic;OnChange;CreatedOnce
type RefreshPolicy string

const (
	// RefreshPeriodic reads again every refreshInterval.
	RefreshPeriodic RefreshPolicy = "Periodic"
	// RefreshOnChange reads again only when an input changes.
	RefreshOnChange RefreshPolicy = "OnChange"
	// RefreshCreatedOnce reads once, and again only to repair the target
	// or for the force-sync annotation.
	RefreshCreatedOnce RefreshPolicy = "CreatedOnce"
)

// ExternalSecretSpec declares what to fetch, from where, and where to write
// it.
// +kubebuilder:validation:XValidation:rule="(has(self.data) && size(self.data) > 0) || (has(self.dataFrom) && size(self.dataFrom) > 0)",message="set at least one entry in data or dataFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.refreshPolicy) || self.refreshPolicy == 'Periodic' || !has(self.refreshInterval) || self.refreshInterval in ['0', '0s', '1h', '1h0m0s']",message="refreshInterval is not used with refreshPolicy OnChange or CreatedOnce: remove it (or set it to 0), or use refreshPolicy Periodic",fieldPath=".refreshInterval"
// +kubebuilder:validation:XValidation:rule="!has(self.dataFrom) || !self.dataFrom.exists(d, has(d.vaultDynamic)) || (size(self.dataFrom) == 1 && (!has(self.data) || size(self.data) == 0))",message="a dataFrom entry with vaultDynamic must be the only source of the ExternalSecret: no other dataFrom entry and no data (use a template to add constant keys)"
// +kubebuilder:validation:XValidation:rule="!has(self.dataFrom) || !self.dataFrom.exists(d, has(d.registryToken)) || (size(self.dataFrom) == 1 && (!has(self.data) || size(self.data) == 0))",message="a dataFrom entry with registryToken must be the only source of the ExternalSecret: no other dataFrom entry and no data"
// +kubebuilder:validation:XValidation:rule="!has(self.dataFrom) || !self.dataFrom.exists(d, has(d.registryToken)) || !has(self.target) || !has(self.target.template) || !has(self.target.template.type) || self.target.template.type == 'kubernetes.io/dockerconfigjson'",message="a registryToken writes a kubernetes.io/dockerconfigjson Secret: leave target.template.type unset or set it to kubernetes.io/dockerconfigjson",fieldPath=".target.template.type"
// +kubebuilder:validation:XValidation:rule="!has(self.dataFrom) || !self.dataFrom.exists(d, has(d.registryToken)) || !has(self.target) || !has(self.target.kind) || self.target.kind == 'Secret'",message="a registryToken is a secret and is written to a Secret: remove target.kind ConfigMap",fieldPath=".target.kind"
type ExternalSecretSpec struct {
	// secretStoreRef names the store to read from.
	// +required
	SecretStoreRef StoreRef `json:"secretStoreRef"`

	// refreshPolicy is Periodic (the default: read again every
	// refreshInterval), OnChange (read only when an input changes: this
	// spec, the store's spec, a templateFrom source, or the force-sync
	// annotation; never on a timer or a store's change notice) or
	// CreatedOnce (read once; after a successful sync only a target that
	// is gone or was changed by someone else, or the force-sync
	// annotation, makes it read again: a change of the spec is not
	// synced). With OnChange and CreatedOnce
	// refreshInterval is not used: leave it unset (or 0).
	// +optional
	RefreshPolicy RefreshPolicy `json:"refreshPolicy,omitempty"`

	// refreshInterval is how often the data is read again, as a Go
	// duration (30s, 15m, 1h), with refreshPolicy Periodic. 0 syncs once,
	// and again only when an input changes: this spec, the store's spec
	// (its generation), a templateFrom ConfigMap, the force-sync
	// annotation, or a store's change notice for a key it reads.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$')",message="refreshInterval must be a Go duration such as 30s, 15m or 1h (up to four parts of at most 5 digits), or 0 to sync once"
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`

	// target is the Secret to write.
	// +optional
	Target ExternalSecretTarget `json:"target,omitempty"`

	// data maps remote values to Secret keys. It wins over dataFrom.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Data []ExternalSecretData `json:"data,omitempty"`

	// dataFrom copies every field of remote objects, merged in order (a
	// later entry wins).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	DataFrom []ExternalSecretDataFrom `json:"dataFrom,omitempty"`

	// publishConnectionDetailsTo publishes the data this ExternalSecret
	// renders for its target to a store that can write, after the target
	// is written. With creationPolicy None nothing is written to the
	// cluster: the data goes from one store to the other through the
	// controller's memory only.
	// +optional
	PublishConnectionDetailsTo *ExternalSecretPublication `json:"publishConnectionDetailsTo,omitempty"`
}

// ExternalSecretPublication is where an ExternalSecret publishes its data:
// a destination in the shape of Crossplane's publishConnectionDetailsTo
// (a name, metadata, and configRef naming the store), the same block as a
// PushSecret destination, and what becomes of the published copy when the
// ExternalSecret or the destination goes.
type ExternalSecretPublication struct {
	PushSecretDestination `json:",inline"`

	// deletionPolicy is Delete (the default: the published copy is
	// deleted when the ExternalSecret is deleted or the destination
	// changes, if this ExternalSecret owns it) or Retain (it is left in
	// place).
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// ExternalSecretPhase is the coarse state of an ExternalSecret.
// +kubebuilder:validation:Enum=Pending;Syncing;Failing;Failed;Completed
type ExternalSecretPhase string

const (
	// PhasePending means not synced yet, or a dependency (store, template) is
	// missing.
	PhasePending ExternalSecretPhase = "Pending"
	// PhaseSyncing means synced and kept up to date.
	PhaseSyncing ExternalSecretPhase = "Syncing"
	// PhaseFailing means the last sync failed and will be retried; the target
	// keeps its last good data.
	PhaseFailing ExternalSecretPhase = "Failing"
	// PhaseFailed means it cannot sync until the user changes something.
	PhaseFailed ExternalSecretPhase = "Failed"
	// PhaseCompleted means synced once (refreshInterval 0).
	PhaseCompleted ExternalSecretPhase = "Completed"
)

// Condition types of an ExternalSecret.
const (
	// ConditionInSync tells whether the last sync succeeded; its
	// lastSyncTime is the time of the last successful one.
	ConditionInSync = "InSync"
	// ConditionReady tells whether the object is fully reconciled: for an
	// ExternalSecret, the target holds the data of its current spec. Every
	// kind has it.
	ConditionReady = "Ready"
	// ConditionStalled is present, and True, while the object cannot make
	// progress until the user changes something. Every kind has it.
	ConditionStalled = "Stalled"
	// ConditionFresh tells whether an ExternalSecret's data was refreshed
	// successfully within the last few refresh intervals: True (reason
	// Refreshed) after a successful sync, False with reason Stale once
	// no refresh has succeeded for more than three refresh intervals. Its
	// message names the failure that keeps it stale, which Ready and InSync
	// show with their own reason.
	ConditionFresh = "Fresh"
)

// ExternalSecretCondition is a condition with the time of the last sync.
type ExternalSecretCondition struct {
	// type of the condition: Ready, InSync, Stalled or Fresh.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Type string `json:"type"`

	// status is True, False or Unknown.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`

	// reason is a one-word CamelCase cause.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// message says in words what happened and what to fix. It never holds
	// a secret value.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// lastTransitionTime is when status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// lastSyncTime is when the data was last read successfully, on InSync
	// only; it has the resolution of status.refreshTime, which it equals.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// observedGeneration is the generation the condition describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RemoteVersion records the version of one remote object that was read.
type RemoteVersion struct {
	// key of the remote object.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`

	// version that was read; empty when the provider has no versions.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`
}

// ExternalSecretStatus is the observed state of an ExternalSecret.
type ExternalSecretStatus struct {
	// phase is Pending, Syncing, Failing, Failed or Completed.
	// +optional
	Phase ExternalSecretPhase `json:"phase,omitempty"`

	// conditions are Ready, InSync, Fresh and, while a failure waits for a
	// change, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []ExternalSecretCondition `json:"conditions,omitempty"`

	// refreshTime is when the data was last refreshed, at the resolution of
	// the controller's --status-refresh-period (default 1h): a refresh that
	// changes nothing else is not written, so this moves at most once per
	// period and may be up to a period and a refresh interval old. Alert on
	// the Fresh condition (False, reason Stale), or on this with a margin
	// over the period.
	//
	// A status written for another reason (new data or versions, a
	// condition or error) carries the exact time of the last refresh. The
	// coarse writes come at a phase of the period of each ExternalSecret's
	// own, never within one period of the last write, and record that
	// phase point. The read itself may be shared with other
	// ExternalSecrets and up to one refresh interval older.
	// +optional
	RefreshTime *metav1.Time `json:"refreshTime,omitempty"`

	// observedGeneration is the generation last synced successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// versions lists the version of every remote object read in the last
	// successful sync.
	// +optional
	// +kubebuilder:validation:MaxItems=320
	// +listType=atomic
	Versions []RemoteVersion `json:"versions,omitempty"`

	// lastRotationTime is when a sync last delivered new data from the
	// store (a new remote version, or a new value where the store keeps no
	// versions) to the target. A first sync, a change of the spec, store or
	// templates, and the repair of a target someone else changed are not
	// rotations.
	// +optional
	LastRotationTime *metav1.Time `json:"lastRotationTime,omitempty"`

	// lastRotatedKeys lists the target keys the last rotation changed, set
	// together with lastRotationTime. It is empty when that rotation
	// changed more keys than it can hold, and then means any key.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	LastRotatedKeys []string `json:"lastRotatedKeys,omitempty"`

	// found tells, for each dataFrom entry with a find, how many remote
	// objects it matched in the last sync that listed the store (names
	// and values are never in status).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Found []FoundCount `json:"found,omitempty"`

	// target is the name of the Secret written.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Target string `json:"target,omitempty"`

	// targetResourceVersion is the resourceVersion of the target after the
	// last write or check; a different one means someone else changed it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	TargetResourceVersion string `json:"targetResourceVersion,omitempty"`

	// syncedKeys lists the Secret keys this ExternalSecret wrote in its
	// last sync, in order: all of them when there are at most 1,024, and
	// the first 1,024 otherwise (syncedKeyCount tells how many there are).
	// It is informative: a Merge target loses only this ExternalSecret's
	// keys when it goes, as the target's own watchword.io/merged-keys
	// annotation records them.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	SyncedKeys []string `json:"syncedKeys,omitempty"`

	// syncedKeyCount is the number of Secret keys this ExternalSecret
	// wrote in its last sync; when it is more than syncedKeys holds, that
	// list is the first 1,024 of them, in order.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SyncedKeyCount int32 `json:"syncedKeyCount,omitempty"`

	// inputsVersion identifies the inputs of the last sync (spec
	// generation, store generation, template ConfigMap versions); when it
	// changes, the target is rendered again.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	InputsVersion string `json:"inputsVersion,omitempty"`

	// forceSyncedValue is the value of the force-sync annotation that was
	// last honoured.
	// +optional
	ForceSyncedValue string `json:"forceSyncedValue,omitempty"`

	// forceSyncFailedValue is the value of the force-sync annotation whose
	// sync last failed: a client that set the annotation to a value of its
	// own (as `watchword refresh` does) reads here that its request, not
	// an older one, failed. The conditions tell why.
	// +optional
	ForceSyncFailedValue string `json:"forceSyncFailedValue,omitempty"`

	// publishedTo is the state of publishConnectionDetailsTo: an entry
	// for its destination, and one for a former destination whose remote
	// secret could not be deleted yet.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	PublishedTo []PushSecretDestinationStatus `json:"publishedTo,omitempty"`

	// lease is the Vault lease of the target's credentials (dataFrom
	// vaultDynamic), so that a restarted controller renews it rather than
	// issuing new ones; for a dataFrom registryToken, the token's registry
	// and expiry (id ecr:REGISTRY@EXPIRY), so that a restarted controller
	// keeps a fresh token.
	// +optional
	Lease *VaultLeaseStatus `json:"lease,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=es,categories=watchword
// +kubebuilder:printcolumn:name="Store",type=string,JSONPath=`.spec.secretStoreRef.name`
// +kubebuilder:printcolumn:name="Refresh",type=string,JSONPath=`.spec.refreshInterval`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
//
// The rule that keeps the target name immutable sits on the object, not on
// spec.target: only there can CEL read metadata.name, which is the name in
// effect while spec.target.name is unset. So stating the default name, or
// unsetting a name equal to it, is no change and is allowed.
// +kubebuilder:validation:XValidation:rule="(has(self.spec.target) && has(self.spec.target.name) && size(self.spec.target.name) > 0 ? self.spec.target.name : self.metadata.name) == (has(oldSelf.spec.target) && has(oldSelf.spec.target.name) && size(oldSelf.spec.target.name) > 0 ? oldSelf.spec.target.name : oldSelf.metadata.name)",message="spec.target.name is immutable: it may only state the name already in effect (the ExternalSecret's own name when unset); create a new ExternalSecret to write another Secret",fieldPath=".spec.target.name"
// +kubebuilder:validation:XValidation:rule="(has(self.spec.target) && has(self.spec.target.kind) ? self.spec.target.kind : 'Secret') == (has(oldSelf.spec.target) && has(oldSelf.spec.target.kind) ? oldSelf.spec.target.kind : 'Secret')",message="spec.target.kind is immutable: create a new ExternalSecret to write another kind of object",fieldPath=".spec.target.kind"

// ExternalSecret declares a Kubernetes Secret made from data in a store.
type ExternalSecret struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to fetch, from where, and where to write it.
	// +required
	Spec ExternalSecretSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ExternalSecretStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ExternalSecretList is a list of ExternalSecrets.
type ExternalSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExternalSecret `json:"items"`
}

func init() {
	register(&ExternalSecret{}, &ExternalSecretList{})
}
