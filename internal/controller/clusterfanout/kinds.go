package clusterfanout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/publishing"
)

// Kind is what the fan-out needs to know of one cluster-wide kind and the
// namespaced kind it stamps.
type Kind struct {
	// Name is the cluster kind's name (ClusterExternalSecret); Stamped
	// the namespaced kind's (ExternalSecret).
	Name, Stamped string
	// NewCluster and NewStamp return empty objects of the two kinds;
	// NewClusterList and NewStampList empty lists of them.
	NewCluster     func() client.Object
	NewStamp       func() client.Object
	NewClusterList func() client.ObjectList
	NewStampList   func() client.ObjectList
	// Spec returns the parts of a cluster object the fan-out reads.
	Spec func(client.Object) Spec
	// Status is the cluster object's status, to be written.
	Status func(client.Object) *v1alpha1.FanOutStatus
	// SetSpec sets the spec of a stamped object from its cluster object;
	// StampSpec returns a stamped object's spec.
	SetSpec   func(cluster, stamp client.Object)
	StampSpec func(client.Object) any
	// Ready tells a stamped object's Ready condition: known is false while
	// it has none yet.
	Ready func(client.Object) (ready, known bool, reason string)
}

// Spec is what a cluster object says of its stamps.
type Spec struct {
	Targets  v1alpha1.NamespaceTargets
	Name     string
	Metadata v1alpha1.StampedMetadata
	Refresh  *metav1.Duration
	// Store is the store whose class decides which instance serves the
	// object.
	Store v1alpha1.StoreRef
	// Payload is the spec every stamp gets, for its hash.
	Payload any
}

// ExternalSecrets is the fan-out of ClusterExternalSecrets.
var ExternalSecrets = Kind{
	Name: "ClusterExternalSecret", Stamped: "ExternalSecret",
	NewCluster:     func() client.Object { return &v1alpha1.ClusterExternalSecret{} },
	NewStamp:       func() client.Object { return &v1alpha1.ExternalSecret{} },
	NewClusterList: func() client.ObjectList { return &v1alpha1.ClusterExternalSecretList{} },
	NewStampList:   func() client.ObjectList { return &v1alpha1.ExternalSecretList{} },
	Spec: func(o client.Object) Spec {
		c := o.(*v1alpha1.ClusterExternalSecret)
		return Spec{Targets: c.Spec.NamespaceTargets, Name: orName(c.Spec.ExternalSecretName, c.Name),
			Metadata: c.Spec.ExternalSecretMetadata, Refresh: c.Spec.RefreshTime,
			Store: c.Spec.ExternalSecretSpec.SecretStoreRef, Payload: c.Spec.ExternalSecretSpec}
	},
	Status: func(o client.Object) *v1alpha1.FanOutStatus { return &o.(*v1alpha1.ClusterExternalSecret).Status },
	SetSpec: func(cluster, stamp client.Object) {
		stamp.(*v1alpha1.ExternalSecret).Spec = *cluster.(*v1alpha1.ClusterExternalSecret).Spec.ExternalSecretSpec.DeepCopy()
	},
	StampSpec: func(o client.Object) any { return o.(*v1alpha1.ExternalSecret).Spec },
	Ready: func(o client.Object) (bool, bool, string) {
		es := o.(*v1alpha1.ExternalSecret)
		c := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != 0 && c.ObservedGeneration < es.Generation {
			return false, false, ""
		}
		return c.Status == metav1.ConditionTrue, true, c.Reason
	},
}

// PushSecrets is the fan-out of ClusterPushSecrets.
var PushSecrets = Kind{
	Name: "ClusterPushSecret", Stamped: "PushSecret",
	NewCluster:     func() client.Object { return &v1alpha1.ClusterPushSecret{} },
	NewStamp:       func() client.Object { return &v1alpha1.PushSecret{} },
	NewClusterList: func() client.ObjectList { return &v1alpha1.ClusterPushSecretList{} },
	NewStampList:   func() client.ObjectList { return &v1alpha1.PushSecretList{} },
	Spec: func(o client.Object) Spec {
		c := o.(*v1alpha1.ClusterPushSecret)
		s := Spec{Targets: c.Spec.NamespaceTargets, Name: orName(c.Spec.PushSecretName, c.Name),
			Metadata: c.Spec.PushSecretMetadata, Refresh: c.Spec.RefreshTime, Payload: c.Spec.PushSecretSpec}
		if len(c.Spec.PushSecretSpec.Destinations) > 0 {
			s.Store = publishing.StoreRef(c.Spec.PushSecretSpec.Destinations[0])
		}
		return s
	},
	Status: func(o client.Object) *v1alpha1.FanOutStatus { return &o.(*v1alpha1.ClusterPushSecret).Status },
	SetSpec: func(cluster, stamp client.Object) {
		stamp.(*v1alpha1.PushSecret).Spec = *cluster.(*v1alpha1.ClusterPushSecret).Spec.PushSecretSpec.DeepCopy()
	},
	StampSpec: func(o client.Object) any { return o.(*v1alpha1.PushSecret).Spec },
	Ready: func(o client.Object) (bool, bool, string) {
		ps := o.(*v1alpha1.PushSecret)
		for _, c := range ps.Status.Conditions {
			if c.Type != v1alpha1.ConditionReady {
				continue
			}
			if c.ObservedGeneration != 0 && c.ObservedGeneration < ps.Generation {
				return false, false, ""
			}
			return c.Status == metav1.ConditionTrue, true, c.Reason
		}
		return false, false, ""
	},
}

func orName(name, def string) string {
	if name != "" {
		return name
	}
	return def
}
