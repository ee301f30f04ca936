// Package v1alpha1 holds the Watchword API: ExternalSecret, SecretStore and
// ClusterSecretStore in the external-secrets.x-k8s.io group.
//
// +kubebuilder:object:generate=true
// +groupName=external-secrets.x-k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The scheme registration is apimachinery's, as Kubernetes' own API types
// do it, so that this package imports the API machinery and nothing else.
var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "external-secrets.x-k8s.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds the types' files register.
	knownTypes []runtime.Object
)

// register adds kinds of this package, from the init of their file.
func register(objs ...runtime.Object) { knownTypes = append(knownTypes, objs...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
