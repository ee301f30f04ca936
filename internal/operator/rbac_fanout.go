package operator

// ClusterExternalSecrets and ClusterPushSecrets: read them and write their
// status, and create, update and delete the ExternalSecrets and PushSecrets
// they stamp into namespaces (the other rules in rbac.go only read and
// update those).
//
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=clusterexternalsecrets;clusterpushsecrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=clusterexternalsecrets/status;clusterpushsecrets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=clusterexternalsecrets/finalizers;clusterpushsecrets/finalizers,verbs=update
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=externalsecrets;pushsecrets,verbs=create;delete
