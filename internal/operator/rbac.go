package operator

// The permissions Watchword needs; `make generate` turns them into
// config/rbac/role.yaml.
//
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=externalsecrets;secretstores;clustersecretstores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=externalsecrets/status;secretstores/status;clustersecretstores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=externalsecrets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
//
// The metrics endpoint with --metrics-secure: ask the API server who a
// scraper is and whether it may get /metrics.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
//
// PushSecrets: read and finalize them, write their status.
//
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=pushsecrets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=pushsecrets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=external-secrets.x-k8s.io,resources=pushsecrets/finalizers,verbs=update
//
// The admission webhook (internal/webhook): keep the caBundle of its own
// ValidatingWebhookConfiguration, by name only. Its certificate Secret is
// written under the Secret rules above.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=watchword,verbs=get;patch
