package failure

// Reasons of ClusterExternalSecrets and ClusterPushSecrets.
const (
	// Provisioned: every selected namespace has its stamped object, and
	// each is Ready.
	Provisioned Reason = "Provisioned"
	// NamespacesFailed: some selected namespaces are not served; their
	// names and causes are in status.failedNamespaces. Not retried with
	// backoff: a change of a namespace, of a stamped object or of the
	// cluster object queues it again.
	NamespacesFailed Reason = "NamespacesFailed"
	// InvalidNamespaceSelector (terminal): a selector or regular
	// expression of the spec cannot be used; nothing stamped is removed
	// until it is fixed.
	InvalidNamespaceSelector Reason = "InvalidNamespaceSelector"
)
