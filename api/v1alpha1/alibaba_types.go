package v1alpha1

// AlibabaProvider configures Alibaba Cloud KMS Secrets Manager (the alibaba
// block). remoteRef.key is the name of a secret, remoteRef.version a
// version stage (ACSCurrent, ACSPrevious, or a custom stage written
// stage:NAME) or a version ID (empty: ACSCurrent), and remoteRef.property a
// member of a JSON object value.
type AlibabaProvider struct {
	// regionID is the region of the secrets, such as cn-hangzhou or
	// eu-central-1. It chooses the endpoint kms.REGION.aliyuncs.com
	// unless endpoint is set.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	RegionID string `json:"regionID"`

	// endpoint overrides the KMS endpoint, for a VPC endpoint or a KMS
	// instance's own endpoint, such as https://kms-vpc.cn-hangzhou.aliyuncs.com.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^/]+/?$`
	Endpoint string `json:"endpoint,omitempty"`

	// auth says how Watchword authenticates to Alibaba Cloud.
	// +required
	Auth AlibabaAuth `json:"auth"`
}

// AlibabaAuth holds the ways to authenticate against Alibaba Cloud.
type AlibabaAuth struct {
	// secretRef reads a RAM user's AccessKey pair from a Secret.
	// +required
	SecretRef AlibabaAuthSecretRef `json:"secretRef"`
}

// AlibabaAuthSecretRef names the Secret keys that hold an AccessKey pair.
type AlibabaAuthSecretRef struct {
	// accessKeyID is the Secret key that holds the AccessKey ID.
	// +required
	AccessKeyID SecretKeySelector `json:"accessKeyID"`

	// accessKeySecret is the Secret key that holds the AccessKey secret.
	// +required
	AccessKeySecret SecretKeySelector `json:"accessKeySecret"`
}
