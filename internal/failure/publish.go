package failure

// Reasons of publishing (PushSecret). They are kept apart from the reasons
// of syncing, in failure.go, and follow the same error model.
const (
	// Published: every destination holds the selected data of the source
	// Secret. Also the reason of the event of a write.
	Published Reason = "Published"
	// Unpublished: the event of the deletion of a remote secret that a
	// PushSecret owned.
	Unpublished Reason = "Unpublished"
	// DriftRepaired: the event of a write that restored a remote secret
	// someone else had changed.
	DriftRepaired Reason = "DriftRepaired"
	// Retained: the event of a remote secret left in place (deletionPolicy
	// Retain, or a store that no longer exists).
	Retained Reason = "Retained"
	// SourceMissing: the Secret to publish does not exist. Terminal: its
	// creation queues the PushSecret.
	SourceMissing Reason = "SourceMissing"
	// SourceKeyMissing: a key that spec.data selects is not in the source
	// Secret. Terminal: a change of the Secret queues the PushSecret.
	SourceKeyMissing Reason = "SourceKeyMissing"
	// RemoteNameInvalid: the store cannot hold a secret of the
	// destination's name. Terminal.
	RemoteNameInvalid Reason = "RemoteNameInvalid"
	// UnpublishDeferred: a removed destination is not unpublished while a
	// current one fails, so that a mistaken change (a store renamed to
	// one that does not exist) never deletes the only published copy.
	UnpublishDeferred Reason = "UnpublishDeferred"
)
