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

	// stsEndpoint overrides the endpoint of STS, which rrsa calls
	// (AssumeRoleWithOIDC), such as https://sts-vpc.cn-hangzhou.aliyuncs.com.
	// Empty: sts.REGION.aliyuncs.com.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^/]+/?$`
	STSEndpoint string `json:"stsEndpoint,omitempty"`

	// auth says how Watchword authenticates to Alibaba Cloud. Exactly one
	// method is set.
	// +required
	Auth AlibabaAuth `json:"auth"`
}

// AlibabaAuth holds the ways to authenticate against Alibaba Cloud.
// +kubebuilder:validation:XValidation:rule="[has(self.secretRef), has(self.rrsa)].exists_one(x, x)",message="alibaba.auth must set exactly one of secretRef or rrsa"
type AlibabaAuth struct {
	// secretRef reads a RAM user's AccessKey pair from a Secret.
	// +optional
	SecretRef *AlibabaAuthSecretRef `json:"secretRef,omitempty"`

	// rrsa (RAM Roles for Service Accounts) exchanges a token of a
	// Kubernetes service account, which Watchword requests, for the
	// temporary credentials of a RAM role (STS AssumeRoleWithOIDC).
	// Nothing long-lived is stored.
	// +optional
	RRSA *AlibabaRRSA `json:"rrsa,omitempty"`
}

// AlibabaRRSA is the RAM role a service account's token is exchanged for.
type AlibabaRRSA struct {
	// serviceAccountRef is the service account whose token is exchanged.
	// Its audiences default to sts.aliyuncs.com.
	// +required
	ServiceAccountRef ServiceAccountSelector `json:"serviceAccountRef"`

	// roleARN is the RAM role to assume, such as
	// acs:ram::1234567890123456:role/watchword-reader. Its trust policy
	// names the OIDC provider and the service account.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('acs:ram::')",message="rrsa.roleARN must be a RAM role ARN, acs:ram::ACCOUNT:role/NAME"
	RoleARN string `json:"roleARN"`

	// oidcProviderARN is the RAM OIDC identity provider that trusts the
	// cluster's service-account issuer, such as
	// acs:ram::1234567890123456:oidc-provider/ack-rrsa-CLUSTERID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('acs:ram::')",message="rrsa.oidcProviderARN must be a RAM OIDC provider ARN, acs:ram::ACCOUNT:oidc-provider/NAME"
	OIDCProviderARN string `json:"oidcProviderARN"`

	// sessionName names the role session in ActionTrail. Empty:
	// watchword-NAMESPACE-STORE, cut to 64 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._@-]*$`
	SessionName string `json:"sessionName,omitempty"`
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
