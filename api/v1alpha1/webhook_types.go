package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookProvider reads secrets from any HTTP API, with a request made of
// templates: a URL, a method, headers and a body, over the remote key and
// the Secret keys the store names; a JSONPath picks the value out of the
// answer. With push, it also publishes.
// +kubebuilder:validation:XValidation:rule="!(has(self.caBundle) && has(self.caProvider))",message="webhook: set caBundle or caProvider, not both",fieldPath=".caProvider"
// +kubebuilder:validation:XValidation:rule="!has(self.body) || size(self.body) == 0 || self.method != 'GET'",message="webhook.body needs method POST: a GET request carries no body",fieldPath=".body"
type WebhookProvider struct {
	// url is a template of the request's URL, such as
	// https://secrets.example.com/v1/secrets/{{ .remoteRef.key }}. Every
	// value it inserts is percent-encoded: the key one path segment at a
	// time (its '/' are kept), any other value whole.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	URL string `json:"url"`

	// method of the read request: GET (the default) or POST.
	// +optional
	// +kubebuilder:validation:Enum=GET;POST
	// +kubebuilder:default=GET
	Method string `json:"method,omitempty"`

	// headers are templates of the request's headers, by name, such as
	// Authorization: Bearer {{ .auth.token }}.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Headers map[string]string `json:"headers,omitempty"`

	// body is a template of the read request's body (method POST).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`

	// timeout bounds each request, such as 10s: at most 30s, the bound
	// of any call of a store. Defaults to 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m)){1,4}$')",message="timeout must be a duration such as 10s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// maxResponseBytes bounds the body of an answer that Watchword reads;
	// a longer answer fails. Defaults to 1048576 (1 MiB).
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=16777216
	MaxResponseBytes int64 `json:"maxResponseBytes,omitempty"`

	// result says where the value and its version are in an answer.
	// +optional
	Result *WebhookResult `json:"result,omitempty"`

	// secrets are the Secret keys the templates may use: an entry named
	// auth whose secretRef's key is token is {{ .auth.token }}. Only these
	// keys are read.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Secrets []WebhookSecret `json:"secrets,omitempty"`

	// caBundle is a PEM bundle of the certificate authorities the server's
	// certificate chains to, instead of the system's. Set it or caProvider,
	// not both.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle []byte `json:"caBundle,omitempty"`

	// caProvider reads the CA bundle from a Secret or a ConfigMap. Set it
	// or caBundle, not both.
	// +optional
	CAProvider *CAProvider `json:"caProvider,omitempty"`

	// push makes the store writable, for publishing: the requests that
	// write and delete a remote secret, and where an answer keeps
	// Watchword's ownership marker.
	// +optional
	Push *WebhookPush `json:"push,omitempty"`
}

// WebhookResult says where the value and its version are in an answer.
// +kubebuilder:validation:XValidation:rule="!(has(self.versionJSONPath) && has(self.versionHeader))",message="webhook.result: set versionJSONPath or versionHeader, not both",fieldPath=".versionHeader"
type WebhookResult struct {
	// jsonPath selects the value in a JSON answer, such as $.data (the
	// syntax of kubectl's -o jsonpath, with or without braces). A string
	// is the value; an object is the value as JSON and its members are
	// the fields that remoteRef.property and dataFrom read. Empty: the
	// whole answer.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	JSONPath string `json:"jsonPath,omitempty"`

	// versionJSONPath selects the version of the value in a JSON answer,
	// such as $.version.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	VersionJSONPath string `json:"versionJSONPath,omitempty"`

	// versionHeader is the header of an answer that holds the version of
	// the value, such as ETag.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9-]+$`
	VersionHeader string `json:"versionHeader,omitempty"`
}

// WebhookSecret is one Secret key that the templates may use, as
// {{ .NAME.KEY }}.
type WebhookSecret struct {
	// name is the name the templates know it by, such as auth.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// secretRef is the Secret key it holds.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// WebhookPush are the requests that publish to the store.
type WebhookPush struct {
	// put writes a remote secret: its url, method (PUT, POST or PATCH),
	// headers and body are templates over the key (.remoteRef.key), the
	// fields to write (.fields), the ownership marker (.owner) and the
	// version it replaces (.version, empty for a new secret).
	// +required
	Put WebhookRequest `json:"put"`

	// delete deletes a remote secret (method DELETE, or POST). Without
	// it, the store cannot delete: a publisher's deletionPolicy Delete
	// fails.
	// +optional
	Delete *WebhookRequest `json:"delete,omitempty"`

	// ownerJSONPath selects, in the answer of a read, where put's body
	// keeps .owner, the ownership marker, such as $.owner. Empty: the API
	// keeps no marker, every remote secret counts as unmarked, so a write
	// over an existing one needs adopt and a delete is refused.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	OwnerJSONPath string `json:"ownerJSONPath,omitempty"`
}

// WebhookRequest is a request made of templates.
type WebhookRequest struct {
	// method of the request.
	// +required
	// +kubebuilder:validation:Enum=PUT;POST;PATCH;DELETE
	Method string `json:"method"`

	// url is a template of the request's URL, encoded as the store's url.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^https?://.+$`
	URL string `json:"url"`

	// headers are templates of the request's headers, by name; the
	// store's headers are sent too, unless named here.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Headers map[string]string `json:"headers,omitempty"`

	// body is a template of the request's body, such as
	// {"data": {{ .fields | toJson }}, "owner": {{ .owner | toJson }}}.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`
}
